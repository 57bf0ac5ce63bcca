package engine_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// subscriptionCounter is a go-sdk server that declares resources.subscribe
// and counts the subscriptions it holds.
type subscriptionCounter struct {
	srv  *mcpsdk.Server
	mu   gosync.Mutex
	live map[string]bool
	subs int
}

func newSubscriptionCounter() *subscriptionCounter {
	s := &subscriptionCounter{live: map[string]bool{}}
	s.srv = mcptest.NewServer(map[string]string{"doc://architecture": "how the system is built"}, &mcpsdk.ServerOptions{
		Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{Subscribe: true, ListChanged: true}},
		SubscribeHandler: func(_ context.Context, r *mcpsdk.SubscribeRequest) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.live[r.Params.URI] = true
			s.subs++
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcpsdk.UnsubscribeRequest) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.live, r.Params.URI)
			return nil
		},
	})
	return s
}

func (s *subscriptionCounter) state() (live, subscribes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live), s.subs
}

// BenchmarkAssembleMissingPins runs one Assemble pinning 20,000 URIs the
// server does not have, with pins opened up (allow_unlisted_pins, and
// max_pins and max_reads raised to 20,000) so that every pin is read, then
// one Assemble of a listed resource, and reports the time of each and the
// subscriptions left upstream (at most the 64 kept idle; before the fix the
// missing pins left 20,000 and the next read took ~40 s to trim them). The
// "default" variant uses the default limits: the request is refused at once.
//
//	go test -run X -bench AssembleMissingPins -benchtime 1x ./internal/engine/
func BenchmarkAssembleMissingPins(b *testing.B) {
	const n = 20_000
	pins := make([]resource.Key, n)
	for i := range pins {
		pins[i] = resource.Key{Server: "s", URI: fmt.Sprintf("doc://missing/%d", i)}
	}
	for _, bc := range []struct {
		name string
		lim  config.Limits
	}{{"opened", config.Limits{MaxPins: n, MaxReads: n + 10, MaxResponseBytes: 1 << 30}}, {"default", config.Limits{}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				up := newSubscriptionCounter()
				cfg := &config.Config{Limits: bc.lim, Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused", AllowUnlistedPins: true}}}
				eng, err := engine.New(b.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
					Dial: func(config.Server) ctxsync.DialFunc {
						dial := mcptest.Dial(b, "s", up.srv)
						return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
							o.ProtocolVersion = "2025-11-25" // resources/subscribe
							return dial(ctx, o)
						}
					}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg gosync.WaitGroup
				wg.Go(func() { _ = eng.Run(ctx) })
				if err := eng.WaitReady(b.Context()); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				res, err := eng.Assemble(b.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 100, Pinned: pins})
				pinned := time.Since(t0)
				t1 := time.Now()
				if _, err := eng.Assemble(b.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 100}); err != nil {
					b.Fatal(err)
				}
				next := time.Since(t1)
				live, subs := up.state()
				cancel()
				wg.Wait()
				eng.Close()

				if bc.name == "opened" && (err != nil || len(res.Omitted) < n) {
					b.Fatalf("opened: %v, %d omitted", err, len(res.Omitted))
				}
				if bc.name == "default" && err == nil {
					b.Fatal("default limits: 20,000 pins accepted")
				}
				b.ReportMetric(pinned.Seconds(), "pinned-assemble-s")
				b.ReportMetric(next.Seconds(), "next-assemble-s")
				b.ReportMetric(float64(live), "live-subscriptions")
				b.ReportMetric(float64(subs), "subscribes")
				if live > 64 {
					b.Errorf("%d subscriptions left upstream, want at most 64", live)
				}
			}
		})
	}
}
