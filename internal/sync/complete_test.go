package sync_test

import (
	"context"
	"errors"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

func TestCompleteUsesTheLiveSession(t *testing.T) {
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "0"}}}, nil
		},
	})
	m := ctxsync.New(ctxsync.Options{Server: "s", Dial: mcptest.Dial(t, "s", srv), Index: newIndex(t)})
	if m.OffersCompletions() {
		t.Error("OffersCompletions before any session = true")
	}
	if _, err := m.Complete(t.Context(), "u://{id}", "id", "4", nil); !errors.Is(err, ctxsync.ErrUnavailable) {
		t.Errorf("Complete before any session: err = %v, want ErrUnavailable", err)
	}
	start(t, m)
	<-m.Ready()
	if !m.OffersCompletions() {
		t.Fatal("OffersCompletions = false for a server with a completion handler")
	}
	c, err := m.Complete(t.Context(), "u://{id}", "id", "4", nil)
	if err != nil || len(c.Values) != 1 || c.Values[0] != "40" {
		t.Fatalf("Complete = %+v, %v; want [40]", c, err)
	}
}

func TestCompleteOnServerWithoutCompletions(t *testing.T) {
	m := ctxsync.New(ctxsync.Options{Server: "s", Dial: mcptest.Dial(t, "s", mcptest.NewServer(nil, nil)), Index: newIndex(t)})
	start(t, m)
	<-m.Ready()
	if m.OffersCompletions() {
		t.Error("OffersCompletions = true for a server without the capability")
	}
	if _, err := m.Complete(t.Context(), "u://{id}", "id", "4", nil); !errors.Is(err, mcp.ErrNoCompletions) {
		t.Errorf("err = %v, want mcp.ErrNoCompletions", err)
	}
}
