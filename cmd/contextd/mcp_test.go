package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
)

// These tests drive contextd's MCP server with clients nobody on this
// project wrote: the MCP Inspector's CLI and the TypeScript SDK, both from
// the node_modules `npm ci` installs. The test binary plays two more parts,
// chosen by CONTEXTD_TEST_EXEC: contextd itself (for clients that start a
// stdio server), and an upstream whose list and resources change on cue.

func TestMain(m *testing.M) {
	switch os.Getenv("CONTEXTD_TEST_EXEC") {
	case "contextd":
		main()
		os.Exit(0)
	case "changing-upstream":
		changingUpstream(os.Getenv("FAKE_TRIGGER"))
		os.Exit(0)
	case "doc-upstream":
		docUpstream()
		os.Exit(0)
	case "hostile-upstream":
		hostileUpstream(os.Getenv("HOSTILE_TOKEN"))
		os.Exit(0)
	case "hung-upstream":
		hungUpstream()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The changing upstream's awkward resource: a URI with spaces, a
// percent-escape, non-ASCII characters, "#" and "?", read as a text and a
// blob item.
const (
	oddURI  = "file:///srv/My Notes/Überblick 50%25 fertig #1?.md"
	oddText = "# Überblick\n\nThe overview of the notes, 50% done.\n"
	lateURI = "doc://late/added after the trigger"
)

var oddBlob = []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}

// changingUpstream serves, on stdio, oddURI and a note; once the trigger
// file exists it adds lateURI (notifications/resources/list_changed) and
// announces an update of oddURI every 200 ms to the sessions subscribed to it.
func changingUpstream(trigger string) {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "changing-upstream", Version: "v0"}, &mcpsdk.ServerOptions{
		Capabilities:       &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{ListChanged: true}},
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		// resources/subscribe, which the mirrors use, is 2025-11-25's.
		SupportedProtocolVersions: []string{"2025-11-25"},
	})
	s.AddResource(&mcpsdk.Resource{URI: oddURI, Name: "überblick", Title: "Überblick", MIMEType: "text/markdown", Size: int64(len(oddText))},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/markdown", Text: oddText},
				{URI: req.Params.URI, MIMEType: "image/png", Blob: oddBlob},
			}}, nil
		})
	addText(s, "doc://notes", "notes on the changing upstream")
	go func() {
		for {
			if _, err := os.Stat(trigger); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		addText(s, lateURI, "a document added after the trigger")
		for {
			_ = s.ResourceUpdated(context.Background(), &mcpsdk.ResourceUpdatedNotificationParams{URI: oddURI})
			time.Sleep(200 * time.Millisecond)
		}
	}()
	_ = s.Run(context.Background(), &mcpsdk.StdioTransport{})
}

// hostileURI is the resource the hostile upstream serves: its name for
// it holds the token it was given and controls a terminal acts on.
func hostileURI(token string) string { return "doc://x/" + token + "/\u009b31m\u202e" }

// hostileUpstream serves, on stdio, one resource named with token (see
// hostileURI), and announces an update of it every 100 ms to the
// sessions subscribed to it.
func hostileUpstream(token string) {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "hostile-upstream", Version: "v0"}, &mcpsdk.ServerOptions{
		Capabilities:              &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{ListChanged: true}},
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"},
	})
	addText(s, hostileURI(token), "a page on walrus migration")
	go func() {
		for {
			_ = s.ResourceUpdated(context.Background(), &mcpsdk.ResourceUpdatedNotificationParams{URI: hostileURI(token)})
			time.Sleep(100 * time.Millisecond)
		}
	}()
	_ = s.Run(context.Background(), &mcpsdk.StdioTransport{})
}

// startMCP starts the test binary as contextd mcp with args, its stdin
// and stdout piped and its stderr kept.
func startMCP(t *testing.T, ctx context.Context, self string, args ...string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, self, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "CONTEXTD_TEST_EXEC=contextd")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout, stderr
}

// hungUpstream serves, on stdio, one resource whose reads never answer.
func hungUpstream() {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "hung-upstream", Version: "v0"}, nil)
	s.AddResource(&mcpsdk.Resource{URI: "doc://walrus", Name: "walrus migration notes", MIMEType: "text/plain"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			select {}
		})
	_ = s.Run(context.Background(), &mcpsdk.StdioTransport{})
}

