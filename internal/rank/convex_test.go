package rank_test

import (
	"math"
	"testing"

	"github.com/contextd/contextd/internal/rank"
)

func TestConvexNormalisesEachListAndFillsMissingScores(t *testing.T) {
	dense := rank.List{Floor: -1, Cut: true, Items: []rank.Scored{{"a", 0.8}, {"b", 0.5}, {"c", 0.2}}}
	lex := rank.List{Floor: 0, Items: []rank.Scored{{"d", 12}, {"b", 6}}}
	got := rank.Convex(0.5, dense, lex)
	want := map[string]float64{
		// n_dense = (s+1)/1.8; c's 0.2 stands in for d (the dense list was cut).
		"a": 0.5 * 1.8 / 1.8,
		"b": 0.5*1.5/1.8 + 0.5*6/12,
		"c": 0.5 * 1.2 / 1.8,
		"d": 0.5*1.2/1.8 + 0.5*12/12,
	}
	if len(got) != 4 {
		t.Fatalf("got %d items, want the union of 4", len(got))
	}
	for _, f := range got {
		if math.Abs(f.Score-want[f.ID]) > 1e-12 {
			t.Errorf("%s: score %v, want %v", f.ID, f.Score, want[f.ID])
		}
	}
	if order := [4]string{got[0].ID, got[1].ID, got[2].ID, got[3].ID}; order != [4]string{"d", "b", "a", "c"} {
		t.Errorf("order %v, want d b a c", order)
	}
	if got[0].Ranks[0] != 0 || got[0].Ranks[1] != 1 {
		t.Errorf("d's ranks = %v, want [0 1]", got[0].Ranks)
	}
}

func TestConvexUncutListGivesUnlistedItemsTheFloor(t *testing.T) {
	dense := rank.List{Floor: -1, Items: []rank.Scored{{"a", 1}}}
	lex := rank.List{Floor: 0, Items: []rank.Scored{{"b", 3}}}
	got := rank.Convex(0.5, dense, lex)
	for _, f := range got {
		if f.Score != 0.5 {
			t.Errorf("%s: %v, want 0.5 (its own list's best, the floor in the other)", f.ID, f.Score)
		}
	}
	if got[0].ID != "a" { // tie on score and best rank: by ID
		t.Errorf("tie order %v", got)
	}
}

func TestConvexAlphaOneIsTheFirstListAlone(t *testing.T) {
	dense := rank.List{Floor: -1, Cut: true, Items: []rank.Scored{{"a", 0.9}, {"b", 0.1}}}
	lex := rank.List{Floor: 0, Items: []rank.Scored{{"b", 30}}}
	got := rank.Convex(1, dense, lex)
	if got[0].ID != "a" || got[1].ID != "b" {
		t.Errorf("alpha 1 order %v, want the dense order", got)
	}
	if got := rank.Convex(0.5, rank.List{}, rank.List{}); len(got) != 0 {
		t.Errorf("two empty lists gave %v", got)
	}
}

func TestConvexNWeighsThreeLists(t *testing.T) {
	dense := rank.List{Floor: -1, Cut: true, Items: []rank.Scored{{"a", 0.8}, {"b", 0.2}}}
	lex := rank.List{Floor: 0, Items: []rank.Scored{{"b", 4}}}
	pass := rank.List{Floor: 0, Items: []rank.Scored{{"c", 10}, {"a", 5}}}
	got := rank.ConvexN([]float64{0.5, 0.2, 0.3}, dense, lex, pass)
	want := map[string]float64{
		"a": 0.5*1.8/1.8 + 0.3*5/10,
		"b": 0.5*1.2/1.8 + 0.2*4/4,
		"c": 0.5*1.2/1.8 + 0.3*10/10, // the cut dense list's last score stands in
	}
	if len(got) != 3 {
		t.Fatalf("got %d items, want the union of 3", len(got))
	}
	for _, f := range got {
		if math.Abs(f.Score-want[f.ID]) > 1e-12 {
			t.Errorf("%s: score %v, want %v", f.ID, f.Score, want[f.ID])
		}
		if len(f.Ranks) != 3 {
			t.Errorf("%s: %d ranks, want one per list", f.ID, len(f.Ranks))
		}
	}
	if got[0].ID != "a" || got[0].Ranks != nil && got[0].Ranks[2] != 2 {
		t.Errorf("first = %+v, want a, rank 2 in the third list", got[0])
	}
	// Convex is ConvexN with weights α and 1−α.
	two := rank.Convex(0.7, dense, lex)
	n := rank.ConvexN([]float64{0.7, 0.3}, dense, lex)
	for i := range two {
		if two[i].ID != n[i].ID || two[i].Score != n[i].Score {
			t.Errorf("Convex %v != ConvexN %v", two, n)
			break
		}
	}
	for _, bad := range [][]float64{{0.6, 0.6, 0}, {-0.1, 0.5, 0.5}, {math.NaN(), 0, 0}, {0.5, 0.5}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ConvexN(%v) did not panic", bad)
				}
			}()
			rank.ConvexN(bad, dense, lex, pass)
		}()
	}
}
