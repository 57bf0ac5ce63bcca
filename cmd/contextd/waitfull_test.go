package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// With --wait-full a one-shot answers from the whole first content pass,
// passages' vectors included: nothing is left pending.
func TestWaitFullLeavesNothingPending(t *testing.T) {
	everything := peer(t, "server-everything")
	cfg := writeConfig(t, fmt.Sprintf(`
data_dir: %s
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
`, t.TempDir(), everything))
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"assemble", "--config", cfg, "--budget", "1200", "--wait-full", architectureQuery}, &stdout, &stderr); err != nil {
		t.Fatalf("assemble --wait-full: %v\nstderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "pending:") {
		t.Errorf("assemble --wait-full answered with something pending:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "architecture.md") {
		t.Errorf("assemble --wait-full did not return architecture.md:\n%s", stdout.String())
	}
}