// contextd mcp stops soon on SIGTERM, and on SIGHUP (its terminal hung
// up), with a call in flight on a read that never answers: it waited for
// the call's whole read timeout (46 s: a first content pass, then the
// read), and SIGHUP killed it on the spot, its stdio servers left running.
func TestMCPStopsSoonOnASignalWithACallInFlight(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			cfg := writeConfig(t, fmt.Sprintf("data_dir: %s\nembedder: glove\nmcpServers:\n  hung:\n    command: %q\n    env: { CONTEXTD_TEST_EXEC: hung-upstream }\n", t.TempDir(), self))
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd, stdin, stdout, stderr := startMCP(t, ctx, self, "--config", cfg, "--ready-wait", "1s")
			defer stdin.Close()
			fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"assemble_context","arguments":{"task":"walrus migration","servers":["hung"]}}}
`)
			sc := bufio.NewScanner(stdout)
			if !sc.Scan() {
				t.Fatalf("no answer to initialize; stderr:\n%s", stderr.String())
			}
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			time.Sleep(3 * time.Second) // the call waits 1 s, then reads
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			took := time.Since(start)
			if err != nil {
				t.Errorf("contextd mcp after %v: %v, want exit 0\nstderr:\n%s", sig, err, stderr.String())
			}
			// The read's timeout is 30 s: a stop waiting for the call
			// takes about 28 s.
			if took > 15*time.Second {
				t.Errorf("contextd mcp took %v to stop after %v with a call in flight; want it not to wait for the call's read", took, sig)
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe to write from serve and read here.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// upstreamEntry is a config entry running the test binary as docUpstream.
func upstreamEntry(name string, env map[string]string) string {
	self, _ := os.Executable()
	env["CONTEXTD_TEST_EXEC"] = "doc-upstream"
	b, _ := json.Marshal(env)
	return fmt.Sprintf("  %s:\n    command: %q\n    env: %s\n", name, self, b)
}

// docUpstream serves, on stdio, the documents in $FAKE_DOCS (a JSON object
// URI → text), once the file $FAKE_GATE exists (when set). With
// $FAKE_SLOW_URI it also serves that resource ("walrus ledger"), whose read
// creates $FAKE_STARTED and answers once $FAKE_RELEASE exists.
func docUpstream() {
	waitFile := func(ctx context.Context, p string) error {
		for {
			if _, err := os.Stat(p); err == nil {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	if gate := os.Getenv("FAKE_GATE"); gate != "" {
		_ = waitFile(context.Background(), gate)
	}
	var docs map[string]string
	_ = json.Unmarshal([]byte(os.Getenv("FAKE_DOCS")), &docs)
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "doc-upstream", Version: "v0"}, &mcpsdk.ServerOptions{
		Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{ListChanged: true}},
	})
	for uri, text := range docs {
		addText(s, uri, text)
	}
	if slow := os.Getenv("FAKE_SLOW_URI"); slow != "" {
		s.AddResource(&mcpsdk.Resource{URI: slow, Name: "walrus ledger", MIMEType: "text/plain"},
			func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				_ = os.WriteFile(os.Getenv("FAKE_STARTED"), nil, 0o644)
				if err := waitFile(ctx, os.Getenv("FAKE_RELEASE")); err != nil {
					return nil, err
				}
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "the walrus ledger of invoices"}}}, nil
			})
	}
	_ = s.Run(context.Background(), &mcpsdk.StdioTransport{})
}

func addText(s *mcpsdk.Server, uri, text string) {
	s.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
		})
}

// mcpConfig writes a config with server-everything and the changing
// upstream (named "notes"), sharing dataDir, so that the contextd processes
// the Inspector starts one per call reuse each other's embeddings.
func mcpConfig(t *testing.T, dataDir, trigger, extra string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, fmt.Sprintf(`
data_dir: %s
%s
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
  notes:
    command: %q
    env: { CONTEXTD_TEST_EXEC: changing-upstream, FAKE_TRIGGER: %q }
