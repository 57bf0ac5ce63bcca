package client_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/client"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// flaky answers ListServers UNAVAILABLE the first failures times, with
// the no-retry trailer when pushback is set, then OK.
type flaky struct {
	contextdv1.UnimplementedContextServiceServer
	failures int32
	pushback bool
	calls    atomic.Int32
}

func (f *flaky) ListServers(ctx context.Context, _ *contextdv1.ListServersRequest) (*contextdv1.ListServersResponse, error) {
	if f.calls.Add(1) <= f.failures {
		if f.pushback {
			_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", "-1"))
		}
		return nil, status.Error(codes.Unavailable, "connection lost")
	}
	return &contextdv1.ListServersResponse{}, nil
}

func serveFlaky(t *testing.T, f *flaky) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	contextdv1.RegisterContextServiceServer(s, f)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// A call that fails UNAVAILABLE (its connection closed under it) is sent
// again, up to three attempts; one the daemon says not to retry is not.
func TestUnavailableCallsAreRetriedUnlessTheDaemonSaysNot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		f         *flaky
		wantCalls int32
		wantOK    bool
	}{
		{"lost twice", &flaky{failures: 2}, 3, true},
		{"lost three times", &flaky{failures: 3}, 3, false},
		{"the daemon's own answer", &flaky{failures: 1, pushback: true}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.Dial(serveFlaky(t, tc.f), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.ListServers(t.Context())
			if (err == nil) != tc.wantOK || tc.f.calls.Load() != tc.wantCalls {
				t.Errorf("ListServers: %v after %d calls; want ok=%v after %d", err, tc.f.calls.Load(), tc.wantOK, tc.wantCalls)
			}
		})
	}
}

// A call whose connection ended under it says so, not that no daemon answers.
func TestALostConnectionIsNotNoDaemon(t *testing.T) {
	lost := &client.Error{Addr: "127.0.0.1:1", Status: status.New(codes.Unavailable, "error reading from server: EOF")}
	refused := &client.Error{Addr: "127.0.0.1:1", Status: status.New(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`)}
	if msg := lost.Error(); !strings.Contains(msg, "closed the connection before answering") || errors.Is(lost, client.ErrNoDaemon) {
		t.Errorf("lost: %q (ErrNoDaemon %v)", msg, errors.Is(lost, client.ErrNoDaemon))
	}
	if msg := refused.Error(); !strings.HasPrefix(msg, "no daemon answering at 127.0.0.1:1") || !errors.Is(refused, client.ErrNoDaemon) {
		t.Errorf("refused: %q (ErrNoDaemon %v)", msg, errors.Is(refused, client.ErrNoDaemon))
	}
}
