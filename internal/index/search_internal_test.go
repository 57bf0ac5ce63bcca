package index

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/contextd/contextd/internal/resource"
)

// dots must give dot's results to the last bit (Dense and Score rank the
// same descriptor on different paths), for any number of rows, including
// rows whose length is not the query's.
func TestDotsMatchDotBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vec := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	q := vec(512)
	for _, rows := range []int{0, 1, 3, 4, 5, 9, 64} {
		vs := make([][]float32, rows)
		for i := range vs {
			vs[i] = vec(512)
		}
		if rows > 5 {
			vs[5] = vec(100) // shorter: dot's common length
		}
		got := make([]float32, rows)
		dots(vs, q, got)
		for i, v := range vs {
			if want := dot(v, q); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("%d rows: row %d: dots %v, dot %v", rows, i, got[i], want)
			}
		}
	}
	// Rows with no, one and three passages: the mixed score takes the mean
	// of the first and the best.
	hits := make([]Hit, 6)
	vs := make([][]float32, 6)
	per := make([][][]float32, 6)
	var ps [][]float32
	var upto []int
	for i, n := range []int{0, 1, 0, 3, 2, 1} {
		vs[i] = vec(512)
		for range n {
			per[i] = append(per[i], vec(512))
		}
		ps = append(ps, per[i]...)
		upto = append(upto, len(ps))
	}
	const w = 0.3 // not a power of two, so a fused multiply-add would show
	scoreMixed(hits, vs, ps, upto, 0, q, w)
	// The same rows scored in two parts, as scanMixed splits them.
	split := make([]Hit, 6)
	scoreMixed(split[:3], vs[:3], ps, upto[:3], 0, q, w)
	scoreMixed(split[3:], vs[3:], ps, upto[3:], upto[2], q, w)
	for i := range hits {
		want := dot(vs[i], q)
		if len(per[i]) > 0 {
			first := dot(per[i][0], q)
			best := first
			for _, p := range per[i][1:] {
				best = max(best, dot(p, q))
			}
			a, b := float32((1-w)*want), float32(w*((first+best)/2))
			want = a + b
		}
		if hits[i].Score != float64(want) || split[i].Score != float64(want) {
			t.Errorf("row %d (%d passages): scoreMixed %v (split %v), want %v", i, len(per[i]), hits[i].Score, split[i].Score, want)
		}
	}
}

// topHits must give the first n of the full order, ties broken by key.
func TestTopHitsIsTheHeadOfTheFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, size := range []int{0, 1, 7, 100, 1000} {
		hs := make([]Hit, size)
		for i := range hs {
			// few distinct scores, so many ties fall to the key
			hs[i] = Hit{Key: resource.Key{Server: fmt.Sprint("s", r.IntN(3)), URI: fmt.Sprint("u://", i)}, Score: float64(r.IntN(20)) / 20}
		}
		want := slices.Clone(hs)
		slices.SortStableFunc(want, func(a, b Hit) int {
			if c := cmp.Compare(b.Score, a.Score); c != 0 {
				return c
			}
			return cmp.Compare(a.Key.String(), b.Key.String())
		})
		for _, n := range []int{-1, 0, 1, 5, 99, 100, 101, 2000} {
			got := topHits(slices.Clone(hs), n)
			w := want
			if n > 0 && n < len(w) {
				w = w[:n]
			}
			if !slices.Equal(got, w) {
				t.Fatalf("%d hits, n %d: got %v\nwant %v", size, n, got, w)
			}
		}
	}
}