`, dataDir, extra, peer(t, "server-everything"), self, trigger))
}

// inspector runs the MCP Inspector's CLI with args and returns its stdout.
func inspector(t *testing.T, args ...string) []byte {
	t.Helper()
	out, _ := inspectorBoth(t, args...)
	return out
}

// inspectorBoth is inspector, returning stderr too.
func inspectorBoth(t *testing.T, args ...string) (stdout, stderr []byte) {
	t.Helper()
	cli := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(peer(t, "server-everything")))), "inspector", "clients", "cli", "build", "index.js")
	// The CLI runs only when started by its real path (it compares its
	// own module URL with argv[1]), so a symlinked node_modules is resolved.
	cli, err := filepath.EvalSymlinks(cli)
	if err != nil {
		t.Fatalf("the MCP Inspector is not installed (%v): run `npm ci` in the repository root", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{cli}, args...)...)
	// Its catalog of servers goes to a temporary file, not ~/.mcp-inspector.
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "catalog.json"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("inspector %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
	}
	return out.Bytes(), errb.Bytes()
}

// inspectorJSON runs the Inspector CLI and decodes its JSON answer.
func inspectorJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out := inspector(t, args...)
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("inspector %q printed no JSON answer: %v\n%s", args, err, out)
	}
}

// wireContent is a content block or resource contents as JSON.
type wireContent struct {
	Type     string       `json:"type"`
	Text     string       `json:"text"`
	URI      string       `json:"uri"`
	MIMEType string       `json:"mimeType"`
	Blob     string       `json:"blob"`
	Resource *wireContent `json:"resource"`
}

// checkInspector makes the five calls of the issue through the Inspector
// CLI against one contextd (target: the CLI's arguments that name it) and
// checks each answer.
func checkInspector(t *testing.T, target []string) {
	call := func(v any, args ...string) { t.Helper(); inspectorJSON(t, v, append(slices.Clone(target), args...)...) }
	oddNS := mcpserver.ResourceURI(resource.Key{Server: "notes", URI: oddURI})

	var tools struct {
		Tools []struct {
			Name         string         `json:"name"`
			Description  string         `json:"description"`
			OutputSchema map[string]any `json:"outputSchema"`
		} `json:"tools"`
	}
	// --strict reports tool schemas that some hosts cannot map.
	out, strict := inspectorBoth(t, append(slices.Clone(target), "--method", "tools/list", "--strict")...)
	if err := json.Unmarshal(out, &tools); err != nil {
		t.Fatalf("tools/list --strict printed no JSON answer: %v\nstdout:\n%s\nstderr:\n%s", err, out, strict)
	}
	if bytes.Contains(strict, []byte("Warning: tool")) || bytes.Contains(strict, []byte("Error: tool")) {
		t.Errorf("tools/list --strict found schema portability problems:\n%s", strict)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.OutputSchema == nil || tl.Description == "" {
			t.Errorf("tool %s: outputSchema %v, description %q", tl.Name, tl.OutputSchema, tl.Description)
		}
	}
	if !slices.Equal(names, []string{"assemble_context", "search_resources"}) {
		t.Errorf("tools/list = %v", names)
	}

	// Done when: assemble_context for the architecture question at 1,200
	// tokens returns architecture.md, and the texts re-count to ≤ 1,200.
	var res struct {
		Content           []wireContent `json:"content"`
		StructuredContent struct {
			TotalTokens int `json:"total_tokens"`
			Items       []struct {
				UpstreamURI string `json:"upstream_uri"`
				Form        string `json:"form"`
				Tokens      int    `json:"tokens"`
			} `json:"items"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	call(&res, "--method", "tools/call", "--tool-name", "assemble_context", "--tool-arg", "task="+architectureQuery, "budget=1200")
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	recount, arch := 0, false
	for _, c := range res.Content {
		if c.Type != "resource" || c.Resource == nil {
			continue
		}
		recount += tok.Count(c.Resource.Text)
		if c.Resource.URI == "contextd:resource/everything/demo://resource/static/document/architecture.md" {
			arch = true
		}
	}
	if res.IsError || !arch {
		t.Errorf("assemble_context did not embed architecture.md (isError %v): %+v", res.IsError, res.Content)
	}
	// A pointer is charged for its line but travels as a resource_link,
	// not as an embedded text, so only the other items' tokens re-count.
	embedded := 0
	for _, it := range res.StructuredContent.Items {
		if it.Form != "pointer" {
			embedded += it.Tokens
		}
	}
	if res.StructuredContent.TotalTokens > 1200 || recount != embedded {
		t.Errorf("embedded texts re-count to %d tokens, their items say %d; budget 1200, total_tokens %d", recount, embedded, res.StructuredContent.TotalTokens)
	}
	t.Logf("assemble_context: %d items, %d tokens re-counted", len(res.StructuredContent.Items), recount)

	var list struct {
		Resources []struct {
			URI, Name, MIMEType string
		} `json:"resources"`
	}
	call(&list, "--method", "resources/list")
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	for _, want := range []string{oddNS, "contextd:resource/everything/demo://resource/static/document/architecture.md"} {
		if !slices.Contains(uris, want) {
			t.Errorf("resources/list lacks %s: %v", want, uris)
		}
	}

	// Done when: resources/read of a namespaced URI with spaces,
	// percent-escapes and non-ASCII returns exactly the upstream's contents.
	var read struct {
		Contents []wireContent `json:"contents"`
	}
	call(&read, "--method", "resources/read", "--uri", oddNS)
	if len(read.Contents) != 2 {
		t.Fatalf("read %s: %d items, want the text and the blob: %+v", oddNS, len(read.Contents), read.Contents)
	}
	blob, err := base64.StdEncoding.DecodeString(read.Contents[1].Blob)
	if c := read.Contents[0]; c.URI != oddNS || c.MIMEType != "text/markdown" || c.Text != oddText {
		t.Errorf("text item = %+v, want %q (text/markdown) under %s", c, oddText, oddNS)
	}
	if c := read.Contents[1]; c.URI != oddNS || c.MIMEType != "image/png" || err != nil || !bytes.Equal(blob, oddBlob) {
		t.Errorf("blob item = %+v (%v), want %x (image/png)", c, err, oddBlob)
	}

	var prompt struct {
		Messages []struct {
			Role    string      `json:"role"`
			Content wireContent `json:"content"`
		} `json:"messages"`
	}
	call(&prompt, "--method", "prompts/get", "--prompt-name", "context", "--prompt-args", "task="+architectureQuery, "budget=800")
	if len(prompt.Messages) < 2 || prompt.Messages[0].Content.Type != "resource" || prompt.Messages[0].Role != "user" ||
		!strings.HasPrefix(prompt.Messages[len(prompt.Messages)-1].Content.Text, architectureQuery) {
		t.Errorf("prompts/get = %+v, want embedded resources then the task", prompt.Messages)
	}
}

