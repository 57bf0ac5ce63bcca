// Package redact keeps secrets out of what contextd shows: error messages
// given to callers (ListServers.last_error, Assemble's omitted details) and
// log records.
//
// A [Redactor] replaces three kinds of text with "REDACTED":
//   - the secrets it was given (a server's header values, environment
//     values, URL user info and query values, from its configuration);
//   - in every URL in the text (scheme://…), the user info and each query
//     value (the keys stay, so "?token=REDACTED&page=2" still says what
//     was sent);
//   - the value after "Bearer " or "Basic ", and after a key that names a
//     secret ("token=", "password: ", "api_key=", …).
//
// Redaction is best effort: it cannot know every secret a server prints.
// That is why a stdio server's stderr reaches callers only as [Line]'s one
// short line, and reaches the log in full only at debug level.
package redact

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
)

// secretKeys are the key names whose value is a credential, as a regexp
// alternation: the common ones, and any name that ends in _key, _pat,
// _pass, _secret or _token (STRIPE_KEY=, ADO_PAT=, SMTP_PASS=,
// DJANGO_SECRET_KEY=).
const secretKeys = `access[_-]?token|refresh[_-]?token|api[_-]?key|apikey|auth[_-]?token|client[_-]?secret|` +
	`secret[_-]?(?:access[_-]?)?key|private[_-]?key|secret|password|passphrase|passwd|pwd|credentials?|` +
	`session[_-]?id|sessionid|cookie|token|[a-z0-9]+[_-](?:key|pat|pass|secret|token)`

// Mask is what a secret is replaced with.
const Mask = "REDACTED"

// minSecret is the shortest configured value treated as a secret: shorter
// ones ("1", "on") would mask ordinary words.
const minSecret = 4

