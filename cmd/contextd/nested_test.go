package main

import (
	"io"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/mcp"
)

// A contextd started as another's stdio server (a configuration listing
// contextd under a symlink, a renamed binary or a shell wrapper) starts no
// servers of its own: each would start the next without end. Clients of a
// daemon are not refused.
func TestAContextdStartedAsAServerStartsNone(t *testing.T) {
	t.Setenv(mcp.UpstreamOfEnv, "4242")
	for _, cmd := range []string{"serve", "mcp", "assemble", "search"} {
		err := run(t.Context(), []string{cmd, "--config", "/nonexistent/contextd.yaml", "a task"}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "by another contextd as one of its servers") {
			t.Errorf("%s: %v; want it refused as started by another contextd", cmd, err)
		}
	}
	if err := run(t.Context(), []string{"version"}, io.Discard, io.Discard); err != nil {
		t.Errorf("version: %v", err)
	}
}
