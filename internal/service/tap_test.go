package service_test

import (
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"

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