var (
	urlRE    = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\x00-\x1f\x7f` + "`" + `]+`)
	schemeRE = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}`)
	// keyRE's value begins with neither white space nor a format
	// character (an override's end after the key is no value).
	keyRE = regexp.MustCompile(`(?i)((?:` + secretKeys + `)['"]?[\s\p{Cf}]*(?:=>|[=:])[\s\p{Cf}]*['"]?)([^\s\p{Cf}"'&,;<][^\s"'&,;<]*)`)
	// authRE: an Authorization value, to the end of the line, quote, ","
	// or ";", after a known scheme word (kept) or none ("SSWS X",
	// "SharedKey acct:sig": all of it).
	authRE = regexp.MustCompile(`(?i)(authorization['"]?\s*[=:]\s*['"]?(?:(?:bearer|basic|token|digest|negotiate|ntlm|dpop|apikey|key|sso-key|aws4-hmac-sha256)\s+)?)([^\r\n"',;]+)`)
	// xmlRE: <password>X</password> and the like.
	xmlRE = regexp.MustCompile(`(?i)(<(?:` + secretKeys + `)>[\s\p{Cf}]*)([^<\s\p{Cf}][^<\s]*)`)
)

// A Redactor masks secrets in text. The zero value and nil mask only the
// generic patterns (URLs, bearer tokens, secret-named keys). It is safe for
// concurrent use and immutable after New.
type Redactor struct {
	secrets []string // longest first, so a secret containing another is masked whole
	strong  []string // the credential-like ones and their encodings (see Holds)

	// strongRunes holds the characters outside ASCII that strong holds
	// (see spacedOut).
	strongRunes map[rune]bool

	// pieces holds every run of pieceBytes bytes of each secret that
	// looks generated (see random), as it is written or escaped (not its
	// base64 and hex forms, whose runs are as likely in other encoded
	// text), as a little-endian uint64, and whether it has a digit or a
	// capital letter (see minWordRun).
	pieces map[uint64]bool

	// heads and tails index the pieces a cut may leave (see
	// longestPiece) by their last four bytes (a secret's first n bytes,
	// for text that ends before a cut) and by their first four (its last
	// n, for text that begins after one).
	heads, tails map[uint32][]piece

	// own is a Redactor of the credential-like secrets of those the
	// writer of the text was given (NewFor; New: all of strong): what
	// Configured masks. Nil when there are none.
	own *Redactor
	// given holds the secrets own was made of, for WithWords.
	given []string

	// bare holds the credential-like secrets, as written and as they
	// read, without their ASCII punctuation, when minBare bytes or more
	// are left, a letter among them (see punctuated): "20240101" and
	// "abc12345" would mask dates and paths.
	bare []string
}

// minWordRun is the shortest run of pieces masked when none of them has a
// digit or a capital letter: such pieces are as likely words
// ("connection" in a test token masked the log's "connection limit
// reached"), but a run of 12 characters or more of a secret's lowercase
// part ("mysupersecretpassword") is no word (counted in characters: six
// Cyrillic letters are twelve bytes, and a word).
const minWordRun = 12

// pieceBytes is the shortest piece of a secret masked wherever it
// appears: a secret split by what no rule foresees (colour codes between
// wrapped lines, a logger's prefix on each line, an escape the redactor
// does not produce, a cut marked "[truncated]") shows at most
// pieceBytes-1 bytes in a row.
const pieceBytes = 8

// New returns a Redactor for the given secrets; values shorter than four
// bytes are ignored. Each secret is also masked in the forms a program
// commonly prints it in: escaped (percent-encoded, quoted, HTML: see
// Escaped), base64 (standard and URL alphabets, padded or not, and inside
// base64 of a longer text: see Base64Inside), and hexadecimal.
func New(secrets ...string) *Redactor {
	r := newRedactor(secrets)
	r.given = secrets
	r.own = ownOf(secrets, nil)
	return r
}

// WithWords returns r masking, in what the writer serves (Configured),
// those of words it was given only when they look generated or hold a
// password's symbol (see echoable): words are the values the
// configuration counts as secrets for where they stand alone (a URL's
// query values under names no credential has, its long path segments),
// which in a server's own text are words ("api-version=2024-10-21"
// masked every date of its pages; "region=eu-west-1" every mention).
// Its other given secrets (headers, a URL's password, env values) are
// masked whenever they look like credentials. Errors and logs (String)
// mask all of them still.
func (r *Redactor) WithWords(words []string) *Redactor {
	if r == nil || len(words) == 0 {
		return r
	}
	w := *r
	set := make(map[string]bool, len(words))
	for _, v := range words {
		set[strings.TrimSpace(visible(v))] = true
	}
	w.own = ownOf(r.given, set)
	return &w
}

// newRedactor is New without own.
func newRedactor(secrets []string) *Redactor {
	r := &Redactor{pieces: map[uint64]bool{}}
	strong := false // the secret being added is credential-like
	var add func(s string, pieces bool)
	add = func(s string, pieces bool) {
		if k := skeleton(s); k != s {
			add(k, pieces && random(k)) // as it reads (see String)
		}
		if len(s) >= minSecret && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
		if strong && len(s) >= minSecret && !slices.Contains(r.strong, s) {
			r.strong = append(r.strong, s)
		}
		for i := 0; pieces && i+pieceBytes <= len(s); i++ {
			w := s[i : i+pieceBytes]
			key := binary.LittleEndian.Uint64([]byte(w))
			r.pieces[key] = r.pieces[key] || strings.ContainsAny(w, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
		}
	}
	for _, s := range secrets {
		if s = strings.TrimSpace(visible(s)); len(s) < minSecret {
			continue
		}
		pieces := random(s)
		strong = credentialLike(s)
		add(s, pieces)
		if strong {
			for _, v := range []string{s, skeleton(s)} {
				if b := strings.Map(func(c rune) rune {
					if c < utf8.RuneSelf && (c == ' ' || asciiPunct(byte(c))) {
						return -1
					}
					return c
				}, v); len(b) >= minBare && strings.IndexFunc(b, unicode.IsLetter) >= 0 && !slices.Contains(r.bare, b) {
					r.bare = append(r.bare, b)
				}
			}
		}
		// Hexadecimal reads the same in either case.
		if len(s) >= 16 && strings.Trim(s, "0123456789abcdefABCDEF") == "" {
			add(strings.ToLower(s), pieces)
			add(strings.ToUpper(s), pieces)
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			add(enc.EncodeToString([]byte(s)), false)
		}
		for _, e := range Base64Inside(s) {
			add(e, false)
		}
		add(hex.EncodeToString([]byte(s)), false)
		add(strings.ToUpper(hex.EncodeToString([]byte(s))), false)
		if len(s) <= maxEscaped {
			for _, e := range Escaped(s) {
				add(e, pieces)
			}
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
	r.strongRunes = map[rune]bool{}
	for _, s := range r.strong {
		for _, c := range s {
			if c >= utf8.RuneSelf {
				r.strongRunes[c] = true
			}
		}
	}
	r.indexPieces()
	return r
}

// ownOf returns the Redactor of the ones of secrets worth masking in what
// their holder serves (see Redactor.own and WithWords), nil when there are
// none: credential-like, no date, and of words only what echoable takes.
func ownOf(secrets []string, words map[string]bool) *Redactor {
	var own []string
	for _, s := range secrets {
		s = strings.TrimSpace(visible(s))
		if credentialLike(s) && !isDate(s) && (!words[s] || echoable(s)) {
			own = append(own, s)
		}
	}
	if len(own) == 0 {
		return nil
	}
	return newRedactor(own)
}

// Base64Inside returns what base64 of a longer text holding s shows of s
// wherever s begins in it (after a prefix of 0, 1 or 2 bytes modulo 3:
// Basic credentials "user:TOKEN", a Docker auth), in the standard and the
// URL alphabet: the characters that depend on s alone, without the first
// ones (shared with the prefix) and the last one (shared with what follows
// s). Six strings, each about 4/3 of len(s) bytes less up to four.
func Base64Inside(s string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for k, skip := range []int{0, 2, 3} {
			e := enc.EncodeToString(append(make([]byte, k, k+len(s)), s...))
			end := len(e)
			if (k+len(s))%3 != 0 {
				end-- // holds bits of the byte after s
			}
			if end-skip >= minSecret {
				out = append(out, e[skip:end])
			}
		}
	}
	return out
}

// random reports whether s looks like a generated credential, whose
// pieces are masked wherever they appear: at least 12 bytes, with letters
// and digits, no white space and no "://". A value that merely has a
// credential's name (SESSION_DIR=/home/me/sessions, AUTH_URL=https://…)
// would otherwise have pieces of ordinary paths and URLs masked
// everywhere.
func random(s string) bool {
	return len(s) >= 12 && strings.IndexFunc(s, unicode.IsLetter) >= 0 && strings.IndexFunc(s, unicode.IsDigit) >= 0 &&
		strings.IndexFunc(s, unicode.IsSpace) < 0 && !strings.Contains(s, "://")
}

// Escaped returns s as programs commonly escape it, each form once and
// none equal to s: percent-encoded (Go's query and path escaping,
// JavaScript's encodeURIComponent, Python's quote, and every byte but the
// unreserved ones; with upper- and lower-case hex digits), inside a
// quoted string (JSON with and without HTML escaping, with "/" written
// "\/", with every non-ASCII character as \uXXXX as Python writes it;
// Go's %q and %+q), and HTML-escaped ("&amp;", "&#39;" or "&#x27;",
// "&quot;" or "&#34;").
func Escaped(s string) []string {
	var out []string
	for _, p := range []string{url.QueryEscape(s), url.PathEscape(s), percent(s, "-_.!~*'()"), percent(s, "-_.~/"), percent(s, "-_.~")} {
		out = append(out, p, lowerHex(p))
	}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(s) == nil {
			j := strings.TrimSuffix(b.String(), "\n")
			j = j[1 : len(j)-1]
			out = append(out, j, strings.ReplaceAll(j, "/", `\/`), asciiJSON(j))
		}
	}
	for _, q := range []string{strconv.Quote(s), strconv.QuoteToASCII(s)} {
		out = append(out, q[1:len(q)-1])
	}
	h := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for _, quotes := range []*strings.Replacer{
		strings.NewReplacer(`"`, "&#34;", "'", "&#39;"),
		strings.NewReplacer(`"`, "&quot;", "'", "&#x27;"),
	} {
		out = append(out, quotes.Replace(h.Replace(s)))
	}
	slices.Sort(out)
	return slices.DeleteFunc(slices.Compact(out), func(e string) bool { return e == s })
}

// percent returns s with every byte percent-encoded (upper-case hex) but
// ASCII letters, digits and the bytes in safe.
func percent(s, safe string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(safe, c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// lowerHex returns percent-encoded p with its hex digits in lower case.
func lowerHex(p string) string {
	b := []byte(p)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lower(b[i+1]), lower(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiJSON returns JSON string contents j with every non-ASCII character
// written \uXXXX (lower-case hex; a surrogate pair beyond U+FFFF), as
// Python's json.dumps writes them.
func asciiJSON(j string) string {
	var b strings.Builder
	for _, c := range j {
		switch {
		case c < utf8.RuneSelf:
			b.WriteRune(c)
		case c > 0xffff:
			r1, r2 := utf16.EncodeRune(c)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, c)
		}
	}
	return b.String()
}

// Cut marks where text was cut short: contextd's own cuts (a server's
// error message, a transport error, a quoted header, the start of a
// stdio server's stderr tail) end, or begin, with it.
const Cut = "…"

// asciiCut is the mark other programs cut with (a JSON decoder quoting
// the start of what it could not decode): pieces of a secret next to it
// are masked as next to Cut.
const asciiCut = "..."

// String returns s with every secret masked, also one spelled with
// characters that show as nothing between its own (zero-width spaces, soft
// hyphens and the other default-ignorable code points, masked with it),
// one that reads as a secret only as displayed or only as stored, and the
// pieces of a secret
// that a cut left: next to each Cut, the longest run of at least four
// bytes that ends the text before it and begins a secret, or begins the
// text after it and ends a secret (a server's 1 KiB error quoting a token
// at byte 980 was cut inside the token, whole secrets only masked, and
// 45 of its 47 bytes reached callers).
func (r *Redactor) String(s string) string {
	// Bytes that are not UTF-8 become U+FFFD first: dropped after
	// masking, they glued back together a secret they had split.
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.Contains(s, rlo) {
		s = r.maskOverrides(s)
	}
	// Configured secrets are looked for as the text is written and in
	// each way it reads (see reading: as it shows, and in stored order
	// when an override reverses part of it), and every character any of
	// them finds is masked in the text as written: a secret spaced out
	// with an override in its middle reads so only in stored order, a
	// second one only as displayed, and each reading alone showed the
	// other (reversed). The text keeps its own spelling (an emoji's
	// joiners, a Persian word's non-joiner, fullwidth forms, a Cyrillic
	// name) outside the masks. Configured secrets come before any rule:
	// a rule masking the start of a respelled secret ("Bearer
	// Pass.wοrd!Battery#Staple" up to the "!") would leave no whole
	// secret to find, and the rest would show. No step takes a mask
	// away: "REDACTED" reads as itself.
	out := render(s, r.readMarks(s))
	out = rules(out)
	if k := skeleton(out); k != out {
		if red := rules(k); red != k {
			out = red
		}
	}
	out = r.maskTags(out)
	// What is left shows in the order it is stored: the pieces of a
	// secret an embedding, an isolate or a right-to-left mark would
	// show in another order than stored, whole, show as stored. The
	// segment separators that show as nothing (U+000B, U+001F) go too:
	// each is shown at the paragraph's level, which puts what is between
	// them in reverse order in a right-to-left paragraph.
	out = strings.Map(func(c rune) rune {
		if bidiControl(c) || c == 0x0b || c == 0x1f {
			return -1
		}
		return c
	}, out)
	// A mask may not leave part of a character (a piece of a secret in a
	// script with combining marks ends inside one): answers carry the
	// text in protobuf strings, which must be UTF-8.
	return strings.ToValidUTF8(out, "\uFFFD")
}

// readMarks returns which bytes of s belong to r's secrets, whole, in
// pieces, and in each way s reads (see String), or nil when none does.
func (r *Redactor) readMarks(s string) []bool {
	m := r.secretMarks(s)
	for _, display := range []bool{true, false} {
		if plain(s) || !display && !strings.Contains(s, rlo) {
			break
		}
		k, origin := reading(s, display)
		if k == s {
			continue
		}
		km := r.secretMarks(k)
		for j, on := range km {
			if on {
				at := int(origin[j])
				_, n := utf8.DecodeRuneInString(s[at:])
				m = mark(m, len(s), at, at+n)
			}
		}
	}
	if m != nil {
		wholeOverrides(s, m)
		between(s, m)
	}
	return m
}

// bidiControl reports whether c is one of Unicode's bidirectional
// formatting characters (embeddings, overrides, isolates and their ends)
// or marks (U+200E, U+200F, U+061C) or another character that shows as
// nothing and is right-to-left, which change the order text shows in and
// show as nothing themselves.
func bidiControl(c rune) bool {
	if c < 0x600 {
		return false
	}
	if c >= 0x202a && c <= 0x202e || c >= 0x2066 && c <= 0x2069 || c == 0x200e || c == 0x200f || c == 0x61c {
		return true
	}
	// Other characters that show as nothing but are right-to-left ones
	// (U+070F SYRIAC ABBREVIATION MARK) reorder what is around them as a
	// right-to-left mark does.
	if !invisible(c) {
		return false
	}
	p, _ := bidi.LookupRune(c)
	return p.Class() == bidi.R || p.Class() == bidi.AL
}

// wholeOverrides marks in m each override's whole run (see displayed),
// the override and a U+202C or U+2069 that ends it too, when m marks
// any of it: a mask inside one would show reversed, and what is left of
// the run reads differently in each order.
func wholeOverrides(s string, m []bool) {
	for _, run := range overrideRuns(s) {
		start, end := run[0], run[1]
		if c, n := utf8.DecodeRuneInString(s[end:]); c == '\u202c' || c == '\u2069' {
			end += n
		}
		if slices.Contains(m[start:end], true) {
			mark(m, len(s), start, end)
		}
	}
}

// between marks in m the characters that read as nothing (see foldRune:
// invisible ones, marks, controls) between two marked bytes: a secret
// with a zero-width space between each of its characters is one mask.
func between(s string, m []bool) {
	last := -1 // the end of the last marked byte
	for i := 0; i < len(s); {
		if m[i] {
			if last >= 0 {
				mark(m, len(s), last, i)
			}
			i++
			last = i
			continue
		}
		c, n := utf8.DecodeRuneInString(s[i:])
		if !readsAsNothing(c) {
			last = -1
		}
		i += n
	}
}

// readsAsNothing reports whether foldRune writes nothing for c.
func readsAsNothing(c rune) bool {
	return c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c >= 0x7f && c < 0xa0 ||
		c >= 0x80 && (invisible(c) || unicode.Is(unicode.Mn, c) || unicode.Is(unicode.Me, c) || c == utf8.RuneError)
}

// maskOverrides returns s with each right-to-left override's run (see
// displayed) replaced by Mask when the word it stands in (the text around
// it up to white space on either side; white space inside a run does not
// end the word), read in either order, holds something to mask: two
// secrets in one override, one in each order, or a rule's key in one
// order and its value, would each be read in one reading only. Other
// overrides, and the text around them, are kept. Each word is read once,
// for all of its runs: text of many runs costs in proportion to its
// length.
func (r *Redactor) maskOverrides(s string) string {
	var b strings.Builder
	done := 0         // s[:done] is written
	var runs [][2]int // the runs of the word s[lo:hi]
	lo, hi := 0, 0
	flush := func() {
		if len(runs) == 0 {
			return
		}
		found := false
		for _, k := range readings(s[lo:hi]) {
			if r.maskSecrets(k) != k || rules(k) != k {
				found = true
				break
			}
		}
		if found {
			for _, run := range runs {
				b.WriteString(s[done:run[0]])
				b.WriteString(Mask)
				done = run[1]
			}
		}
		runs = runs[:0]
	}
	for _, run := range overrideRuns(s) {
		start, end := run[0], run[1]
		if start >= hi {
			// A new word: back from the run to white space, no further
			// than the last word.
			flush()
			lo = start
			for lo > hi {
				c, n := utf8.DecodeLastRuneInString(s[:lo])
				if unicode.IsSpace(c) {
					break
				}
				lo -= n
			}
			hi = start
		}
		runs = append(runs, [2]int{start, end})
		// On from the run's end (its last character, a line end, belongs
		// to the word) to white space.
		if hi < end {
			hi = end
			for hi < len(s) {
				c, n := utf8.DecodeRuneInString(s[hi:])
				if unicode.IsSpace(c) && hi > end {
					break
				}
				hi += n
			}
		}
	}
	flush()
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// Unicode's tag characters U+E0020–U+E007E are ASCII that shows as
// nothing: a model reads them, a person does not see them.
const tagFirst, tagLast, tagOffset = 0xe0020, 0xe007e, 0xe0000

// asModelReads returns s with each tag character as the ASCII it stands
// for, or "" when s has none: the text a model reads, tags and visible
// text together, whole or interleaved.
func asModelReads(s string) string {
	if !strings.Contains(s, "\U000E0000"[:2]) {
		return ""
	}
	found := false
	t := strings.Map(func(c rune) rune {
		if c >= tagFirst && c <= tagLast {
			found = true
			return c - tagOffset
		}
		return c
	}, s)
	if !found {
		return ""
	}
	return t
}

// maskTags returns s masked as a model reads it (see asModelReads) when
// that masks more: a secret spelled in tag characters, alone or
// alternating with visible ones, shows as nothing and reaches a model.
func (r *Redactor) maskTags(s string) string {
	m := asModelReads(s)
	if m == "" {
		return s
	}
	// In either order of an override: a model reads tags as stored.
	for _, k := range readings(m) {
		if red := r.mask(k); red != k {
			return red
		}
	}
	return s
}

// mask is String for text without invisible characters.
func (r *Redactor) mask(s string) string { return rules(r.maskSecrets(s)) }

// rules masks what the generic rules find: URLs' user info and query
// values, bearer values, Authorization values, secret-named keys' values.
func rules(s string) string {
	s = urlRE.ReplaceAllStringFunc(s, URL)
	s = schemeRE.ReplaceAllString(s, "$1 "+Mask)
	s = authRE.ReplaceAllStringFunc(s, maskAuth)
	s = xmlRE.ReplaceAllString(s, "${1}"+Mask)
	return keyRE.ReplaceAllString(s, "${1}"+Mask)
}

// maskAuth masks an Authorization value that schemeRE left (a scheme it
// does not know, or none).
func maskAuth(m string) string {
	sub := authRE.FindStringSubmatch(m)
	if sub[2] == Mask {
		return m
	}
	return sub[1] + Mask
}

// maskSecrets masks the secrets r was given in s, whole and in pieces.
func (r *Redactor) maskSecrets(s string) string { return render(s, r.secretMarks(s)) }

// secretMarks returns which bytes of s belong to the secrets r was given,
// whole and in pieces (one bool per byte of s), or nil when none does.
func (r *Redactor) secretMarks(s string) []bool {
	if r == nil {
		return nil
	}
	m := wholeMarks(s, r.secrets)
	m = r.acrossLinesMarks(s, m)
	m = r.spacedOutMarks(s, m)
	m = r.punctuatedMarks(s, m)
	m = r.cutPieceMarks(s, m)
	return r.pieceMarks(s, m)
}

// wholeMarks returns which bytes of s belong to one of secrets, whole, or
// nil when none does.
func wholeMarks(s string, secrets []string) []bool {
	var m []bool
	for _, sec := range secrets {
		for off := 0; ; {
			i := strings.Index(s[off:], sec)
			if i < 0 {
				break
			}
			m = mark(m, len(s), off+i, off+i+len(sec))
			off += i + len(sec)
		}
	}
	return m
}

// Configured returns s with the secrets the writer was given (NewFor's
// given; New's all) that look like credentials (eight bytes or more, not
// letters alone, no date; of words, see WithWords, only generated-looking
// ones) masked as String masks them — whole in every form New
// derives (escaped, base64, hexadecimal), spelled with characters that
// show as nothing or that read as others between its own, spaced out or
// split across lines, and the 8-byte pieces of a generated one (a secret
// cut short, or split in two) — and nothing else. It is for what a server
// serves as its own text (its descriptors, the texts it answers reads
// with), which may echo the credentials contextd sent it (an endpoint
// that shows the request it got): the generic rules would spoil it where
// it documents credentials ("token=YOUR_TOKEN", a URL with a query), the
// shorter secrets (a URL's "?format=json") are words, and another
// server's secrets it was never sent. Unlike String it keeps the rest of
// s byte for byte (bidirectional controls, bytes that are not UTF-8).
func (r *Redactor) Configured(s string) string {
	if r == nil || r.own == nil {
		return s
	}
	if len(s) > maxReadBytes {
		// Read as it shows only up to maxReadBytes: folding every
		// character of a text of ever new ones cost 2 s a MiB.
		return render(s, r.own.secretMarks(s))
	}
	return render(s, r.own.readMarks(s))
}

// maxReadBytes is the longest text Configured also reads as it shows
// (readings): longer texts (most of which no caller is shown whole) are
// searched as written.
const maxReadBytes = 1 << 20

// ConfiguredBytes is Configured for bytes that are no text (a blob): the
// secrets Configured masks, whole in every form New derives, are
// overwritten with '*' byte for byte, so the data keeps its length and
// layout. b is returned as is when it holds none, else a copy.
func (r *Redactor) ConfiguredBytes(b []byte) []byte {
	if r == nil || r.own == nil {
		return b
	}
	m := wholeMarks(string(b), r.own.secrets)
	if m == nil {
		return b
	}
	out := slices.Clone(b)
	for i, on := range m {
		if on {
			out[i] = '*'
		}
	}
	return out
}

// mark sets m[from:to], making m (n bytes long) when it is nil.
func mark(m []bool, n, from, to int) []bool {
	if m == nil {
		m = make([]bool, n)
	}
	for i := from; i < to; i++ {
		m[i] = true
	}
	return m
}

// render returns s with each run of bytes m marks replaced by Mask.
func render(s string, m []bool) string {
	if m == nil {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case !m[i]:
			b.WriteByte(s[i])
		case i == 0 || !m[i-1]:
			b.WriteString(Mask)
		}
	}
	return b.String()
}

// Holds reports whether s holds a credential, for text about to be sent
// rather than shown: one of r's secrets that looks like a credential (8
// bytes or more, with a digit or a symbol: not a word such as a URL's
// user name "postgres" or a query value "engineering"), in any form
// String masks, or a piece of a generated one; a URL with user info, or
// with a query value that looks generated (?key=AIza…, X-Amz-Signature=…);
// a credential-like value after "Bearer "/"Basic "; or any value after a
// secret-named key ("token=", "password:", but not "pageToken="). It is
// checked as s reads (see skeleton), and percent-decoded.
func (r *Redactor) Holds(s string) bool {
	if u, err := url.PathUnescape(s); err == nil && u != s && r.holds(u) {
		return true // as a URI carries it
	}
	if m := asModelReads(s); m != "" && r.holds(m) {
		return true // in tag characters (see maskTags)
	}
	return r.holds(s)
}

// HoldsWhole is Holds without the pieces: it reports whether s holds a
// configured secret whole (in any form Holds finds), or what the generic
// rules find, but not whether it holds 8 bytes of a generated secret. It
// is for text a caller wrote: a caller told which pieces of a secret its
// text holds could recover the secret a byte at a time, guessing each
// next one.
func (r *Redactor) HoldsWhole(s string) bool { return r.wholeOnly().Holds(s) }

// StringWhole is String without the pieces: whole secrets, in every form
// and reading String finds, and what the generic rules find, but not the
// 8-byte pieces of a generated secret or a piece beside a cut. It is for
// text that quotes what a caller wrote, in a form contextd cannot undo (a
// server's error quoting a URI re-encoded or cut): masking pieces there
// would tell the caller which of its guesses begin a secret.
func (r *Redactor) StringWhole(s string) string { return r.wholeOnly().String(s) }

// NewFor returns a Redactor for text that only the holder of given could
// have written (a server's errors, given its own credentials): it masks
// every secret of all whole, in every form and reading New's does, and
// the pieces and cut ends of given's alone. Masking pieces of a secret the
// writer was not given would tell it, from what is shown, which of its
// guesses begin one.
func NewFor(given, all []string) *Redactor {
	r := New(append(slices.Clone(all), given...)...)
	g := New(given...)
	r.pieces = g.pieces // runs of bytes, not tied to r.secrets' order
	r.own, r.given = g.own, g.given
	// Cut ends point into r.secrets: keep those of given's secrets.
	mine := func(ps []piece) []piece {
		return slices.DeleteFunc(slices.Clone(ps), func(p piece) bool { return !slices.Contains(g.secrets, r.secrets[p.secret]) })
	}
	for k, ps := range r.heads {
		if r.heads[k] = mine(ps); len(r.heads[k]) == 0 {
			delete(r.heads, k)
		}
	}
	for k, ps := range r.tails {
		if r.tails[k] = mine(ps); len(r.tails[k]) == 0 {
			delete(r.tails, k)
		}
	}
	return r
}

// wholeOnly returns r without its pieces (see HoldsWhole).
func (r *Redactor) wholeOnly() *Redactor {
	if r == nil {
		return nil
	}
	w := *r
	w.pieces, w.heads, w.tails = nil, nil, nil
	return &w
}

func (r *Redactor) holds(s string) bool {
	if strings.Contains(s, rlo) {
		var b strings.Builder
		fold(&b, s)
		if r.holdsAsRead(s, b.String()) {
			return true
		}
	}
	return r.holdsAsRead(s, skeleton(s))
}

// holdsAsRead is holds for s read as v.
func (r *Redactor) holdsAsRead(s, v string) bool {
	if r != nil {
		// A secret as written (one in another script than Latin).
		for _, sec := range r.strong {
			if strings.Contains(s, sec) {
				return true
			}
		}
	}
	if r != nil {
		for _, sec := range r.strong {
			if strings.Contains(v, sec) {
				return true
			}
		}
		if r.maskPieces(v) != v || r.spacedOut(v) != v || r.punctuated(v) != v {
			return true
		}
		// Split by characters that read as ASCII punctuation ("ː" as
		// ":"): as written, they split it.
		if r.spacedOut(s) != s {
			return true
		}
	}
	if holdsKeyRE.MatchString(v) || holdsMoreRE.MatchString(v) {
		return true
	}
	for _, m := range userInfoRE.FindAllStringSubmatch(v, -1) {
		if !addressSchemes[strings.ToLower(m[1])] {
			return true
		}
	}
	for _, m := range schemeRE.FindAllString(v, -1) {
		if _, tok, _ := strings.Cut(m, " "); strings.ContainsAny(strings.TrimSpace(tok), "0123456789+/=") {
			return true
		}
	}
	for _, u := range urlRE.FindAllString(v, -1) {
		p, err := url.Parse(u)
		if err != nil {
			if strings.Contains(u, "@") {
				return true
			}
			continue
		}
		if p.User != nil {
			return true
		}
		for _, vals := range p.Query() {
			if slices.ContainsFunc(vals, random) {
				return true
			}
		}
	}
	return false
}

// holdsKeyRE is keyRE for Holds: the key begins a word, so "pageToken=2"
// and "next_page_token=3" are not credentials.
var holdsKeyRE = regexp.MustCompile(`(?i)\b(?:` + secretKeys + `)['"]?\s*(?:=>|[=:])\s*['"]?[^\s"'&,;<]+`)

// holdsMoreRE finds, for Holds only (they would mask too much of what is
// shown), values after the names keys go by (AccountKey=, masterKey:,
// SharedAccessKey=, signingKey=; not sortKey= or pageToken=) and after
// names ending in secret or password, and after a command line's
// credential options (curl -u user:X, --user=user:X, --password X).
var holdsMoreRE = regexp.MustCompile(`(?i)(?:\b(?:account|master|shared[_-]?access|signing|encryption|secret|private|access|storage|subscription)[_-]?key['"]?\s*(?:=>|[=:])\s*['"]?[^\s"'&,;<]+|[a-z0-9]+(?:secret|password|passwd)['"]?\s*(?:=>|[=:])\s*['"]?[^\s"'&,;<]+|\b(?:curl|wget|http)\b[^\n]*?\s(?:-u\s*|--user[=\s]+)[^\s:]+:\S+|--(?:password|passwd|token|secret|api-key|apikey)(?:=|\s+)\S+)`)

// userInfoRE finds user info without a scheme before it ("bob:pw@db:5432",
// "//bob:pw@host", "https:/bob:pw@host"): a name, ":", a password and "@"
// before a host name.
var userInfoRE = regexp.MustCompile(`(?:^|[\s/'"(=])([A-Za-z0-9._%+-]+):[^\s@/:]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*`)

// addressSchemes are URI schemes whose "scheme:name@host" is an address,
// not user info with a password (mailto:alice@example.org).
var addressSchemes = map[string]bool{"mailto": true, "sip": true, "sips": true, "xmpp": true, "acct": true, "im": true, "pres": true}

// Inside reports whether a configured secret is worth looking for inside
// longer values (an environment variable holding a URL): one that looks
// generated (12 bytes or more with letters and digits, no space, no
// "://"), or a password with a symbol (!@#$%^&*+=?), 8 bytes or more. Paths
// ("/home/alice"), regions ("us-east-1") and words are looked for only
// as whole values: PATH and PWD hold them.
func Inside(s string) bool {
	return random(s) && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~") && !strings.HasPrefix(s, "./") ||
		len(s) >= 8 && strings.ContainsAny(s, "!@#$%^&*+=?") && !strings.Contains(s, "://") && strings.IndexFunc(s, unicode.IsSpace) < 0
}

// CredentialLike reports whether a configured secret looks like a
// credential rather than a word: 8 bytes or more, with a digit or a symbol
// ("Pw0rd!2024", "correct-horse-battery", not "postgres" or
// "engineering"). Holds looks for those only, and so does what looks for
// secrets inside longer values.
func CredentialLike(s string) bool { return credentialLike(s) }

func credentialLike(s string) bool {
	return len(s) >= 8 && strings.IndexFunc(s, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsSpace(c) }) >= 0
}

// echoable reports whether a word (see WithWords) is masked in what its
// server serves: generated-looking (twelve bytes or more of letters and
// digits, see random) or holding a symbol passwords hold; not a region
// ("eu-west-1"), a project ("acme-prod-2") or a MIME type.
func echoable(s string) bool {
	return random(s) || strings.ContainsFunc(s, func(c rune) bool {
		return c < utf8.RuneSelf && asciiPunct(byte(c)) && !strings.ContainsRune("-._/:+,", c)
	})
}

// isDate reports whether s is a date or a date and time (RFC 3339).
func isDate(s string) bool {
	for _, layout := range []string{time.DateOnly, time.RFC3339, time.RFC3339Nano, "2006-01-02T15:04:05", time.DateTime} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// ignorable are the code points a terminal or a browser shows as nothing
// (Unicode's default-ignorable code points: format characters such as
// U+200B ZERO WIDTH SPACE and U+00AD SOFT HYPHEN, variation selectors, and
// the few others the standard lists). A secret with one between each of
// its characters matched no rule and still read whole on screen.
var ignorable = []*unicode.RangeTable{unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point}

func invisible(c rune) bool { return unicode.IsOneOf(ignorable, c) }

// visible returns s without its default-ignorable code points.
func visible(s string) string {
	if strings.IndexFunc(s, invisible) < 0 {
		return s
	}
	return strings.Map(func(c rune) rune {
		if invisible(c) {
			return -1
		}
		return c
	}, s)
}

// Clip returns s cut to at most n bytes at a character boundary, with Cut
// after it when it was cut: the mark String looks for.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Cut
}

// cutPieceMarks adds to m (see secretMarks), next to each Cut (or "...")
// in s, the pieces of a secret a cut left (see String). Its work is
// linear in len(s): each mark is found once, and each looks up its
// candidate pieces by four bytes.
func (r *Redactor) cutPieceMarks(s string, m []bool) []bool {
	if len(r.secrets) == 0 || !strings.Contains(s, Cut) && !strings.Contains(s, asciiCut) {
		return m
	}
	pos := 0            // s[:pos] is looked at
	cut, dots := -1, -1 // the next Cut and "..." at or after pos; -2 when none is left
	next := func(at int, mark string) int {
		if at == -2 || at >= pos {
			return at
		}
		if j := strings.Index(s[pos:], mark); j >= 0 {
			return pos + j
		}
		return -2
	}
	for {
		cut, dots = next(cut, Cut), next(dots, asciiCut)
		i, cm := cut, Cut
		if dots >= 0 && (i < 0 || dots < i) {
			i, cm = dots, asciiCut
		}
		if i < 0 {
			return m
		}
		if n := r.longestPiece(s[pos:i], true); n > 0 {
			m = mark(m, len(s), i-n, i)
		}
		pos = i + len(cm)
		if n := r.longestPiece(s[pos:], false); n > 0 {
			m = mark(m, len(s), pos, pos+n)
			pos += n
		}
	}
}

// maskPieces masks every run of s made of pieces of secrets, each
// pieceBytes long (see Redactor.pieces).
func (r *Redactor) maskPieces(s string) string { return render(s, r.pieceMarks(s, nil)) }

// pieceMarks adds to m (see secretMarks) the runs maskPieces masks.
func (r *Redactor) pieceMarks(s string, m []bool) []bool {
	if len(r.pieces) == 0 || len(s) < pieceBytes {
		return m
	}
	for i := 0; i+pieceBytes <= len(s); i++ {
		strong, ok := r.pieces[binary.LittleEndian.Uint64([]byte(s[i:i+pieceBytes]))]
		if !ok {
			continue
		}
		// A run of pieces: as far as the next ones go on overlapping.
		j := i + pieceBytes
		for k := i + 1; k+pieceBytes <= len(s) && k <= j; k++ {
			if st, ok := r.pieces[binary.LittleEndian.Uint64([]byte(s[k:k+pieceBytes]))]; ok {
				j = k + pieceBytes
				strong = strong || st
			}
		}
		if !strong && utf8.RuneCountInString(s[i:j]) < minWordRun {
			continue
		}
		// Whole characters: a piece may begin or end inside one.
		from := i
		for from > 0 && !utf8.RuneStart(s[from]) {
			from--
		}
		for j < len(s) && !utf8.RuneStart(s[j]) {
			j++
		}
		m = mark(m, len(s), from, j)
		i = j - 1
	}
	return m
}

// acrossLines masks the secrets in s that a line break splits (a program
// wrapping its output at 80 columns): each whole secret found in s with
// its line breaks removed has each of its pieces masked, the line breaks
// kept.
func (r *Redactor) acrossLines(s string) string { return render(s, r.acrossLinesMarks(s, nil)) }

func (r *Redactor) acrossLinesMarks(s string, m []bool) []bool {
	if !strings.ContainsAny(s, "\n\r") {
		return m
	}
	return acrossMarks(s, func(_ int, c rune) bool { return c == '\n' || c == '\r' }, r.secrets, func(int) int { return 1 }, m)
}

// separator reports whether c reads as a separator between a secret's
// characters: a space, ASCII punctuation, and other punctuation, symbols
// and emoji ("M·i·s·t·y", "Q•x•7", "Q→x→7"), the Arabic tatweel.
func separator(c rune) bool {
	if c < utf8.RuneSelf {
		return c == ' ' || asciiPunct(byte(c))
	}
	return c != '…' && (unicode.IsPunct(c) || unicode.IsSymbol(c) || unicode.Is(unicode.Zs, c) || c == 'ـ')
}

func asciiPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9')
}

// punctuated masks the credential-like secrets that ASCII punctuation or
// spaces split between most of their characters ("Q-x-7-v-…", "Q.x.7.v…",
// "M_i_s_t_y-B_o_o_k_s"), their own punctuation dropped too: at least one
// separator in every other gap, so that prose that happens to hold a
// secret's words ("deployed to prod, 2024!") is kept.
func (r *Redactor) punctuated(s string) string { return render(s, r.punctuatedMarks(s, nil)) }

func (r *Redactor) punctuatedMarks(s string, m []bool) []bool {
	if strings.IndexFunc(s, separator) < 0 {
		return m
	}
	return acrossMarks(s, func(_ int, c rune) bool { return separator(c) }, r.bare, func(n int) int { return (n - 1) / 2 }, m)
}

// spacedOut masks the credential-like secrets (see Holds) that white space
// or a character outside ASCII that none of them holds splits ("Q x 7 v
// …", one character at a time, as a hair space or a no-break space
// between each becomes once normalised; "Q·x·7", "Q→x→7", a mark on a
// separator; "Qˈxˈ7", "Qঃx", a letter or spacing mark alone between two
// of its characters, in two places or more; not a letter's accent), as
// acrossLines does for
// line breaks: such a character between a secret's characters is there to
// hide it. Word-like secrets are not looked for so: "js on" is no secret
// "json".
func (r *Redactor) spacedOut(s string) string { return render(s, r.spacedOutMarks(s, nil)) }

func (r *Redactor) spacedOutMarks(s string, m []bool) []bool {
	if len(r.strong) == 0 {
		return m
	}
	// Each character's kind, once: a hard break (white space,
	// punctuation, a symbol, what shows as nothing, a mark drawn on a
	// separator), a letter or spacing mark of a script none of the
	// secrets uses, an accent (a nonspacing mark), or part of a secret.
	const (
		kept = iota
		hard
		letter
		accent
	)
	kinds := make([]uint8, len(s)) // at each character's first byte
	soft := false
	for i, c := range s {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			kinds[i] = hard
		case c < utf8.RuneSelf || r.strongRunes[c]:
		case symbolMark(c):
			kinds[i] = hard
		case unicode.Is(unicode.Mn, c):
			kinds[i] = accent
		case separator(c) || unicode.IsSpace(c) || invisible(c):
			kinds[i] = hard
		default:
			kinds[i] = letter
			soft = true
		}
	}
	m = acrossMarks(s, func(i int, _ rune) bool { return kinds[i] == hard }, r.strong, func(int) int { return 1 }, m)
	if !soft {
		return m
	}
	// A letter splits a secret only alone between its characters ("Qˈxˈ7",
	// "Qঃx"; its accents, and those on the one before, aside), and in two
	// places or more: honest text in a script without spaces holds a short
	// secret's parts between words of its own ("连接postgres失败1次"), or one
	// particle between two words ("adminは2024年").
	neighbour := func(i int, step int) uint8 {
		for j := i + step; j >= 0 && j < len(s); j += step {
			if !utf8.RuneStart(s[j]) {
				continue
			}
			if kinds[j] != accent {
				return kinds[j]
			}
		}
		return kept
	}
	alone := make([]bool, len(s))
	for i := range s {
		if utf8.RuneStart(s[i]) && kinds[i] == letter {
			alone[i] = neighbour(i, -1) != letter && neighbour(i, 1) != letter
		}
	}
	return acrossMarks(s, func(i int, _ rune) bool { return kinds[i] == hard || alone[i] }, r.strong, func(int) int { return 2 }, m)
}

// symbolMark reports whether c is a mark drawn on a separator rather than
// a letter's accent: overlays (U+0334–U+0338), marks for symbols (the
// keycap U+20E3) and variation selectors. Other marks are a letter's, and
// read with it (see skeleton).
func symbolMark(c rune) bool {
	return c >= 0x334 && c <= 0x338 || c >= 0x20d0 && c <= 0x20ff || c >= 0xfe00 && c <= 0xfe0f
}

// acrossMarks adds to m (see secretMarks) each of secrets found in s with
// the bytes isBreak reports removed, and split by them in at least
// minBreaks(len(secret)) places (one or more breaks in a row count once):
// the secret's own bytes, not the breaks.
func acrossMarks(s string, isBreak func(i int, c rune) bool, secrets []string, minBreaks func(int) int, m []bool) []bool {
	if len(secrets) == 0 {
		return m
	}
	joined := make([]byte, 0, len(s))
	pos := make([]int32, 0, len(s)) // pos[j]: the index in s of joined[j]
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		if !isBreak(i, c) {
			for j := range n {
				joined = append(joined, s[i+j])
				pos = append(pos, int32(i+j))
			}
		}
		i += n
	}
	for _, sec := range secrets {
		for off := 0; sec != ""; {
			k := bytes.Index(joined[off:], []byte(sec))
			if k < 0 {
				break
			}
			start, end := off+k, off+k+len(sec)
			gaps := 0 // between two of its bytes, one break or more
			for j := start + 1; j < end; j++ {
				if pos[j] != pos[j-1]+1 {
					gaps++
				}
			}
			if gaps >= max(1, minBreaks(len(sec))) {
				if m == nil {
					m = make([]bool, len(s))
				}
				for j := start; j < end; j++ {
					m[pos[j]] = true
				}
			}
			off = end
		}
	}
	return m
}

// longestPiece returns the length of the longest piece of a secret (at
// least minSecret bytes, shorter than the secret) that ends text (a
// secret's start, when atEnd) or begins it (a secret's end); 0 when none.
func (r *Redactor) longestPiece(text string, atEnd bool) int {
	if len(text) < minSecret {
		return 0
	}
	best := 0
	if atEnd {
		for _, p := range r.heads[key4(text[len(text)-minSecret:])] {
			if sec := r.secrets[p.secret]; p.n > best && p.n <= len(text) && strings.HasSuffix(text, sec[:p.n]) {
				best = p.n
			}
		}
		return best
	}
	for _, p := range r.tails[key4(text)] {
		if sec := r.secrets[p.secret]; p.n > best && p.n <= len(text) && strings.HasPrefix(text, sec[len(sec)-p.n:]) {
			best = p.n
		}
	}
	return best
}

// maxEscaped is the longest secret whose escaped forms (see Escaped) are
// looked for, in bytes: a key or a certificate (3 KB) is; a 128 KB blob
// is looked for as written and encoded.
const maxEscaped = 4 << 10

// minBare is the shortest secret, its punctuation dropped, punctuated
// looks for.
const minBare = 10

// maxIndexedPiece bounds the pieces longestPiece finds, in bytes: a cut
// further inside a longer secret leaves a piece the 8-byte pieces mask
// when the secret looks generated (as long ones, keys and certificates,
// do). Indexing every length of a 128 KB credential took 600 MB.
const maxIndexedPiece = 512

// piece is a secret's first or last n bytes (see Redactor.heads).
type piece struct{ secret, n int }

// key4 returns s's first four bytes as a little-endian uint32.
func key4(s string) uint32 { return binary.LittleEndian.Uint32([]byte(s[:minSecret])) }

// indexPieces fills r.heads and r.tails from r.secrets.
func (r *Redactor) indexPieces() {
	r.heads, r.tails = map[uint32][]piece{}, map[uint32][]piece{}
	for i, sec := range r.secrets {
		for n := minSecret; n < min(len(sec), maxIndexedPiece+1); n++ {
			r.heads[key4(sec[n-minSecret:n])] = append(r.heads[key4(sec[n-minSecret:n])], piece{i, n})
			r.tails[key4(sec[len(sec)-n:])] = append(r.tails[key4(sec[len(sec)-n:])], piece{i, n})
		}
	}
}

// Error returns err with its message masked; errors.Is and errors.As still
// see err's chain. It returns nil for nil.
func (r *Redactor) Error(err error) error { return maskError(err, r.String) }

// ErrorWhole is Error masking as StringWhole does, for an error that
// quotes what a caller wrote.
func (r *Redactor) ErrorWhole(err error) error { return maskError(err, r.StringWhole) }

func maskError(err error, mask func(string) string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := mask(msg)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

// Withheld returns an error whose message is msg, in place of err's (which
// may quote what must not be shown), and that unwraps to err, for
// errors.Is and errors.As.
func Withheld(err error, msg string) error { return &redacted{msg: msg, err: err} }

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// URL masks the user info and every query value of one URL. Text that does
// not parse as a URL (a password with a bare "%", "/" or "?" is a common
// cause) has everything between "://" and its last "@" masked, and
// everything after the first "?" that follows.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return unparsedURL(raw)
	}
	changed := false
	if u.User != nil {
		u.User = url.User(Mask)
		changed = true
	}
	if u.RawQuery != "" {
		u.RawQuery = maskQuery(u.RawQuery)
		changed = true
	}
	if strings.Contains(u.Fragment, "=") {
		// OAuth's implicit flow puts tokens in the fragment.
		u.Fragment, u.RawFragment = maskQuery(u.Fragment), ""
		changed = true
	}
	if !changed {
		return raw
	}
	return u.String()
}

