package catalog

import (
	"slices"
	"testing"
)

func TestLoad(t *testing.T) {
	rs, err := Load(DefaultCorpus(), 2000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2000 {
		t.Fatalf("got %d resources, want 2000", len(rs))
	}
	seen := map[string]bool{}
	var sizes []int64
	var total int64
	for _, r := range rs {
		if seen[r.URI] {
			t.Fatalf("URI %q twice", r.URI)
		}
		seen[r.URI] = true
		if r.Name == "" || r.Description == "" || r.Size != int64(len(r.Text)) || r.Text == "" {
			t.Fatalf("incomplete resource %+v", r.URI)
		}
		sizes = append(sizes, r.Size)
		total += r.Size
	}
	slices.Sort(sizes)
	t.Logf("sizes: median %d, p90 %d, max %d bytes; total %d", sizes[len(sizes)/2], sizes[len(sizes)*9/10], sizes[len(sizes)-1], total)
	if sizes[len(sizes)-1] < 64<<10 {
		t.Errorf("largest text is %d bytes; want some large ones", sizes[len(sizes)-1])
	}
	again, _ := Load(DefaultCorpus(), 2000)
	if again[1500].URI != rs[1500].URI || again[1500].LastModified != rs[1500].LastModified {
		t.Error("Load is not deterministic")
	}
	if _, err := Load(DefaultCorpus(), 0); err == nil {
		t.Error("Load(0) did not fail")
	}
	qs, err := Questions(DefaultCorpus(), "test")
	if err != nil || len(qs) < 50 {
		t.Fatalf("Questions: %d, %v", len(qs), err)
	}
}
