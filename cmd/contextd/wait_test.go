package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	ctxsync "github.com/contextd/contextd/internal/sync"
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

func TestPendingLineSaysWhatIsNotIndexed(t *testing.T) {
	if got := pendingLine(ctxsync.Status{}); got != "" {
		t.Errorf("nothing pending: %q, want empty", got)
	}
	got := pendingLine(ctxsync.Status{DescriptorsPending: 1920, ContentWaiting: 12, PassagesPending: 50})
	for _, want := range []string{"1920 descriptors not embedded yet", "12 resources' text not indexed yet", "50 passages"} {
		if !strings.Contains(got, want) {
			t.Errorf("pendingLine = %q, want it to say %q", got, want)
		}
	}
	if got := pendingLine(ctxsync.Status{ContentWaiting: 3, ContentBound: "bytes"}); !strings.Contains(got, "bound reached: bytes") {
		t.Errorf("pendingLine with a bound = %q", got)
	}
}
