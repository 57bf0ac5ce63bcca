package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/selector"
)

// A server that answers every read just within the read timeout cannot
// hold one Assemble (and its turn) for max_reads read timeouts: the reads
// of one request share a time budget, and what is left unread when it runs
// out is omitted as read_failed.
func TestSlowButNotSilentServerCannotStretchAnAssemble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const readTimeout = 5 * time.Second
		slow := mcptest.NewServer(nil, nil)
		for i := range 40 {
			slow.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://architecture-%d", i), Name: "architecture notes"},
				func(ctx context.Context, r *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					select {
					case <-time.After(readTimeout - 100*time.Millisecond):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.Params.URI, Text: "a short note on the architecture"}}}, nil
				})
		}
		cfg := &config.Config{Servers: []config.Server{{Name: "slow", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}}}
		eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"slow": slow}, engine.Options{Config: cfg, ReadTimeout: readTimeout, RequestReadTime: 12 * time.Second})
		start := time.Now()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000})
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if max := 12*time.Second + time.Second; el > max {
			t.Errorf("Assemble took %v over %d reads, want at most %v", el, res.Reads, max)
		}
		if len(res.Items) == 0 {
			t.Error("nothing was read within the request's time")
		}
		cut := 0
		for _, o := range res.Omitted {
			if o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, "time") {
				cut++
			}
		}
		if cut == 0 {
			t.Errorf("no candidate omitted for the request's read time: %+v", res.Omitted)
		}
	})
}
