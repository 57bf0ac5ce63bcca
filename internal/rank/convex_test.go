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
