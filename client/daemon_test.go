package client_test

import (
	"context"
	"fmt"
	"net"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// startDaemon runs what `contextd serve` runs, the engine and the gRPC
// service, on listener l (closed by stop), mirroring one in-memory MCP
// server "docs" that serves docs (URI → text). With token, every call must
// carry it.
func startDaemon(l net.Listener, token string, docs map[string]string) (stop func(), err error) {
	srv := mcptest.NewServer(docs, nil)
	var mu sync.Mutex
	var closers []func() error
	dial := func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		ct, st := mcpsdk.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		sess, err := mcp.ConnectTransport(ctx, "docs", ct, o)
		if err != nil {
			ss.Close()
			return nil, err
		}
		mu.Lock()
		closers = append(closers, sess.Close, ss.Close)
		mu.Unlock()
		return sess, nil
	}
	cfg := &config.Config{Servers: []config.Server{{Name: "docs", Transport: config.TransportStdio, Command: "unused"}}}
	ctx, cancel := context.WithCancel(context.Background())
	eng, err := engine.New(ctx, engine.Options{Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Dial: func(config.Server) ctxsync.DialFunc { return dial }})
	if err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	if err := eng.WaitReady(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("engine: %w", err)
	}
	gs := service.NewServer(service.New(eng, nil), service.Guard(service.GuardOptions{Token: token})...)
	wg.Go(func() { _ = gs.Serve(l) })
	return func() {
		gs.Stop()
		cancel()
		wg.Wait()
		eng.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range closers {
			_ = c()
		}
	}, nil
}