func TestMCPOverStdioWithTheInspectorCLI(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mcpConfig(t, t.TempDir(), filepath.Join(t.TempDir(), "never"), "")
	// The CLI reads --config itself, so contextd gets its config from the
	// environment.
	checkInspector(t, []string{"-e", "CONTEXTD_TEST_EXEC=contextd", "-e", "CONTEXTD_CONFIG=" + cfg, self, "mcp"})
}

func TestMCPOverStreamableHTTPWithTheInspectorCLI(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// gRPC on loopback TCP: beside a unix socket (which only its owner
	// may open), serve refuses an MCP endpoint without a token.
	cfg := mcpConfig(t, t.TempDir(), filepath.Join(t.TempDir(), "never"),
		fmt.Sprintf("listen: 127.0.0.1:0\nmcp_listen: %s\nmcp_path: /ctx/mcp", addr))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var logs bytes.Buffer
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, &logs, &syncWriter{w: &logs}) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v after cancellation, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not shut down within 30s of cancellation")
		}
	}()
	url := "http://" + addr + "/ctx/mcp"
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after 30s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkInspector(t, []string{"--transport", "http", "--server-url", url})
}

func TestMCPTypeScriptSDKClientListsReadsSubscribesAndHearsChanges(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	trigger := filepath.Join(t.TempDir(), "trigger")
	cfg := writeConfig(t, fmt.Sprintf(`
data_dir: %s
embedder: glove
mcpServers:
  notes:
    command: %q
    env: { CONTEXTD_TEST_EXEC: changing-upstream, FAKE_TRIGGER: %q }
`, t.TempDir(), self, trigger))
	cmdJSON, _ := json.Marshal([]string{self, "mcp", "--config", cfg})
	oddNS := mcpserver.ResourceURI(resource.Key{Server: "notes", URI: oddURI})
	lateNS := mcpserver.ResourceURI(resource.Key{Server: "notes", URI: lateURI})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "ts-sdk-client.mjs"))
	cmd.Env = append(os.Environ(), "CONTEXTD_TEST_EXEC=contextd", "CONTEXTD_CMD="+string(cmdJSON),
		"TARGET_URI="+oddNS, "LATE_URI="+lateNS, "TRIGGER="+trigger)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	peer(t, "server-everything") // fails with a pointer to npm ci when node_modules is missing
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript SDK client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var got struct {
		Capabilities struct {
			Resources struct{ Subscribe, ListChanged bool } `json:"resources"`
		} `json:"capabilities"`
		Listed        []string      `json:"listed"`
		Read          []wireContent `json:"read"`
		Updated       []string      `json:"updated"`
		ListChangedMs int           `json:"listChangedMs"`
		UpdatedMs     int           `json:"updatedMs"`
		LateListed    bool          `json:"lateListed"`
		Pages         int           `json:"pages"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !got.Capabilities.Resources.Subscribe || !got.Capabilities.Resources.ListChanged {
		t.Errorf("capabilities = %+v, want resources.subscribe and listChanged", got.Capabilities)
	}
	if !slices.Contains(got.Listed, oddNS) {
		t.Errorf("listed %v, want %s", got.Listed, oddNS)
	}
	if len(got.Read) != 2 || got.Read[0].Text != oddText || got.Read[1].MIMEType != "image/png" {
		t.Errorf("read = %+v, want the upstream's text and blob", got.Read)
	}
	if len(got.Updated) == 0 || got.Updated[0] != oddNS {
		t.Errorf("updated = %v, want %s", got.Updated, oddNS)
	}
	if !got.LateListed {
		t.Errorf("after list_changed the list lacks %s", lateNS)
	}
	// The window: the mirror's debounce (250 ms) plus the facade's check
	// interval (250 ms), with room for a loaded machine.
	// Measured about 450 ms on an idle machine; the bound leaves room for a
	// loaded one and the race detector.
	t.Logf("list_changed after %d ms, resources/updated after %d ms", got.ListChangedMs, got.UpdatedMs)
	if got.ListChangedMs > 3000 || got.UpdatedMs > 3000 {
		t.Errorf("list_changed after %d ms and updated after %d ms, want both within 3 s", got.ListChangedMs, got.UpdatedMs)
	}
}

func TestAHostConfigListingContextdItselfIsNotMirrored(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{
		{Name: "contextd", Transport: config.TransportStdio, Command: "/usr/local/bin/contextd", Args: []string{"mcp", "--config", "x.json"}},
		{Name: "daemon-client", Transport: config.TransportStdio, Command: "contextd", Args: []string{"query", "x"}},
		{Name: "docs", Transport: config.TransportStdio, Command: "node", Args: []string{"docs.js", "mcp"}},
	}}
	var logs bytes.Buffer
	dropSelf(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"daemon-client", "docs"}) {
		t.Errorf("kept %v, want every server but contextd's own MCP server", names)
	}
	if !strings.Contains(logs.String(), `server=contextd`) {
		t.Errorf("no warning names the dropped server: %s", logs.String())
	}
}

func TestMCPStdoutCarriesOnlyTheProtocolAndEOFEndsIt(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf(`
data_dir: %s
embedder: glove
mcpServers:
  notes:
    command: %q
    env: { CONTEXTD_TEST_EXEC: changing-upstream, FAKE_TRIGGER: %q }
`, t.TempDir(), self, filepath.Join(t.TempDir(), "never")))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd, stdin, stdout, stderr := startMCP(t, ctx, self, "--config", cfg, "--log-level", "debug")
	fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"resources/list"}
`)
	var all strings.Builder
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	listed := false
	for !listed && sc.Scan() {
		l := sc.Text()
		all.WriteString(l + "\n")
		var msg struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      float64         `json:"id"`
			Result  json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout line is not a JSON-RPC message: %q", l)
			continue
		}
		if msg.ID == 2 {
			listed = true
			if !strings.Contains(string(msg.Result), "contextd:resource/notes/doc://notes") {
				t.Errorf("resources/list = %s, want the upstream's resources", msg.Result)
			}
		}
	}
	if !listed {
		t.Errorf("no answer to resources/list on stdout:\n%s", all.String())
	}
	stdin.Close() // the host goes away
	rest, _ := io.ReadAll(stdout)
	// A notification may still come (list_changed when the upstream's
	// sync ends after the answer); anything else is not the protocol.
	for _, l := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
		var msg struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      *json.RawMessage `json:"id"`
			Method  string           `json:"method"`
		}
		if l == "" {
			continue
		}
		if err := json.Unmarshal([]byte(l), &msg); err != nil || msg.JSONRPC != "2.0" || msg.ID != nil || !strings.HasPrefix(msg.Method, "notifications/") {
			t.Errorf("stdout after the last answer is not a JSON-RPC notification: %q", l)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("contextd mcp after stdin closed: %v, want exit 0\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "level=") {
		t.Errorf("no log line on stderr at --log-level debug:\n%s", stderr.String())
	}
}

