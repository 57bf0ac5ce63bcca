package rank

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var approx = cmpopts.EquateApprox(1e-15, 0)

func TestFuse(t *testing.T) {
	tests := []struct {
		name  string
		k     float64
		lists [][]string
		want  []Fused
	}{
		{
			name:  "hand computed, k=60",
			k:     60,
			lists: [][]string{{"a", "b", "c"}, {"b", "c", "d"}},
			want: []Fused{
				{"b", 1.0/62 + 1.0/61, []int{2, 1}},
				{"c", 1.0/63 + 1.0/62, []int{3, 2}},
				{"a", 1.0 / 61, []int{1, 0}},
				{"d", 1.0 / 63, []int{0, 3}},
			},
		},
		{
			name:  "k <= 0 means 60",
			k:     0,
			lists: [][]string{{"a"}, {"a"}},
			want:  []Fused{{"a", 2.0 / 61, []int{1, 1}}},
		},
		{
			name:  "NaN k means 60",
			k:     math.NaN(),
			lists: [][]string{{"a"}},
			want:  []Fused{{"a", 1.0 / 61, []int{1}}},
		},
		{
			name:  "small k favours first ranks",
			k:     1,
			lists: [][]string{{"a", "b", "c"}, {"c", "x", "y"}},
			// a: 1/2; c: 1/4 + 1/2 = 0.75; b: 1/3; x: 1/3; y: 1/4.
			want: []Fused{
				{"c", 1.0/4 + 1.0/2, []int{3, 1}},
				{"a", 1.0 / 2, []int{1, 0}},
				{"b", 1.0 / 3, []int{2, 0}},
				{"x", 1.0 / 3, []int{0, 2}},
				{"y", 1.0 / 4, []int{0, 3}},
			},
		},
		{
			name:  "ID in only one list",
			k:     60,
			lists: [][]string{{"a", "b"}, {"a"}, {}},
			want: []Fused{
				{"a", 2.0 / 61, []int{1, 1, 0}},
				{"b", 1.0 / 62, []int{2, 0, 0}},
			},
		},
		{
			name:  "duplicate in a list counts once, at its first rank",
			k:     60,
			lists: [][]string{{"a", "b", "a", "c"}},
			want: []Fused{
				{"a", 1.0 / 61, []int{1}},
				{"b", 1.0 / 62, []int{2}},
				{"c", 1.0 / 64, []int{4}}, // the duplicate still takes position 3
			},
		},
		{
			name:  "overlapping lists",
			k:     60,
			lists: [][]string{{"x", "m", "n", "y"}, {"q", "y", "x"}},
			// x = 1/61 + 1/63 beats y = 1/64 + 1/62, and both beat the singletons.
			want: []Fused{
				{"x", 1.0/61 + 1.0/63, []int{1, 3}},
				{"y", 1.0/64 + 1.0/62, []int{4, 2}},
				{"q", 1.0 / 61, []int{0, 1}},
				{"m", 1.0 / 62, []int{2, 0}},
				{"n", 1.0 / 63, []int{3, 0}},
			},
		},
		{
			name:  "exact tie broken by ID",
			k:     60,
			lists: [][]string{{"b", "a"}, {"a", "b"}},
			want: []Fused{
				{"a", 1.0/62 + 1.0/61, []int{2, 1}},
				{"b", 1.0/61 + 1.0/62, []int{1, 2}},
			},
		},
		{"no lists", 60, nil, nil},
		{"empty lists", 60, [][]string{{}, nil}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(tt.k, tt.lists...)
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Fuse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Equal sums of the same contributions must tie exactly, whatever the
// order of the lists, so that the tie-breakers decide and not rounding.
func TestFuseTieIsExact(t *testing.T) {
	// a has ranks (1, 2, 3), b has (3, 1, 2), c has (2, 3, 1): the same
	// multiset, so the same score. Tie on best rank (1) too; order by ID.
	got := Fuse(60, []string{"a", "c", "b"}, []string{"b", "a", "c"}, []string{"c", "b", "a"})
	if got[0].Score != got[1].Score || got[1].Score != got[2].Score {
		t.Errorf("scores of permuted ranks differ: %v", got)
	}
	var ids []string
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ids); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}

func TestFuseBestRankBreaksTies(t *testing.T) {
	// With k = 1, rank 1 in one list (1/2) ties exactly with rank 3 in two
	// lists (1/4 + 1/4). The best single rank then decides: z1 and y (best
	// rank 1) before b (best rank 3), although "b" sorts first by ID.
	got := Fuse(1, []string{"z1", "x", "b"}, []string{"y", "w", "b"})
	want := []Fused{
		{"y", 0.5, []int{0, 1}},
		{"z1", 0.5, []int{1, 0}},
		{"b", 0.5, []int{3, 3}},
		{"w", 1.0 / 3, []int{0, 2}},
		{"x", 1.0 / 3, []int{2, 0}},
	}
	if diff := cmp.Diff(want, got); diff != "" { // exact: the tie must be exact
		t.Errorf("Fuse mismatch (-want +got):\n%s", diff)
	}
}

func TestFuseWeighted(t *testing.T) {
	lists := [][]string{{"a", "b"}, {"b", "a"}}
	got := FuseWeighted(10, []float64{2, 0.5}, lists...)
	want := []Fused{
		{"a", 2.0/11 + 0.5/12, []int{1, 2}},
		{"b", 2.0/12 + 0.5/11, []int{2, 1}},
	}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("FuseWeighted mismatch (-want +got):\n%s", diff)
	}

	// Reversing the weights reverses the order.
	got = FuseWeighted(10, []float64{0.5, 2}, lists...)
	if got[0].ID != "b" {
		t.Errorf("with reversed weights, first = %q, want b", got[0].ID)
	}

	// nil weights is plain Fuse.
	if diff := cmp.Diff(Fuse(10, lists...), FuseWeighted(10, nil, lists...)); diff != "" {
		t.Errorf("FuseWeighted(nil) != Fuse (-want +got):\n%s", diff)
	}

	// A zero weight keeps the IDs but gives no score.
	got = FuseWeighted(60, []float64{1, 0}, []string{"a"}, []string{"z"})
	want = []Fused{{"a", 1.0 / 61, []int{1, 0}}, {"z", 0, []int{0, 1}}}
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("zero weight mismatch (-want +got):\n%s", diff)
	}
}

