package main

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/internal/service"
)

// UNAVAILABLE alone is a daemon that did not answer; with the daemon's
// ErrorInfo it is the daemon's answer, and must not be reported as its
// absence.
func TestRPCErrorTellsNoDaemonFromTheDaemonsUnavailable(t *testing.T) {
	none := status.Error(codes.Unavailable, "connection error: dial tcp 127.0.0.1:7878: connect: connection refused")
	if got := rpcError("127.0.0.1:7878", none).Error(); !strings.HasPrefix(got, "no daemon answering at 127.0.0.1:7878") {
		t.Errorf("no daemon: %q", got)
	}
	st, err := status.New(codes.Unavailable, "no server in scope has synced yet: bad: failed").
		WithDetails(&errdetails.ErrorInfo{Domain: service.ErrorDomain, Reason: service.ReasonUpstreamUnavailable})
	if err != nil {
		t.Fatal(err)
	}
	got := rpcError("127.0.0.1:7878", st.Err()).Error()
	if strings.Contains(got, "no daemon") || !strings.Contains(got, "daemon at 127.0.0.1:7878: Unavailable: no server in scope has synced yet") {
		t.Errorf("the daemon's UNAVAILABLE: %q", got)
	}
	if plain := errors.New("x"); rpcError("a", plain) != plain {
		t.Error("a non-status error changed")
	}
}
