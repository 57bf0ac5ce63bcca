package sync_test

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A server whose lists never complete (a repeated cursor) and name new
// URIs every time cannot grow the index past the entries one server may
// have, in number or in bytes of text: partial lists add new descriptors
// only while there is room.
func TestPartialListsCannotGrowAServerPastItsCap(t *testing.T) {
	t.Run("entries", func(t *testing.T) {
		ix := partialLists(t, ctxsync.Options{MaxResources: 300})
		if n := ix.Len("s"); n != 300 {
			t.Errorf("%d descriptors indexed, want the cap, 300", n)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		ix := partialLists(t, ctxsync.Options{MaxResourceBytes: 5000})
		n, b := ix.Len("s"), ix.TextBytes("s")
		// Each entry holds 9 to 15 bytes of text.
		if b > 5000 || b < 5000-15 || n < 5000/15 {
			t.Errorf("%d descriptors indexed holding %d bytes of text, want the cap, 5,000 bytes", n, b)
		}
	})
}

// partialLists runs a mirror with opts over a server that lists 200 new
// URIs a minute and never completes a list, for five minutes, and returns
// its index.
func partialLists(t *testing.T, opts ctxsync.Options) (ix *index.Index) {
	synctest.Test(t, func(t *testing.T) {
		srv, walks := walkedServer(func(w int, cursor string) *mcpsdk.ListResourcesResult {
			res := &mcpsdk.ListResourcesResult{NextCursor: "again"} // repeated: the walk stops, incomplete
			for i := range 100 {
				res.Resources = append(res.Resources, &mcpsdk.Resource{URI: fmt.Sprintf("x://%d/%s/%d", w, cursor, i), Name: "x"})
			}
			return res
		})
		ix = newIndex(t)
		opts.Server, opts.Index, opts.Dial, opts.PollInterval, opts.ContentMaxResources = "s", ix, mcptest.Dial(t, "s", srv), time.Minute, noContentIndex
		m := ctxsync.New(opts)
		start(t, m)
		<-m.Ready()
		for range 5 {
			time.Sleep(61 * time.Second)
			synctest.Wait()
		}
		if walks := walks(); walks < 4 {
			t.Fatalf("the server was listed %d times, want a poll a minute", walks)
		}
	})
	return ix
}

// A partial list cannot grow the descriptors the index holds past the
// server's text cap either: the first list names 50 small entries and
// completes; each later one repeats a cursor (partial) and gives the next
// 4 of the same URIs 1 KB descriptions (4 KB a list, under the cap).
func TestPartialListsCannotGrowHeldDescriptorsPastTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, walks := walkedServer(func(w int, _ string) *mcpsdk.ListResourcesResult {
			res := &mcpsdk.ListResourcesResult{}
			if w == 1 {
				for i := range 50 {
					res.Resources = append(res.Resources, &mcpsdk.Resource{URI: fmt.Sprintf("x://%d", i), Name: "x"})
				}
				return res
			}
			res.NextCursor = "again" // repeated: the walk stops, incomplete
			for i := range 4 {
				res.Resources = append(res.Resources, &mcpsdk.Resource{URI: fmt.Sprintf("x://%d", (4*w+i)%50), Name: "x", Description: strings.Repeat("d", 1000)})
			}
			return res
		})
		ix := newIndex(t)
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: ix, Dial: mcptest.Dial(t, "s", srv), PollInterval: time.Minute,
			ContentMaxResources: noContentIndex, MaxResourceBytes: 5000})
		start(t, m)
		<-m.Ready()
		for range 8 {
			time.Sleep(61 * time.Second)
			synctest.Wait()
		}
		listed := walks()
		if listed < 6 {
			t.Fatalf("the server was listed %d times, want a poll a minute", listed)
		}
		if n, b := ix.Len("s"), ix.TextBytes("s"); n != 50 || b > 5000 || b < 5000-1010 {
			t.Errorf("after %d lists: %d descriptors holding %d bytes of text, want 50 holding up to the cap, 5,000", listed, n, b)
		}
	})
}

// walkedServer returns a server whose resources/list answers are list's
// for the walk it is in (1 for the first; a walk starts with an empty
// cursor) and the cursor asked for, and a func reporting how many walks
// began.
func walkedServer(list func(walk int, cursor string) *mcpsdk.ListResourcesResult) (*mcpsdk.Server, func() int) {
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
			return list(w, r.Params.Cursor), nil
		}
	})
	return srv, func() int {
		mu.Lock()
		defer mu.Unlock()
		return walk
	}
}
