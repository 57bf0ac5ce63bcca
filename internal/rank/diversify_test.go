package rank

import (
	"math"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

func fusedIDs(fs []Fused) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func list(scores ...any) []Fused {
	var out []Fused
	for i := 0; i < len(scores); i += 2 {
		out = append(out, Fused{ID: scores[i].(string), Score: scores[i+1].(float64)})
	}
	return out
}

// The whole query leans to need A: its three resources outrank need B's.
// Each clause's list knows its own need.
var (
	whole   = list("a1", 1.0, "a2", 0.98, "a3", 0.96, "b1", 0.93, "b2", 0.90, "x", 0.5)
	aspectA = list("a1", 1.0, "a2", 0.97, "a3", 0.95, "x", 0.4, "b1", 0.3, "b2", 0.2)
	aspectB = list("b1", 1.0, "b2", 0.95, "x", 0.5, "a1", 0.3, "a2", 0.2, "a3", 0.1)
)

func TestDiversifyServesEveryAspect(t *testing.T) {
	got := fusedIDs(Diversify(whole, [][]Fused{aspectA, aspectB}, 0.4, 0.1, 10, 20))
	want := []string{"a1", "b1", "a2", "a3", "b2", "x"}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}

func TestDiversifyKeepsOrderWhenOff(t *testing.T) {
	for name, got := range map[string][]Fused{
		"lambda 0":   Diversify(whole, [][]Fused{aspectA, aspectB}, 0, 0.1, 10, 20),
		"no aspects": Diversify(whole, nil, 0.4, 0.1, 10, 20),
		"k 0":        Diversify(whole, [][]Fused{aspectA, aspectB}, 0.4, 0.1, 0, 20),
		"depth 1":    Diversify(whole, [][]Fused{aspectA, aspectB}, 0.4, 0.1, 10, 1),
	} {
		if diff := gocmp.Diff(fusedIDs(whole), fusedIDs(got)); diff != "" {
			t.Errorf("%s: order changed (-want +got):\n%s", name, diff)
		}
	}
}

func TestDiversifyLeavesTheTailAndKeepsScoresDescending(t *testing.T) {
	// Only the first depth items are candidates, and only k positions are
	// chosen: b1 is beyond depth 3, so it cannot move up.
	got := Diversify(whole, [][]Fused{aspectA, aspectB}, 1, 0.1, 2, 3)
	if diff := gocmp.Diff([]string{"a1", "a2", "a3", "b1", "b2", "x"}, fusedIDs(got)); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	got = Diversify(whole, [][]Fused{aspectA, aspectB}, 0.4, 0.1, 2, 20)
	if diff := gocmp.Diff([]string{"a1", "b1", "a2", "a3", "b2", "x"}, fusedIDs(got)); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	// b1 (0.93) now precedes a2 (0.98) and a3 (0.96): it takes the best
	// score after it, so the scores stay non-increasing; nothing else moves.
	wantScores := []float64{1.0, 0.98, 0.98, 0.96, 0.90, 0.5}
	for i, f := range got {
		if f.Score != wantScores[i] {
			t.Errorf("%s at %d: score %v, want %v", f.ID, i+1, f.Score, wantScores[i])
		}
	}
	if whole[3].Score != 0.93 {
		t.Errorf("Diversify changed its input: b1 scores %v", whole[3].Score)
	}
}

func TestDiversifyRejectsBadParameters(t *testing.T) {
	for _, p := range []struct{ lambda, tau float64 }{{-0.1, 0.1}, {1.1, 0.1}, {math.NaN(), 0.1}, {0.4, 0}, {0.4, math.Inf(1)}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Diversify(λ=%v, τ=%v) did not panic", p.lambda, p.tau)
				}
			}()
			Diversify(whole, [][]Fused{aspectA}, p.lambda, p.tau, 10, 20)
		}()
	}
}
