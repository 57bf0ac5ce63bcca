package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A host file that is large for reasons of the host's own (Claude Code's
// ~/.claude.json keeps every project's prompt history: tens of megabytes)
// is watched and reloaded like any other: an edit to it, even made by
// replacing the file, adds the server it names. Over 16 MiB, every reload
// was refused and the watcher never saw an edit.
func TestALargeHostFileIsReloadedOnEdit(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(dir, ".claude.json")
	entry := `{"display": "make the handler's errors say what and where", "pastedContents": {}},` + "\n"
	history := strings.Repeat("        "+entry, (20<<20)/(len(entry)+8))
	file := func(servers string) string {
		return fmt.Sprintf(`{
  "numStartups": 44,
  "listen": "unix://%s",
  "data_dir": %q,
  "embedder": "glove",
  "mcpServers": {%s},
  "projects": {
    "/home/me/src/p0": {
      "history": [
%s        {"display": "last"}
      ]
    }
  }
}
`, filepath.Join(state, "c.sock"), filepath.Join(state, "data"), servers, history)
	}
	if err := os.WriteFile(cfgPath, []byte(file("")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	logs := &lockedBuffer{}
	go func() { done <- run(ctx, []string{"serve", "--config", cfgPath}, io.Discard, logs) }()
	defer func() {
		cancel()
		<-done
	}()
	waitLog := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(logs.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in 60 s; logs:\n%s", what, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitLog("contextd serving")
	// An editor's save: a new file renamed over the old.
	tmp := cfgPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(file(`"late": {"url": "http://127.0.0.1:1/mcp"}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfgPath); err != nil {
		t.Fatal(err)
	}
	waitLog("config reloaded")
	if s := logs.String(); strings.Contains(s, "config reload refused") || !strings.Contains(s, "added=[late]") {
		t.Fatalf("the edit was not taken; logs:\n%.3000s", s)
	}
}
