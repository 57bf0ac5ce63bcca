package pgstore

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeVecs(t *testing.T) {
	vs := [][]float32{{1, 2}, nil, {}, {3}}
	got, err := decodeVecs(encodeVecs(vs), 4)
	if err != nil || !cmp.Equal(got, [][]float32{{1, 2}, nil, {}, {3}}) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if got, err := decodeVecs(nil, 4); err != nil || got != nil {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"more entries than passages": make([]byte, 5),
		"cut in a length":            {1, 2, 0},
		"cut in a vector":            {1, 2, 0, 0, 0, 1, 2, 3, 4},
		"length past the blob":       {1, 255, 255, 255, 255},
		"unknown tag":                {7},
	} {
		if got, err := decodeVecs(b, 4); !errors.Is(err, errBadVecs) || got != nil {
			t.Errorf("%s: %v, %v; want errBadVecs", name, got, err)
		}
	}
}

// A blob of 40 MB of zero bytes costs at most the bounded count of slice
// headers, not one per byte.
func TestDecodeVecsOfZerosAllocatesLittle(t *testing.T) {
	b := make([]byte, 40<<20)
	if n := testing.AllocsPerRun(3, func() { _, _ = decodeVecs(b, 64) }); n > 16 {
		t.Errorf("%v allocations, want at most 16", n)
	}
}
