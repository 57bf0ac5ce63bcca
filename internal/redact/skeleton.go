package redact

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/mtibben/confusables"
	"golang.org/x/text/unicode/norm"
)

// skeleton returns s as it reads, for matching: fullwidth forms
// ("ｔｏｋｅｎ"), the compatibility forms of letters and digits
// (mathematical "𝚝𝚘𝚔𝚎𝚗", enclosed, superscript, letterlike) and letters
// with marks ("é", precomposed or not) folded to ASCII (their NFKD forms
// without marks), look-alike letters of other scripts from Unicode's
// confusables data, text after a right-to-left override reversed,
// invalid bytes (U+FFFD) dropped, every space or line separator made a space, Cyrillic and Greek letters that look like
// Latin ones replaced by those, and what shows as nothing or only marks
// the letter before it (default-ignorable code points, combining marks
// such as U+0332 under each character) removed; U+2800 BRAILLE PATTERN
// BLANK, which shows as a space, becomes one, and control characters are
// dropped. A secret respelled so reads the same to a person and matched
// nothing.
func skeleton(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	fold(&b, displayed(s))
	return b.String()
}

// rlo is U+202E RIGHT-TO-LEFT OVERRIDE; overrideEnds, what may end one (see
// overrideRuns): U+202C POP DIRECTIONAL FORMATTING, U+2069 POP DIRECTIONAL
// ISOLATE, and the end of a paragraph (line feed, carriage return, NEL,
// U+2029).
const rlo, overrideEnds = "\u202e", "\u202c\u2069\n\r\u0085\u2029"

// readings returns the ways s reads other than as written: as it shows
// (see skeleton) and, when an override reverses part of it, also in the
// order its characters are stored, which is what a model reads.
func readings(s string) []string {
	k := skeleton(s)
	if !strings.Contains(s, rlo) {
		return []string{k}
	}
	var b strings.Builder
	fold(&b, s)
	return []string{k, b.String()}
}

// displayed returns s in the order it shows: a right-to-left override
// shows what follows it, to the override's end (see overrideRuns), in
// reverse ("\u202e" followed by a secret written backwards reads as the
// secret), each stretch between tabs on its own (a tab is shown at the
// paragraph's level). The overrides themselves are dropped.
func displayed(s string) string {
	if !strings.Contains(s, rlo) {
		return s
	}
	var b strings.Builder
	done := 0
	for _, run := range overrideRuns(s) {
		b.WriteString(s[done:run[0]])
		in := s[run[0]+len(rlo) : run[1]]
		for i, part := range strings.Split(in, "\t") {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(reversed(part))
		}
		done = run[1]
	}
	b.WriteString(s[done:])
	return b.String()
}

// overrideRuns returns where each right-to-left override's run begins (at
// the U+202E) and ends (before what ends it, or at the end of s), as the
// Unicode bidirectional algorithm scopes it: a U+202C POP DIRECTIONAL
// FORMATTING that closes no embedding or override opened inside the run,
// a U+2069 POP DIRECTIONAL ISOLATE that closes an isolate opened before
// the override (one that closes nothing is ignored), or the paragraph's
// end (line feed, carriage return, NEL, U+2029). An override inside a run
// is part of it.
func overrideRuns(s string) [][2]int {
	var runs [][2]int
	isolates := 0 // isolates open at i
	for i := 0; i < len(s); {
		c, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == '\u2066' || c == '\u2067' || c == '\u2068':
			isolates++
		case c == '\u2069':
			isolates = max(isolates-1, 0)
		case paragraphEnd(c):
			isolates = 0
		case c == '\u202e':
			end := overrideEnd(s, i+n, isolates > 0)
			runs = append(runs, [2]int{i, end})
			i = end
			continue
		}
		i += n
	}
	return runs
}

// overrideEnd returns where an override whose text begins at from ends
// (see overrideRuns); isolated tells whether an isolate was open before it.
func overrideEnd(s string, from int, isolated bool) int {
	embeddings, isolates := 0, 0 // opened inside the run
	for j := from; j < len(s); {
		c, n := utf8.DecodeRuneInString(s[j:])
		switch {
		case paragraphEnd(c):
			return j
		case c == '\u202a' || c == '\u202b' || c == '\u202d' || c == '\u202e':
			if isolates == 0 {
				embeddings++
			}
		case c == '\u202c':
			if isolates == 0 {
				if embeddings == 0 {
					return j
				}
				embeddings--
			}
		case c == '\u2066' || c == '\u2067' || c == '\u2068':
			isolates++
		case c == '\u2069':
			if isolates > 0 {
				isolates--
			} else if isolated {
				return j
			}
		}
		j += n
	}
	return len(s)
}

