package lexical

import (
	"math"
	"testing"
)

func TestScoreDocEqualsSearchAfterInsert(t *testing.T) {
	docs := []Doc{
		{ID: "a", Name: "user guide", Description: "How to manage users and their profiles"},
		{ID: "b", Name: "billing", Description: "Invoices and payments"},
		{ID: "c", Name: "profile settings", URI: "app://settings/profile"},
	}
	ext := Doc{ID: "x", Name: "user profile", Title: "User profile", Description: "The profile of one user", URI: "users://42/profile"}
	for _, q := range []string{"show the profile of user 42", "invoices", "the", "zebra"} {
		x := New(nil)
		x.Upsert(docs...)
		got := x.ScoreDoc(q, ext)
		if x.Len() != 3 {
			t.Fatalf("ScoreDoc changed the index: %d docs", x.Len())
		}
		x.Upsert(ext)
		want := 0.0
		for _, h := range x.Search(q, 0, nil) {
			if h.ID == "x" {
				want = h.Score
			}
		}
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%q: ScoreDoc = %v, Search after inserting = %v", q, got, want)
		}
		if q == "show the profile of user 42" && !(got > 0) {
			t.Errorf("%q: ScoreDoc = %v, want > 0", q, got)
		}
	}
}
