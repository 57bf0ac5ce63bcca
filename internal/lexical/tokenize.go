package lexical

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize splits s into the terms that [Index] stores and searches for.
//
// The analysis chain is, in order:
//
//  1. Words are maximal runs of letters and digits (unicode.IsLetter,
//     unicode.IsDigit); combining marks (unicode.IsMark) continue a word so
//     that scripts such as Devanagari stay whole. Everything else separates
//     words: punctuation, spaces, symbols, emoji, "_", "-", ".", "/", ":".
//     An apostrophe (' or ’) between two letters is dropped, so "don't"
//     becomes "dont" and "user's" becomes "users" (and then "user").
//  2. Identifiers are split at case changes: "getUserProfile" → get, user,
//     profile; "HTTPServer" → http, server; "utf8Decode" → utf8, decode.
//     Letters and digits are never split apart ("v2", "utf8", "sha256",
//     "2fa"), and a trailing plural "s" stays with its acronym ("URIs" →
//     uris). [TokenizeQuery] adds compound terms.
//  3. Runs of CJK characters (Han, Hiragana, Katakana, Hangul) have no
//     spaces between words, so they become overlapping character bigrams
//     ("日本語" → 日本, 本語), as Lucene's CJKBigramFilter does; a lone CJK
//     character is kept as a unigram. Bigrams need no dictionary and match
//     most two-character words exactly. Other scripts written without
//     spaces (Thai, Lao, Khmer, Myanmar) stay one token per run.
//  4. Each term is lowercased with strings.ToLower.
//  5. English stop words (see [IsStopWord]) are removed, unless every term
//     of s is a stop word: then all are kept, so no non-empty input
//     vanishes completely.
//  6. Terms are stemmed with the S-stemmer (see [Stem]).
//  7. A term longer than [MaxTermBytes] is cut to it.
//
// Tokenize returns nil when s has no letters or digits. Every returned term
// is non-empty, lowercase and valid UTF-8. Tokenize is deterministic and
// safe for concurrent use.
func Tokenize(s string) []string {
	toks, _ := analyze(s, false)
	return toks
}

// TokenizeQuery is [Tokenize] for a query: it also keeps each split
// identifier whole ("WaitGroup" → wait, group, waitgroup) and joins two
// words a hyphen joins when one of them is all digits ("SHA-256" → sha,
// 256, sha256), so that a task naming a thing the way people write it
// matches a document or URI that writes it as one word (waitgroup.go,
// crypto/sha256). Only queries get the extra terms: documents keep their
// lengths and term counts, so their BM25 scores for other queries do not
// move.
func TokenizeQuery(s string) []string {
	toks, _ := analyze(s, true)
	return toks
}

// analyze is [Tokenize] that also reports whether the terms are only stop
// words kept by the never-drop-everything rule; [Index.Search] treats such
// a query as empty.
func analyze(s string, compounds bool) (toks []string, onlyStop bool) {
	raw := splitWordsMode(s, true, compounds)
	if len(raw) == 0 {
		return nil, false
	}
	n := 0
	for _, w := range raw {
		if !IsStopWord(w) {
			n++
		}
	}
	onlyStop = n == 0
	out := raw[:0] // filter in place: raw is ours
	for _, w := range raw {
		if onlyStop || !IsStopWord(w) {
			out = append(out, cutTerm(Stem(w)))
		}
	}
	return out, onlyStop
}

// MaxTermBytes is the longest term, in bytes of UTF-8: a longer word is
// cut at the last rune boundary at or before it, in documents and queries
// alike, so the two still match. Natural words and identifiers are far
// shorter (the longest term of the shipped eval corpora is 128 bytes); the
// cut bounds what one long token (a 4 KB description without a space)
// costs the index.
const MaxTermBytes = 128

// cutTerm returns t cut to MaxTermBytes.
func cutTerm(t string) string {
	if len(t) <= MaxTermBytes {
		return t
	}
	i := MaxTermBytes
	for i > 0 && !utf8.RuneStart(t[i]) {
		i--
	}
	return strings.Clone(t[:i])
}

// Words splits s into lowercase words as [Tokenize]'s steps 1, 2 and 4 do
// (identifiers split at camelCase, snake_case and punctuation), but keeps
// every word, unstemmed, and each run of CJK characters whole: for text a
// person or a sentence encoder reads ("get_latest_news" → get latest news),
// not for matching.
func Words(s string) []string { return splitWordsMode(s, false, false) }

