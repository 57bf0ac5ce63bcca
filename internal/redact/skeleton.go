package redact

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// skeleton returns s as it reads, for matching: fullwidth forms
// ("ｔｏｋｅｎ") and mathematical letters and digits ("𝚝𝚘𝚔𝚎𝚗") folded to
// ASCII (their NFKC forms), every space character (no-break, thin, hair)
// made a space, Cyrillic and Greek letters that look like
// Latin ones replaced by those, and what shows as nothing or only marks
// the letter before it (default-ignorable code points, combining marks
// such as U+0332 under each character) removed; U+2800 BRAILLE PATTERN
// BLANK, which shows as a space, becomes one. A secret respelled so reads
// the same to a person and matched nothing.
func skeleton(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c < 0x80:
			b.WriteRune(c)
		case invisible(c), unicode.Is(unicode.Mn, c):
		case c == 0x2800, unicode.Is(unicode.Zs, c):
			b.WriteByte(' ')
		case c >= 0xff01 && c <= 0xff5e: // fullwidth ASCII
			b.WriteRune(c - 0xfee0)
		case c >= 0x1d400 && c <= 0x1d7ff: // mathematical letters and digits
			b.WriteString(norm.NFKC.String(string(c)))
		default:
			if l, ok := lookalike[c]; ok {
				c = l
			}
			b.WriteRune(c)
		}
	}
	return b.String()
}

// lookalike maps Cyrillic and Greek letters to the Latin ones they are
// drawn like in common fonts.
var lookalike = map[rune]rune{
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
