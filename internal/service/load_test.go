package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// BenchmarkLoad runs the daemon's gRPC service (token check and admission
// with the default limits) over an in-memory connection, with the built-in
// embedder and one upstream of 300 Markdown documents (descriptors indexed,
// contents not), under 128 clients
// that each send Assemble after Assemble for $CONTEXTD_LOAD (default 10s;
// CONTEXTD_LOAD=60s for the minute-long run). One query in ten is unique
// (its embedding is not cached); the rest are drawn from 20. A client
// refused with RESOURCE_EXHAUSTED waits 100 ms before its next request. It
// reports p50 and p99 of admitted requests, the share refused, and
// goroutine and live-heap growth between the first and the last second, and
// fails if p99 exceeds 15 s (the 10 s queue bound plus one answer), if
// goroutines grow by more than 20, or if the live heap grows by more than
// 64 MiB. CONTEXTD_LOAD_NO_ADMISSION=1 turns admission off, for a baseline;
// CONTEXTD_LOAD_MCP=1 has the texts answered remembered, as the daemon
// does with mcp_listen set (mcpserver.Server.NoteAnswered).
//
//	go test -run X -bench BenchmarkLoad -benchtime 1x ./internal/service/
//	CONTEXTD_LOAD=60s go test -run X -bench BenchmarkLoad -benchtime 1x -timeout 10m ./internal/service/
func BenchmarkLoad(b *testing.B) {
	d := 10 * time.Second
	if s := os.Getenv("CONTEXTD_LOAD"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			b.Fatalf("CONTEXTD_LOAD: %v", err)
		}
	}
	const clients, token = 128, "load-test-token-0123456789"
	docs := map[string]string{}
	topics := []string{"architecture", "billing", "calendar", "deployment", "errors", "feature flags", "glossary", "hiring", "incidents", "jobs"}
	for i := range 300 {
		t := topics[i%len(topics)]
		docs[fmt.Sprintf("doc://%s/%d.md", strings.ReplaceAll(t, " ", "-"), i)] = fmt.Sprintf("# %s notes %d\n\n%s", t, i, strings.Repeat("How "+t+" works in this team, step by step.\n", 20+i%40))
	}
	common := make([]string, 20)
	for i := range common {
		common[i] = fmt.Sprintf("how does %s work (%d)", topics[i%len(topics)], i)
	}
	emb, err := engine.NewEmbedder("")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		srv := mcptest.NewServer(docs, nil)
		cfg := &config.Config{Tokenizer: "cl100k_base", Limits: config.Limits{}.WithDefaults(),
			Servers: []config.Server{{Name: "docs", Transport: config.TransportStdio, Command: "unused"}}}
		eng, err := engine.New(b.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: emb,
			Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(b, s.Name, srv) },
			// Descriptors only: embedding 300 passages first would take the
			// run's setup minutes on two cores, and measures nothing here.
			Mirror: func(o *ctxsync.Options) { o.ContentMaxResources = -1 }})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var run sync.WaitGroup
		run.Go(func() { _ = eng.Run(ctx) })
		if err := eng.WaitReady(b.Context()); err != nil {
			b.Fatal(err)
		}
		lis := bufconn.Listen(1 << 20)
		guard := service.GuardOptions{Token: token, MaxConcurrent: cfg.Limits.MaxConcurrent, MaxQueued: cfg.Limits.MaxQueued}
		if os.Getenv("CONTEXTD_LOAD_NO_ADMISSION") != "" {
			guard.MaxConcurrent = 0 // the baseline: every request runs at once
		}
		svc := service.New(eng, nil)
		if os.Getenv("CONTEXTD_LOAD_MCP") != "" {
			// As the daemon with mcp_listen set: each answer's texts are
			// remembered, and journaled to data_dir/mcp-served-reads.
			mcps := mcpserver.New(eng, &mcpserver.Options{StateFile: mcpserver.StateFileIn(b.TempDir())})
			svc.NoteAnswers(mcps.NoteAnswered)
		}
		gs := service.NewServer(svc, service.Guard(guard)...)
		go func() { _ = gs.Serve(lis) }()
		conn, err := grpc.NewClient("passthrough:///bufnet",
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
			grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(service.BearerToken{Token: token}))
		if err != nil {
			b.Fatal(err)
		}
		client := contextdv1.NewContextServiceClient(conn)

		var (
			mu        sync.Mutex
			latencies []time.Duration
			refused   atomic.Int64
			failed    atomic.Int64
			firstErr  atomic.Value
			unique    atomic.Int64
		)
		time.Sleep(time.Second)
		g0, h0 := runtime.NumGoroutine(), liveHeap()
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for c := range clients {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(c), 42))
				for time.Now().Before(stop) {
					q := common[r.IntN(len(common))]
					if r.IntN(10) == 0 {
						q = fmt.Sprintf("notes on %s number %d", topics[r.IntN(len(topics))], unique.Add(1))
					}
					rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
					t0 := time.Now()
					_, err := client.Assemble(rctx, &contextdv1.AssembleRequest{Query: q, TokenBudget: 1000})
					el := time.Since(t0)
					rcancel()
					switch status.Code(err) {
					case codes.OK:
						mu.Lock()
						latencies = append(latencies, el)
						mu.Unlock()
					case codes.ResourceExhausted:
						refused.Add(1)
						time.Sleep(100 * time.Millisecond)
					default:
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				}
			})
		}
		wg.Wait()
		g1, h1 := runtime.NumGoroutine(), liveHeap()
		conn.Close()
		gs.Stop()
		cancel()
		run.Wait()
		eng.Close()

		slices.Sort(latencies)
		pct := func(p float64) time.Duration {
			if len(latencies) == 0 {
				return 0
			}
			return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
		}
		total := int64(len(latencies)) + refused.Load() + failed.Load()
		b.ReportMetric(float64(len(latencies))/d.Seconds(), "admitted/s")
		b.ReportMetric(float64(pct(0.5).Milliseconds()), "p50-ms")
		b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
		b.ReportMetric(float64(refused.Load())/float64(max(total, 1)), "refused-share")
		b.ReportMetric(float64(g1-g0), "goroutine-growth")
		b.ReportMetric(float64(h1-h0)/(1<<20), "heap-growth-MiB")
		b.Logf("%v, %d clients: %d admitted (p50 %v, p99 %v, max %v), %d refused, %d failed, %d unique queries; goroutines %d → %d; live heap %.1f → %.1f MiB",
			d, clients, len(latencies), pct(0.5), pct(0.99), pct(1), refused.Load(), failed.Load(), unique.Load(), g0, g1, float64(h0)/(1<<20), float64(h1)/(1<<20))
		if failed.Load() > 0 {
			b.Errorf("%d requests failed; first: %v", failed.Load(), firstErr.Load())
		}
		if p := pct(0.99); p > 15*time.Second {
			b.Errorf("p99 of admitted requests %v, want at most 15 s", p)
		}
		if g1-g0 > 20 {
			b.Errorf("goroutines grew from %d to %d", g0, g1)
		}
		if h1-h0 > 64<<20 {
			b.Errorf("live heap grew by %.1f MiB", float64(h1-h0)/(1<<20))
		}
	}
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
