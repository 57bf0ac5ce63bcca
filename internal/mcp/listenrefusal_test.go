package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// A subscriptions/listen request the server refuses with a long error: the
// session remembers why for each URI for its life and quotes it at every
// later subscribe, so the message must be bounded as every other error is.
func TestListenRefusalsAreBounded(t *testing.T) {
	huge := strings.Repeat("r", 4<<20)
	srv := mcptest.NewServer(map[string]string{"doc://0": "zero"}, &mcpsdk.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
	})
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "subscriptions/listen" {
				return nil, &jsonrpc.Error{Code: -32603, Message: huge}
			}
			return next(ctx, method, req)
		}
	})
	sess := mcptest.Connect(t, "s", srv, nil)
	if _, _, proto := sess.ServerInfo(); proto != "2026-07-28" {
		t.Skipf("negotiated %q: no listen streams", proto)
	}
	for i := range 2 {
		err := sess.Subscribe(t.Context(), "doc://0")
		if err == nil {
			t.Fatalf("subscribe %d succeeded; want the refusal", i)
		}
		if n := len(err.Error()); n > mcp.MaxErrorMessageBytes+512 {
			t.Fatalf("subscribe %d: error of %d bytes (%.100s…), want about %d at most", i, n, err, mcp.MaxErrorMessageBytes)
		}
	}
}
