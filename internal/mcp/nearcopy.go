package mcp

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/internal/resource"
)

// Near copies. A bridge in front of contextd may pass back what it read
// from contextd rewritten: every line quoted, lines added at the start,
// within or at the end, words put in front of the first line, the text
// split into several items. No digest of the whole text survives that,
// but its lines' words do. A text is told by its shingles: the words of
// each line (runs of letters and digits, lower-cased) taken four in a
// row, or all of them for a line of fewer; the texts of a read's items
// are joined first. A read the MCP server answered keeps a sketch, its
// nearSketch smallest shingle hashes; a read whose shingles hold every
// hash of a sketch of nearMinSketch or more holds that text nearly
// whole.
//
// A rewrite of those kinds keeps every line's shingles, where a page
// made from the same template as another (one word changed in a line)
// loses that line's: a sketch of a short text is all its shingles, so
// such pages are not near copies of each other. Of a long text the
// sketch is a sample, and a page differing from it in a word or two is
// taken for a near copy: it is, nearly.
const (
	shingleWords  = 4
	nearSketch    = 32
	nearMinSketch = 4
	// nearTextBytes bounds the text shingled, for the cost of a read.
	nearTextBytes = 256 << 10
)

// nearText returns the texts of contents joined, at most nearTextBytes.
func nearText(contents []resource.Content) string {
	var b strings.Builder
	for _, c := range contents {
		if c.IsBlob {
			continue
		}
		left := nearTextBytes - b.Len()
		if left <= 0 {
			break
		}
		b.WriteString(c.Text[:min(len(c.Text), left)])
	}
	return b.String()
}

// eachShingle calls f with the hash of each shingle of text. With loose
// set it also calls f with those a line would have with a word or two
// put in within it (see skipShingles), and those a line of few words, or
// a line broken in two, would have within the text: each line's first
// and last one to three words, and the shingles across each two lines
// joined, next to each other or with one line between (a line put in
// within a line).
// Lines without words are passed over.
func eachShingle(text string, loose bool, f func(uint64)) {
	type lineWords struct {
		words []word
		first string // the first word, for glue
	}
	var lines []lineWords
	for line := range strings.Lines(text) {
		words, first := appendWords(nil, line)
		if len(words) == 0 {
			continue
		}
		if len(words) < shingleWords {
			f(shingleHash(words))
		}
		for i := 0; i+shingleWords <= len(words); i++ {
			f(shingleHash(words[i : i+shingleWords]))
		}
		if !loose {
			continue
		}
		skipShingles(words, f)
		for n := 1; n < shingleWords && n < len(words); n++ {
			f(shingleHash(words[:n]))
			f(shingleHash(words[len(words)-n:]))
		}
		lines = append(lines, lineWords{words, first})
		if len(lines) > 3 {
			lines = lines[1:]
		}
		last := len(lines) - 1
		for _, l := range lines[max(0, last-2):last] {
			a := l.words
			tail := words[:min(len(words), shingleWords)]
			joinedShingles(a[max(0, len(a)-shingleWords+1):], tail, f)
			// The line may have been broken within a word.
			head := a[max(0, len(a)-shingleWords):]
			glued := append(slices.Clone(head[:len(head)-1]), head[len(head)-1].glue(first))
			joinedShingles(glued, tail[1:], f)
		}
	}
}

// skipShingles calls f with the hashes of the shingles words would have
// less one word, or two in a row, put in within a shingle: a word added
// mid-line (a nonce, "[hub]") keeps the line's shingles so.
func skipShingles(words []word, f func(uint64)) {
	var w [shingleWords]word
	for i := range words {
		for skip := 1; skip <= 2; skip++ {
			if i+shingleWords+skip > len(words) {
				break
			}
			for at := 1; at < shingleWords; at++ {
				copy(w[:at], words[i:i+at])
				copy(w[at:], words[i+at+skip:i+shingleWords+skip])
				f(shingleHash(w[:]))
			}
		}
	}
}

// joinedShingles calls f with the hashes of the shingles of a and b
// joined (a few words each): all of them for fewer than shingleWords.
func joinedShingles(a, b []word, f func(uint64)) {
	joined := append(slices.Clone(a), b...)
	if len(joined) < shingleWords {
		f(shingleHash(joined))
		return
	}
	for i := 0; i+shingleWords <= len(joined); i++ {
		f(shingleHash(joined[i : i+shingleWords]))
	}
}

// A word is the FNV-1a hash of a word's lower-cased runes, an unfinished
// one: two halves of a word glue into the word's hash.
type word uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (w word) add(r rune) word {
	for ; r != 0; r >>= 8 {
		w = (w ^ word(r&0xff)) * fnvPrime
	}
	return w
}

// glue returns the hash of w's word followed by next (lower-cased).
func (w word) glue(next string) word {
	for _, r := range next {
		w = w.add(r)
	}
	return w
}

// shingleHash returns the hash of words, in order.
func shingleHash(words []word) uint64 {
	h := uint64(fnvOffset) ^ uint64(len(words))
	for _, w := range words {
		h = (h ^ uint64(w)) * fnvPrime
		h ^= h >> 29
	}
	return h
}

// appendWords appends line's words, lower-cased, to words; it returns
// them and the first, lower-cased.
func appendWords(words []word, line string) ([]word, string) {
	first := ""
	start := -1
	h := word(fnvOffset)
	for i := 0; i <= len(line); {
		r, size := rune(0), 1
		if i < len(line) {
			r, size = utf8.DecodeRuneInString(line[i:])
		}
		if i < len(line) && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if start < 0 {
				start, h = i, word(fnvOffset)
			}
			h = h.add(unicode.ToLower(r))
		} else if start >= 0 {
			if len(words) == 0 {
				first = strings.ToLower(line[start:i])
			}
			words = append(words, h)
			start = -1
		}
		i += size
	}
	return words, first
}

// sketchOf returns the sketch of contents: the nearSketch smallest
// distinct shingle hashes, ascending; nil under nearMinSketch.
func sketchOf(contents []resource.Content) []uint64 {
	set := map[uint64]struct{}{}
	eachShingle(nearText(contents), false, func(h uint64) { set[h] = struct{}{} })
	if len(set) < nearMinSketch {
		return nil
	}
	all := make([]uint64, 0, len(set))
	for h := range set {
		all = append(all, h)
	}
	slices.Sort(all)
	// A copy: the sketch is kept for thousands of reads, all of its
	// shingles not.
	return slices.Clone(all[:min(len(all), nearSketch)])
}

// shingleSet returns the shingle hashes of contents, the lines' ends
// with them (see eachShingle).
func shingleSet(contents []resource.Content) map[uint64]struct{} {
	set := map[uint64]struct{}{}
	eachShingle(nearText(contents), true, func(h uint64) { set[h] = struct{}{} })
	return set
}

// holdsAll reports whether set holds every hash of sketch, a sketch of
// nearMinSketch or more.
func holdsAll(set map[uint64]struct{}, sketch []uint64) bool {
	if len(sketch) < nearMinSketch {
		return false
	}
	for _, h := range sketch {
		if _, ok := set[h]; !ok {
			return false
		}
	}
	return true
}
