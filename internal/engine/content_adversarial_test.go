package engine_test

// The content-level index against hostile servers and a reopened data_dir.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

var lexicalOnly = &engine.Ranking{Lexical: 1}

func lexicalURIs(t *testing.T, eng *engine.Engine, query string, servers ...string) []string {
	t.Helper()
	hits, err := eng.Search(t.Context(), engine.SearchRequest{Query: query, Ranking: lexicalOnly, Filter: engine.Filter{Servers: servers}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, h := range hits {
		out = append(out, h.Server+" "+h.URI)
	}
	slices.Sort(out)
	return out
}

func contents(eng *engine.Engine) map[string]int {
	out := map[string]int{}
	for _, s := range eng.Servers() {
		out[s.Server] = s.Contents
	}
	return out
}

// TestReopenedDataDirKeepsCurrentContentsOnly: contents persist with the
// index; on reopen, those whose resource changed meanwhile (its size here)
// are dropped and read again, the others are searchable at once and not
// read again, and those of removed resources are gone.
func TestReopenedDataDirKeepsCurrentContentsOnly(t *testing.T) {
	dir := t.TempDir()
	v1 := mcptest.NewServer(map[string]string{
		"doc://changed": "walrus",
		"doc://same":    "narwhal",
		"doc://removed": "dugong",
	}, nil)
	eng := newEngine(t, dir, map[string]*mcpsdk.Server{"s": v1}, 0)
	if got := contents(eng)["s"]; got != 3 {
		t.Fatalf("first run: %d contents, want 3", got)
	}
	eng.Close()

	v2 := mcptest.NewServer(map[string]string{
		"doc://changed": "walrus became a manatee",
		"doc://same":    "narwhal",
	}, nil)
	var rec readURIs
	v2.AddReceivingMiddleware(rec.middleware())
	eng2 := newEngine(t, dir, map[string]*mcpsdk.Server{"s": v2}, 0)
	if got := rec.list(); !slices.Equal(got, []string{"doc://changed"}) {
		t.Errorf("reopened: read %v, want only the changed resource", got)
	}
	if got := contents(eng2)["s"]; got != 2 {
		t.Errorf("reopened: %d contents, want 2", got)
	}
	for q, want := range map[string][]string{
		"narwhal": {"s doc://same"},
		"manatee": {"s doc://changed"},
		"dugong":  nil,
	} {
		if got := lexicalURIs(t, eng2, q); !slices.Equal(got, want) {
			t.Errorf("reopened: %s finds %v, want %v", q, got, want)
		}
	}
}

type readURIs struct {
	mu   sync.Mutex
	uris []string
}

func (r *readURIs) middleware() mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if rr, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				r.mu.Lock()
				r.uris = append(r.uris, rr.Params.URI)
				r.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	}
}

func (r *readURIs) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.uris)
	slices.Sort(out)
	return out
}

// TestHungContentServerDoesNotHoldUpTheOthers: one server lists fine but
// never answers a read. While its content pass waits, searches and
// assembles over every server answer at once from the other server's
// contents and its descriptors; the engine is ready within the pass's
// bound (8 unanswered reads, 4 at a time at 10 s each).
func TestHungContentServerDoesNotHoldUpTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fast := mcptest.NewServer(map[string]string{"doc://ledger": "the walrus ledger of invoices"}, nil)
		hung := mcptest.NewServer(nil, nil)
		for i := range 50 {
			hung.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://walrus-%02d", i), Name: "walrus notes"},
				func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				})
		}
		cfg := &config.Config{Servers: []config.Server{
			{Name: "fast", Transport: config.TransportStdio, Command: "unused"},
			{Name: "hung", Transport: config.TransportStdio, Command: "unused"},
		}}
		servers := map[string]*mcpsdk.Server{"fast": fast, "hung": hung}
		eng, err := engine.New(t.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
			Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, servers[s.Name]) }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = eng.Run(ctx) })
		t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
		t0 := time.Now()
		time.Sleep(time.Second)
		synctest.Wait() // both synced; the hung server's pass waits

		s0 := time.Now()
		if got := lexicalURIs(t, eng, "walrus", "fast"); !slices.Equal(got, []string{"fast doc://ledger"}) {
			t.Errorf("search of the other server's contents during the hung pass = %v", got)
		}
		if got := lexicalURIs(t, eng, "walrus notes", "hung"); len(got) != 10 {
			t.Errorf("search of the hung server's descriptors during its pass = %v, want 10", got)
		}
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "walrus ledger invoices", TokenBudget: 200, Filter: engine.Filter{Servers: []string{"fast"}}})
		if err != nil || len(res.Items) != 1 || res.Items[0].URI != "doc://ledger" {
			t.Errorf("assemble during the hung pass = %+v, %v", res, err)
		}
		if el := time.Since(s0); el > 0 {
			t.Errorf("search and assemble took %v during the hung pass, want no wait", el)
		}
		if err := eng.WaitReady(t.Context()); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(t0); el > 25*time.Second {
			t.Errorf("ready after %v, want within ~20 s of a server that answers no read", el)
		}
		if got := contents(eng); got["fast"] != 1 || got["hung"] != 0 {
			t.Errorf("contents = %v, want fast:1 hung:0", got)
		}
	})
}

// TestClosedDuringAPassReopensIntact: the engine is closed while a
// content pass waits on reads that never answer. The data_dir reopens
// with the contents indexed before, and the next run reads only what has
// none.
func TestClosedDuringAPassReopensIntact(t *testing.T) {
	dir := t.TempDir()
	srv := mcptest.NewServer(map[string]string{"doc://a": "walrus", "doc://b": "narwhal"}, nil)
	cfg := &config.Config{DataDir: dir, Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused"}}}
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg, Embedder: &indextest.BagEmbedder{},
		Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, srv) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = eng.Run(ctx); close(done) }()
	defer cancel()
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := contents(eng)["s"]; got != 2 {
		t.Fatalf("first pass: %d contents, want 2", got)
	}
	started := make(chan struct{}, 8)
	for i := range 4 {
		srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://hung-%d", i), Name: "hung"},
			func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				started <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			})
	}
	<-started // the pass after the re-list is waiting
	// The index closes under the waiting pass; then the mirrors stop.
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Run still running 2 s after cancellation, during a hung content pass")
	}

	again := mcptest.NewServer(map[string]string{"doc://a": "walrus", "doc://b": "narwhal", "doc://c": "dugong"}, nil)
	var rec readURIs
	again.AddReceivingMiddleware(rec.middleware())
	eng2 := newEngine(t, dir, map[string]*mcpsdk.Server{"s": again}, 0)
	if got := rec.list(); !slices.Equal(got, []string{"doc://c"}) {
		t.Errorf("reopened: read %v, want only the new resource", got)
	}
	for q, want := range map[string][]string{"walrus": {"s doc://a"}, "narwhal": {"s doc://b"}, "dugong": {"s doc://c"}} {
		if got := lexicalURIs(t, eng2, q); !slices.Equal(got, want) {
			t.Errorf("reopened: %s finds %v, want %v", q, got, want)
		}
	}
}
