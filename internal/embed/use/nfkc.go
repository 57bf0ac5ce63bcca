package use

//go:generate go run gen_nfkc.go

import (
	"sort"
	"unicode/utf8"
)

// Hangul syllable arithmetic (Unicode §3.12).
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = hangulLCount * hangulNCount
)

// appendNFKC appends to dst the runes of s in Unicode Normalization Form
// KC (UAX #15), as JavaScript's s.normalize("NFKC") returns them. Invalid
// UTF-8 bytes are read as U+FFFD each, as encoding/json does when it sends
// the text to Node. The tables are Unicode [nfkcUnicodeVersion].
//
// The algorithm is the textbook one: full compatibility decomposition
// (Hangul syllables arithmetically), canonical reordering of each run of
// non-starters by combining class (stable), then canonical composition,
// where a rune composes with the last starter unless a rune between them
// has a combining class of 0 or at least its own.
func appendNFKC(dst []rune, s string) []rune {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii { // ASCII is invariant under every normalization form
		for i := 0; i < len(s); i++ {
			dst = append(dst, rune(s[i]))
		}
		return dst
	}

	// Decompose.
	start := len(dst)
	for _, r := range s {
		dst = appendNFKD(dst, r)
	}
	d := dst[start:]

	// Reorder: a stable insertion sort of each run of non-starters.
	for i := 1; i < len(d); i++ {
		c := ccc(d[i])
		if c == 0 {
			continue
		}
		for j := i; j > 0; j-- {
			p := ccc(d[j-1])
			if p <= c { // p == 0 (a starter) or already in order
				break
			}
			d[j-1], d[j] = d[j], d[j-1]
		}
	}

	// Compose, in place.
	if len(d) == 0 {
		return dst
	}
	starter := -1 // index in d of the last starter, if it can compose
	if ccc(d[0]) == 0 {
		starter = 0
	}
	last := -1 // combining class of the last rune kept; -1 after a starter
	if starter < 0 {
		last = 256 // a leading non-starter blocks nothing but has no starter
	}
	n := 1
	for i := 1; i < len(d); i++ {
		r := d[i]
		c := int(ccc(r))
		if starter >= 0 && (last == -1 || last < c) {
			if comp, ok := compose(d[starter], r); ok {
				d[starter] = comp
				continue
			}
		}
		if c == 0 {
			starter = n
			last = -1
		} else {
			last = c
		}
		d[n] = r
		n++
	}
	return dst[:start+n]
}

// appendNFKD appends the full compatibility decomposition of r.
func appendNFKD(dst []rune, r rune) []rune {
	if r < 0xA0 {
		return append(dst, r)
	}
	if s := r - hangulSBase; 0 <= s && s < hangulSCount {
		dst = append(dst, hangulLBase+s/hangulNCount, hangulVBase+(s%hangulNCount)/hangulTCount)
		if t := s % hangulTCount; t != 0 {
			dst = append(dst, hangulTBase+t)
		}
		return dst
	}
	i := sort.Search(len(nfkdTable), func(i int) bool { return nfkdTable[i].r >= r })
	if i < len(nfkdTable) && nfkdTable[i].r == r {
		e := nfkdTable[i]
		return append(dst, nfkdRunes[e.off:int(e.off)+int(e.n)]...)
	}
	return append(dst, r)
}

// ccc returns the canonical combining class of r.
func ccc(r rune) uint8 {
	if r < 0x300 {
		return 0
	}
	i := sort.Search(len(cccTable), func(i int) bool { return cccTable[i].hi >= r })
	if i < len(cccTable) && cccTable[i].lo <= r {
		return cccTable[i].ccc
	}
	return 0
}

// compose returns the canonical composite of a and b, if there is one.
func compose(a, b rune) (rune, bool) {
	if l := a - hangulLBase; 0 <= l && l < hangulLCount {
		if v := b - hangulVBase; 0 <= v && v < hangulVCount {
			return hangulSBase + (l*hangulVCount+v)*hangulTCount, true
		}
		return 0, false
	}
	if s := a - hangulSBase; 0 <= s && s < hangulSCount && s%hangulTCount == 0 {
		if t := b - hangulTBase; 0 < t && t < hangulTCount {
			return a + t, true
		}
		return 0, false
	}
	i := sort.Search(len(compTable), func(i int) bool {
		e := &compTable[i]
		return e.a > a || (e.a == a && e.b >= b)
	})
	if i < len(compTable) && compTable[i].a == a && compTable[i].b == b {
		return compTable[i].c, true
	}
	return 0, false
}
