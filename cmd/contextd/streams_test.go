package main

import (
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/h2flood"
)

// One gRPC connection may hold at most maxStreamsPerConn calls at once: a
// client (with the token, or where none is set) that opens calls sending
// headers and never a message has the rest refused (REFUSED_STREAM), so
// it cannot hold a goroutine per call without bound.
func TestStreamsPerConnectionAreBounded(t *testing.T) {
	const n = maxStreamsPerConn + 50
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpcConnOptions(config.Conns{HandshakeTimeout: 10 * time.Second, IdleTimeout: time.Minute})...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	c, err := h2flood.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The server's SETTINGS first, as a client reads them.
	c.Wait(10*time.Second, func() bool { return c.Advertised() != 0 })
	c.OpenCalls("/grpc.health.v1.Health/Check", n)
	// The server may also end the whole connection instead of refusing
	// streams one by one (grpc-go sometimes resets it under load): the
	// client then holds nothing either.
	refused := c.Wait(10*time.Second, func() bool { return c.Refused() >= n-maxStreamsPerConn })
	if got := c.Advertised(); got != maxStreamsPerConn {
		t.Errorf("the server advertises %d streams per connection, want %d", got, maxStreamsPerConn)
	}
	if !refused && !c.Closed() {
		t.Errorf("%d of %d calls over the %d a connection may hold were refused", c.Refused(), n-maxStreamsPerConn, maxStreamsPerConn)
	}
}
