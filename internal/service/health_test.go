package service_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/test/bufconn"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// TestHealthIsReadiness: NOT_SERVING while no server has synced (its
// connect is held), SERVING after the first sync, NOT_SERVING from
// Shutdown on, and a Watch stream sees each change and then ends.
func TestHealthIsReadiness(t *testing.T) {
	gate := make(chan struct{})
	srv := mcptest.NewServer(docs, nil)
	cfg := &config.Config{Tokenizer: "cl100k_base", Servers: []config.Server{{Name: "docs", Transport: config.TransportStdio, Command: "unused"}}}
	eng, err := engine.New(t.Context(), engine.Options{
		Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Dial: func(s config.Server) ctxsync.DialFunc {
			dial := mcptest.Dial(t, s.Name, srv)
			return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				select {
				case <-gate:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return dial(ctx, o)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })

	svc := service.New(eng, nil)
	lis := bufconn.Listen(1 << 20)
	gs := service.NewServer(svc)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	hc := healthpb.NewHealthClient(conn)
	check := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: service})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer wcancel()
	watch, err := hc.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	next := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := watch.Recv()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		return r.GetStatus()
	}

	if got := next(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("watch before any sync: %v, want NOT_SERVING", got)
	}
	for _, s := range []string{"", contextdv1.ContextService_ServiceDesc.ServiceName} {
		if got := check(s); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("Check(%q) before any sync: %v, want NOT_SERVING", s, got)
		}
	}
	close(gate)
	if got := next(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("watch after the first sync: %v, want SERVING", got)
	}
	if got := check(""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("Check after the first sync: %v, want SERVING", got)
	}
	if _, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "nope"}); err == nil {
		t.Error("Check of an unknown service succeeded; want NOT_FOUND")
	}

	svc.Health().Shutdown()
	if got := next(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("watch after Shutdown: %v, want NOT_SERVING", got)
	}
	if _, err := watch.Recv(); err != io.EOF {
		t.Errorf("watch after NOT_SERVING at shutdown: %v, want the stream to end", err)
	}
	if got := check(""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("Check after Shutdown: %v, want NOT_SERVING", got)
	}
}
