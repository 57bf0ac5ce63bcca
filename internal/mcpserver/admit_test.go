package mcpserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// Tool calls, the context prompt, completions, reads and subscriptions take their turns from the admission serve shares
// with gRPC: with every turn taken and no room to queue, they are refused
// at once; lists are not counted.
func TestToolCallsAndReadsWaitForTheSharedAdmission(t *testing.T) {
	adm := service.NewAdmission(1, 0, time.Minute)
	docs := map[string]string{"doc://arch": "architecture of the billing service"}
	up := mcptest.NewServer(docs, &mcpsdk.ServerOptions{
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"}, // resources/subscribe, not subscriptions/listen
	})
	f := newFacade(t, map[string]*mcpsdk.Server{"a": up}, &mcpserver.Options{Admit: adm.Admit}, engine.Options{})
	cs := f.connect(t, nil)
	legacy := f.connectVersion(t, nil, "2025-11-25") // resources/subscribe answers when subscribed
	waitList(t, cs, func(rs []*mcpsdk.Resource) bool { return len(rs) == 1 })

	release, err := adm.Admit(t.Context()) // a gRPC call holds the only turn
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"tools/call assemble_context": func() error {
			_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{"task": "billing architecture"}})
			return err
		},
		"tools/call search_resources": func() error {
			_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "search_resources", Arguments: map[string]any{"query": "billing"}})
			return err
		},
		"resources/read": func() error {
			_, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/a/doc://arch"})
			return err
		},
		"prompts/get context": func() error { // assembles, as assemble_context does
			_, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": "billing architecture"}})
			return err
		},
		"completion/complete uri": func() error { // scans every mirrored URI
			_, err := cs.Complete(t.Context(), &mcpsdk.CompleteParams{Ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "contextd:resource/{server}/{+uri}"},
				Argument: mcpsdk.CompleteParamsArgument{Name: "uri", Value: "doc"}})
			return err
		},
		"resources/subscribe": func() error { // reads the resource upstream
			return legacy.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: "contextd:resource/a/doc://arch"})
		},
	}
	for name, call := range calls {
		start := time.Now()
		if err := call(); err == nil || !strings.Contains(err.Error(), "busy") || time.Since(start) > 10*time.Second {
			t.Errorf("%s with no turn free: %v after %v, want a busy error at once", name, err, time.Since(start))
		}
	}
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Errorf("tools/list is not admitted, yet: %v", err)
	}
	release()
	for name, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s with a turn free: %v", name, err)
		}
	}
}

// A request that waits for a server's first sync waits before it takes a
// turn, not holding one: requests naming a server still on its first
// content pass (minutes on a large one) would otherwise take every turn
// for ReadyWait each, and gRPC callers would be refused meanwhile.
func TestWaitingForAFirstSyncHoldsNoTurn(t *testing.T) {
	adm := service.NewAdmission(1, 0, time.Minute)
	ready := mcptest.NewServer(map[string]string{"doc://arch": "architecture of the billing service"}, nil)
	// The slow server never answers its list, so its first sync does not
	// finish while the test runs.
	slow := mcptest.NewServer(map[string]string{"doc://slow": "slow"}, nil)
	stop := make(chan struct{})
	slow.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "resources/list" {
				select {
				case <-stop:
				case <-ctx.Done():
				}
				return nil, errors.New("not listing")
			}
			return next(ctx, method, req)
		}
	})
	const wait = time.Second
	f := startFacade(t, map[string]*mcpsdk.Server{"a": ready, "slow": slow}, &mcpserver.Options{Admit: adm.Admit, ReadyWait: wait},
		engine.Options{Mirror: func(o *ctxsync.Options) { o.SyncTimeout = 10 * wait }})
	t.Cleanup(func() { close(stop) }) // before the facade's: the mirror stops then
	select {
	case <-f.eng.Ready("a"):
	case <-time.After(10 * time.Second):
		t.Fatal("server a not ready after 10 s")
	}
	cs := f.connect(t, nil)
	calls := map[string]func() error{
		"tools/call search_resources": func() error {
			_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "search_resources", Arguments: map[string]any{"query": "billing"}})
			return err
		},
		"tools/call assemble_context": func() error {
			_, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{"task": "billing", "servers": []string{"slow"}}})
			return err
		},
		"resources/read": func() error {
			_, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/slow/doc://slow"})
			return err
		},
		"prompts/get context": func() error {
			_, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": "billing architecture"}})
			return err
		},
	}
	for name, call := range calls {
		done := make(chan time.Duration, 1)
		start := time.Now()
		go func() { _ = call(); done <- time.Since(start) }()
		time.Sleep(wait / 4)
		// A gRPC call arrives while the request waits for the slow server.
		ctx, cancel := context.WithTimeout(t.Context(), wait/4)
		release, err := adm.Admit(ctx)
		cancel()
		if err != nil {
			t.Errorf("%s waiting for a first sync: a gRPC call got no turn: %v", name, err)
		} else {
			release()
		}
		if d := <-done; d < wait*3/4 {
			t.Errorf("%s answered after %v: it did not wait for the slow server's first sync (ReadyWait %v)", name, d, wait)
		}
	}
}
