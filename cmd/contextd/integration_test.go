package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// These tests run contextd against the real npm MCP servers that .ci/run
// (and the README's test command) install with `npm ci`.

const architectureQuery = "how is the everything server's architecture organised"

func peer(t *testing.T, pkg string) string { return mcptest.NodePeer(t, pkg) }

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "contextd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkAssemble checks the contract of an answer to architectureQuery.
func checkAssemble(t *testing.T, resp *contextdv1.AssembleResponse, budgetTokens int) {
	t.Helper()
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	recount := 0
	for _, it := range resp.GetItems() {
		if strings.HasSuffix(it.GetUri(), "/architecture.md") {
			found = true
		}
		if it.GetForm() == "pointer" {
			// Charged for its line (PointerText); it carries no contents,
			// the descriptor is the item.
			if len(it.GetContents()) != 0 || it.GetTokens() <= 0 || it.GetTokens() > 64 {
				t.Errorf("pointer %s: %d contents, %d tokens", it.GetUri(), len(it.GetContents()), it.GetTokens())
			}
			recount += int(it.GetTokens())
			continue
		}
		for _, c := range it.GetContents() {
			recount += tok.Count(c.GetText())
		}
	}
	if !found {
		t.Errorf("architecture.md is not among the items: %v", resp.GetItems())
	}
	if recount > budgetTokens {
		t.Errorf("returned texts re-counted to %d tokens, over the budget of %d", recount, budgetTokens)
	}
	if int(resp.GetTotalTokens()) != recount {
		t.Errorf("total_tokens = %d, re-counted %d", resp.GetTotalTokens(), recount)
	}
	if len(resp.GetOmitted()) == 0 {
		t.Errorf("nothing omitted: server-everything has 7 documents, more than 1200 tokens")
	}
	for _, o := range resp.GetOmitted() {
		if o.GetReason() == "" || o.GetDetail() == "" {
			t.Errorf("omitted %s without a reason: %v", o.GetUri(), o)
		}
	}
	if resp.GetReads() > int32(len(resp.GetItems())) {
		t.Errorf("%d reads for %d items", resp.GetReads(), len(resp.GetItems()))
	}
}

func TestAssembleAgainstRealServersOverStdio(t *testing.T) {
	everything := peer(t, "server-everything")
	filesystem := peer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf(`
data_dir: %s
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
  filesystem:
    command: node
    args: [%q, %q]
`, t.TempDir(), everything, filesystem, root))

	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"assemble", "--config", cfg, "--budget", "1200", "--json", architectureQuery}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("assemble: %v\nstderr:\n%s", err, stderr.String())
	}
	var resp contextdv1.AssembleResponse
	if err := protojson.Unmarshal(stdout.Bytes(), &resp); err != nil {
		t.Fatalf("--json output is not an AssembleResponse: %v\n%s", err, stdout.String())
	}
	checkAssemble(t, &resp, 1200)
	for _, it := range resp.GetItems() {
		if it.GetServer() != "everything" {
			t.Errorf("item from %q: server-filesystem has no resources", it.GetServer())
		}
	}
	if !strings.Contains(stderr.String(), "no resources capability") {
		t.Errorf("progress output does not report that server-filesystem lacks resources:\n%s", stderr.String())
	}

	// A filter naming an unknown server fails before connecting anything.
	stdout.Reset()
	err = run(t.Context(), []string{"assemble", "--config", cfg, "--server", "nope", architectureQuery}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `unknown server "nope"`) {
		t.Errorf("--server nope: err = %v, want unknown server", err)
	}
	for _, args := range [][]string{{"--budget", "0", "x"}, {"--budget", "10", " "}} {
		if err := run(t.Context(), append([]string{"assemble", "--config", cfg}, args...), &stdout, &stderr); err == nil {
			t.Errorf("assemble %q succeeded, want an invalid-argument error", args)
		}
	}
}

