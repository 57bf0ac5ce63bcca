package engine_test

import (
	"errors"
	"fmt"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// A filter is checked against every descriptor in scope for every query
// text ranked: one request may not bring thousands of values to check.
func TestFiltersHaveABoundedNumberOfValues(t *testing.T) {
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": mcptest.NewServer(map[string]string{"doc://a": "architecture"}, nil)}, 0)
	many := func(n int, f func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	mimes := func(n int) []string { return many(n, func(i int) string { return fmt.Sprintf("text/x%d", i) }) }
	prefixes := func(n int) []string { return many(n, func(i int) string { return fmt.Sprintf("doc://%d", i) }) }
	for name, f := range map[string]engine.Filter{
		"MIME types":   {MIMETypes: mimes(engine.MaxFilterValues + 1)},
		"URI prefixes": {URIPrefixes: prefixes(engine.MaxFilterValues + 1)},
	} {
		if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: "architecture", Filter: f}); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("Search with %d %s: %v, want ErrInvalidArgument", engine.MaxFilterValues+1, name, err)
		}
		if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 100, Filter: f}); !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("Assemble with %d %s: %v, want ErrInvalidArgument", engine.MaxFilterValues+1, name, err)
		}
	}
	if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: "architecture", Filter: engine.Filter{MIMETypes: mimes(engine.MaxFilterValues), URIPrefixes: prefixes(engine.MaxFilterValues)}}); err != nil {
		t.Errorf("Search with %d of each: %v", engine.MaxFilterValues, err)
	}
}
