package mcp_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// endlessServer answers every resources/list and resources/templates/list
// page with perPage fresh entries and a fresh cursor, forever.
func endlessServer(perPage int) *mcpsdk.Server {
	srv := mcptest.NewServer(nil, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			page := func(cursor string) int { n, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c")); return n }
			switch r := req.(type) {
			case *mcpsdk.ListResourcesRequest:
				n := page(r.Params.Cursor)
				res := &mcpsdk.ListResourcesResult{NextCursor: fmt.Sprintf("c%d", n+1)}
				for i := range perPage {
					res.Resources = append(res.Resources, &mcpsdk.Resource{URI: fmt.Sprintf("x://%d/%d", n, i), Name: "x"})
				}
				return res, nil
			case *mcpsdk.ListResourceTemplatesRequest:
				n := page(r.Params.Cursor)
				res := &mcpsdk.ListResourceTemplatesResult{NextCursor: fmt.Sprintf("c%d", n+1)}
				for i := range perPage {
					res.ResourceTemplates = append(res.ResourceTemplates, &mcpsdk.ResourceTemplate{URITemplate: fmt.Sprintf("x://%d/%d/{id}", n, i), Name: "x"})
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	})
	return srv
}

// A server listing without end (fresh entries, fresh cursors) cannot make
// the daemon hold more than the entries one server may have: the walk
// stops there and says so, by default too.
func TestListWalksStopAtTheEntryCap(t *testing.T) {
	const perPage = 500
	sess := mcptest.Connect(t, "s", endlessServer(perPage), nil)
	l, err := sess.ListResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != mcp.DefaultMaxResources || !l.Capped || l.Complete || l.Pages != mcp.DefaultMaxResources/perPage ||
		!strings.Contains(l.Incomplete, "100000 entries") {
		t.Errorf("resources: %d items in %d pages, capped %v, complete %v, %q; want %d in %d pages, capped",
			len(l.Items), l.Pages, l.Capped, l.Complete, l.Incomplete, mcp.DefaultMaxResources, mcp.DefaultMaxResources/perPage)
	}
	tl, err := sess.ListTemplates(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Items) != mcp.DefaultMaxTemplates || !tl.Capped || tl.Pages != mcp.DefaultMaxTemplates/perPage {
		t.Errorf("templates: %d items in %d pages, capped %v; want %d in %d pages, capped", len(tl.Items), tl.Pages, tl.Capped, mcp.DefaultMaxTemplates, mcp.DefaultMaxTemplates/perPage)
	}

	small := mcptest.Connect(t, "s", endlessServer(100), &mcp.Options{MaxResources: 250, MaxTemplates: 100})
	if l, err := small.ListResources(t.Context()); err != nil || len(l.Items) != 250 || l.Pages != 3 || !l.Capped {
		t.Errorf("MaxResources 250: %d items in %d pages, capped %v, %v", len(l.Items), l.Pages, l.Capped, err)
	}
	// A page that fills the cap with more to come is capped too.
	if l, err := small.ListTemplates(t.Context()); err != nil || len(l.Items) != 100 || !l.Capped {
		t.Errorf("MaxTemplates 100: %d items, capped %v, %v", len(l.Items), l.Capped, err)
	}
}
