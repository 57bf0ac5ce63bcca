package metrics

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// approx compares floats to 1e-12: every expected value below is written as
// the arithmetic that produces it, so only the last bits may differ.
var approx = cmpopts.EquateApprox(0, 1e-12)

var (
	// one relevant document
	single = map[string]int{"a": 1}
	// graded, with a judged non-relevant (0) and a negative grade
	graded = map[string]int{"a": 3, "b": 2, "c": 1, "x": 0, "y": -1}
	// two relevant documents with the same grade
	tied = map[string]int{"a": 1, "b": 1}
	// judged, but nothing relevant
	none = map[string]int{"x": 0}
)

// curve builds a recall curve of CurveDepth points: the given values for
// k = 1, 2, …, then the last of them repeated.
func curve(vals ...float64) []float64 {
	c := make([]float64, CurveDepth)
	for i := range c {
		c[i] = vals[min(i, len(vals)-1)]
	}
	return c
}

func TestScore(t *testing.T) {
	log2 := math.Log2
	tests := []struct {
		name       string
		ranking    []string
		judgements map[string]int
		want       Scores
	}{
		{
			name:       "relevant at rank 2",
			ranking:    []string{"b", "a", "c"},
			judgements: single,
			want: Scores{
				HitAt1: 0, HitAt5: 1, RecallAt5: 1, RecallAt10: 1,
				MRR:         1.0 / 2,
				NDCGAt10:    (1 / log2(3)) / 1,
				RecallCurve: curve(0, 1),
			},
		},
		{
			name:       "relevant at rank 1",
			ranking:    []string{"a"},
			judgements: single,
			want:       Scores{HitAt1: 1, HitAt5: 1, RecallAt5: 1, RecallAt10: 1, MRR: 1, NDCGAt10: 1, RecallCurve: curve(1)},
		},
		{
			name:       "relevant at rank 7: outside 5, inside 10",
			ranking:    []string{"1", "2", "3", "4", "5", "6", "a"},
			judgements: single,
			want: Scores{
				HitAt1: 0, HitAt5: 0, RecallAt5: 0, RecallAt10: 1,
				MRR:         1.0 / 7,
				NDCGAt10:    1 / log2(8),
				RecallCurve: curve(0, 0, 0, 0, 0, 0, 1),
			},
		},
		{
			name:       "relevant at rank 11: outside every cut-off but MRR",
			ranking:    []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"},
			judgements: single,
			want: Scores{
				MRR:         1.0 / 11,
				RecallCurve: curve(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1),
			},
		},
		{
			name:       "shorter than k, nothing relevant",
			ranking:    []string{"b", "c"},
			judgements: single,
			want:       Scores{RecallCurve: curve(0)},
		},
		{
			name:       "empty ranking",
			ranking:    nil,
			judgements: graded,
			want:       Scores{RecallCurve: curve(0)},
		},
		{
			name:       "no relevant judgement",
			ranking:    []string{"x", "a"},
			judgements: none,
			want:       Scores{RecallCurve: curve(0)},
		},
		{
			name: "graded, several relevant, non-relevant and unjudged ranked",
			// gains by rank: x=0, c=1, b=2, z=unjudged, a=3
			ranking:    []string{"x", "c", "b", "z", "a"},
			judgements: graded,
			want: Scores{
				HitAt1: 0, HitAt5: 1, RecallAt5: 1, RecallAt10: 1,
				MRR: 1.0 / 2,
				NDCGAt10: (1/log2(3) + 2/log2(4) + 3/log2(6)) /
					(3/log2(2) + 2/log2(3) + 1/log2(4)),
				RecallCurve: curve(0, 1.0/3, 2.0/3, 2.0/3, 1),
			},
		},
		{
			name:       "graded, a negative grade is not relevant",
			ranking:    []string{"y", "a"},
			judgements: graded,
			want: Scores{
				HitAt1: 0, HitAt5: 1, RecallAt5: 1.0 / 3, RecallAt10: 1.0 / 3,
				MRR:         1.0 / 2,
				NDCGAt10:    (3 / log2(3)) / (3 + 2/log2(3) + 1.0/2),
				RecallCurve: curve(0, 1.0/3),
			},
		},
		{
			name:       "tied grades: either order is ideal",
			ranking:    []string{"b", "a"},
			judgements: tied,
			want: Scores{
				HitAt1: 1, HitAt5: 1, RecallAt5: 1, RecallAt10: 1, MRR: 1, NDCGAt10: 1,
				RecallCurve: curve(0.5, 1),
			},
		},
		{
			name:       "tied grades, one found at rank 2",
			ranking:    []string{"c", "a"},
			judgements: tied,
			want: Scores{
				HitAt1: 0, HitAt5: 1, RecallAt5: 0.5, RecallAt10: 0.5,
				MRR:         0.5,
				NDCGAt10:    (1 / log2(3)) / (1 + 1/log2(3)),
				RecallCurve: curve(0, 0.5),
			},
		},
		{
			name:       "a repeated document counts once",
			ranking:    []string{"a", "a", "a", "b"},
			judgements: tied,
			want: Scores{
				HitAt1: 1, HitAt5: 1, RecallAt5: 1, RecallAt10: 1, MRR: 1,
				NDCGAt10:    (1 + 1/log2(5)) / (1 + 1/log2(3)),
				RecallCurve: curve(0.5, 0.5, 0.5, 1),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Score(tt.ranking, tt.judgements)
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("Score mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNDCGNumbers pins values computed independently, in Python with
// math.log2, so that one mistake shared by the formula and the expressions in
// TestScore cannot pass unnoticed.
func TestNDCGNumbers(t *testing.T) {
	tests := []struct {
		ranking    []string
		judgements map[string]int
		k          int
		want       float64
	}{
		{[]string{"x", "c", "b", "z", "a"}, graded, 10, 0.5862180879313589},
		{[]string{"x", "c", "b", "z", "a"}, graded, 3, 0.3424985031845269},
		{[]string{"x", "c", "b", "z", "a"}, graded, 1, 0},
		{[]string{"c", "a"}, tied, 10, 0.38685280723454163},
		{[]string{"a"}, graded, 0, 0},
	}
	for _, tt := range tests {
		if got := NDCGAt(tt.ranking, tt.judgements, tt.k); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("NDCGAt(%q, k=%d) = %.17g, want %.17g", tt.ranking, tt.k, got, tt.want)
		}
	}
}

func TestCutOffs(t *testing.T) {
	r := []string{"x", "c", "b", "z", "a"}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"HitAt k=0", HitAt(r, graded, 0), 0},
		{"HitAt k=2", HitAt(r, graded, 2), 1},
		{"HitAt k beyond ranking", HitAt(r, graded, 100), 1},
		{"RecallAt k=0", RecallAt(r, graded, 0), 0},
		{"RecallAt k=-1", RecallAt(r, graded, -1), 0},
		{"RecallAt k=3", RecallAt(r, graded, 3), 2.0 / 3},
		{"RecallAt k beyond ranking", RecallAt(r, graded, 100), 1},
		{"ReciprocalRank empty", ReciprocalRank(nil, graded), 0},
	}
	for _, tt := range tests {
		if math.Abs(tt.got-tt.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if got := RecallCurve(r, graded, 0); len(got) != 0 {
		t.Errorf("RecallCurve(maxK=0) = %v, want empty", got)
	}
	if diff := cmp.Diff([]float64{0, 1.0 / 3, 2.0 / 3}, RecallCurve(r, graded, 3), approx); diff != "" {
		t.Errorf("RecallCurve(maxK=3) mismatch (-want +got):\n%s", diff)
	}
}

func TestRank(t *testing.T) {
	in := []Scored{
		{"b", 1}, {"a", 1}, {"c", 2}, {"d", math.NaN()}, {"e", 0.5}, {"f", math.Inf(-1)}, {"aa", 1},
	}
	want := []string{"c", "a", "aa", "b", "e", "f", "d"}
	orig := slices.Clone(in)
	for range 5 {
		got := Rank(in)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Rank mismatch (-want +got):\n%s", diff)
		}
		if !slices.EqualFunc(in, orig, func(x, y Scored) bool {
			return x.ID == y.ID && (x.Score == y.Score || math.IsNaN(x.Score) && math.IsNaN(y.Score))
		}) {
			t.Fatalf("Rank modified its input: %v", in)
		}
		slices.Reverse(in)
		slices.Reverse(orig)
	}
	// With a tie between a relevant and an irrelevant document the metrics
	// depend only on the ids, never on the order the scores came in.
	j := map[string]int{"m": 1}
	for _, in := range [][]Scored{{{"m", 0.7}, {"n", 0.7}}, {{"n", 0.7}, {"m", 0.7}}} {
		if got := HitAt(Rank(in), j, 1); got != 1 {
			t.Errorf("HitAt(Rank(%v), 1) = %v, want 1", in, got)
		}
	}
	if got := Rank(nil); len(got) != 0 {
		t.Errorf("Rank(nil) = %v, want empty", got)
	}
}

func ms(n ...int) []time.Duration {
	d := make([]time.Duration, len(n))
	for i, v := range n {
		d[i] = time.Duration(v) * time.Millisecond
	}
	return d
}

func TestPercentile(t *testing.T) {
	oneToTwenty := make([]int, 20)
	for i := range oneToTwenty {
		oneToTwenty[i] = 20 - i // descending: Percentile must sort
	}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value p50", ms(7), 50, 7 * time.Millisecond},
		{"one value p95", ms(7), 95, 7 * time.Millisecond},
		// n=3: p50 rank ⌈1.5⌉ = 2, p95 rank ⌈2.85⌉ = 3
		{"three p50", ms(3, 1, 2), 50, 2 * time.Millisecond},
		{"three p95", ms(3, 1, 2), 95, 3 * time.Millisecond},
		// n=10: p50 rank ⌈5⌉ = 5, p95 rank ⌈9.5⌉ = 10
		{"ten p50", ms(100, 90, 80, 70, 60, 50, 40, 30, 20, 10), 50, 50 * time.Millisecond},
		{"ten p95", ms(100, 90, 80, 70, 60, 50, 40, 30, 20, 10), 95, 100 * time.Millisecond},
		// n=20: p50 rank 10, p95 rank exactly 19 (not 20)
		{"twenty p50", ms(oneToTwenty...), 50, 10 * time.Millisecond},
		{"twenty p95", ms(oneToTwenty...), 95, 19 * time.Millisecond},
		{"twenty p100", ms(oneToTwenty...), 100, 20 * time.Millisecond},
		{"twenty p0", ms(oneToTwenty...), 0, 1 * time.Millisecond},
		{"ties", ms(5, 5, 5, 9), 50, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		if got := Percentile(in, tt.p); got != tt.want {
			t.Errorf("%s: Percentile(%v, %v) = %v, want %v", tt.name, tt.in, tt.p, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("%s: Percentile modified its input", tt.name)
		}
	}
}

func TestSummarize(t *testing.T) {
	log2 := math.Log2
	queries := []Query{
		{ID: "q1", Ranking: []string{"b", "a", "c"}, Judgements: single, Latency: 10 * time.Millisecond},
		{ID: "q2", Ranking: []string{"x", "c", "b", "z", "a"}, Judgements: graded, Latency: 30 * time.Millisecond},
		{ID: "q3", Ranking: nil, Judgements: single, Latency: 20 * time.Millisecond},
	}
	ndcg2 := (1/log2(3) + 2/log2(4) + 3/log2(6)) / (3 + 2/log2(3) + 1/log2(4))
	want := Summary{
		Queries: 3,
		Mean: Scores{
			HitAt1:     0,
			HitAt5:     2.0 / 3,
			RecallAt5:  (1 + 1 + 0) / 3.0,
			RecallAt10: (1 + 1 + 0) / 3.0,
			MRR:        (0.5 + 0.5 + 0) / 3,
			NDCGAt10:   (1/log2(3) + ndcg2 + 0) / 3,
			RecallCurve: curve(
				0,           // k=1
				(1+1.0/3)/3, // k=2
				(1+2.0/3)/3, // k=3
				(1+2.0/3)/3, // k=4
				(1+1.0)/3,   // k≥5
			),
		},
		LatencyP50: 20 * time.Millisecond,
		LatencyP95: 30 * time.Millisecond,
	}
	if diff := cmp.Diff(want, Summarize(queries), approx); diff != "" {
		t.Errorf("Summarize mismatch (-want +got):\n%s", diff)
	}

	empty := Summary{Mean: Scores{RecallCurve: curve(0)}}
	if diff := cmp.Diff(empty, Summarize(nil)); diff != "" {
		t.Errorf("Summarize(nil) mismatch (-want +got):\n%s", diff)
	}
}
