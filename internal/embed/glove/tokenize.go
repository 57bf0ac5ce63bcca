package glove

import (
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"
)

// isWordRune reports whether r can be part of a word. Everything else
// (spaces, punctuation, symbols, '_', '-', '/', invalid UTF-8) separates
// words.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}

// runs yields the maximal runs of word runes in text, in their original
// case: "docs/read_file.md" yields "docs", "read", "file", "md".
func runs(text string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := -1
		for i, r := range text {
			switch {
			case isWordRune(r):
				if start < 0 {
					start = i
				}
			case start >= 0:
				if !yield(text[start:i]) {
					return
				}
				start = -1
			}
		}
		if start >= 0 {
			yield(text[start:])
		}
	}
}

// parts yields the pieces of a run (see [runs]) split at case changes and at
// letter/digit boundaries:
//
//	getUserProfile → get User Profile
//	HTTPServer     → HTTP Server
//	utf8           → utf 8
//
// An upper-case letter followed by a lower-case one starts a piece, so an
// acronym keeps together until its last letter. Combining marks stay with the
// letter before them. Letters without case (CJK, …) never split.
func parts(run string) iter.Seq[string] {
	return func(yield func(string) bool) {
		start := 0
		prev := rune(-1) // the last non-mark rune, or -1
		for i, r := range run {
			if unicode.IsMark(r) {
				continue
			}
			if prev >= 0 && i > start && splitBefore(prev, r, run[i+utf8.RuneLen(r):]) {
				if !yield(run[start:i]) {
					return
				}
				start = i
			}
			prev = r
		}
		yield(run[start:])
	}
}

// splitBefore reports whether a new piece starts at r, given the rune before
// it and the text after it.
func splitBefore(prev, r rune, rest string) bool {
	if unicode.IsDigit(prev) != unicode.IsDigit(r) {
		return true
	}
	if isUpper(r) {
		if unicode.IsLower(prev) {
			return true // getUser
		}
		if isUpper(prev) {
			next, _ := utf8.DecodeRuneInString(rest)
			return unicode.IsLower(next) // HTTPServer: split before the S
		}
	}
	return false
}

func isUpper(r rune) bool { return unicode.IsUpper(r) || unicode.IsTitle(r) }

// appendLower appends the lower-case form of s to b.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			// Rare in our input; fall back to the general path for the rest.
			for _, r := range s[i:] {
				b = utf8.AppendRune(b, unicode.ToLower(r))
			}
			return b
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// tokens returns the lower-cased pieces of text, that is the [parts] of all
// its [runs]: "getUserProfile(docs/read_file.md)" → get user profile docs
// read file md. The embedder looks up a whole run before its parts (see
// [Embedder.Embed]); tokens is the fully split form, used to normalise text
// for the fallback vector.
func tokens(text string) []string {
	var out []string
	for run := range runs(text) {
		for p := range parts(run) {
			out = append(out, strings.ToLower(p))
		}
	}
	return out
}