// unparsedURL masks text that looks like a URL but does not parse: the
// user info cannot be told from the host by the parser's rules, so all of
// the authority up to the last "@" goes (a password may hold "/", "?" or
// "@"), and whatever follows a "?" after it.
func unparsedURL(raw string) string {
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + len("://")
	}
	head, rest := raw[:start], raw[start:]
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		head, rest = head+Mask+"@", rest[i+1:]
	}
	if i := strings.Index(rest, "?"); i >= 0 {
		rest = rest[:i+1] + Mask
	}
	return head + rest
}

// maskQuery masks each value of a query string, keeping its keys and order.
func maskQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if ok {
			parts[i] = k + "=" + Mask
		} else if p != "" {
			parts[i] = Mask
		}
	}
	return strings.Join(parts, "&")
}

// maxLine bounds Line's result, in bytes.
const maxLine = 200

// Line returns one short, safe line from text a program printed (a stdio
// server's stderr): its last non-blank line, masked by r, with control
// characters escaped, cut to 200 bytes. It returns "" when text is blank.
func (r *Redactor) Line(text string) string {
	// Overrides are kept for String, which reads the text in both of
	// their orders.
	text = strings.Map(func(c rune) rune {
		if invisible(c) && !strings.ContainsRune(rlo+overrideEnds, c) {
			return -1
		}
		return c
	}, text)
	if r != nil {
		text = r.acrossLines(text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(lines) > 1 && r != nil {
		// The line may begin with the end of a secret wrapped from the
		// line before, whose start fell outside the text.
		if n := r.longestPiece(last, false); n > 0 {
			last = Mask + last[n:]
		}
	}
	last = Control(r.String(last))
	if len(last) > maxLine {
		cut := maxLine
		for cut > 0 && !utf8.RuneStart(last[cut]) {
			cut--
		}
		last = last[:cut] + Cut
	}
	return last
}

// Control escapes what a terminal would act on: C0 and C1 control
// characters (ESC starts cursor, title and OSC 8 hyperlink sequences), DEL,
// bidirectional overrides, the characters that show as nothing (U+200B
// ZERO WIDTH SPACE, U+00AD SOFT HYPHEN, U+FEFF, word joiners, every other
// format character and variation selector but the zero-width joiners and
// an emoji's one presentation selector), interlinear annotation marks,
// and bytes that are not UTF-8. Newlines and tabs are escaped too; see
// [ControlText] for multi-line text.
func Control(s string) string { return escape(s, false) }

// ControlText is Control keeping newlines and tabs, for text shown as a
// block (a resource's contents).
func ControlText(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	clean := true
	prev := rune(-1)
	for i, c := range s {
		if unsafe(c, prev, keepLines) || (c == utf8.RuneError && !validAt(s, i)) {
			clean = false
			break
		}
		prev = c
	}
	if clean {
		return s
	}
	var b strings.Builder
	prev = -1
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		was := prev
		prev = c
		switch {
		case c == utf8.RuneError && n <= 1:
			b.WriteString(`\x` + hex2(s[i]))
		case unsafe(c, was, keepLines):
			switch c {
			case '\n':
				b.WriteString(`\n`)
			case '\t':
				b.WriteString(`\t`)
			case '\r':
				b.WriteString(`\r`)
			case 0x1b:
				b.WriteString(`\e`)
			default:
				switch {
				case c < 0x100:
					b.WriteString(`\x` + hex2(byte(c)))
				case c < 0x10000:
					b.WriteString(`\u` + hex2(byte(c>>8)) + hex2(byte(c)))
				default:
					b.WriteString(`\U` + hex2(byte(c>>24)) + hex2(byte(c>>16)) + hex2(byte(c>>8)) + hex2(byte(c)))
				}
			}
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func validAt(s string, i int) bool {
	c, n := utf8.DecodeRuneInString(s[i:])
	return !(c == utf8.RuneError && n <= 1)
}

// unsafe reports whether c, after prev (-1 at the start), is escaped.
func unsafe(c, prev rune, keepLines bool) bool {
	switch {
	case c == '\n' || c == '\t':
		return !keepLines
	case c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0):
		return true
	case c >= 0x202a && c <= 0x202e, c >= 0x2066 && c <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	case c == 0xad, c == 0x180e, c == 0x200b, c >= 0x2060 && c <= 0x2064, c == 0xfeff:
		// Characters that show as nothing and could hide a value's
		// true spelling (zero-width joiners, which emoji need, are kept).
		return true
	case c >= 0xe0000 && c <= 0xe007f:
		// Tags: each spells an ASCII character no terminal shows, a
		// text hidden in plain sight (for a model reading it later).
		return true
	case c >= 0xfff9 && c <= 0xfffb:
		// Interlinear annotation marks: a text between them may be shown
		// as a ruby annotation, or not at all.
		return true
	case c == 0x2028 || c == 0x2029:
		// Line and paragraph separators: some terminals break the line.
		return true
	case c == 0x200e || c == 0x200f || c == 0x61c:
		// Bidirectional marks reorder what is around them in a line (a
		// URI, a name): one may show as another. Prose in a
		// right-to-left script needs them.
		return !keepLines
	case c >= 0x300 && unicode.Is(unicode.Other_Default_Ignorable_Code_Point, c):
		// Fillers that show as nothing or a blank (U+3164 HANGUL
		// FILLER, U+034F COMBINING GRAPHEME JOINER).
		return true
	case c == 0xfe0e || c == 0xfe0f:
		// Text and emoji presentation selectors, which emoji (and
		// keycaps: digits, # and *) need: one after such a character is
		// kept; after anything else (a letter, a mark, punctuation, a
		// space, another invisible character) it hides, as below.
		return !emojiBase(prev)
	case c == 0x200c || c == 0x200d:
		// Zero-width non-joiner and joiner, which scripts and emoji
		// need: one after a character (an emoji's presentation selector
		// included) is kept; in a run, or after a space, they hide.
		return prev < 0 || unicode.IsSpace(prev) || prev == 0x200c || prev == 0x200d
	case unicode.Is(unicode.Prepended_Concatenation_Mark, c):
		// Marks shown over the digits that follow; a run of them hides.
		return unicode.Is(unicode.Prepended_Concatenation_Mark, prev)
	case unicode.In(c, unicode.Cf, unicode.Variation_Selector):
		// Every other format character and variation selector shows as
		// nothing: 256 variation selectors spell any byte, a text
		// hidden behind a visible character (for a model reading it).
		return true
	}
	return false
}

// emojiBase reports whether c may take a presentation selector: the
// emoji are symbols (So), save a few arrows, marks and signs past U+2000
// (↔ ‼ 〰 ℹ), and the keycaps' digits, # and *.
func emojiBase(c rune) bool {
	switch {
	case c >= '0' && c <= '9', c == '#', c == '*', c == 0x2139:
		return true
	case c >= 0x2000 && unicode.In(c, unicode.Sm, unicode.Po, unicode.Pd):
		return true
	}
	return c >= 0 && unicode.Is(unicode.So, c)
}

// hidden reports whether c shows as nothing: a format character (the
// joiners too) or a variation selector.
func hidden(c rune) bool {
	return c >= 0 && unicode.In(c, unicode.Cf, unicode.Variation_Selector)
}

func hex2(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// Handler returns a slog.Handler that masks, with r, the message and every
// string and error attribute before passing records to h, and escapes
// what a terminal would act on or show as nothing in them (ControlText:
// newlines and tabs are h's to quote). slog's JSON handler writes C1
// controls, bidirectional overrides and variation selectors as they are,
// and its text handler the last two: an upstream's error message would
// reach a terminal tailing the log, or hide text in it.
func Handler(h slog.Handler, r *Redactor) slog.Handler {
	return &handler{next: h, r: func() *Redactor { return r }}
}

// HandlerFunc is Handler with the Redactor r returns at each record: one a
// configuration reload replaces. r must be cheap and must not log.
func HandlerFunc(h slog.Handler, r func() *Redactor) slog.Handler {
	return &handler{next: h, r: r}
}

type handler struct {
	next slog.Handler
	r    func() *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.clean(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &handler{next: h.next.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(h.clean(name)), r: h.r}
}

// clean masks s's secrets and escapes its controls.
func (h *handler) clean(s string) string { return ControlText(h.r().String(s)) }

// attr returns a with its key and value masked and escaped. A value of a
// kind slog writes as it is (a map, a struct, bytes: JSON writes map
// keys and nested strings raw, and bytes in base64) is written as its
// text, cleaned.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	a.Key = h.clean(a.Key)
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.clean(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.clean(x.Error()))
		case []string:
			red := make([]string, len(x))
			for i, s := range x {
				red[i] = h.clean(s)
			}
			return slog.Any(a.Key, red)
		case interface{ String() string }:
			return slog.String(a.Key, h.clean(x.String()))
		case []byte:
			return slog.String(a.Key, h.clean(string(x)))
		case nil:
		default:
			return slog.String(a.Key, h.clean(fmt.Sprint(x)))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
