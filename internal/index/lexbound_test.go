package index_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/resource"
)

// A server whose descriptors are made of words no other resource has fills
// its own share of the BM25F index and no more: its later resources keep
// their names' words, another server's are indexed whole, and the daemon
// says so once in its log.
func TestAServersWordsStayWithinItsShare(t *testing.T) {
	var log bytes.Buffer
	const share = 200_000
	ix, err := index.Open(t.Context(), index.Options{Embedder: indextest.RandomEmbedder{Dims: 16},
		Lexical: &lexical.Options{GroupBytes: share}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	next := 0
	words := func(n int) string {
		var b strings.Builder
		for range n {
			fmt.Fprintf(&b, "w%07d ", next)
			next++
		}
		return b.String()
	}
	var evil []resource.Descriptor
	for i := range 100 {
		evil = append(evil, resource.Descriptor{Server: "evil", URI: fmt.Sprintf("x://e/%d", i), Name: fmt.Sprintf("evilname%d", i), Description: words(200)})
	}
	if _, err := ix.Replace(t.Context(), "evil", evil); err != nil {
		t.Fatal(err)
	}
	lastEvil := next - 1
	good := resource.Descriptor{Server: "good", URI: "x://g/1", Name: "goodname", Description: words(200)}
	if _, err := ix.Replace(t.Context(), "good", []resource.Descriptor{good}); err != nil {
		t.Fatal(err)
	}
	if d, _ := ix.LexicalBytes("evil"); d > share+100*4*200 {
		t.Errorf("the server's words are charged %d bytes, want about its share, %d", d, share)
	}
	for q, want := range map[string]string{
		"evilname99":                   "evil",
		fmt.Sprintf("w%07d", lastEvil): "",
		fmt.Sprintf("w%07d", next-1):   "good",
		fmt.Sprintf("w%07d", next-200): "good",
	} {
		hits := ix.Lexical(q, 0, index.Filter{})
		switch {
		case want == "" && len(hits) != 0:
			t.Errorf("%q: %v, want no hit (past the share)", q, hits)
		case want != "" && (len(hits) != 1 || hits[0].Key.Server != want):
			t.Errorf("%q: %v, want one hit of %s", q, hits, want)
		}
	}
	if n := strings.Count(log.String(), "fill its share"); n != 1 || !strings.Contains(log.String(), "server=evil") {
		t.Errorf("log said %d times that a server's words fill its share, want once, for evil:\n%s", n, log.String())
	}
}
