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
