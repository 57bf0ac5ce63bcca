package index_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// fillerText is n paragraphs of filler about ledgers, with para at paragraph
// at, so that it lands in a passage of its own far past the first
// MaxPassages.
func fillerText(n, at int, para string) string {
	var b strings.Builder
	for i := range n {
		if i == at {
			b.WriteString(para + "\n\n")
			continue
		}
		b.WriteString("The ledger keeps quarterly totals of every account, reconciled by the clerk each evening.\n\n")
	}
	return b.String()
}

func passageKeys(ix *index.Index, query string) []string {
	var out []string
	for _, h := range ix.PassageLexical(query, 0, index.Filter{}) {
		out = append(out, h.Key.URI)
	}
	return out
}

// TestPassageLexicalFindsTheDeepPassage: a paragraph about closing channels
// deep in a long text (past the passages that get a vector) makes that
// text a passage match for a question about it, while the whole-text
// BM25F, which normalises by the long text's length, ranks a short text
// that mentions the same words in passing first. A text of one passage is
// not listed (its BM25F Content field is that passage). The passages
// follow the text through a change, a restart and a delete.
func TestPassageLexicalFindsTheDeepPassage(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	ds := descs("s", "spec", "note")
	ix := open(t, dir, &indextest.BagEmbedder{})
	if _, err := ix.Replace(ctx, "s", ds); err != nil {
		t.Fatal(err)
	}
	const answer = "Closing a nil channel causes a run-time panic; closing a closed channel panics too."
	long := fillerText(4000, 3500, answer)
	if n := len(index.Passages(long)); n != index.MaxPassages {
		t.Fatalf("the long text has %d passages with a vector, want the cap %d", n, index.MaxPassages)
	}
	set := func(d resource.Descriptor, text string) {
		t.Helper()
		if _, err := ix.SetContents(ctx, index.Content{Key: d.Key(), Stamp: index.ContentStamp(d), Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	set(ds[0], long)
	set(ds[1], "A channel value can be nil, as the manual says of channel types.")
	const query = "what happens if I close a nil channel, does it panic"

	if got := lexKeys(ix, query); len(got) != 2 || got[0] != ds[1].URI {
		t.Fatalf("whole-text lexical = %v; this test needs the short text first there", got)
	}
	if got := passageKeys(ix, query); len(got) != 1 || got[0] != ds[0].URI {
		t.Errorf("passage lexical = %v, want only %s", got, ds[0].URI)
	}
	if got := passageKeys(ix, "reconciled clerk"); len(got) != 1 || got[0] != ds[0].URI {
		t.Errorf("passage lexical for the filler = %v, want only %s", got, ds[0].URI)
	}
	if got := ix.PassageLexical(query, 1, index.Filter{}); len(got) != 1 {
		t.Errorf("PassageLexical(n=1) returned %d hits", len(got))
	}
	if got := ix.PassageLexical(query, 0, index.Filter{Servers: []string{"other"}}); len(got) != 0 {
		t.Errorf("PassageLexical filtered to another server = %v", got)
	}
	// A shorter new text drops the passages past its end.
	set(ds[0], fillerText(40, 20, "Closing a nil channel panics."))
	if got := passageKeys(ix, "reconciled clerk"); len(got) != 1 {
		t.Fatalf("passage lexical = %v after a shorter text", got)
	}
	if got := ix.PassageLexical("clerk", 0, index.Filter{}); len(got) != 1 || got[0].Score <= 0 {
		t.Errorf("passage lexical for the shorter text = %v", got)
	}
	set(ds[0], "Quarterly totals only.")
	if got := passageKeys(ix, "quarterly reconciled clerk"); len(got) != 0 {
		t.Errorf("after the text became one passage, passage lexical = %v, want none", got)
	}
	set(ds[0], long)
	ix.Close()

	ix = open(t, dir, &indextest.BagEmbedder{})
	if got := passageKeys(ix, query); len(got) != 1 || got[0] != ds[0].URI {
		t.Errorf("after reopening, passage lexical = %v, want only %s", got, ds[0].URI)
	}
	if err := ix.Delete(ctx, ds[0].Key()); err != nil {
		t.Fatal(err)
	}
	if got := passageKeys(ix, "reconciled clerk"); len(got) != 0 {
		t.Errorf("after delete, passage lexical = %v, want none", got)
	}
	set(ds[1], fillerText(60, 30, "Closing a nil channel panics."))
	if got := passageKeys(ix, query); len(got) != 1 || got[0] != ds[1].URI {
		t.Fatalf("passage lexical = %v, want only %s", got, ds[1].URI)
	}
	if _, err := ix.DropContents(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if got := passageKeys(ix, query); len(got) != 0 {
		t.Errorf("after DropContents, passage lexical = %v, want none", got)
	}
}

// The index's directories are the daemon user's alone: they hold the text
// of resources read with the operator's credentials.
func TestIndexDirectoriesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "index")
	open(t, dir, &indextest.BagEmbedder{})
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v, want no access for others", path, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
