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
// 3,650 after five minutes, queries of 7.7 s). Its reads of what it took
// from contextd go through contextd, and are known by that: those entries
// are not mirrored, and contextd's MCP server lists only what of the
// bridge it read and found its own, so the loop stops. The bridge's own
// entries stay mirrored.
func TestABridgeRenamingContextdsListIsCut(t *testing.T) {
	docs := map[string]string{}
	for i := range 5 {
		docs[fmt.Sprintf("doc://a/%d", i)] = fmt.Sprintf("page %d on postgres vacuum tuning, autovacuum settings and index bloat\n", i)
	}
	const own = 10
	hub := newRenamingBridge(own)
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(docs, nil), "hub": hub.srv}, nil, engine.Options{})
	host := f.connect(t, nil)
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
	// What contextd lists of the hub that the hub passed back (named
	// hub_… by it).
	listedHub := func() int {
		n := 0
		for r, err := range host.Resources(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(r.URI, "contextd:resource/hub/") && strings.HasPrefix(r.Name, "hub_") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	most := 0
	for {
		n, _ := status()
		most = max(most, n)
		if n == own+1 && f.eng.ServedLists().Withheld("hub") && listedHub() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub: %d entries (at most %d), withheld %v, %d it passed back listed by contextd; want its %d own, withheld, none", n, most, f.eng.ServedLists().Withheld("hub"), listedHub(), own+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if most > 2*(own+1)+5 {
		t.Errorf("the hub's mirror grew to %d entries; want at most one level of contextd's list", most)
	}
	// It stays so: another list does not bring what came back again.
	hub.srv.RemoveResources("hub://own/new")
	time.Sleep(2 * time.Second)
	if n, last := status(); n != own || last != "" || listedHub() != 0 {
		t.Errorf("after another list the hub holds %d entries (last error %q), %d it passed back listed by contextd; want %d and none", n, last, listedHub(), own)
	}
	// The server it read through contextd is mirrored and listed as ever.
	for _, s := range f.eng.Servers() {
		if s.Server == "a" && (s.Resources != 5 || s.LastError != "") {
			t.Errorf("server a: %d entries, last error %q; want 5 and none", s.Resources, s.LastError)
		}
	}
}
