package engine_test

import (
	"errors"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
)

func TestDescriptorsReadAndReadyServeTheMCPFacade(t *testing.T) {
	eng := newEngine(t, "", map[string]*mcpsdk.Server{
		"a": mcptest.NewServer(map[string]string{"doc://a/2": "two", "doc://a/1": "one"}, nil),
		"b": mcptest.NewServer(map[string]string{"doc://b": "bee"}, nil),
	}, 0)
	all, err := eng.Descriptors("")
	if err != nil || len(all) != 3 || all[0].URI != "doc://a/1" || all[2].Server != "b" {
		t.Errorf("Descriptors(\"\") = %v, %v; want 3 sorted by server and URI", all, err)
	}
	if ds, err := eng.Descriptors("b"); err != nil || len(ds) != 1 {
		t.Errorf("Descriptors(b) = %v, %v", ds, err)
	}
	if _, err := eng.Descriptors("nope"); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Errorf("Descriptors(nope): %v, want ErrInvalidArgument", err)
	}
	cs, f, err := eng.Read(t.Context(), resource.Key{Server: "a", URI: "doc://a/2"})
	if err != nil || len(cs) != 1 || cs[0].Text != "two" || f.At.IsZero() {
		t.Errorf("Read = %v, %+v, %v; want the text and when it was fetched", cs, f, err)
	}
	for _, k := range []resource.Key{{Server: "nope", URI: "doc://x"}, {Server: "a"}} {
		if _, _, err := eng.Read(t.Context(), k); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("Read(%q): %v, want ErrInvalidArgument", k, err)
		}
	}
	select {
	case <-eng.Ready("a"):
	default:
		t.Error("Ready(a) is open after WaitReady")
	}
	if eng.Ready("nope") != nil {
		t.Error("Ready(nope) is not nil")
	}
}
