package service_test

import (
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

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

// A call whose request message does not arrive within RequestWait of its
// headers is ended: its handler would wait for it without a deadline, so a
// client holding such a call on each of its connections held every
// connection slot for good. A call whose message comes is untouched.
func TestCallsWithoutARequestMessageAreEnded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(service.Guard(service.GuardOptions{RequestWait: 300 * time.Millisecond})...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	c, err := h2flood.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 50
	c.OpenCalls("/grpc.health.v1.Health/Check", n)
	if !c.Wait(10*time.Second, func() bool { return c.Ended() >= n }) {
		t.Fatalf("%d of %d calls without a request message ended", c.Ended(), n)
	}

	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("a call with its message: %v", err)
	}
	// A stream whose request came stays open past the wait.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	got := make(chan error, 1)
	go func() { _, err := w.Recv(); got <- err }()
	select {
	case err := <-got:
		t.Fatalf("a Watch whose request came ended after the request wait: %v", err)
	case <-time.After(time.Second):
	}
}

// At most MaxWatchStreams health Watch streams are open at once; one past
// it fails with RESOURCE_EXHAUSTED, and a place frees as a stream ends.
func TestHealthWatchStreamsAreBounded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(service.Guard(service.GuardOptions{})...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	watch := func() error {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return err
		}
		_, err = w.Recv()
		return err
	}
	for i := range service.MaxWatchStreams {
		if err := watch(); err != nil {
			t.Fatalf("Watch %d: %v", i, err)
		}
	}
	if err := watch(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Watch past the bound: %v, want RESOURCE_EXHAUSTED", err)
	}
	cancels[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := watch()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Watch after one ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