// startHTTPEverything runs server-everything's Streamable HTTP transport on
// a free loopback port and returns its endpoint.
func startHTTPEverything(t *testing.T) string {
	t.Helper()
	entry := peer(t, "server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", entry, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "listening on port") {
				once = true
				close(listening)
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything (streamableHttp) did not start listening within 30s")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

func TestServeOverStreamableHTTP(t *testing.T) {
	endpoint := startHTTPEverything(t)
	filesystem := peer(t, "server-filesystem")
	sock := filepath.Join(t.TempDir(), "contextd.sock")
	cfg := writeConfig(t, fmt.Sprintf(`
listen: unix://%s
data_dir: %s
mcpServers:
  everything:
    url: %s
  filesystem:
    command: node
    args: [%q, %q]
  broken:
    command: /nonexistent/mcp-server
`, sock, t.TempDir(), endpoint, filesystem, t.TempDir()))

	ctx, cancel := context.WithCancel(t.Context())
	var serveErr error
	done := make(chan struct{})
	var logs bytes.Buffer
	go func() {
		defer close(done)
		serveErr = run(ctx, []string{"serve", "--config", cfg}, &logs, &syncWriter{w: &logs})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not shut down within 20s of cancellation")
		}
	}()

	addr := "unix://" + sock
	// Wait (bounded) until the daemon reports everything ready.
	var servers contextdv1.ListServersResponse
	deadline := time.Now().Add(60 * time.Second)
	for {
		var out, errb bytes.Buffer
		if err := run(t.Context(), []string{"servers", "--addr", addr, "--json"}, &out, &errb); err == nil {
			if err := protojson.Unmarshal(out.Bytes(), &servers); err != nil {
				t.Fatal(err)
			}
			if st := stateOf(&servers, "everything"); st == contextdv1.ServerStatus_STATE_READY && stateOf(&servers, "filesystem") == contextdv1.ServerStatus_STATE_READY {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon not ready within 60s; last ListServers: %v", &servers)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, s := range servers.GetServers() {
		switch s.GetName() {
		case "everything":
			if s.GetTransport() != "http" || s.GetResourceCount() < 7 || s.GetTemplateCount() < 1 || !s.GetResourcesCapability() {
				t.Errorf("everything = %v", s)
			}
		case "filesystem":
			if s.GetResourcesCapability() || s.GetResourceCount() != 0 {
				t.Errorf("filesystem = %v, want no resources capability and no resources", s)
			}
		case "broken":
			if s.GetState() != contextdv1.ServerStatus_STATE_FAILED || !strings.Contains(s.GetLastError(), `cannot start "mcp-server": no such file`) {
				t.Errorf("broken = %v, want FAILED with the exec error", s)
			}
		}
	}
	var human, herr bytes.Buffer
	if err := run(t.Context(), []string{"servers", "--addr", addr}, &human, &herr); err != nil {
		t.Fatalf("servers: %v", err)
	}
	for _, l := range strings.Split(human.String(), "\n") {
		if strings.HasPrefix(l, "filesystem ") != strings.Contains(l, "(no resources capability)") {
			t.Errorf("servers line %q: want the note on filesystem's line only", l)
		}
	}

	var out, errb bytes.Buffer
	if err := run(t.Context(), []string{"query", "--addr", addr, "--budget", "1200", "--json", architectureQuery}, &out, &errb); err != nil {
		t.Fatalf("query: %v", err)
	}
	var resp contextdv1.AssembleResponse
	if err := protojson.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatal(err)
	}
	checkAssemble(t, &resp, 1200)

	err := run(t.Context(), []string{"query", "--addr", addr, "--server", "nope", "x"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "InvalidArgument") || !strings.Contains(err.Error(), `unknown server "nope"`) {
		t.Errorf("query --server nope: %v, want InvalidArgument naming the server", err)
	}

	cancel()
	<-done
	if serveErr != nil {
		t.Errorf("serve returned %v after cancellation, want nil", serveErr)
	}
}

func stateOf(r *contextdv1.ListServersResponse, name string) contextdv1.ServerStatus_State {
	for _, s := range r.GetServers() {
		if s.GetName() == name {
			return s.GetState()
		}
	}
	return contextdv1.ServerStatus_STATE_UNSPECIFIED
}
