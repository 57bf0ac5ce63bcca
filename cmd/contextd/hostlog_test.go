package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// contextd mcp's log reaches the MCP host: below debug level it keeps the
// message and contextd's own names, never what a server or the embedder
// said (an error's text, a message), masked or not.
func TestHostLogKeepsNoServerText(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(hostLog{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn})}).With("component", "sync", "server", "notes")
	log.Warn("sync failed", "err", errors.New("list failed: last pinned alpha REDACTED omega"), "message", "earlier input: alpha")
	log.With("stderr", "npm ERR! REDACTED").Warn("connect failed")
	got := b.String()
	if strings.Contains(got, "alpha") || strings.Contains(got, "REDACTED") || strings.Contains(got, "npm") {
		t.Errorf("the host's log holds what a server said: %q", got)
	}
	if !strings.Contains(got, "sync failed") || !strings.Contains(got, "server=notes") || !strings.Contains(got, "connect failed") {
		t.Errorf("the host's log lost contextd's own words: %q", got)
	}
}

// What contextd's own state files say (which file, how many entries, the
// file system's error) stays in the host's log: a full disk and a
// directory in a file's place read alike without it.
func TestHostLogKeepsWhatItsFilesSay(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(hostLog{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn})}).With("component", "mcpserver")
	log.Warn("saving what contextd served failed", "file", "/data/mcp-served-reads", "fs_err", errors.New("no space left on device"))
	log.Warn("some of what contextd served before could not be read", "file", "/data/mcp-served-reads", "entries", 3)
	got := b.String()
	for _, want := range []string{"file=/data/mcp-served-reads", "no space left on device", "entries=3"} {
		if !strings.Contains(got, want) {
			t.Errorf("the host's log lacks %q: %q", want, got)
		}
	}
}
