package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/service"
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
