package section

import (
	"slices"
	"strings"
	"testing"
)

// A task's "64-bit offset" finds the const block that declares offset64:
// an identifier of letters then digits scores as its parts too.
func TestScoreSplitsLettersFromDigits(t *testing.T) {
	src := `package fnv

const (
	offset32 = 2166136261
	offset64 = 14695981039346656037
	prime32  = 16777619
	prime64  = 1099511628211
)

// New64 returns a new 64-bit FNV-1 hash.
func New64() Hash64 {
	return new(sum64)
}

// New32 returns a new 32-bit FNV-1 hash.
func New32() Hash32 {
	return new(sum32)
}

// Sum64 returns the 64-bit FNV hash of data.
func Sum64(data []byte) uint64 {
	h := uint64(0)
	for _, c := range data {
		h ^= uint64(c)
	}
	return h
}
`
	secs, _ := Split(src, "text/x-go")
	scores := Score(secs, NewQuery("what is the 64-bit offset basis the FNV hashes start from?"))
	best := 0
	for i := range scores {
		if scores[i] > scores[best] {
			best = i
		}
	}
	if !strings.Contains(secs[best].Text, "offset64 = 14695981039346656037") {
		t.Errorf("best section %q (scores %v), want the const block", secs[best].Text, scores)
	}
	// The whole term still counts: a task naming sha256 matches it.
	if got := sectionTerms("sha256 Offset64 v2 utf8"); !slices.Contains(got, "sha256") || !slices.Contains(got, "offset") || !slices.Contains(got, "64") || slices.Contains(got, "v") {
		t.Errorf("sectionTerms = %v", got)
	}
}
