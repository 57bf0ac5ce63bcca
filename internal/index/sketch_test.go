package index_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index"
)

// A page's new edition resembles the one before; another text, or the
// same words in another order, does not.
func TestResemblanceTellsVersionsOfAPage(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "Step %d of the runbook: check autovacuum on table t%d, then the dead tuples and the lag of replica %d.\n", i, i, i%3)
	}
	page := b.String()
	edition := strings.Replace(page, "Step 7 of", "Step seven of", 1) + "Revised for the second edition: the monitoring queries moved to the appendix.\n"
	other := strings.Repeat("b's own page on kafka consumer rebalancing and partition lag, with the broker settings. ", 30)
	words := strings.Fields(page)
	for i, j := 0, len(words)-1; i < j; i, j = i+1, j-1 {
		words[i], words[j] = words[j], words[i]
	}
	shuffled := strings.Join(words, " ")
	var jb strings.Builder
	for i := range 12 {
		fmt.Fprintf(&jb, "手順%d：自動バキュームの設定を確認し、デッドタプルとレプリカ%dの遅延を監視する。\n", i, i%3)
	}
	japanese := jb.String()
	for _, c := range []struct {
		name     string
		a, b     string
		min, max float64
	}{
		{"the same text", page, page, 1, 1},
		{"a new edition", page, edition, 0.7, 1},
		{"another text", page, other, 0, 0.05},
		{"the same words reversed", page, shuffled, 0, 0.1},
		{"a text of two words", page, "two words", 0, 0},
		{"a Japanese page with a word changed throughout", japanese, strings.ReplaceAll(japanese, "設定", "構成"), 0.5, 1},
		{"a Japanese page and another", japanese, strings.Repeat("カフカのコンシューマーの再調整とパーティションの遅延について。", 10), 0, 0.05},
	} {
		if r := index.Resemblance(index.TextSketch(c.a), index.TextSketch(c.b)); r < c.min || r > c.max {
			t.Errorf("%s: resemblance %.2f; want %.2f to %.2f", c.name, r, c.min, c.max)
		}
	}
	if n := len(index.TextSketch(page)); n != 64 {
		t.Errorf("sketch of a long page: %d hashes; want 64", n)
	}
}
