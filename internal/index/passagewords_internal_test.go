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

// A passage's ID costs tens of bytes whatever its key's length: a 4 KiB
// URI named whole in each of a long text's passage IDs took as much heap
// as the text. Long keys are found, shrunk and dropped like short ones.
func TestPassageIDsOfLongKeysAreShort(t *testing.T) {
	p := newPassageWords()
	long := resource.Key{Server: "s", URI: "doc://" + strings.Repeat("a", 4000)}
	short := resource.Key{Server: "s", URI: "doc://b"}
	text := func(word string, n int) string {
		return strings.Repeat(word+" runs every night and keeps the ledger.\n\n", n)
	}
	p.set(long, text("alpha", 300))
	p.set(short, text("alpha", 300))
	hits := p.x.Search("alpha", 0, nil)
	if len(hits) != 2*p.n[long] || p.n[long] < 2 {
		t.Fatalf("%d hits for %d passages each, want all", len(hits), p.n[long])
	}
	found := map[resource.Key]int{}
	for _, h := range hits {
		k, ok := p.key(h.ID)
		if !ok {
			t.Fatalf("passage ID %.80q names no key", h.ID)
		}
		if k == long && len(h.ID) > 100 {
			t.Fatalf("a passage ID of %d bytes for a key of %d", len(h.ID), len(long.String()))
		}
		found[k]++
	}
	if found[long] != p.n[long] || found[short] != p.n[short] {
		t.Fatalf("passages by key %v, want %d each", found, p.n[long])
	}
	// Shrinking a text drops its passages past the new end.
	p.set(long, text("alpha", 60))
	if got := len(p.x.Search("alpha", 0, nil)); got != p.n[long]+p.n[short] || p.x.Len() != got {
		t.Fatalf("after shrinking: %d hits, %d documents; want %d", got, p.x.Len(), p.n[long]+p.n[short])
	}
	p.drop(long)
	if p.x.Len() != p.n[short] || len(p.long) != 0 {
		t.Fatalf("after drop: %d documents and %d hash names, want %d and none", p.x.Len(), len(p.long), p.n[short])
	}
	p.set(long, text("alpha", 60))
	p.set(long, "")
	if p.x.Len() != p.n[short] || len(p.long) != 0 {
		t.Fatalf("after removing its text: %d documents and %d hash names, want %d and none", p.x.Len(), len(p.long), p.n[short])
	}
}
