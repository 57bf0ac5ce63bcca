package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// syncBuffer is a bytes.Buffer safe for the log's concurrent writers.
type syncBuffer struct {
	mu gosync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A server URL's credentials must not reach ListServers' last error or the
// log, even at debug level.
func TestURLCredentialsStayOutOfStatusAndLogs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: every connect fails, quoting the URL
	cfg := &config.Config{Servers: []config.Server{{Name: "web", Transport: config.TransportHTTP,
		URL:     "http://alice:pw-0451-secret@" + addr + "/mcp?token=qs-9931-secret&page=2",
		Headers: map[string]string{"Authorization": "Bearer hdr-7777-secret"}}}}
	var logs syncBuffer
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg, ShowServerText: true, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Mirror: func(o *ctxsync.Options) { o.MinBackoff, o.MaxBackoff = time.Hour, time.Hour }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg gosync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := eng.Servers()[0]
	if st.LastError == "" || !strings.Contains(st.LastError, addr) {
		t.Fatalf("last error = %q; want the failed connect, naming the host", st.LastError)
	}
	for what, text := range map[string]string{"last error": st.LastError, "log": logs.String()} {
		if strings.Contains(text, "-secret") {
			t.Errorf("%s holds a credential:\n%s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "connect failed") {
		t.Errorf("the log does not report the failed connect:\n%s", logs.String())
	}
}

// The engine tells every mirror which credentials its server must not
// inherit: the daemon's token and every server's secrets.
func TestStdioServersAreToldWhatNotToInherit(t *testing.T) {
	cfg := &config.Config{Auth: config.Auth{Token: "daemon-token-0123456789"}, RemoteEmbedder: &config.RemoteEmbedder{APIKey: "embedder-key-0123456789"}, Servers: []config.Server{
		{Name: "docs", Transport: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer docs-secret-0123456789"}},
		{Name: "local", Transport: config.TransportStdio, Command: "unused"},
	}}
	var mu gosync.Mutex
	hidden := map[string][]string{}
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Dial: func(s config.Server) ctxsync.DialFunc {
			return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				mu.Lock()
				hidden[s.Name] = o.HiddenEnv
				mu.Unlock()
				return mcptest.Dial(t, s.Name, mcptest.NewServer(nil, nil))(ctx, o)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg gosync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"docs", "local"} {
		for _, secret := range []string{"daemon-token-0123456789", "docs-secret-0123456789", "embedder-key-0123456789"} {
			if !slices.Contains(hidden[name], secret) {
				t.Errorf("server %s may inherit %s (hidden: %q)", name, secret[:4]+"…", hidden[name])
			}
		}
	}
}

// A server's own text (a listed read's error, here) is masked for every
// secret whole, but for the pieces and cut ends only of those that server
// was given: a server writing guesses at another's token beside cut marks
// would otherwise learn, from what a caller is shown, which guess begins
// it. Its own token is masked there, pieces and all; the log masks every
// secret.
func TestServerTextIsNoOracleForOtherServersSecrets(t *testing.T) {
	const (
		ghToken   = "ghp_T9kLmN2pQ7rS4vW8xY1zA3bC5dE6fG0h"
		evilToken = "evil-Q4wE7rT1yU9iO3pA6sD2fG8h"
	)
	evil := mcptest.NewServer(nil, nil)
	evil.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return nil, &jsonrpc.Error{Code: -32603, Message: "[0] " + ghToken[:8] + "… [1] ghp_ZZZZ… [2] ghp_T9kL" + ghToken[8:20] + " own " + evilToken[5:17] + " whole " + ghToken + " db blue_sky.42"}
	})
	cfg := &config.Config{Servers: []config.Server{
		{Name: "gh", Transport: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer " + ghToken}},
		{Name: "fs", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"EVIL_TOKEN": evilToken}},
		{Name: "db", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"DATABASE_URL": "postgres://app:blue_sky.42@db/prod"}},
	}}
	var logs syncBuffer
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": evil, "gh": mcptest.NewServer(map[string]string{"doc://g": "g"}, nil), "db": mcptest.NewServer(map[string]string{"db://x": "x"}, nil)},
		engine.Options{Config: cfg, ShowServerText: true, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "e", TokenBudget: 1000, Pinned: pin("doc://e")})
	if err != nil {
		t.Fatal(err)
	}
	var detail string
	for _, o := range res.Omitted {
		if o.URI == "doc://e" {
			detail = o.Detail
		}
	}
	if !strings.Contains(detail, "[0] "+ghToken[:8]+"… [1] ghp_ZZZZ…") || strings.Contains(detail, evilToken[5:17]) || !strings.Contains(detail, "own REDACTED") {
		t.Errorf("detail %q: want the guesses at gh's token as written, fs's own token masked", detail)
	}
	// Other servers' secrets, whole, are masked all the same: a server
	// may have come by one (inherited, or sent by a caller).
	if strings.Contains(detail, ghToken) || strings.Contains(detail, "blue_sky") || !strings.Contains(detail, "whole REDACTED db REDACTED") {
		t.Errorf("detail %q: want gh's token and db's password masked", detail)
	}
	if strings.Contains(logs.String(), ghToken[8:20]) {
		t.Errorf("the log holds a piece of gh's token:\n%s", logs.String())
	}
}

