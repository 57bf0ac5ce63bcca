package service

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// A call past the bound is refused; one whose handler starts gives its
// place up at once; one that ends without a handler (reset before gRPC
// started it, or aborted by gRPC) gives it up unstartedGrace later.
func TestStartGatePlaces(t *testing.T) {
	g := &startGate{max: 3}
	bg := context.Background()
	started, err := g.admit(bg, "/s.S/M")
	if err != nil {
		t.Fatal(err)
	}
	reset, cancel := context.WithCancel(bg)
	if _, err := g.admit(reset, "/s.S/M"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.admit(bg, "/s.S/M"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.admit(bg, "/s.S/M"); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a fourth call with 3 waiting: %v, want RESOURCE_EXHAUSTED", err)
	}
	if g.waiting.Load() != 3 {
		t.Fatalf("%d waiting after a refusal, want 3", g.waiting.Load())
	}

	g.TagRPC(started, &stats.RPCTagInfo{})
	g.TagRPC(started, &stats.RPCTagInfo{}) // a second start gives nothing up twice
	if got := g.waiting.Load(); got != 2 {
		t.Fatalf("%d waiting once a handler started, want 2", got)
	}

	cancel()
	time.Sleep(unstartedGrace / 2)
	if got := g.waiting.Load(); got != 2 {
		t.Fatalf("%d waiting %v after a reset, before the grace ends; want 2", got, unstartedGrace/2)
	}
	deadline := time.Now().Add(unstartedGrace + 5*time.Second)
	for g.waiting.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := g.waiting.Load(); got != 1 {
		t.Fatalf("%d waiting after the grace of a call reset before its start, want 1", got)
	}
}