func paragraphEnd(c rune) bool { return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2029' }

// reversed returns s with its characters in reverse order.
func reversed(s string) string {
	r := []rune(s)
	slices.Reverse(r)
	return string(r)
}

// plain reports whether s reads as it is written: printable ASCII, tabs
// and line ends.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// fold writes text as it reads (see skeleton).
func fold(b *strings.Builder, text string) {
	var f folder
	for _, c := range text {
		f.rune(b, c)
	}
}

// A folder is foldRune remembering what each character outside ASCII
// reads as: the lookups (an NFKD decomposition among them) cost far more
// than a map's, and a text repeats its characters (a page of "…" took
// 0.5 s a MiB).
type folder struct{ seen map[rune]string }

// maxFolded bounds the characters a folder remembers.
const maxFolded = 4096

func (f *folder) rune(b *strings.Builder, c rune) {
	if c < 0x80 {
		foldRune(b, c)
		return
	}
	if r, ok := f.seen[c]; ok {
		b.WriteString(r)
		return
	}
	if len(f.seen) >= maxFolded {
		foldRune(b, c) // a text of ever new characters: remembering costs more
		return
	}
	var one strings.Builder
	foldRune(&one, c)
	if f.seen == nil {
		f.seen = map[rune]string{}
	}
	f.seen[c] = one.String()
	b.WriteString(one.String())
}

// reading returns s as it reads (see skeleton), in the order it shows
// (display) or in the order it is stored, and for each of its bytes the
// offset in s of the character it comes from.
func reading(s string, display bool) (string, []int32) {
	var b strings.Builder
	b.Grow(len(s))
	origin := make([]int32, 0, len(s))
	var f folder
	add := func(at int, c rune) {
		f.rune(&b, c)
		for len(origin) < b.Len() {
			origin = append(origin, int32(at))
		}
	}
	var runs [][2]int
	if display {
		runs = overrideRuns(s)
	}
	for i := 0; i < len(s); {
		if len(runs) > 0 && i == runs[0][0] {
			// As displayed (see displayed): what follows the override,
			// to its end, in reverse, each stretch between tabs on its
			// own.
			start, end := i+len(rlo), runs[0][1]
			runs = runs[1:]
			for part := start; part < end; {
				stop := end
				if t := strings.IndexByte(s[part:end], '\t'); t >= 0 {
					stop = part + t
				}
				for k := stop; k > part; {
					c, n := utf8.DecodeLastRuneInString(s[part:k])
					k -= n
					add(k, c)
				}
				if stop < end {
					add(stop, '\t')
					stop++
				}
				part = stop
			}
			i = end
			continue
		}
		c, n := utf8.DecodeRuneInString(s[i:])
		add(i, c)
		i += n
	}
	return b.String(), origin
}

// foldRune writes c as it reads (see skeleton).
func foldRune(b *strings.Builder, c rune) {
	switch {
	case c < 0x20 && c != '\t' && c != '\n' && c != '\r', c >= 0x7f && c < 0xa0:
		// Control characters between a secret's characters show as
		// nothing in many hosts.
	case c < 0x80:
		b.WriteRune(c)
	case invisible(c), unicode.Is(unicode.Mn, c), unicode.Is(unicode.Me, c):
	case c == utf8.RuneError:
		// What was no UTF-8 (one invalid byte between each of a
		// secret's characters; a Latin-1 copy's "ä") shows as a box
		// or nothing.
	case c == 0x2800, unicode.Is(unicode.Zs, c), unicode.Is(unicode.Zl, c), unicode.Is(unicode.Zp, c):
		b.WriteByte(' ')
	case c >= 0xff01 && c <= 0xff5e: // fullwidth ASCII
		b.WriteRune(c - 0xfee0)
	default:
		if l, ok := lookalike[c]; ok {
			b.WriteRune(l)
		} else if l, ok := confusable()[c]; ok {
			b.WriteByte(l)
		} else if n := compat(c); n != "" {
			// Mathematical, enclosed (ⓠ), superscript (ˣ),
			// letterlike (ℚ, K) and other compatibility forms of
			// letters and digits, and letters with marks ("é"
			// reads as "e" however it is encoded: precomposed, or
			// "e" and U+0301); not "…", which is no letter.
			b.WriteString(n)
		} else {
			b.WriteRune(c)
		}
	}
}

// compat returns c decomposed (NFKD) without its marks when that is ASCII
// letters or digits, or one ASCII character (small forms of punctuation:
// "﹗" is "!"), or one letter lookalike maps ("ё" is "e"); else "" ("…"
// is "...": no letter). Most characters have no decomposition, which is
// cheap to tell.
func compat(c rune) string {
	var rb [utf8.UTFMax]byte
	n := utf8.EncodeRune(rb[:], c)
	if norm.NFKD.Properties(rb[:n]).Decomposition() == nil {
		return ""
	}
	d := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) {
			return -1
		}
		return r
	}, norm.NFKD.String(string(rb[:n])))
	if asciiAlnum(d) || len(d) == 1 && d[0] > ' ' && d[0] < 0x7f {
		return d
	}
	if r, size := utf8.DecodeRuneInString(d); size == len(d) && size > 0 {
		if l, ok := lookalike[r]; ok {
			return string(l)
		}
	}
	return ""
}

func asciiAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// lookalike maps letters of other scripts (Cyrillic, Greek, Armenian,
// Latin small capitals) to the Latin ones they are drawn like in common
// fonts, and separators to the ASCII ones they look like. Scripts with
// fewer such letters (Cherokee, Lisu) are not mapped.
var lookalike = map[rune]rune{
	'ϲ': 'c', 'ϳ': 'j', 'ȷ': 'j', 'З': '3', 'б': '6', 'Ь': 'b', 'η': 'n',
	'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n', 'զ': 'q',
	'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ꜰ': 'f', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k',
	'ʟ': 'l', 'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v', 'ᴡ': 'w', 'ʏ': 'y', 'ᴢ': 'z',
	'∶': ':', '꞉': ':', 'ː': ':', '﹕': ':', '﹦': '=', '⁼': '=', '﹫': '@',
	'‐': '-', '‑': '-', '‒': '-', '–': '-', '−': '-', 'ǃ': '!',
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't',
	'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ү': 'y', 'һ': 'h', 'ӏ': 'l',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T',
	'У': 'Y', 'Х': 'X', 'І': 'I', 'Ј': 'J', 'Ѕ': 'S', 'Ү': 'Y', 'Һ': 'H', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ӏ': 'I',
	// Greek
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X', 'α': 'a', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p',
	'υ': 'u', 'χ': 'x',
}

// confusable maps the characters Unicode's confusables data (UTS #39,
// through github.com/mtibben/confusables) reads as one ASCII letter or
// digit other than "l" (for letters: a Bengali "৪" is no 8) or as one of
// confusablePunct (for other characters: "։" is ":", a Hebrew yod is no
// apostrophe),
// in the blocks where look-alikes of Latin letters live (Latin extensions,
// IPA, Greek, Cyrillic, Armenian, Cherokee, Coptic, Lisu, letterlike and
// halfwidth forms, Deseret, Osage): Cherokee "Ꮪ" is "S", Lisu "ꓔ" is
// "T". Built once, on first use (about 16,000 characters looked up).
var confusable = sync.OnceValue(func() map[rune]byte {
	m := map[rune]byte{}
	for _, r := range [][2]rune{{0x80, 0x2fff}, {0xa000, 0xabff}, {0xfb00, 0xffef}, {0x10400, 0x104ff}} {
		for c := r[0]; c <= r[1]; c++ {
			if unicode.Is(unicode.Nd, c) {
				continue // digits of other scripts keep their value
			}
			k := confusables.Skeleton(string(c))
			if len(k) != 1 {
				continue
			}
			// "l" is what look-alikes of "I", "l" and "1" all read as:
			// none of the three can be told, so none is mapped. Letters
			// map to letters and digits; anything else only to the
			// punctuation keys and credentials are written with (a colon
			// or an equals sign's look-alike), not to quotes or digits.
			if unicode.IsLetter(c) && asciiAlnum(k) && k != "l" || !unicode.IsLetter(c) && strings.Contains(confusablePunct, k) {
				m[c] = k[0]
			}
		}
	}
	return m
})

// confusablePunct is the ASCII punctuation other characters' look-alikes
// map to (see confusable).
const confusablePunct = ":=@/\\-_.!#$%&*+?;|~^"

// Skeleton returns s as it reads (see String): what matching sees, for
// comparing text with what the redactor made of it.
func Skeleton(s string) string { return skeleton(s) }
