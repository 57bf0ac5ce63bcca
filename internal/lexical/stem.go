package lexical

// stopWords is Lucene's English stop-word set (EnglishAnalyzer
// ENGLISH_STOP_WORDS_SET, 33 words) plus pronouns, question words and
// auxiliaries that are common in natural-language task queries ("how do I
// find my …") and say nothing about the topic. Without them, a rare use of
// "what" in one description would get a high IDF and pull that resource up.
// Words that can name things in a resource catalogue (all, get, list, new,
// can, up) are deliberately absent.
var stopWords = map[string]struct{}{
	// Lucene ENGLISH_STOP_WORDS_SET.
	"a": {}, "an": {}, "and": {}, "are": {}, "as": {}, "at": {}, "be": {}, "but": {},
	"by": {}, "for": {}, "if": {}, "in": {}, "into": {}, "is": {}, "it": {}, "no": {},
	"not": {}, "of": {}, "on": {}, "or": {}, "such": {}, "that": {}, "the": {},
	"their": {}, "then": {}, "there": {}, "these": {}, "they": {}, "this": {}, "to": {},
	"was": {}, "will": {}, "with": {},
	// Query function words.
	"i": {}, "me": {}, "my": {}, "we": {}, "our": {}, "you": {}, "your": {},
	"what": {}, "which": {}, "who": {}, "how": {}, "when": {}, "where": {}, "why": {},
	"do": {}, "does": {}, "did": {}, "has": {}, "have": {}, "had": {}, "been": {},
	"were": {}, "its": {}, "from": {}, "about": {}, "so": {}, "than": {},
	"should": {}, "would": {}, "could": {},
}

// IsStopWord reports whether the lowercase term w is on the stop-word list
// that [Tokenize] removes: Lucene's 33-word English list plus 30 pronouns,
// question words and auxiliaries frequent in task queries (i, me, my, we,
// our, you, your, what, which, who, how, when, where, why, do, does, did,
// has, have, had, been, were, its, from, about, so, than, should, would,
// could).
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

// Stem removes English plural endings from w with the S-stemmer (Harman,
// "How effective is suffixing?", JASIS 1991), in the form used by Lucene's
// EnglishMinimalStemmer:
//
//	-ies → -y  if two or more letters precede it, not "a" or "e" (queries → query)
//	-s   → ""  unless the word ends in -ss or -us (files → file, ties → tie, class, status)
//
// It is deliberately light: it only conflates singular and plural, so it
// never merges unrelated words the way an aggressive stemmer can, and it
// never touches a word that is not entirely lowercase ASCII letters, so
// words in other languages ("größe", "данные"), mixed tokens ("k8s", "v2s")
// and CJK bigrams pass through unchanged. Words shorter than four letters
// are left alone to protect acronyms such as "dns", "tls", "aws" and "ios".
// A known weakness of every S-stemmer: "boxes" becomes "boxe", not "box".
func Stem(w string) string {
	n := len(w)
	if n < 4 || w[n-1] != 's' || !isLowerASCII(w) {
		return w
	}
	switch {
	case n > 4 && w[n-3:] == "ies" && w[n-4] != 'a' && w[n-4] != 'e':
		return w[:n-3] + "y"
	case w[n-2] == 's' || w[n-2] == 'u':
		return w
	}
	return w[:n-1]
}

func isLowerASCII(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
