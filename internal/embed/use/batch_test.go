package use

import (
	"runtime"
	"slices"
	"strings"
	"testing"
)

// EmbedBatch gives a task and its clauses (balanced groups, one per
// core) and a long text with a short one (one stream, each product split
// across the cores) Embed's vectors to the bit.
func TestEmbedBatchGroupsMatchEmbed(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: EmbedBatch makes no groups")
	}
	e := &Embedder{m: testModel(t)}
	long := "a longer text: " + strings.Repeat("gather every invoice and payment ", 20)
	uneven := []string{long, "read a file"}
	if balance(benchTask, 2) == nil || balance(uneven, 2) != nil {
		t.Fatalf("balance(task) = %v, balance(uneven) = %v: not the paths this test names", balance(benchTask, 2), balance(uneven, 2))
	}
	for _, texts := range [][]string{benchTask, uneven} {
		got, err := e.EmbedBatch(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			want, err := e.Embed(t.Context(), text)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got[i], want) {
				t.Fatalf("EmbedBatch[%d] (%.30q) differs from Embed", i, text)
			}
		}
	}
}

// balance splits a task and its clauses into groups of about equal
// length, each text in one group, and declines what is too uneven, too
// long or too few.
func TestBalance(t *testing.T) {
	for _, n := range []int{2} {
		groups := balance(benchTask, n)
		if len(groups) != n {
			t.Fatalf("balance(task, %d) = %v", n, groups)
		}
		var seen []int
		total, heaviest := 0, 0
		for _, g := range groups {
			load := 0
			for _, i := range g {
				load += len(benchTask[i])
			}
			total += load
			heaviest = max(heaviest, load)
			seen = append(seen, g...)
		}
		slices.Sort(seen)
		if len(seen) != len(benchTask) || len(slices.Compact(seen)) != len(benchTask) || seen[0] != 0 || seen[len(seen)-1] != len(benchTask)-1 {
			t.Errorf("balance(task, %d) = %v: not every text once", n, groups)
		}
		if float64(heaviest*n) > balanceSlack*float64(total) {
			t.Errorf("balance(task, %d): heaviest group %d of %d bytes", n, heaviest, total)
		}
	}
	long := strings.Repeat("gather every invoice and payment ", 20)
	for name, texts := range map[string][]string{
		"uneven":   {long, "read a file"},
		"too few":  {long},
		"too long": slices.Repeat([]string{long}, balanceBytes/len(long)+1),
	} {
		if g := balance(texts, 2); g != nil {
			t.Errorf("%s: balance = %v, want nil", name, g)
		}
	}
	// On three cores the task, half of the bytes, is too heavy a share.
	if g := balance(benchTask, 3); g != nil {
		t.Errorf("balance(task, 3) = %v, want nil", g)
	}
}
