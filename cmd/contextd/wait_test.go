package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A one-shot command waiting on a server that never answers says which
// server it waits for, and what that server is doing, rather than nothing
// until --timeout.
func TestOneShotSaysWhichServerItIsWaitingFor(t *testing.T) {
	old := waitReport
	waitReport = 100 * time.Millisecond
	t.Cleanup(func() { waitReport = old })
	cfg := writeConfig(t, "data_dir: "+t.TempDir()+"\nmcpServers:\n  mute:\n    command: sh\n    args: [\"-c\", \"exec sleep 100\"]\n")
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"search", "--config", cfg, "--timeout", "1s", "anything"}, &stdout, &stderr)
	if err == nil {
		t.Fatal("search against a server that never answered succeeded")
	}
	if !strings.Contains(stderr.String(), "contextd: still waiting after") || !strings.Contains(stderr.String(), "for mute (") {
		t.Errorf("stderr does not say which server it waits for:\n%s", stderr.String())
	}
}
