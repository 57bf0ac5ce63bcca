package index

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// Dense scans rows kept between queries. After every kind of write (a new
// descriptor, a changed one, a deletion, a text indexed, its passages
// embedded, its text dropped) it must rank exactly as a scan rebuilt from
// scratch does.
func TestDenseRowsFollowEveryWrite(t *testing.T) {
	ix, err := Open(t.Context(), Options{Embedder: &indextest.BagEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ctx := t.Context()
	desc := func(server, uri, about string) resource.Descriptor {
		return resource.Descriptor{Server: server, URI: uri, Name: uri, Description: about}
	}
	const q = "invoice payment ledger"
	check := func(step string) []Hit {
		t.Helper()
		got, err := ix.Dense(ctx, q, 0, Filter{})
		if err != nil {
			t.Fatal(err)
		}
		gotS, err := ix.Dense(ctx, q, 0, Filter{Servers: []string{"b"}})
		if err != nil {
			t.Fatal(err)
		}
		ix.rowsMu.Lock()
		ix.scan = nil
		ix.rowsMu.Unlock()
		want, _ := ix.Dense(ctx, q, 0, Filter{})
		wantS, _ := ix.Dense(ctx, q, 0, Filter{Servers: []string{"b"}})
		if !slices.Equal(got, want) || !slices.Equal(gotS, wantS) {
			t.Fatalf("%s: Dense from kept rows %v (server b: %v), from fresh rows %v (%v)", step, got, gotS, want, wantS)
		}
		return got
	}
	if _, err := ix.Replace(ctx, "a", []resource.Descriptor{desc("a", "doc://1", "weather"), desc("a", "doc://2", "calendar")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Replace(ctx, "b", []resource.Descriptor{desc("b", "doc://1", "maps")}); err != nil {
		t.Fatal(err)
	}
	prev := check("first")
	steps := []struct {
		name  string
		write func() error
	}{
		{"added", func() error {
			_, err := ix.Replace(ctx, "b", []resource.Descriptor{desc("b", "doc://1", "maps"), desc("b", "doc://3", "invoice")})
			return err
		}},
		{"changed", func() error {
			_, err := ix.Upsert(ctx, desc("a", "doc://2", "payment ledger"))
			return err
		}},
		{"deleted", func() error { return ix.Delete(ctx, resource.Key{Server: "b", URI: "doc://3"}) }},
		{"text indexed", func() error {
			var text strings.Builder
			text.WriteString("# Weather\n\nforecast rain\n\n")
			for i := range 6 {
				fmt.Fprintf(&text, "# Part %d\n\n%s\n\n", i, strings.Repeat("invoice payment ledger ", 90))
			}
			d, _ := ix.Get(resource.Key{Server: "a", URI: "doc://1"})
			_, err := ix.SetContents(ctx, Content{Key: d.Key(), Stamp: ContentStamp(d), Text: text.String()})
			return err
		}},
		{"passages embedded", func() error {
			n, err := ix.EmbedPassages(ctx, "", 0)
			if err == nil && n == 0 {
				err = fmt.Errorf("no passage embedded")
			}
			return err
		}},
		{"text dropped", func() error { _, err := ix.DropContents(ctx, "a"); return err }},
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := check(s.name)
		if slices.Equal(got, prev) {
			t.Errorf("%s: Dense unchanged (%v); the write should change it", s.name, got)
		}
		prev = got
	}
}
