package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/metrics"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// BenchmarkGather measures one scrape's collection (Registry.Gather, before
// the text encoding) over an engine mirroring 10,000 descriptors, each with
// a 40-word text in the content index: the scrape-time gauges walk the
// index (descriptor count, content texts and bytes, pending passages).
func BenchmarkGather(b *testing.B) {
	const n = 10_000
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{PageSize: 1000})
	body := strings.Repeat("invoice payment report for the project ", 8)
	for i := range n {
		srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprintf("report %d", i), MIMEType: "text/plain"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: body}}}, nil
			})
	}
	m := metrics.New()
	cfg := &config.Config{Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused"}}}
	eng, err := engine.New(b.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: indextest.RandomEmbedder{Dims: 512}, Observer: m,
		Dial:   func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(b, s.Name, srv) },
		Mirror: func(o *ctxsync.Options) { o.ContentMaxResources = n }})
	if err != nil {
		b.Fatal(err)
	}
	m.Watch(eng)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	b.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	if st := eng.IndexStats(); st.Descriptors != n || st.Contents != n {
		b.Fatalf("index %+v, want %d descriptors with contents", st, n)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
