package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"

	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// hostile is what a malicious upstream can get into an answer: escape
// sequences that set the window title, clear the screen, plant an OSC 8
// link, and a bidi override.
const hostile = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\\u202e"

// hostileDaemon answers every call with upstream bytes in every field.
type hostileDaemon struct {
	contextdv1.UnimplementedContextServiceServer
}

func (hostileDaemon) Assemble(context.Context, *contextdv1.AssembleRequest) (*contextdv1.AssembleResponse, error) {
	return &contextdv1.AssembleResponse{TokenBudget: 10, Tokenizer: "cl100k" + hostile, Items: []*contextdv1.Item{{
		Server: "s", Uri: "doc://" + hostile, Reason: "why " + hostile, Form: "whole",
		Contents: []*contextdv1.Content{{Body: &contextdv1.Content_Text{Text: "line one\n" + hostile + "\nline three"}}},
	}}, Omitted: []*contextdv1.Omitted{{Server: "s", Uri: "doc://x" + hostile, Reason: "read_failed", Detail: "boom " + hostile}}}, nil
}

func (hostileDaemon) ListServers(context.Context, *contextdv1.ListServersRequest) (*contextdv1.ListServersResponse, error) {
	return &contextdv1.ListServersResponse{Servers: []*contextdv1.ServerStatus{{Name: "s", LastError: "failed " + hostile, McpListing: "withheld,frozen"}}}, nil
}

func startHostileDaemon(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	contextdv1.RegisterContextServiceServer(srv, hostileDaemon{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return "unix://" + sock
}

func checkEscaped(t *testing.T, what, out string, wantLines ...string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("%s prints raw control characters:\n%q", what, out)
	}
	if !strings.Contains(out, `\e]0;pwned\x07\e[2J\e]8;;https://evil.example\e\click`) {
		t.Errorf("%s does not show the escaped sequence:\n%q", what, out)
	}
	for _, l := range wantLines {
		if !strings.Contains(out, l) {
			t.Errorf("%s lost %q:\n%s", what, l, out)
		}
	}
}

func TestHumanOutputEscapesUpstreamControlCharacters(t *testing.T) {
	addr := startHostileDaemon(t)
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"query", "--addr", addr, "--content", "q"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	// Content keeps its own line breaks.
	checkEscaped(t, "query --content", stdout.String(), "\nline one\n", "\nline three\n", "boom ")

	stdout.Reset()
	if err := run(t.Context(), []string{"servers", "--addr", addr}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	checkEscaped(t, "servers", stdout.String(), "last error: failed ", "MCP list: withheld,frozen")

	stdout.Reset()
	printSearch(&stdout, &contextdv1.SearchResponse{Results: []*contextdv1.SearchResult{{Server: "s", Uri: "doc://a", Name: hostile}}})
	checkEscaped(t, "search", stdout.String())
}

func TestJSONOutputKeepsUpstreamBytesExact(t *testing.T) {
	addr := startHostileDaemon(t)
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"query", "--addr", addr, "--json", "q"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	// protojson escapes control characters as \u001b; the text decodes back exact.
	if strings.ContainsRune(stdout.String(), 0x1b) || !strings.Contains(stdout.String(), `\u001b]0;pwned\u0007`) {
		t.Fatalf("query --json:\n%s", stdout.String())
	}
}
