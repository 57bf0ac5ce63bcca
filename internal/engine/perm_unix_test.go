//go:build !windows

package engine_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
)

// A data_dir an earlier version created with the umask's mode (0755) is
// made private when the engine takes it, and says so in the log: it holds
// the text of upstream resources.
func TestOpenMakesAnOlderDataDirPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	var logs bytes.Buffer
	eng, err := engine.New(t.Context(), engine.Options{Config: &config.Config{DataDir: dir}, Embedder: &indextest.BagEmbedder{},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("data_dir mode %v after start, want 0700", got)
	}
	if !strings.Contains(logs.String(), "made it private") {
		t.Errorf("the change was not logged:\n%s", logs.String())
	}
}
