package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// renamingBridge is an aggregator in front of contextd's MCP server (once
// up is set): it lists its own entries and contextd's, renamed
// ("hub_<name>") under opaque URIs, without _meta, and answers a read of
// one of contextd's by reading it from contextd.
type renamingBridge struct {
	srv *mcpsdk.Server
	up  atomic.Pointer[mcpsdk.ClientSession]
	mu  sync.Mutex
	to  map[string]string // opaque URI → contextd's URI
}

func newRenamingBridge(own int) *renamingBridge {
	b := &renamingBridge{to: map[string]string{}}
	docs := map[string]string{}
	for i := range own {
		docs[fmt.Sprintf("hub://own/%d", i)] = fmt.Sprintf("the hub's own page %d, on its deployment pipeline and release calendar\n", i)
	}
	b.srv = mcptest.NewServer(docs, nil)
	b.srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			up := b.up.Load()
			switch {
			case up == nil:
			case method == "resources/list":
				res, err := next(ctx, method, req)
				if err != nil {
					return res, err
				}
				out := res.(*mcpsdk.ListResourcesResult)
				for r, err := range up.Resources(ctx, nil) {
					if err != nil {
						return nil, err
					}
					uri := fmt.Sprintf("hub://up/%x", sha256.Sum256([]byte(r.URI)))
					b.mu.Lock()
					b.to[uri] = r.URI
					b.mu.Unlock()
					out.Resources = append(out.Resources, &mcpsdk.Resource{URI: uri, Name: "hub_" + r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType})
				}
				return out, nil
			case method == "resources/read":
				p := req.GetParams().(*mcpsdk.ReadResourceParams)
				b.mu.Lock()
				from, ok := b.to[p.URI]
				b.mu.Unlock()
				if !ok {
					break
				}
				res, err := up.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: from})
				if err != nil {
					return nil, err
				}
				for _, c := range res.Contents {
					c.URI, c.Meta = p.URI, nil
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	})
	return b
}

// A bridge in front of contextd that renames what it passes on and mixes
// its own entries in lists nothing contextd can know by its names or URIs;
// mirrored, it came back one level deeper at each list (355 entries of
// 3,650 after five minutes, queries of 7.7 s). Its reads go through
// contextd, and are known by that: it is dropped, and stays dropped.
func TestABridgeRenamingContextdsListIsDropped(t *testing.T) {
	docs := map[string]string{}
	for i := range 5 {
		docs[fmt.Sprintf("doc://a/%d", i)] = fmt.Sprintf("page %d on postgres vacuum tuning, autovacuum settings and index bloat\n", i)
	}
	hub := newRenamingBridge(10)
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(docs, nil), "hub": hub.srv}, nil, engine.Options{})
	hub.up.Store(f.connect(t, nil))
	// The hub tells its clients its list changed (as it would once it
	// lists contextd).
	hub.srv.AddResource(&mcpsdk.Resource{URI: "hub://own/new", Name: "release notes"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://own/new", Text: "release notes of the hub, week 48, with the deployment pipeline changes\n"}}}, nil
	})
	status := func() (int, string) {
		for _, s := range f.eng.Servers() {
			if s.Server == "hub" {
				return s.Resources, s.LastError
			}
		}
		t.Fatal("no hub")
		return 0, ""
	}
	deadline := time.Now().Add(30 * time.Second)
	most := 0
	for {
		n, last := status()
		most = max(most, n)
		if n == 0 && strings.Contains(last, mcp.ErrSelf.Error()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub: %d entries (at most %d), last error %q; want it dropped as this contextd", n, most, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if most > 11+5+11 {
		t.Errorf("the hub's mirror grew to %d entries before it was dropped; want at most one level of contextd's list", most)
	}
	// It stays dropped: another list does not bring it back.
	hub.srv.RemoveResources("hub://own/new")
	time.Sleep(2 * time.Second)
	if n, last := status(); n != 0 || !strings.Contains(last, mcp.ErrSelf.Error()) {
		t.Errorf("after another list the hub holds %d entries, last error %q; want it still dropped", n, last)
	}
	// The server it read through contextd is mirrored as ever.
	for _, s := range f.eng.Servers() {
		if s.Server == "a" && (s.Resources != 5 || s.LastError != "") {
			t.Errorf("server a: %d entries, last error %q; want 5 and none", s.Resources, s.LastError)
		}
	}
}
