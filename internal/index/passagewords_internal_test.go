package index

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/resource"
)

// The passage index holds at most its bound of text: a text that would pass
// it is left out (and known to be), and room freed by a text that leaves
// or shrinks is reused.
func TestPassageWordsAreBoundedByBytes(t *testing.T) {
	p := newPassageWords()
	p.max = 10_000
	text := func(word string) string {
		return strings.Repeat(word+" runs every night and keeps the ledger.\n\n", 100) // ~4.6 KB
	}
	a, b, c := resource.Key{Server: "s", URI: "a"}, resource.Key{Server: "s", URI: "b"}, resource.Key{Server: "s", URI: "c"}
	p.set(a, text("alpha"))
	p.set(b, text("bravo"))
	p.set(c, text("charlie"))
	if p.n[a] == 0 || p.n[b] == 0 {
		t.Fatalf("the first two texts are not indexed: %v", p.n)
	}
	if p.n[c] != 0 || p.total > p.max {
		t.Fatalf("a text past the bound was indexed: n %v, total %d of %d", p.n, p.total, p.max)
	}
	if hits := p.x.Search("charlie", 0, nil); len(hits) != 0 {
		t.Errorf("the text left out is searchable: %v", hits)
	}
	p.drop(a)
	p.set(c, text("charlie"))
	if p.n[c] == 0 {
		t.Errorf("room freed by a dropped text was not reused: %v", p.n)
	}
	// Re-setting a text counts it once.
	p.set(c, text("charlie"))
	if want := len(text("bravo")) + len(text("charlie")); p.total != want {
		t.Errorf("total %d, want %d", p.total, want)
	}
}

// A server's passages of words no other text has take at most its share of
// the passage index (ServerPassageWordsBytes); another server's passages
// are indexed whole.
func TestPassageWordsAreBoundedPerServer(t *testing.T) {
	p := newPassageWords()
	next := 0
	for i := range 6 {
		var b strings.Builder
		for b.Len() < 1<<20 {
			fmt.Fprintf(&b, "%08x ", next)
			next++
			if next%100 == 0 {
				b.WriteString("\n\n")
			}
		}
		p.set(resource.Key{Server: "evil", URI: fmt.Sprint(i)}, b.String())
	}
	if got := p.x.GroupBytes("evil"); got > ServerPassageWordsBytes || got < ServerPassageWordsBytes/2 {
		t.Errorf("the server's passages are charged %d bytes, want its share, %d", got, ServerPassageWordsBytes)
	}
	if hits := p.x.Search(fmt.Sprintf("%08x", next-1), 0, nil); len(hits) != 0 {
		t.Errorf("a word past the share is indexed: %v", hits)
	}
	good := strings.Repeat("the ledger keeps every night.\n\n", 500) + "the harbour master signs the manifest"
	p.set(resource.Key{Server: "good", URI: "g"}, good)
	if hits := p.x.Search("harbour manifest", 0, nil); len(hits) != 1 {
		t.Errorf("another server's passage: %v, want one hit", hits)
	}
}