// A one-shot command reading a host's file skips contextd's own entry too:
// it would otherwise start contextd mcp as an upstream and return every
// resource twice.
func TestOneShotCommandsSkipContextdsOwnEntry(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"contextd": {"command": "contextd", "args": ["mcp"]}}}`)
	for _, cmd := range []string{"search", "assemble"} {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		err := run(ctx, []string{cmd, "--config", cfg, "--timeout", "5s", "anything"}, &out, &errb)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no servers configured") {
			t.Errorf("%s over a file listing only contextd itself: %v, want no servers configured\n%s", cmd, err, errb.String())
		}
		if !strings.Contains(errb.String(), "contextd's own MCP server") {
			t.Errorf("%s: no warning names the skipped entry:\n%s", cmd, errb.String())
		}
	}
}

// A config refused at start does not print the credential it quotes.
func TestAConfigRefusedAtStartIsMasked(t *testing.T) {
	cfg := writeConfig(t, "mcpServers:\n  x: {url: \"ftp://u:Sup3rS3cretPw@h/mcp\"}\n")
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"search", "--config", cfg, "anything"}, &out, &errb)
	if err == nil {
		t.Fatal("a bad url was accepted")
	}
	if strings.Contains(err.Error()+errb.String(), "Sup3rS3cretPw") {
		t.Errorf("the refusal shows the password: %v\n%s", err, errb.String())
	}
}

// contextd mcp's own log (its MCP server's, the go-sdk's beneath it) masks
// the configured credentials and escapes controls as the engine's does:
// an upstream naming a resource with its token, and with C1 controls, had
// both written raw at --log-level debug ("resource updated notification
// sent"), in text and JSON.
func TestMCPLogMasksAndEscapesUpstreamBytes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const token = "tok-5f1e9c2b7a4d8e3f6a0b"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			cfg := writeConfig(t, fmt.Sprintf(`
data_dir: %s
embedder: glove
log_format: %s
mcpServers:
  hostile:
    command: %q
    env: { CONTEXTD_TEST_EXEC: hostile-upstream, HOSTILE_TOKEN: %q }