// splitWordsMode splits s into words, CJK runs into bigrams if bigrams,
// with the compound terms of [TokenizeQuery] if compounds.
func splitWordsMode(s string, bigrams, compounds bool) []string {
	var (
		out  []string
		word = make([]rune, 0, 32)
		// hyphened is the word before a hyphen that joins it to the next
		// one ("SHA-256"), while that next word is read; nil otherwise.
		hyphened []rune
	)
	end := func(sep rune, rest string) {
		out = appendWord(out, word, bigrams, compounds)
		if compounds && hyphened != nil && len(word) > 0 && (allDigits(hyphened) != allDigits(word)) && !isCJK(word[0]) && !isCJK(hyphened[0]) {
			// "SHA-256" and "UTF-8" are also written "sha256" and "utf8".
			out = append(out, strings.ToLower(string(hyphened)+string(word)))
		}
		hyphened = nil
		if sep == '-' && len(word) > 0 && nextIsWordRune(rest) {
			hyphened = append([]rune(nil), word...)
		}
		word = word[:0]
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case isWordRune(r):
			word = append(word, r)
		case len(word) > 0 && unicode.IsMark(r):
			word = append(word, r)
		case len(word) > 0 && isApostrophe(r) && unicode.IsLetter(word[len(word)-1]) && nextIsLetter(s[i:]):
			// Elide: "don't" → "dont".
		default:
			end(r, s[i:])
		}
	}
	end(0, "")
	return out
}

func allDigits(w []rune) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

func nextIsWordRune(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isWordRune(r)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isApostrophe(r rune) bool { return r == '\'' || r == '\u2019' }

func nextIsLetter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r)
}

// isCJK reports whether r belongs to a script written without spaces
// between words that we index as bigrams.
func isCJK(r rune) bool {
	if r < 0x1100 { // fast path: nothing below the Hangul Jamo block
		return false
	}
	// U+30FC KATAKANA-HIRAGANA PROLONGED SOUND MARK (and its halfwidth form)
	// is in the Common script, but it is part of words such as データ.
	return r == 0x30FC || r == 0xFF70 || unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// appendWord splits one word (letters, digits and marks only) into terms
// and appends them, lowercased, to dst.
func appendWord(dst []string, word []rune, bigrams, compounds bool) []string {
	for len(word) > 0 {
		cjk := isCJK(word[0])
		j := 1
		for j < len(word) && (isCJK(word[j]) == cjk || unicode.IsMark(word[j])) {
			j++
		}
		switch {
		case cjk && bigrams:
			dst = appendBigrams(dst, word[:j])
		case cjk:
			dst = append(dst, strings.ToLower(string(word[:j])))
		default:
			dst = appendIdentParts(dst, word[:j], compounds)
		}
		word = word[j:]
	}
	return dst
}

func appendBigrams(dst []string, run []rune) []string {
	if len(run) == 1 {
		return append(dst, strings.ToLower(string(run)))
	}
	for i := 0; i+1 < len(run); i++ {
		dst = append(dst, strings.ToLower(string(run[i:i+2])))
	}
	return dst
}

// appendIdentParts splits run at camelCase and PascalCase boundaries. A
// split identifier is also kept whole if whole, so that "WaitGroup" matches
// "waitgroup.go" as well as "wait group".
func appendIdentParts(dst []string, run []rune, whole bool) []string {
	start, parts := 0, 1
	for i := 1; i < len(run); i++ {
		if isCaseBoundary(run, i) {
			dst = append(dst, strings.ToLower(string(run[start:i])))
			start = i
			parts++
		}
	}
	dst = append(dst, strings.ToLower(string(run[start:])))
	if whole && parts > 1 {
		dst = append(dst, strings.ToLower(string(run)))
	}
	return dst
}

// isCaseBoundary reports whether a new identifier part starts at run[i].
func isCaseBoundary(run []rune, i int) bool {
	r := run[i]
	if !unicode.IsUpper(r) && !unicode.IsTitle(r) {
		return false
	}
	p := run[i-1]
	for k := i - 1; k > 0 && unicode.IsMark(p); k-- {
		p = run[k-1]
	}
	switch {
	case unicode.IsLower(p) || unicode.IsDigit(p):
		return true // "getUser", "utf8Decode"
	case unicode.IsUpper(p) && i+1 < len(run) && unicode.IsLower(run[i+1]):
		// "HTTPServer": the last capital starts the next part. Keep a
		// plural acronym together: "IDs", "URIsFor".
		if run[i+1] == 's' && (i+2 == len(run) || !unicode.IsLower(run[i+2])) {
			return false
		}
		return true
	}
	return false
}
