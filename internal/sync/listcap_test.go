package sync_test

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A server whose lists never complete (a repeated cursor) and name new
// URIs every time cannot grow the index past the entries one server may
// have: partial lists add new descriptors only while there is room.
func TestPartialListsCannotGrowAServerPastItsCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
		var mu gosync.Mutex
		walk := 0
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				r, ok := req.(*mcpsdk.ListResourcesRequest)
				if !ok {
					return next(ctx, method, req)
				}
				mu.Lock()
				if r.Params.Cursor == "" {
					walk++
				}
				w := walk
				mu.Unlock()
				res := &mcpsdk.ListResourcesResult{NextCursor: "again"} // repeated: the walk stops, incomplete
				for i := range 100 {
					res.Resources = append(res.Resources, &mcpsdk.Resource{URI: fmt.Sprintf("x://%d/%s/%d", w, r.Params.Cursor, i), Name: "x"})
				}
				return res, nil
			}
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), PollInterval: time.Minute,
			MaxResources: 300, ContentMaxResources: noContentIndex})
		start(t, m)
		<-m.Ready()
		for range 5 {
			time.Sleep(61 * time.Second)
			synctest.Wait()
		}
		mu.Lock()
		walks := walk
		mu.Unlock()
		if walks < 4 {
			t.Fatalf("the server was listed %d times, want a poll a minute", walks)
		}
		if n := ix.Len("s"); n != 300 {
			t.Errorf("after %d partial lists of 200 new URIs: %d descriptors indexed, want the cap, 300", walks, n)
		}
	})
}
