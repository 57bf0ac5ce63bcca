package index

import (
	"hash/fnv"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// sketchSize is how many shingle hashes a TextSketch keeps.
const sketchSize = 64

// TextSketch returns a bottom-k sketch of text: the sketchSize smallest
// 64-bit FNV-1a hashes of its runs of three words (lower-cased; see
// sketchWords), sorted, without repeats; fewer for a
// text of fewer runs, none under three words. Two texts' sketches give
// how much of their runs they share (Resemblance): a page edited or
// brought to a new edition shares most, another text next to none.
func TextSketch(text string) []uint64 {
	words := sketchWords(strings.ToLower(text))
	if len(words) < 3 {
		return nil
	}
	hs := make([]uint64, 0, len(words)-2)
	h := fnv.New64a()
	for i := range len(words) - 2 {
		h.Reset()
		h.Write([]byte(words[i]))
		h.Write([]byte{' '})
		h.Write([]byte(words[i+1]))
		h.Write([]byte{' '})
		h.Write([]byte(words[i+2]))
		hs = append(hs, h.Sum64())
	}
	slices.Sort(hs)
	hs = slices.Compact(hs)
	return slices.Clip(hs[:min(len(hs), sketchSize)])
}

// sketchWords splits text into words: runs of letters and digits, and
// each character of a script written without spaces (Han, Hiragana,
// Katakana, Hangul, Thai) on its own, so that a page in one of those,
// edited, keeps most of its runs.
func sketchWords(text string) []string {
	var words []string
	start := -1
	for i, r := range text {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai):
			if start >= 0 {
				words = append(words, text[start:i])
				start = -1
			}
			words = append(words, text[i:i+utf8.RuneLen(r)])
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
		case start >= 0:
			words = append(words, text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		words = append(words, text[start:])
	}
	return words
}

// Resemblance estimates, from 0 to 1, the share of runs of three words
// two texts have in common (the Jaccard index of their sets of runs),
// given their TextSketch: of the smallest sketchSize hashes of both, the
// share in each. 0 when either has none.
func Resemblance(a, b []uint64) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	i, j, seen, both := 0, 0, 0, 0
	for seen < sketchSize && (i < len(a) || j < len(b)) {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			i++
		case i == len(a) || b[j] < a[i]:
			j++
		default:
			both++
			i++
			j++
		}
		seen++
	}
	return float64(both) / float64(seen)
}
