package sync_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// With the index's directory unwritable (a full disk), a sync fails and is
// retried with backoff, without embedding the same descriptors again each
// time; once writes succeed the mirror is ready and the error is cleared.
func TestUnwritableIndexRetriesWithoutReembeddingAndRecovers(t *testing.T) {
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	ix, err := index.Open(t.Context(), index.Options{Dir: dir, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Replace(t.Context(), "other", []resource.Descriptor{{Server: "other", URI: "x://seed", Name: "seed"}}); err != nil { // creates the collection directories
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var broken []string
	for _, e := range entries {
		if e.IsDir() {
			p := filepath.Join(dir, e.Name())
			if err := os.Rename(p, p+".away"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			broken = append(broken, p)
		}
	}
	docs := map[string]string{}
	for i := range 20 {
		docs["doc://"+string(rune('a'+i))] = "text"
	}
	srv := mcptest.NewServer(docs, nil)
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv),
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, ContentMaxResources: -1})
	calls := emb.Calls.Load()
	start(t, m)
	eventually(t, "several failed syncs", func() bool { return m.Status().Syncs >= 4 })
	st := m.Status()
	if st.State != ctxsync.StateDegraded || st.LastError == "" {
		t.Fatalf("with the index unwritable: %v %q", st.State, st.LastError)
	}
	if n := emb.Calls.Load() - calls; n != 20 {
		t.Errorf("%d syncs embedded %d texts, want 20 (each descriptor once)", st.Syncs, n)
	}
	for _, p := range broken {
		os.Remove(p)
		if err := os.Rename(p+".away", p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a sync after the disk recovered", func() bool { return m.Status().State == ctxsync.StateReady })
	if st := m.Status(); st.LastError != "" || ix.Len("s") != 20 {
		t.Errorf("after recovery: last error %q, %d descriptors", st.LastError, ix.Len("s"))
	}
	if n := emb.Calls.Load() - calls; n != 20 {
		t.Errorf("embedded %d texts in all, want 20", n)
	}
}
