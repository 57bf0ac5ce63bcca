package selector

import (
	"crypto/sha256"
	"hash/fnv"
	"math/bits"
	"strings"
)

// A fingerprint identifies what a read returned, to find the same content
// reached through another URI or server (a mirror, an alias, a copy).
type fingerprint struct {
	exact [sha256.Size]byte // SHA-256 of the text with runs of white space made one space, and of blob bytes
	// sim is the 64-bit SimHash (Charikar, STOC 2002) of the text's word
	// 3-shingles; near is false for texts too short for it to mean much.
	sim  uint64
	near bool
	none bool // nothing usable was hashed: never a duplicate
}

// nearWords is the fewest words a text needs for near-duplicate matching;
// shorter texts match only exactly. A one-word change ("never") in a short
// text changes its meaning, and SimHash cannot tell; in a long document
// that is a few shingles among hundreds.
const nearWords = 300

// nearBits is the largest Hamming distance between two SimHashes that counts
// as near-identical: 3 of 64 bits, the threshold Manku, Jain and Das Sarma
// (WWW 2007) found right for web pages.
const nearBits = 3

// fingerprintOf hashes the usable contents of a read: texts by their
// white-space-separated fields (so line endings and indentation do not
// matter, but case and punctuation do), blobs by their bytes.
func fingerprintOf(contents []Content) fingerprint {
	h := sha256.New()
	var words []string
	hashed := false
	for _, c := range contents {
		switch {
		case c.Error != "":
		case c.IsBlob:
			h.Write([]byte{0})
			h.Write(c.Blob)
			hashed = hashed || len(c.Blob) > 0
		default:
			// Case, punctuation and digits are kept (code, hashes and
			// figures differ in nothing else); only the layout is ignored.
			w := strings.Fields(c.Text)
			for _, x := range w {
				h.Write([]byte(x))
				h.Write([]byte{' '})
			}
			words = append(words, w...)
			hashed = hashed || len(w) > 0
		}
	}
	fp := fingerprint{none: !hashed}
	copy(fp.exact[:], h.Sum(nil))
	if len(words) >= nearWords {
		fp.sim, fp.near = simHash(words), true
	}
	return fp
}

// simHash is the SimHash of the word 3-shingles of words.
func simHash(words []string) uint64 {
	var acc [64]int
	for i := 0; i+3 <= len(words); i++ {
		f := fnv.New64a()
		for _, w := range words[i : i+3] {
			f.Write([]byte(w))
			f.Write([]byte{0})
		}
		x := f.Sum64()
		for b := range acc {
			if x&(1<<b) != 0 {
				acc[b]++
			} else {
				acc[b]--
			}
		}
	}
	var out uint64
	for b, v := range acc {
		if v > 0 {
			out |= 1 << b
		}
	}
	return out
}

// same reports whether a and b are the same content, exactly or nearly.
func (a fingerprint) same(b fingerprint) (exact, near bool) {
	if a.none || b.none {
		return false, false
	}
	if a.exact == b.exact {
		return true, false
	}
	return false, a.near && b.near && bits.OnesCount64(a.sim^b.sim) <= nearBits
}
