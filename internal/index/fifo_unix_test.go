//go:build unix

package index_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/contextd/contextd/internal/index/indextest"
)

// A named pipe in a document file's place (written into data_dir) once
// blocked the index's load for good: the daemon bound its port and never
// served, and ignored SIGTERM. It is broken like a torn document: that
// document is lost, the rest load.
func TestADocumentThatIsNoFileCostsOnlyThatDocument(t *testing.T) {
	dir := t.TempDir()
	ix := open(t, dir, &indextest.BagEmbedder{})
	if _, err := ix.Upsert(t.Context(), descs("s", "one", "two", "three")...); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	var fifo string
	err := filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err == nil && fifo == "" && !de.IsDir() && strings.HasSuffix(de.Name(), ".gob.gz") && de.Name() != "00000000.gob.gz" {
			fifo = p
		}
		return err
	})
	if err != nil || fifo == "" {
		t.Fatalf("no document file found (%v)", err)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ix2 := open(t, dir, &indextest.BagEmbedder{})
	if ix2.Len("s") != 2 {
		t.Errorf("Len = %d with one document file a named pipe, want the other 2 kept", ix2.Len("s"))
	}
	if fi, err := os.Lstat(fifo); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		t.Errorf("the named pipe is still there")
	}
}
