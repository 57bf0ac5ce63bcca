package section

import (
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/internal/lexical"
)

// sectionTerms returns text's terms for scoring sections: lexical.Tokenize's, and
// for each term of letters then digits ("offset64", "new32", "sha256") its
// two parts as well ("offset", "64"), so that a task's "64-bit offset"
// finds the const block that declares offset64. The whole term stays, so a
// task naming sha256 still matches it first.
func sectionTerms(text string) []string {
	toks := lexical.Tokenize(text)
	n := len(toks)
	for _, t := range toks[:n] {
		cut := len(t)
		for cut > 0 {
			r, size := utf8.DecodeLastRuneInString(t[:cut])
			if !unicode.IsDigit(r) {
				break
			}
			cut -= size
		}
		if cut == 0 || cut == len(t) {
			continue
		}
		head := t[:cut]
		if r, _ := utf8.DecodeLastRuneInString(head); len(head) < 2 || !unicode.IsLetter(r) || lexical.IsStopWord(head) {
			continue
		}
		toks = append(toks, lexical.Stem(head), t[cut:])
	}
	return toks
}
