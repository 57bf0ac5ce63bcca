package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// minClauseWords is the fewest words a clause needs to stand alone; shorter
// pieces ("and then", "please.") join their neighbour.
const minClauseWords = 3

// Clauses splits a compound request ("get the stock price of Apple and the
// latest news about it") into its clauses, so each need can be ranked on
// its own. It splits after sentence and clause punctuation (. ! ? ; , and
// their CJK forms) that ends a word, and at the English coordinators "and",
// "also", "then" and "plus", which are dropped. Pieces of fewer than three
// words join the clause before them (the first joins the next). It returns
// nil when the text is a single clause.
func Clauses(text string) []string {
	var parts [][]string
	var cur []string
	flush := func() {
		if len(cur) == 0 {
			return
		}
		if clauseWords(cur) < minClauseWords && len(parts) > 0 {
			parts[len(parts)-1] = append(parts[len(parts)-1], cur...)
		} else {
			parts = append(parts, cur)
		}
		cur = nil
	}
	for _, w := range strings.Fields(text) {
		for w != "" {
			// A CJK clause mark ends a clause even without a space after it.
			i := strings.IndexAny(w, "。！？；，、")
			if i < 0 {
				break
			}
			_, size := utf8.DecodeRuneInString(w[i:])
			if head := w[:i+size]; head != "" {
				cur = append(cur, head)
			}
			flush()
			w = w[i+size:]
		}
		if w == "" {
			continue
		}
		switch strings.ToLower(strings.Trim(w, ".,;:!?\"'()")) {
		case "and", "also", "then", "plus":
			if strings.ContainsAny(w, ".,;!?") {
				cur = append(cur, w) // "Tesla." — punctuation wins over the word
				flush()
			} else {
				flush()
			}
			continue
		}
		cur = append(cur, w)
		if strings.ContainsAny(w[len(w)-1:], ".,;!?") {
			flush()
		}
	}
	flush()
	if len(parts) > 1 && clauseWords(parts[0]) < minClauseWords {
		parts[1] = append(parts[0], parts[1]...)
		parts = parts[1:]
	}
	if len(parts) < 2 {
		return nil
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = strings.Join(p, " ")
	}
	return out
}

// clauseWords counts words, two characters of a script written without
// spaces counting as one.
func clauseWords(ws []string) int {
	n := 0
	for _, w := range ws {
		cjk := 0
		for _, r := range w {
			if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
				cjk++
			}
		}
		n += max(1, cjk/2)
	}
	return n
}