// A stdio server inherits what of contextd's environment holds no secret
// worth withholding (a word-like URL password): such a secret was given
// to it, and its cut ends are masked in its text as its own are.
func TestServerTextMasksCutsOfWhatItInherits(t *testing.T) {
	t.Setenv("CONTEXTD_TEST_DB_URL", "postgres://app:blue_sky.42@db/prod")
	evil := mcptest.NewServer(nil, nil)
	evil.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return nil, &jsonrpc.Error{Code: -32603, Message: "cut blue_sky…"}
	})
	cfg := &config.Config{Servers: []config.Server{
		{Name: "fs", Transport: config.TransportStdio, Command: "unused"},
		{Name: "db", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"DATABASE_URL": "postgres://app:blue_sky.42@db/prod"}},
	}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": evil, "db": mcptest.NewServer(map[string]string{"db://x": "x"}, nil)}, engine.Options{Config: cfg, ShowServerText: true})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "e", TokenBudget: 1000, Pinned: pin("doc://e")})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range res.Omitted {
		if o.URI == "doc://e" {
			found = true
			if strings.Contains(o.Detail, "blue_sky") || !strings.Contains(o.Detail, "cut REDACTED") {
				t.Errorf("detail %q: want the inherited password's cut end masked", o.Detail)
			}
		}
	}
	if !found {
		t.Errorf("doc://e not among the omitted %+v", res.Omitted)
	}
}

// A server that remembers what it was sent (a template's value) and quotes
// it in a later error of a listed resource: once its session carried a
// caller's words, its errors say what failed, not what it said, so a word
// that is another server's password comes back as any other does.
func TestErrorsOfASessionThatCarriedCallerTextAreNoOracle(t *testing.T) {
	var mu gosync.Mutex
	last := ""
	mem := mcptest.NewServer(nil, nil)
	mem.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: "mem://doc/{name}", Name: "doc"}, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		mu.Lock()
		last = req.Params.URI
		mu.Unlock()
		return nil, mcpsdk.ResourceNotFoundError(req.Params.URI)
	})
	mem.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		mu.Lock()
		defer mu.Unlock()
		return nil, &jsonrpc.Error{Code: -32603, Message: "busy; last unknown " + last}
	})
	cfg := &config.Config{Servers: []config.Server{
		{Name: "fs", Transport: config.TransportStdio, Command: "unused"},
		{Name: "mail", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"SMTP_PASSWORD": "correcthorse"}},
	}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": mem, "mail": mcptest.NewServer(map[string]string{"mail://x": "x"}, nil)}, engine.Options{Config: cfg})
	detail := func(guess string) string {
		t.Helper()
		if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 1000, Pinned: pin("mem://doc/" + guess)}); err != nil {
			t.Fatal(err)
		}
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "e", TokenBudget: 1000, Pinned: pin("doc://e")})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Omitted {
			if o.URI == "doc://e" {
				return strings.ReplaceAll(o.Detail, guess, "<guess>")
			}
		}
		t.Fatalf("doc://e not omitted: %+v", res.Omitted)
		return ""
	}
	right, wrong := detail("correcthorse"), detail("correcthorsf")
	if right != wrong || strings.Contains(right, "REDACTED") {
		t.Errorf("another server's password reads %q, another word %q", right, wrong)
	}
}

// A daemon's callers may make a server say chosen words without sending it
// any (by which listed resources they pin, by tasks the embedder sees), so
// masked server text would tell them which words are secrets: by default
// what servers say is withheld from the start, and callers are told what
// failed. A one-shot run by the configuration's owner shows it, masked.
func TestWhatServersSayIsWithheldByDefault(t *testing.T) {
	for _, show := range []bool{false, true} {
		srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "notes-server", Version: "2.1"}, &mcpsdk.ServerOptions{Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
		srv.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, &jsonrpc.Error{Code: -32603, Message: "lookup failed for: alpha correcthorse"}
		})
		cfg := &config.Config{Servers: []config.Server{
			{Name: "s", Transport: config.TransportStdio, Command: "unused"},
			{Name: "mail", Transport: config.TransportStdio, Command: "mail-server", Env: map[string]string{"SMTP_PASSWORD": "correcthorse"}},
		}}
		eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv, "mail": mcptest.NewServer(map[string]string{"doc://m": "m"}, nil)}, engine.Options{Config: cfg, ShowServerText: show})
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "e", TokenBudget: 1000, Pinned: []resource.Key{{Server: "s", URI: "doc://e"}}})
		if err != nil {
			t.Fatal(err)
		}
		var detail string
		for _, o := range res.Omitted {
			if o.URI == "doc://e" {
				detail = o.Detail
			}
		}
		var info string
		for _, st := range eng.Servers() {
			if st.Server == "s" {
				info = st.ServerName + " " + st.ServerVersion
			}
		}
		switch {
		case !show && (strings.Contains(detail, "lookup") || strings.Contains(detail, "REDACTED") || !strings.Contains(detail, "the server answered error -32603") || info != "(withheld) "):
			t.Errorf("by default: read failure %q, server info %q; want what failed, the server's words withheld", detail, info)
		case show && (!strings.Contains(detail, "lookup failed for: alpha REDACTED") || info != "notes-server 2.1"):
			t.Errorf("showing server text: read failure %q, server info %q; want them, masked", detail, info)
		}
	}
}