func TestFuseWeightedPanics(t *testing.T) {
	for _, weights := range [][]float64{
		{1},       // too few
		{1, 1, 1}, // too many
		{1, -1},   // negative
		{1, math.NaN()},
		{math.Inf(1), 1},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("FuseWeighted(%v) did not panic", weights)
				}
			}()
			FuseWeighted(60, weights, []string{"a"}, []string{"b"})
		}()
	}
}

// TestFuseProperties checks, on random inputs, that the output is a
// permutation of the union of the lists, sorted as documented, with ranks
// that point back at the first occurrence in each list.
func TestFuseProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	for iter := range 2000 {
		lists := make([][]string, r.IntN(5))
		for i := range lists {
			lists[i] = make([]string, r.IntN(12))
			for j := range lists[i] {
				lists[i][j] = fmt.Sprint(r.IntN(15)) // small alphabet: duplicates and overlaps
			}
		}
		k := float64(r.IntN(100) - 10)
		got := Fuse(k, lists...)

		var union, ids []string
		for _, l := range lists {
			union = append(union, l...)
		}
		slices.Sort(union)
		union = slices.Compact(union)
		for _, f := range got {
			ids = append(ids, f.ID)
		}
		slices.Sort(ids)
		if diff := cmp.Diff(union, ids, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("iteration %d: output is not a permutation of the union (-want +got):\n%s", iter, diff)
		}

		for i, f := range got {
			if len(f.Ranks) != len(lists) {
				t.Fatalf("iteration %d: %q has %d ranks for %d lists", iter, f.ID, len(f.Ranks), len(lists))
			}
			for li, rk := range f.Ranks {
				if first := slices.Index(lists[li], f.ID) + 1; rk != first {
					t.Fatalf("iteration %d: %q rank in list %d = %d, want %d", iter, f.ID, li, rk, first)
				}
			}
			if i == 0 {
				continue
			}
			p := got[i-1]
			if p.Score < f.Score ||
				p.Score == f.Score && bestRank(p.Ranks) > bestRank(f.Ranks) ||
				p.Score == f.Score && bestRank(p.Ranks) == bestRank(f.Ranks) && p.ID >= f.ID {
				t.Fatalf("iteration %d: %v sorted before %v", iter, p, f)
			}
		}
	}
}

func BenchmarkFuse(b *testing.B) {
	r := rand.New(rand.NewPCG(42, 42))
	lists := make([][]string, 3)
	for i := range lists {
		lists[i] = make([]string, 100)
		for j := range lists[i] {
			lists[i][j] = fmt.Sprint(r.IntN(200))
		}
	}
	for b.Loop() {
		Fuse(0, lists...)
	}
}
