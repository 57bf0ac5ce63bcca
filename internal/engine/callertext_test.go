package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A server may remember a caller's words across contextd's restarts as
// across sessions, and another server may share its state (one upstream
// configured under two names): once any server was sent a caller's words,
// what every server says is withheld, and after a restart too (data_dir
// keeps that, without any server's URL).
func TestWithholdingSurvivesARestart(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	mem := mcptest.NewServer(nil, nil)
	mem.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			r, ok := req.(*mcpsdk.ReadResourceRequest)
			if !ok {
				return next(ctx, method, req)
			}
			mu.Lock()
			defer mu.Unlock()
			if r.Params.URI != "doc://e" {
				seen = append(seen, r.Params.URI)
				return nil, &jsonrpc.Error{Code: -32002, Message: "not found"}
			}
			return nil, &jsonrpc.Error{Code: -32603, Message: "cannot replay " + strings.Join(seen, " ")}
		}
	})
	mem.AddResource(&mcpsdk.Resource{URI: "doc://e", Name: "e"}, nil)
	dir := t.TempDir()
	cfg := &config.Config{DataDir: dir, Servers: []config.Server{
		{Name: "mem", Transport: config.TransportHTTP, URL: "https://mem.example/mcp?key=Zk9fQ2xW7rT1", AllowUnlistedPins: true},
		{Name: "mem-ro", Transport: config.TransportHTTP, URL: "https://localhost/mcp"},
		{Name: "mail", Transport: config.TransportStdio, Command: "mail-server", Env: map[string]string{"SMTP_PASSWORD": "correcthorse"}},
	}}
	servers := map[string]*mcpsdk.Server{"mem": mem, "mem-ro": mem, "mail": mcptest.NewServer(map[string]string{"doc://m": "m"}, nil)}
	start := func() (*engine.Engine, func()) {
		t.Helper()
		eng, err := engine.New(t.Context(), engine.Options{Config: cfg, Embedder: &indextest.BagEmbedder{},
			Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, servers[s.Name]) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = eng.Run(ctx) })
		if err := eng.WaitReady(t.Context()); err != nil {
			t.Fatal(err)
		}
		return eng, func() { cancel(); wg.Wait(); eng.Close() }
	}
	shown := func(eng *engine.Engine, server string, pins ...string) string {
		t.Helper()
		req := engine.AssembleRequest{Query: "e", TokenBudget: 1000, Filter: engine.Filter{Servers: []string{server}}}
		for _, p := range pins {
			req.Pinned = append(req.Pinned, resource.Key{Server: server, URI: p})
		}
		res, err := eng.Assemble(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, o := range res.Omitted {
			b.WriteString(o.URI + " " + o.Detail + "\n")
		}
		return b.String()
	}
	eng, stop := start()
	if got := shown(eng, "mem-ro", "doc://e"); !strings.Contains(got, "cannot replay") {
		t.Fatalf("before any caller's words: %q; want what the server said", got)
	}
	shown(eng, "mem", "x://a/horse", "x://a/correcthorse")
	if got := shown(eng, "mem-ro", "doc://e"); strings.Contains(got, "horse") || strings.Contains(got, "REDACTED") || !strings.Contains(got, "doc://e") {
		t.Errorf("through the same upstream under another name: %q; want the read failure, with what the server said withheld", got)
	}
	stop()

	eng, stop = start()
	defer stop()
	if got := shown(eng, "mem", "doc://e"); strings.Contains(got, "horse") || strings.Contains(got, "REDACTED") || !strings.Contains(got, "doc://e") {
		t.Errorf("after a restart: %q; want the read failure, with what the server said withheld", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "caller-text"))
	if err != nil || strings.Contains(string(b), "mem.example") || strings.Contains(string(b), "Zk9f") {
		t.Errorf("data_dir's record: %q, %v; want it, without a URL", b, err)
	}
}
