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
	// rewrite, if set, rewrites each text it passes back.
	rewrite func(string) string
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
					if b.rewrite != nil {
						c.Text = b.rewrite(c.Text)
					}
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

// A bridge that quotes every line it passes back, in front of contextd
// beside another server or as its only server, passes back near copies:
// no digest matches them, and mirrored they came back one level deeper at
// each list (943 entries after four minutes). Copies of another server's
// resources, or of the bridge's own listed before them, withhold it: what
// it passed back stays mirrored, but contextd's MCP server no longer
// lists it, and the bridge's mirror stops growing.
func TestABridgeQuotingWhatItPassesBackIsCut(t *testing.T) {
	for _, withA := range []bool{true, false} {
		t.Run(fmt.Sprintf("beside another server %v", withA), func(t *testing.T) {
			const own = 10
			hub := newRenamingBridge(own)
			hub.rewrite = func(s string) string {
				return "> " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n> ") + "\n"
			}
			servers := map[string]*mcpsdk.Server{"hub": hub.srv}
			if withA {
				docs := map[string]string{}
				for i := range 5 {
					docs[fmt.Sprintf("doc://a/%d", i)] = fmt.Sprintf("page %d on postgres vacuum tuning, autovacuum settings and index bloat\n", i)
				}
				servers["a"] = mcptest.NewServer(docs, nil)
			}
			f := newFacade(t, servers, nil, engine.Options{})
			host := f.connect(t, nil)
			hub.up.Store(f.connect(t, nil))
			hub.srv.AddResource(&mcpsdk.Resource{URI: "hub://own/new", Name: "release notes"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://own/new", Text: "release notes of the hub, week 48, with the deployment pipeline changes\n"}}}, nil
			})
			hubEntries := func() int {
				for _, s := range f.eng.Servers() {
					if s.Server == "hub" {
						return s.Resources
					}
				}
				t.Fatal("no hub")
				return 0
			}
			listedHub := func() (own, back int) {
				for r, err := range host.Resources(t.Context(), nil) {
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case !strings.HasPrefix(r.URI, "contextd:resource/hub/"):
					case strings.HasPrefix(r.Name, "hub_"):
						back++
					default:
						own++
					}
				}
				return own, back
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				o, back := listedHub()
				if f.eng.ServedLists().Withheld("hub") && o == own+1 && back == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("hub: %d entries, withheld %v, contextd lists %d of its own and %d it passed back; want withheld, %d and none", hubEntries(), f.eng.ServedLists().Withheld("hub"), o, back, own+1)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Its mirror stops growing: at most its own entries and one
			// level of what contextd lists.
			time.Sleep(3 * time.Second)
			n := hubEntries()
			time.Sleep(3 * time.Second)
			most := 2 * (own + 1)
			if withA {
				most += 5
			}
			if m := hubEntries(); m != n || m > most {
				t.Errorf("the hub's mirror holds %d entries, then %d 3 s later; want it steady, at most %d", n, m, most)
			}
			if o, back := listedHub(); o != own+1 || back != 0 {
				t.Errorf("contextd lists %d of the hub's own entries and %d it passed back; want %d and none", o, back, own+1)
			}
		})
	}
}

// An honest server holding pages a host read through contextd under
// another server is withheld, but what contextd listed of it before
// stays listed (its images, its short notes, its own pages): only what it
// lists from then on waits for the content pass. Before, a withheld
// server's images and short texts left contextd's list.
func TestAWithheldServerKeepsWhatWasListed(t *testing.T) {
	const n = 3
	page := func(i int) string {
		return fmt.Sprintf("Page %d on postgres vacuum tuning: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows.\n", i)
	}
	docs := map[string]string{}
	for i := range n {
		docs[fmt.Sprintf("doc://a/%d", i)] = page(i)
	}
	b := mcptest.NewServer(map[string]string{"doc://b/own": "b's own page, on kafka consumer rebalancing and partition lag during incidents\n"}, nil)
	b.AddResource(&mcpsdk.Resource{URI: "img://b/diagram", Name: "diagram.png", MIMEType: "image/png"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "img://b/diagram", MIMEType: "image/png", Blob: []byte("\x89PNG\r\n\x1a\n not much of an image")}}}, nil
	})
	b.AddResource(&mcpsdk.Resource{URI: "note://b/1", Name: "note", MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "note://b/1", MIMEType: "text/plain", Text: "on call: ann"}}}, nil
	})
	f := startFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(docs, nil), "b": b}, nil, engine.Options{})
	host := f.connect(t, nil)
	listed := func() map[string]bool {
		out := map[string]bool{}
		for r, err := range host.Resources(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			out[r.URI] = true
		}
		return out
	}
	bURI := func(uri string) string { return "contextd:resource/b/" + uri }
	wantB := []string{bURI("doc://b/own"), bURI("img://b/diagram"), bURI("note://b/1")}
	deadline := time.Now().Add(20 * time.Second)
	for l := listed(); len(l) < n+len(wantB); l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("contextd lists %d resources; want %d", len(l), n+len(wantB))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range n {
		if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// b lists copies of them (a second version of the docs, say).
	for i := range n {
		b.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://b/%d", i), Name: fmt.Sprintf("copy-%d.md", i), MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: fmt.Sprintf("doc://b/%d", i), MIMEType: "text/markdown", Text: page(i)}}}, nil
		})
	}
	for !f.eng.ServedLists().Withheld("b") {
		if time.Now().After(deadline) {
			t.Fatal("b is not withheld")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its copies leave the mirror (and the list); the rest stays listed.
	for l := listed(); l[bURI("doc://b/0")] || l[bURI("doc://b/1")] || l[bURI("doc://b/2")]; l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("b's copies of a's pages still listed: %v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l := listed()
	for _, u := range wantB {
		if !l[u] {
			t.Errorf("%s is no longer listed; want it listed (listed: %v)", u, l)
		}
	}
}
