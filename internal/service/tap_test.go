package service_test

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/contextd/contextd/internal/h2flood"
	"github.com/contextd/contextd/internal/service"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// A client without the token opens thousands of unary calls on one
// connection, each sending its headers and never its request message
// (interceptors run only once the message is in). Each is refused as its
// headers arrive: none holds a goroutine waiting.
func TestCallsWithoutTheTokenAreRefusedAtTheirHeaders(t *testing.T) {
	const token, n = "0123456789abcdef0123456789abcdef", 2000
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(service.Guard(service.GuardOptions{Token: token})...)
	contextdv1.RegisterContextServiceServer(s, &stubService{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)

	before := runtime.NumGoroutine()
	c, err := h2flood.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.OpenCalls(contextdv1.ContextService_ListServers_FullMethodName, n)
	// The server may also end the whole connection (grpc-go sometimes
	// resets it under load): its calls then hold nothing either.
	if !c.Wait(10*time.Second, func() bool { return c.Ended() >= n }) && !c.Closed() {
		t.Errorf("%d of %d calls without the token refused; the rest wait for a message", c.Ended(), n)
	}
	if grown := runtime.NumGoroutine() - before; grown > 100 {
		t.Errorf("%d goroutines more while %d calls without the token are open", grown, n)
	}
}

// Calls gRPC ends without starting a handler (a deadline already past, a
// malformed method name) take no place among the calls waiting to start:
// they would each have held one for a second, and a few hundred of them
// a second, a few KB, kept every honest call out.
func TestCallsThatNeverStartHoldNoPlace(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(service.Guard(service.GuardOptions{})...)
	healthpb.RegisterHealthServer(s, healthStub{})
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	for _, bad := range []struct {
		name, path string
		md         [][2]string
	}{
		{"deadline past", "/grpc.health.v1.Health/Check", [][2]string{{"grpc-timeout", "1n"}}},
		{"malformed name", "/x", nil},
	} {
		c, err := h2flood.Dial(lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		n := 2 * service.DefaultMaxUnstarted
		for range n {
			c.Call(bad.path, bad.md, nil)
		}
		if !c.Wait(10*time.Second, func() bool { return c.Ended() >= n }) {
			t.Fatalf("%s: %d of %d calls ended", bad.name, c.Ended(), n)
		}
		c.Close()
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
		conn.Close()
		if err != nil {
			t.Fatalf("an honest call right after %d calls with a %s: %v", n, bad.name, err)
		}
	}
}
