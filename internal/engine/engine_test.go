package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

func newEngine(t *testing.T, dataDir string, servers map[string]*mcpsdk.Server, readTimeout time.Duration) *engine.Engine {
	t.Helper()
	cfg := &config.Config{DataDir: dataDir}
	for name := range servers {
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused"})
	}
	eng, err := engine.New(t.Context(), engine.Options{
		Config: cfg, InMemory: dataDir == "", Embedder: &indextest.BagEmbedder{}, ReadTimeout: readTimeout,
		Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, servers[s.Name]) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestSlowReadFailsAloneWithinReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
		srv.AddResource(&mcpsdk.Resource{URI: "doc://slow-architecture", Name: "architecture slow"},
			func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				<-ctx.Done() // never answers
				return nil, ctx.Err()
			})
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 5*time.Second)
		start := time.Now()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < 5*time.Second || el > 6*time.Second {
			t.Errorf("Assemble took %v, want the 5s read timeout", el)
		}
		var slow *selector.Omitted
		for i, o := range res.Omitted {
			if o.URI == "doc://slow-architecture" {
				slow = &res.Omitted[i]
			}
		}
		if slow == nil || slow.Reason != selector.OmitReadFailed || !strings.Contains(slow.Detail, "no answer within 5s") {
			t.Errorf("slow resource omitted as %+v, want read_failed after 5s", slow)
		}
		if len(res.Items) != 1 || res.Items[0].URI != "doc://fast-architecture" {
			t.Errorf("items = %+v, want the fast resource", res.Items)
		}
	})
}

func TestRemovedServerIsDroppedFromThePersistentIndex(t *testing.T) {
	dir := t.TempDir()
	a := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	b := mcptest.NewServer(map[string]string{"doc://b": "beta"}, nil)
	eng := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a, "b": b}, 0)
	if hits, _ := eng.Search(t.Context(), engine.SearchRequest{Query: "beta"}); len(hits) == 0 {
		t.Fatal("b not indexed")
	}
	eng.Close()

	eng2 := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a}, 0)
	hits, err := eng2.Search(t.Context(), engine.SearchRequest{Query: "beta alpha", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Key() == (resource.Key{Server: "b", URI: "doc://b"}) {
			t.Errorf("descriptor of server b, no longer configured, still returned: %+v", h)
		}
	}
	if len(hits) != 1 {
		t.Errorf("hits = %+v, want only a's descriptor", hits)
	}
}
