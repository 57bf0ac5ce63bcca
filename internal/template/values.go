package template

import (
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/internal/lexical"
)

// A Kind is the shape of a value found in a query.
type Kind int

// Kinds, from the most to the least specific shape.
const (
	KindURL        Kind = iota + 1 // an absolute URL: "https://example.com/a"
	KindPath                       // a path or file name: "src/main.go", "/etc/hosts", "README.md"
	KindQuoted                     // the text between quotes: "\"Q3 plan\"", '…', `…`, “…”
	KindTicket                     // a ticket-style id: "ABC-123"
	KindNumber                     // digits: "42", also "#42" (as "42")
	KindHex                        // a UUID or a hex hash with letters and digits: "9f86d08", "123e4567-e89b-…"
	KindIdentifier                 // snake_case, camelCase, kebab-case, dotted or letters with digits: "user_id", "getUser", "api-gateway", "v2"
	KindWord                       // a plain word that is not a stop word: "alice", "Paris"
)

func (k Kind) String() string {
	switch k {
	case KindURL:
		return "url"
	case KindPath:
		return "path"
	case KindQuoted:
		return "quoted"
	case KindTicket:
		return "ticket"
	case KindNumber:
		return "number"
	case KindHex:
		return "hex"
	case KindIdentifier:
		return "identifier"
	case KindWord:
		return "word"
	}
	return "unknown"
}

// A Value is a candidate value found in a query.
type Value struct {
	Text string // as written, without the quotes or surrounding punctuation
	Kind Kind
	// Pos is the index of the value's token among the query's tokens
	// (a quoted string is one token); proximity to words naming a variable
	// is measured in tokens.
	Pos int
}

// maxValueBytes bounds a value: longer text is not a value (Fits also
// rejects it).
const maxValueBytes = 256

// maxValues bounds how many values Extract returns, so a pasted document
// as a query costs no more than a short task.
const maxValues = 64

var (
	reNumber = regexp.MustCompile(`^#?[0-9]+$`)
	reTicket = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*-[0-9]+$`)
	reUUID   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	reHex    = regexp.MustCompile(`^[0-9a-f]{7,64}$`)
	reFile   = regexp.MustCompile(`^[\p{L}\p{N}_.+-]*[\p{L}\p{N}_+-]\.[A-Za-z][A-Za-z0-9]{0,7}$`)
	reIdent  = regexp.MustCompile(`^[\p{L}\p{N}]+(?:[_.:-][\p{L}\p{N}]+)+$`)
	reAlnum  = regexp.MustCompile(`^\p{L}[\p{L}\p{N}]*\p{N}[\p{L}\p{N}]*$`)
	reWord   = regexp.MustCompile(`^\p{L}[\p{L}'’]*$`)
)

// token is one whitespace-separated token of a query, or a quoted string.
type token struct {
	text   string
	quoted bool
}

// tokens splits a query at white space, keeping a quoted string ("…", `…`,
// “…”, and '…' when the quotes stand at word boundaries) as one token. It
// is linear in the query's length: a quote without a closer does not send
// every later quote of its kind scanning to the end again.
func tokens(q string) []token {
	var out []token
	unclosed := map[rune]bool{} // closers absent from the rest of q
	for i := 0; i < len(q); {
		r, n := utf8.DecodeRuneInString(q[i:])
		if unicode.IsSpace(r) {
			i += n
			continue
		}
		if closeQ, ok := quotePair(r); ok && !unclosed[closeQ] {
			j := strings.IndexRune(q[i+n:], closeQ)
			if j < 0 {
				unclosed[closeQ] = true // later quotes start further on: none there either
			} else {
				end := i + n + j
				after, _ := utf8.DecodeRuneInString(q[end+utf8.RuneLen(closeQ):])
				if r != '\'' || end+1 == len(q) || !unicode.IsLetter(after) {
					if s := strings.TrimSpace(q[i+n : end]); s != "" {
						out = append(out, token{text: s, quoted: true})
					}
					i = end + utf8.RuneLen(closeQ)
					continue
				}
			}
		}
		j := i
		for j < len(q) {
			r, n := utf8.DecodeRuneInString(q[j:])
			if unicode.IsSpace(r) {
				break
			}
			j += n
		}
		out = append(out, token{text: q[i:j]})
		i = j
	}
	return out
}

func quotePair(r rune) (rune, bool) {
	switch r {
	case '"', '`', '\'':
		return r, true
	case '“':
		return '”', true
	case '‘':
		return '’', true
	}
	return 0, false
}

// Extract returns the candidate values in query, in query order: URLs,
// paths and file names, quoted strings, ticket-style ids, numbers, hex
// hashes and UUIDs, identifiers (snake_case, camelCase, kebab-case, letters
// with digits) and plain words that are not stop words. Surrounding
// punctuation ("(", ",", a sentence's final ".") is not part of a value. At
// most 64 values are returned, none longer than 256 bytes.
func Extract(query string) []Value {
	var out []Value
	for pos, t := range tokens(query) {
		if len(out) == maxValues {
			break
		}
		s := t.text
		if t.quoted {
			if len(s) <= maxValueBytes && utf8.ValidString(s) {
				out = append(out, Value{Text: s, Kind: KindQuoted, Pos: pos})
			}
			continue
		}
		s = strings.TrimLeft(s, "([{<\"'`“‘,;")
		s = strings.TrimRight(s, ")]}>\"'`”’,;:!?")
		s = strings.TrimRight(s, ".") // end of a sentence; "a.b." is not a file name
		s = strings.TrimRight(s, ")]}>\"'`”’,;:!?")
		if s == "" || len(s) > maxValueBytes || !utf8.ValidString(s) {
			continue
		}
		if k := kindOf(s); k != 0 {
			if k == KindNumber {
				s = strings.TrimPrefix(s, "#")
			}
			out = append(out, Value{Text: s, Kind: k, Pos: pos})
		}
	}
	return out
}

// kindOf classifies one token, or returns 0 when it is no value.
func kindOf(s string) Kind {
	switch {
	case strings.Contains(s, "://"):
		if u, err := url.Parse(s); err == nil && u.Scheme != "" && (u.Host != "" || u.Path != "") {
			return KindURL
		}
		return 0
	case reNumber.MatchString(s):
		return KindNumber
	case reUUID.MatchString(s):
		return KindHex
	case reHex.MatchString(s) && strings.ContainsAny(s, "0123456789") && strings.ContainsAny(s, "abcdef"):
		return KindHex
	case reTicket.MatchString(s):
		return KindTicket
	case strings.ContainsAny(s, `/\`) && strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0:
		return KindPath
	case reFile.MatchString(s) && len(s) >= 4:
		return KindPath
	case reWord.MatchString(s):
		if isIdentifierShaped(s) {
			return KindIdentifier
		}
		if w := strings.ToLower(s); lexical.IsStopWord(w) || len([]rune(w)) < 2 {
			return 0
		}
		return KindWord
	case reIdent.MatchString(s) && len(s) >= 4, reAlnum.MatchString(s): // not "e.g"
		return KindIdentifier
	}
	return 0
}

// isIdentifierShaped reports whether a run of letters is camelCase
// ("getUser", "userId"): a lower-case letter followed by an upper-case one.
func isIdentifierShaped(s string) bool {
	prevLower := false
	for _, r := range s {
		if unicode.IsUpper(r) && prevLower {
			return true
		}
		prevLower = unicode.IsLower(r)
	}
	return false
}