`, t.TempDir(), format, self, token))
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd, stdin, stdout, stderr := startMCP(t, ctx, self, "--config", cfg, "--log-level", "debug")
			fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"resources/list"}
`)
			sc := bufio.NewScanner(stdout)
			sc.Buffer(nil, 1<<20)
			notified := 0
			for notified < 3 && sc.Scan() {
				var msg struct {
					ID     float64 `json:"id"`
					Method string  `json:"method"`
					Result struct {
						Resources []struct {
							URI string `json:"uri"`
						} `json:"resources"`
					} `json:"result"`
				}
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
					t.Fatalf("stdout: %q: %v", sc.Text(), err)
				}
				switch {
				case msg.ID == 2 && len(msg.Result.Resources) == 1:
					uri, _ := json.Marshal(msg.Result.Resources[0].URI)
					fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":%s}}`+"\n", uri)
				case msg.ID == 2:
					time.Sleep(100 * time.Millisecond) // its first sync has not ended
					fmt.Fprint(stdin, `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`+"\n")
				case msg.Method == "notifications/resources/updated":
					notified++
				}
			}
			stdin.Close()
			_, _ = io.Copy(io.Discard, stdout)
			_ = cmd.Wait()
			log := stderr.String()
			if notified < 3 {
				t.Fatalf("%d updates relayed to the host; want 3\nstderr:\n%s", notified, log)
			}
			if !strings.Contains(log, "notification sent") {
				t.Errorf("the go-sdk's debug line for an update sent is not in the log:\n%s", log)
			}
			if strings.Contains(log, token) {
				t.Errorf("the log holds the upstream's token:\n%s", log)
			}
			for _, c := range []string{"\u009b", "\u202e"} {
				if strings.Contains(log, c) {
					t.Errorf("the log holds %+q raw:\n%s", c, log)
				}
			}
		})
	}
}
