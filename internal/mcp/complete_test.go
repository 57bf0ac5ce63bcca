package mcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

func TestCompleteSendsResourceRefAndContext(t *testing.T) {
	var got *mcpsdk.CompleteParams
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			got = req.Params
			var vals []string
			for _, u := range []string{"alice", "alfred", "bob"} {
				if strings.HasPrefix(u, req.Params.Argument.Value) {
					vals = append(vals, u)
				}
			}
			return &mcpsdk.CompleteResult{Completion: mcpsdk.CompletionResultDetails{Values: vals, Total: len(vals)}}, nil
		},
	})
	sess := mcptest.Connect(t, "users", srv, nil)
	if !sess.Capabilities().Completions {
		t.Fatal("server with a completion handler: Completions capability not seen")
	}
	c, err := sess.Complete(t.Context(), "users://{name}/profile", "name", "al", map[string]string{"org": "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcp.Completion{Values: []string{"alice", "alfred"}, Total: 2}, c); diff != "" {
		t.Errorf("Completion mismatch (-want +got):\n%s", diff)
	}
	want := &mcpsdk.CompleteParams{
		Ref:      &mcpsdk.CompleteReference{Type: "ref/resource", URI: "users://{name}/profile"},
		Argument: mcpsdk.CompleteParamsArgument{Name: "name", Value: "al"},
		Context:  &mcpsdk.CompleteContext{Arguments: map[string]string{"org": "acme"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mcpsdk.CompleteParams{}, "Meta")); diff != "" {
		t.Errorf("params mismatch (-want +got):\n%s", diff)
	}
}

func TestCompleteWithoutCapabilitySendsNothing(t *testing.T) {
	rec := &mcptest.Recorder{}
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(rec.Middleware())
	sess := mcptest.Connect(t, "plain", srv, nil)
	_, err := sess.Complete(t.Context(), "users://{id}", "id", "4", nil)
	if !errors.Is(err, mcp.ErrNoCompletions) {
		t.Fatalf("err = %v, want ErrNoCompletions", err)
	}
	if n := rec.Count("completion/complete"); n != 0 {
		t.Errorf("server received %d completion/complete requests, want 0", n)
	}
}

func TestCompleteServerErrorIsReturned(t *testing.T) {
	srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
		CompletionHandler: func(context.Context, *mcpsdk.CompleteRequest) (*mcpsdk.CompleteResult, error) {
			return nil, errors.New("completion backend down")
		},
	})
	sess := mcptest.Connect(t, "users", srv, nil)
	_, err := sess.Complete(t.Context(), "users://{id}", "id", "4", nil)
	if err == nil || !strings.Contains(err.Error(), "completion backend down") || !strings.Contains(err.Error(), `"users"`) {
		t.Fatalf("err = %v, want the server's error naming the server", err)
	}
}
