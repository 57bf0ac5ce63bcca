package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
	ctxsync "github.com/contextd/contextd/internal/sync"
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
	// lag, if set, makes it pass back contextd's list as it was that long
	// before (a bridge polling contextd and caching what it took).
	lag   time.Duration
	taken []takenList
}

// A takenList is contextd's list as a lagging bridge took it.
type takenList struct {
	at time.Time
	rs []*mcpsdk.Resource
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
				var rs []*mcpsdk.Resource
				for r, err := range up.Resources(ctx, nil) {
					if err != nil {
						return nil, err
					}
					rs = append(rs, r)
				}
				if b.lag > 0 {
					b.mu.Lock()
					b.taken = append(b.taken, takenList{time.Now(), rs})
					rs = nil
					for _, l := range b.taken {
						if time.Since(l.at) >= b.lag {
							rs = l.rs
						}
					}
					b.mu.Unlock()
				}
				for _, r := range rs {
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
// 3,650 after five minutes, queries of 7.7 s); one that quotes every line
// it passes back, too (943 entries after four minutes). Its reads of what
// it took from contextd go through contextd, and are known by that: those
// entries are copies or near copies of what contextd served, and once two
// are, contextd's MCP server lists no more of the bridge than it did, save
// what the content pass read and found its own: what it passes back next
// is not listed, and the loop stops.
func testABridgeRenamingContextdsListIsCut(t *testing.T) {
	// A bridge replacing a word of every line is not told by its texts (a
	// template's slot reads the same): the holds and the pace bound it
	// (sync's TestAServerGrowingWithWhatContextdListsIsFrozen).
	for _, mode := range []string{"as is", "quoting"} {
		t.Run(mode, func(t *testing.T) {
			docs := map[string]string{}
			for i := range 5 {
				docs[fmt.Sprintf("doc://a/%d", i)] = fmt.Sprintf("page %d on postgres vacuum tuning, autovacuum settings and index bloat\n", i)
			}
			const own = 10
			hub := newRenamingBridge(own)
			switch mode {
			case "quoting":
				hub.rewrite = func(s string) string {
					return "> " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n> ") + "\n"
				}
			}
			f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(docs, nil), "hub": hub.srv}, nil, engine.Options{})
			host := f.connect(t, nil)
			hub.up.Store(f.connect(t, nil))
			// The hub tells its clients its list changed (as it would once
			// it lists contextd).
			hub.srv.AddResource(&mcpsdk.Resource{URI: "hub://own/new", Name: "release notes"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://own/new", Text: "release notes of the hub, week 48, with the deployment pipeline changes\n"}}}, nil
			})
			hubEntries := func() int {
				for _, s := range f.eng.Servers() {
					if s.Server == "hub" {
						if s.LastError != "" {
							t.Errorf("hub: %s", s.LastError)
						}
						return s.Resources
					}
				}
				t.Fatal("no hub")
				return 0
			}
			// What contextd lists of the hub: its own entries, and those
			// it passed back (named hub_… by it).
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
			for !f.eng.ServedLists().Withheld("hub") {
				if time.Now().After(deadline) {
					o, back := listedHub()
					t.Fatalf("hub: %d entries, not withheld, contextd lists %d of its own and %d it passed back", hubEntries(), o, back)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Lists after that bring what contextd listed one level down
			// once more, and no further: neither the mirror nor what
			// contextd lists of it grows.
			time.Sleep(time.Second)
			_, backAt := listedHub()
			for i := range 3 {
				hub.srv.RemoveResources("hub://own/new") // a list change
				hub.srv.AddResource(&mcpsdk.Resource{URI: "hub://own/new", Name: "release notes"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://own/new", Text: fmt.Sprintf("release notes of the hub, week %d, with the deployment pipeline changes\n", 49+i)}}}, nil
				})
				time.Sleep(time.Second)
			}
			n := hubEntries()
			o, back := listedHub()
			time.Sleep(2 * time.Second)
			if m := hubEntries(); m != n || n > 2*(own+1+5+backAt) {
				t.Errorf("the hub's mirror holds %d entries, then %d 2 s later; want it steady, at most %d", n, m, 2*(own+1+5+backAt))
			}
			if o2, back2 := listedHub(); o != own+1 || o2 != o || back > backAt || back2 != back {
				t.Errorf("contextd lists %d of the hub's own entries and %d it passed back, then %d and %d; want %d, and at most the %d it listed when withheld", o, back, o2, back2, own+1, backAt)
			}
			// The server it read through contextd is mirrored and listed as
			// ever.
			for _, s := range f.eng.Servers() {
				if s.Server == "a" && (s.Resources != 5 || s.LastError != "") {
					t.Errorf("server a: %d entries, last error %q; want 5 and none", s.Resources, s.LastError)
				}
			}
		})
	}
}

// An honest server holding pages a host read through contextd under
// another server is withheld, but what contextd listed of it before
// stays listed (its images, its short notes, its own pages, its copies):
// of what it lists from then on, what the content pass read and found
// its own is listed, copies not. Before, a withheld server's images and
// short texts left contextd's list.
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
	listed := func() map[string]bool { return listedURIs(t, host, "") }
	bURI := func(uri string) string { return "contextd:resource/b/" + uri }
	wantB := []string{bURI("doc://b/own"), bURI("img://b/diagram"), bURI("note://b/1")}
	deadline := time.Now().Add(20 * time.Second)
	for l := listed(); len(l) < n+len(wantB); l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("contextd lists %d resources; want %d", len(l), n+len(wantB))
		}
		time.Sleep(20 * time.Millisecond)
	}
	readPages(t, host, "a", n)
	// b lists copies of them (a second version of the docs, say).
	for i := range n {
		addText(b, fmt.Sprintf("doc://b/%d", i), page(i))
	}
	for !f.eng.ServedLists().Withheld("b") {
		if time.Now().After(deadline) {
			t.Fatal("b is not withheld")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Then a page of its own and another copy.
	addText(b, "doc://b/later", "b's later page, on kafka broker settings an engineer changes during an incident\n")
	addText(b, "doc://b/copy", page(0))
	for l := listed(); !l[bURI("doc://b/later")]; l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("b's later page of its own is not listed: %v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l := listed()
	for _, u := range wantB {
		if !l[u] {
			t.Errorf("%s is no longer listed; want it listed (listed: %v)", u, l)
		}
	}
	if l[bURI("doc://b/copy")] {
		t.Errorf("b's later copy of a's page is listed; want it not")
	}
	// Copies stay mirrored: a's pages may be gone tomorrow.
	for _, s := range f.eng.Servers() {
		if s.Server == "b" && s.Resources != 3+n+2 {
			t.Errorf("b: %d resources mirrored; want %d", s.Resources, 3+n+2)
		}
	}
}

// A bridge answering reads of its copies slowly has them listed before
// the content pass reads two and withholds it: they leave the list then,
// read or not, as they came with copies passed back (all 300 stayed
// listed when what was listed before the withholding stayed; 80 for a
// while when they left as each was read).
func TestSlowCopiesListedBeforeTheWithholdingLeaveTheList(t *testing.T) {
	// Read in 0.4 s, none is listed from 5 s on; in 9.5 s (just inside the
	// content pass's read timeout), none once two were read (a 2-minute
	// wait let 56 of 300 through at 3 minutes).
	for _, c := range []struct {
		read  time.Duration
		waits []time.Duration
	}{
		{400 * time.Millisecond, []time.Duration{5 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute}},
		{9500 * time.Millisecond, []time.Duration{time.Minute, 3 * time.Minute, 10 * time.Minute, 30 * time.Minute}},
	} {
		t.Run(c.read.String(), func(t *testing.T) { slowCopiesLeaveTheList(t, c.read, c.waits) })
	}
}

func slowCopiesLeaveTheList(t *testing.T, read time.Duration, waits []time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 300 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 10 {
			addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		readPages(t, host, "a", 300)
		began := time.Now()
		for i := range 300 { // b passes back a's pages, each read slowly
			uri, text := fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i)
			b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				time.Sleep(read)
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
		for _, wait := range waits {
			time.Sleep(wait - time.Since(began))
			synctest.Wait()
			if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
				t.Errorf("%v after b passed back 300 pages, read in %v each: %d listed (withheld %v); want none", wait, read, n, f.eng.ServedLists().Withheld("b"))
			}
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Fatal("b not withheld")
		}
		if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
			t.Errorf("an hour after b passed back 300 pages slowly: %d of them listed; want none", n)
		}
		if n := countListed(t, host, "b", "doc://b/own/"); n != 10 {
			t.Errorf("b's own pages: %d listed; want 10", n)
		}
	})
}

// An honest mirror syncing pages a host read on the other server, its own
// new pages coming with the copies: withheld, the copies leave the list,
// its own new pages are listed once read, and what it listed before stays.
func TestOwnPagesListedWithACopyPassedBackAreListedOnceRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 20 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 10 {
			addText(b, fmt.Sprintf("doc://b/old/%d", i), fmt.Sprintf("b's page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		readPages(t, host, "a", 20)
		time.Sleep(time.Minute)
		var news []*mcpsdk.Resource
		for i := range 3 {
			uri, text := fmt.Sprintf("doc://b/a/%d", i), vacuumPage(i)
			news = append(news, &mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"})
			b.AddResource(news[len(news)-1], func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
		for i := range 5 {
			addText(b, fmt.Sprintf("doc://b/new/%d", i), fmt.Sprintf("b's new page %d, on terraform state locking and drift detection, runbook %d\n", i, i))
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Fatal("b, listing copies of pages a host read, not withheld")
		}
		for _, c := range []struct {
			prefix string
			want   int
		}{{"doc://b/old/", 10}, {"doc://b/new/", 5}, {"doc://b/a/", 0}} {
			if n := countListed(t, host, "b", c.prefix); n != c.want {
				t.Errorf("b's %s…: %d listed; want %d", c.prefix, n, c.want)
			}
		}
	})
}

// A bridge reading through contextd when read, slowly, its entries
// listed before any read: its copies are not first listed after the reads
// they copy, but those reads are answered while the content pass reads
// them, so they leave the list once it is withheld (all 300 stayed).
func TestReadThroughCopiesListedFromTheStartLeaveTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 300 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		var through atomic.Pointer[mcpsdk.ClientSession] // the bridge's own session to contextd
		for i := range 300 {
			uri := fmt.Sprintf("doc://b/c/%d", i)
			b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"}, func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				text := "a page of b's own, on kafka consumer rebalancing and partition lag, runbook " + uri + "\n"
				if cs := through.Load(); cs != nil {
					time.Sleep(400 * time.Millisecond)
					res, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)})
					if err != nil {
						return nil, err
					}
					text = res.Contents[0].Text
				}
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		synctest.Wait()
		if n := countListed(t, host, "b", "doc://b/c/"); n != 300 {
			t.Fatalf("b lists %d of its 300 pages at first; want all", n)
		}
		through.Store(f.connect(t, nil)) // from now on b reads through contextd
		time.Sleep(3 * time.Hour)        // the content pass reads b's pages again as they age
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Fatal("b, reading a's pages through contextd, not withheld in 3 h")
		}
		if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
			t.Errorf("3 h after b began reading through contextd, withheld: %d of its 300 entries listed; want none", n)
		}
	})
}

// A host polling an honest server's pages while the content pass reads
// again, slowly, the same pages on a mirror site: the polls answered
// during those reads are no bridge reading through contextd (the pages
// were read just before), so the mirror's pages stay listed (12 of 20
// left the list for the run).
func TestAHostPollingPagesKeepsTheirMirrorListed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		mirror := func(i int, size int64) {
			uri, text := fmt.Sprintf("doc://b/%d", i), vacuumPage(i)
			b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown", Size: size}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				time.Sleep(300 * time.Millisecond)
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
		for i := range 20 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
			mirror(i, 0)
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		synctest.Wait()
		poll := func(d time.Duration) {
			for j := range int(d / (50 * time.Millisecond)) {
				if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", j%20)}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		poll(30 * time.Second)
		for i := range 20 { // a new size, the same text: read again
			mirror(i, int64(len(vacuumPage(i))))
		}
		poll(2 * time.Minute)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := countListed(t, host, "b", ""); n != 20 {
			t.Errorf("b lists %d of the 20 pages it shares with a (withheld %v); want all", n, f.eng.ServedLists().Withheld("b"))
		}
	})
}

// A bridge listing a burst of copies, read 0.4 s each, just before
// contextd restarts (its index kept on disk) or a reload makes its mirror
// anew: the copies are in the new mirror's first list, but were first
// indexed after the reads they copy, so they leave the list once it is
// withheld (112 of 300 stayed listed for good).
func TestABurstListedJustBeforeARestartLeavesTheList(t *testing.T) {
	for _, how := range []string{"restart", "reload"} {
		t.Run(how, func(t *testing.T) { burstBeforeARestart(t, how) })
	}
}

func burstBeforeARestart(t *testing.T, how string) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 300 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 10 {
			addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		for i := range 5 { // its own, listed for long, never read
			uri := fmt.Sprintf("doc://b/broken/%d", i)
			b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, errors.New("backend unavailable")
			})
		}
		dir := t.TempDir()
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(dir)}
		eopts := engine.Options{Config: &config.Config{DataDir: dir}}
		ups := map[string]*mcpsdk.Server{"a": a, "b": b}
		f := newFacade(t, ups, opts, eopts)
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		readPages(t, host, "a", 300)
		time.Sleep(time.Minute)
		for i := range 300 {
			uri, text := fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i)
			b.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				time.Sleep(400 * time.Millisecond)
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
			})
		}
		time.Sleep(300 * time.Millisecond) // listed and indexed; none read yet
		synctest.Wait()
		if f.eng.ServedLists().Withheld("b") {
			t.Fatal("b withheld before any copy was read")
		}
		switch how {
		case "restart":
			host.Close()
			f.stop()
			f = newFacade(t, ups, opts, eopts)
			host = f.connect(t, nil)
		case "reload": // b's token rotated: a new mirror, the same server
			cfg := &config.Config{DataDir: dir, Servers: []config.Server{
				{Name: "a", Transport: config.TransportStdio, Command: "unused"},
				{Name: "b", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"API_TOKEN": "tok_9f8e7d6c5b4a3f2e"}},
			}}
			if _, err := f.eng.Reload(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
		}
		for _, wait := range []time.Duration{10 * time.Minute, 2 * time.Hour} {
			time.Sleep(wait)
			synctest.Wait()
			if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
				t.Errorf("%v after a %s: %d of b's 300 copies listed (withheld %v); want none", wait, how, n, f.eng.ServedLists().Withheld("b"))
			}
		}
		if n := countListed(t, host, "b", "doc://b/own/"); n != 10 {
			t.Errorf("b's own pages: %d listed; want 10", n)
		}
		// Listed before the restart, not beside the copies its first list
		// after it held: no wait for reads that fail.
		if n := countListed(t, host, "b", "doc://b/broken/"); n != 5 {
			t.Errorf("b's pages whose reads fail: %d listed; want 5", n)
		}
	})
}

// A bridge withheld for the copies it passed back, none of them listed,
// then contextd restarted (its index and record kept): the copies are not
// read again (their texts are indexed), and were taken for the bridge's
// own, listed a few more at each restart. What was found copies is kept.
func TestCopiesFoundBeforeARestartStayOffTheList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 40 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 10 {
			addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		dir := t.TempDir()
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(dir)}
		eopts := engine.Options{Config: &config.Config{DataDir: dir}}
		ups := map[string]*mcpsdk.Server{"a": a, "b": b}
		f := newFacade(t, ups, opts, eopts)
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		readPages(t, host, "a", 40)
		time.Sleep(time.Minute)
		for i := range 40 {
			addText(b, fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i))
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Fatal("b not withheld")
		}
		for run := range 3 {
			if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
				t.Errorf("run %d: %d of b's 40 copies listed; want none", run+1, n)
			}
			host.Close()
			f.stop()
			f = newFacade(t, ups, opts, eopts)
			host = f.connect(t, nil)
			time.Sleep(30 * time.Minute)
			synctest.Wait()
		}
		if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
			t.Errorf("after 3 restarts: %d of b's 40 copies listed; want none", n)
		}
		if n := countListed(t, host, "b", "doc://b/own/"); n != 10 {
			t.Errorf("b's own pages: %d listed; want 10", n)
		}
	})
}

// A bridge withheld for its copies, then fixed (its copies removed), and
// contextd restarted every 50 minutes: each start withheld it again from
// the pace file, and the state written then said so again, so its short
// notes stayed off the list for good. With no copy of it known, a start
// does not withhold it.
func TestAServerWhoseCopiesAreGoneIsNotWithheldAtEachStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 40 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		ups := map[string]*mcpsdk.Server{"a": a, "b": b}
		f := newFacade(t, ups, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		readPages(t, host, "a", 40)
		time.Sleep(time.Minute)
		var copies []string
		for i := range 40 {
			copies = append(copies, fmt.Sprintf("doc://b/c/%d", i))
			addText(b, copies[i], vacuumPage(i))
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Fatal("b not withheld")
		}
		b.RemoveResources(copies...)
		for i := range 5 {
			addText(b, fmt.Sprintf("doc://b/note/%d", i), fmt.Sprintf("b note %d", i))
		}
		time.Sleep(time.Minute)
		for run := range 4 {
			host.Close()
			f.stop()
			f = newFacade(t, ups, opts, engine.Options{})
			host = f.connect(t, nil)
			time.Sleep(50 * time.Minute)
			synctest.Wait()
			if n := countListed(t, host, "b", "doc://b/note/"); n != 5 {
				t.Errorf("restart %d, 50 min in: b's notes %d of 5 listed (withheld %v, copies known %d); want all", run+1, n, f.eng.ServedLists().Withheld("b"), f.eng.ServedLists().CopyCount("b"))
			}
		}
	})
}

// Two honest servers sharing pages, a host reading both through contextd:
// the second is withheld, and its pages listed before stay listed, after
// a restart too (its mirror's first list holds them at a time after the
// reads: they are not passed back).
func TestSharedPagesStayListedAcrossARestart(t *testing.T) {
	for _, how := range []string{"restart", "reload", "touched"} {
		t.Run(how, func(t *testing.T) { sharedPagesStayListed(t, how) })
	}
}

func sharedPagesStayListed(t *testing.T, how string) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 20 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
			addText(b, fmt.Sprintf("doc://b/%d", i), vacuumPage(i)) // a mirror site
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		ups := map[string]*mcpsdk.Server{"a": a, "b": b}
		f := newFacade(t, ups, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		for _, server := range []string{"a", "b"} {
			for i := range 20 {
				if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/%s/doc://%s/%d", server, server, i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		before := countListed(t, host, "b", "")
		if before != 20 {
			t.Fatalf("b lists %d of its 20 shared pages before the restart; want all", before)
		}
		switch how {
		case "restart":
			host.Close()
			f.stop()
			f = newFacade(t, ups, opts, engine.Options{})
			host = f.connect(t, nil)
		case "reload": // b's token rotated: a new mirror, the same server
			cfg := &config.Config{Servers: []config.Server{
				{Name: "a", Transport: config.TransportStdio, Command: "unused"},
				{Name: "b", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"API_TOKEN": "tok_9f8e7d6c5b4a3f2e"}},
			}}
			if _, err := f.eng.Reload(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
		case "touched": // new descriptors, the same texts: read again
			for _, srv := range []string{"a", "b"} {
				for i := range 20 {
					uri, text := fmt.Sprintf("doc://%s/%d", srv, i), vacuumPage(i)
					ups[srv].AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown", Size: int64(len(text))},
						func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
						})
				}
			}
		}
		for _, wait := range []time.Duration{5 * time.Second, 10 * time.Minute, 2 * time.Hour} {
			time.Sleep(wait)
			synctest.Wait()
			if n := countListed(t, host, "b", ""); n != 20 {
				t.Errorf("%v after a %s: b lists %d of its 20 shared pages (withheld %v); want all", wait, how, n, f.eng.ServedLists().Withheld("b"))
			}
		}
	})
}

// A withheld server whose texts are not indexed (index_content: false)
// has what it lists later read once, to tell its own pages from copies:
// its own are listed, copies not. Before, nothing it listed after being
// withheld was ever listed (two servers holding the same pages, a host
// reading both through contextd).
func TestAWithheldServerWhoseTextsAreNotIndexedListsItsOwnLater(t *testing.T) {
	const n = 3
	page := func(i int) string {
		return fmt.Sprintf("Page %d on postgres vacuum tuning: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows.\n", i)
	}
	docs, same := map[string]string{}, map[string]string{}
	for i := range n {
		docs[fmt.Sprintf("doc://a/%d", i)] = page(i)
		same[fmt.Sprintf("doc://b/%d", i)] = page(i)
	}
	b := mcptest.NewServer(same, nil)
	f := startFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(docs, nil), "b": b}, nil, engine.Options{
		Mirror: func(o *ctxsync.Options) {
			if o.Server == "b" {
				o.ContentMaxResources = -1
			}
		},
	})
	host := f.connect(t, nil)
	listed := func() map[string]bool { return listedURIs(t, host, "") }
	deadline := time.Now().Add(20 * time.Second)
	for l := listed(); len(l) < 2*n; l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("contextd lists %d resources; want %d", len(l), 2*n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A host reads both servers' pages through contextd: b's are copies
	// of a's, and b is withheld.
	for _, server := range []string{"a", "b"} {
		for i := range n {
			uri := fmt.Sprintf("contextd:resource/%s/doc://%s/%d", server, server, i)
			if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !f.eng.ServedLists().Withheld("b") {
		t.Fatal("b is not withheld")
	}
	addText(b, "doc://b/later", "b's later page, on kafka broker settings an engineer changes during an incident\n")
	addText(b, "doc://b/copy", page(1))
	bURI := func(uri string) string { return "contextd:resource/b/" + uri }
	for l := listed(); !l[bURI("doc://b/later")]; l = listed() {
		if time.Now().After(deadline) {
			t.Fatalf("b's later page of its own is not listed: %v", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
	l := listed()
	if l[bURI("doc://b/copy")] || !l[bURI("doc://b/0")] || len(l) != 2*n+1 {
		t.Errorf("contextd lists %v; want all it listed before, b's later page, not b's later copy", l)
	}
	lists := f.eng.ServedLists()
	if later, copied := (resource.Key{Server: "b", URI: "doc://b/later"}), (resource.Key{Server: "b", URI: "doc://b/copy"}); !lists.IsOwn(later) || lists.IsCopy(later) || !lists.IsCopy(copied) || lists.IsOwn(copied) {
		t.Errorf("later: own %v, copy %v; copy: own %v, copy %v; want the later page read and its own, the copy read and a copy", lists.IsOwn(later), lists.IsCopy(later), lists.IsOwn(copied), lists.IsCopy(copied))
	}
	if got := f.eng.ContentCount("b"); got != 0 {
		t.Errorf("%d of b's texts indexed; want none", got)
	}
}

// vacuumPage is the i-th of a server's pages, each told apart by its
// number in two places.
func vacuumPage(i int) string {
	return fmt.Sprintf("Page %d on postgres vacuum tuning: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, i)
}

// readPages reads server's pages doc://SERVER/0 to n-1 through host.
func readPages(t *testing.T, host *mcpsdk.ClientSession, server string, n int) {
	t.Helper()
	for i := range n {
		uri := fmt.Sprintf("contextd:resource/%s/doc://%s/%d", server, server, i)
		if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
}

// addText adds a markdown resource answering text to srv.
func addText(srv *mcpsdk.Server, uri, text string) {
	srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/markdown"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
	})
}

// A server that serves copies of an honest server's pages, read by a
// host through contextd, cannot have those pages taken out of the honest
// server's mirror: they were, and when it then failed, or a reload
// removed it, the honest server answered nothing until a restart.
func TestCopiesOfAServersPagesDoNotTakeThemAway(t *testing.T) {
	docs, copies := map[string]string{}, map[string]string{}
	for i := range 6 {
		text := fmt.Sprintf("runbook step %d: drain the node, cordon it, then roll the kubernetes deployment back\n", i)
		docs[fmt.Sprintf("doc://docs/%d", i)] = text
		copies[fmt.Sprintf("kb://hub/%d", i)] = text
	}
	honest := mcptest.NewServer(docs, nil)
	f := newFacade(t, map[string]*mcpsdk.Server{"docs": honest, "hub": mcptest.NewServer(copies, nil)}, nil, engine.Options{})
	host := f.connect(t, nil)
	for i := range 6 {
		if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/hub/kb://hub/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// docs' pages are read again (an assemble), and docs listed again.
	if _, err := f.eng.Assemble(t.Context(), engine.AssembleRequest{Query: "roll the kubernetes deployment back", TokenBudget: 4000}); err != nil {
		t.Fatal(err)
	}
	honest.AddResource(&mcpsdk.Resource{URI: "doc://docs/new", Name: "new"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "doc://docs/new", Text: "runbook appendix on node drains\n"}}}, nil
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		for _, s := range f.eng.Servers() {
			if s.Server == "docs" {
				n = s.Resources
			}
		}
		if n == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("docs holds %d resources; want its 7", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	res, err := f.eng.Assemble(t.Context(), engine.AssembleRequest{Query: "roll the kubernetes deployment back", TokenBudget: 4000})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, it := range res.Items {
		if it.Server == "docs" {
			got++
		}
	}
	for _, o := range res.Omitted {
		if o.Server == "docs" && o.Reason == "duplicate_content" {
			got++ // the same text as the hub's, kept: either answers
		}
	}
	if got < 6 {
		t.Errorf("docs: %d of its 6 pages answered or kept as duplicates; want 6", got)
	}
}

// copyRig is a facade over "docs", six honest pages, and "hub", a
// bridge's copies of them under hub://up/N, with a host connected.
type copyRig struct {
	f    *facade
	host *mcpsdk.ClientSession
}

func newCopyRig(t *testing.T) *copyRig {
	docs, copies := map[string]string{}, map[string]string{}
	for i := range 6 {
		text := fmt.Sprintf("runbook step %d: drain the node, cordon it, then roll the kubernetes deployment back\n", i)
		docs[fmt.Sprintf("doc://docs/%d", i)] = text
		copies[fmt.Sprintf("hub://up/%d", i)] = text
	}
	f := newFacade(t, map[string]*mcpsdk.Server{"docs": mcptest.NewServer(docs, nil), "hub": mcptest.NewServer(copies, nil)}, nil, engine.Options{})
	return &copyRig{f: f, host: f.connect(t, nil)}
}

// read has the host read each server's six pages through contextd.
func (r *copyRig) read(t *testing.T, server string) {
	t.Helper()
	for i := range 6 {
		uri := fmt.Sprintf("contextd:resource/docs/doc://docs/%d", i)
		if server == "hub" {
			uri = fmt.Sprintf("contextd:resource/hub/hub://up/%d", i)
		}
		if _, err := r.host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
}

// onlyHubWithheld fails t unless the hub is withheld and docs is not.
func (r *copyRig) onlyHubWithheld(t *testing.T) {
	t.Helper()
	for _, s := range r.f.eng.Servers() {
		if withheld := strings.Contains(s.MCPListing, "withheld"); withheld != (s.Server == "hub") {
			t.Errorf("%s: MCP listing %q; want the hub withheld and docs not", s.Server, s.MCPListing)
		}
	}
}

// A host reading, through contextd, the copies a bridge passes back of
// a server's pages (listed before the bridge was withheld) makes the
// bridge withheld and not the server: its pages were answered first.
func TestCopiesReadAfterThePagesTheyCopyLeaveThePagesTheirs(t *testing.T) {
	r := newCopyRig(t)
	r.read(t, "docs")
	r.read(t, "hub")
	for range 2 { // docs' pages read again from docs
		if _, err := r.f.eng.Assemble(t.Context(), engine.AssembleRequest{Query: "roll the kubernetes deployment back", TokenBudget: 4000}); err != nil {
			t.Fatal(err)
		}
		r.read(t, "docs")
	}
	r.onlyHubWithheld(t)
}

// A bridge taking a server's texts from the assemble_context tool (pins)
// instead of reading them, and passing them back: the tool's answers are
// reads answered too, so the bridge is withheld and the server is not.
func TestTextsTakenFromTheAssembleToolAndPassedBackAreCopies(t *testing.T) {
	r := newCopyRig(t)
	var pins []any
	for i := range 6 {
		pins = append(pins, fmt.Sprintf("contextd:resource/docs/doc://docs/%d", i))
	}
	res, err := r.host.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{"task": "roll the deployment back", "pins": pins, "budget": 4000}})
	if err != nil || res.IsError {
		t.Fatalf("assemble_context: %v %+v", err, res)
	}
	got := 0
	for _, c := range res.Content {
		if e, ok := c.(*mcpsdk.EmbeddedResource); ok && strings.HasPrefix(e.Resource.URI, "contextd:resource/docs/") {
			got++
		}
	}
	if got != 6 {
		t.Fatalf("the tool returned %d of docs' 6 pinned pages", got)
	}
	r.read(t, "hub")
	r.read(t, "docs")
	r.onlyHubWithheld(t)
}

// Every way an MCP host gets an assemble's texts (the tool, the context
// prompt, the contextd:context template) remembers them: passed back
// under a bridge's URI, each is a copy.
func TestTextsOfEveryAssembleAreRemembered(t *testing.T) {
	for _, via := range []string{"tool", "prompt", "template"} {
		t.Run(via, func(t *testing.T) {
			docs := map[string]string{}
			for i := range 3 {
				docs[fmt.Sprintf("doc://docs/%d", i)] = fmt.Sprintf("runbook step %d: drain the node, cordon it, then roll the kubernetes deployment back\n", i)
			}
			f := newFacade(t, map[string]*mcpsdk.Server{"docs": mcptest.NewServer(docs, nil)}, nil, engine.Options{})
			host := f.connect(t, nil)
			const task = "roll the kubernetes deployment back"
			var texts []string
			switch via {
			case "tool":
				res, err := host.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "assemble_context", Arguments: map[string]any{"task": task, "budget": 4000}})
				if err != nil || res.IsError {
					t.Fatal(err, res)
				}
				for _, c := range res.Content {
					if r, ok := c.(*mcpsdk.EmbeddedResource); ok {
						texts = append(texts, r.Resource.Text)
					}
				}
			case "prompt":
				res, err := host.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "context", Arguments: map[string]string{"task": task}})
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range res.Messages {
					if r, ok := m.Content.(*mcpsdk.EmbeddedResource); ok {
						texts = append(texts, r.Resource.Text)
					}
				}
			case "template":
				res, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:context?task=" + url.PathEscape(task) + "&budget=4000"})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range res.Contents {
					texts = append(texts, c.Text)
				}
			}
			if len(texts) != 3 {
				t.Fatalf("%d texts handed out; want docs' 3", len(texts))
			}
			for _, text := range texts {
				if c := f.eng.ServedLists().ServedBack(resource.Key{Server: "hub", URI: "hub://up/x"}, []resource.Content{{Text: text}}); len(c.Of) == 0 {
					t.Errorf("handed out %q, and passed back under a bridge's URI it is no copy", strings.TrimSpace(text))
				}
			}
		})
	}
}

// A bridge beside a server growing on its own (a log adding a page every
// 5 s), its reads empty texts so that no copy tells it: held, it still
// passed back the log's pages that contextd listed meanwhile, was taken
// to grow on its own and let be, and grew by the log's size at each level
// (13,406 entries after 13 minutes). While a server is held, contextd
// lists nothing new of any server: the bridge has nothing new to pass
// back until the hold ends, grows at once then, and is frozen. A bridge
// passing back 20 s late still grew within the hold, and was let be
// (4,139 entries after 16 minutes): from its first hold, what a server
// lists is listed once read, and not if empty; and it pauses as long as
// contextd's list was still, 20 s later each time, so it is frozen too.
// Either way the log's pages are listed once the holds end, and the
// bridge grows only by what the log adds.
func testABridgeBesideAGrowingServerIsCut(t *testing.T) {
	for _, lag := range []time.Duration{0, 20 * time.Second} {
		t.Run(fmt.Sprintf("lag %v", lag), func(t *testing.T) { bridgeBesideAGrowingServer(t, lag, true) })
	}
	// Not checked (its content not indexed), it is held longer.
	t.Run("lag 20s, index_content false", func(t *testing.T) { bridgeBesideAGrowingServer(t, 20*time.Second, false) })
}

func bridgeBesideAGrowingServer(t *testing.T, lag time.Duration, content bool) {
	synctest.Test(t, func(t *testing.T) {
		page := func(i int) string {
			return fmt.Sprintf("log page %d: the deploy of build %d went out to the canary fleet, error rates flat, latency p99 steady\n", i, 1000+i)
		}
		logSrv := mcptest.NewServer(map[string]string{"log://day/0": page(0)}, nil)
		hub := newRenamingBridge(10)
		hub.rewrite = func(string) string { return "" }
		hub.lag = lag
		eopts := engine.Options{}
		if !content {
			eopts.Mirror = func(o *ctxsync.Options) {
				if o.Server == "hub" {
					o.ContentMaxResources = -1
				}
			}
		}
		f := newFacade(t, map[string]*mcpsdk.Server{"log": logSrv, "hub": hub.srv}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond}, eopts)
		tick := func() { // the hub tells its clients its list changed
			hub.srv.AddResource(&mcpsdk.Resource{URI: "hub://tick", Name: "tick"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://tick", Text: "tick"}}}, nil
			})
		}
		if lag == 0 { // it passes on contextd's list changes
			hub.up.Store(f.connect(t, &mcpsdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) { go tick() }}))
		} else { // it polls contextd every 2 s, and says its list changed
			hub.up.Store(f.connect(t, nil))
			ctx, cancel := context.WithCancel(context.Background())
			var polls sync.WaitGroup
			defer polls.Wait()
			defer cancel()
			polls.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-time.After(2 * time.Second):
						tick()
					}
				}
			})
		}
		tick()
		mirrored := func(server string) int {
			for _, s := range f.eng.Servers() {
				if s.Server == server {
					return s.Resources
				}
			}
			t.Fatalf("no server %s", server)
			return 0
		}
		pages := 1
		var beyond []int // the hub's entries beyond the log's pages, each minute
		minutes := 10
		switch {
		case !content:
			minutes = 15 // held longer each time
		case lag > 0:
			minutes = 12 // told by its echoes of the holds
		}
		for step := 1; step <= minutes*12; step++ {
			time.Sleep(5 * time.Second)
			uri := fmt.Sprintf("log://day/%d", pages)
			text := page(pages)
			logSrv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
			})
			pages++
			if step%12 == 0 {
				synctest.Wait()
				beyond = append(beyond, mirrored("hub")-pages)
				if n := mirrored("hub"); n > 2_000 {
					t.Fatalf("the hub's mirror holds %d entries after %d minutes (the log %d); frozen %v", n, step/12, pages, f.eng.ServedLists().Frozen("hub"))
				}
			}
		}
		if !f.eng.ServedLists().Frozen("hub") {
			t.Errorf("the hub is not frozen after %d minutes; its entries beyond the log's pages, minute by minute: %v", minutes, beyond)
		}
		for _, s := range f.eng.Servers() {
			// The log was held too (it grows at each list), and is
			// checked: its pages are read and listed.
			if hub := s.Server == "hub"; hub && content != strings.Contains(s.MCPListing, "checked") || hub && !strings.Contains(s.MCPListing, "frozen") || !hub && strings.Contains(s.MCPListing, "frozen") {
				t.Errorf("%s: MCP listing %q; want the hub checked and frozen, the log not frozen", s.Server, s.MCPListing)
			}
		}
		// Cut, it grows by the log's pages at most: what it holds beyond
		// them does not grow (it falls behind while the log is held, and
		// catches up after).
		if last := beyond[len(beyond)-4:]; slices.Max(last) > last[0] {
			t.Errorf("the hub's entries beyond the log's pages, the last four minutes: %v; want them to grow no more (all: %v)", last, beyond)
		}
		// Once no hold runs, every page of the log is listed.
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		listed := 0
		for r, err := range f.connect(t, nil).Resources(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(r.URI, "contextd:resource/log/") {
				listed++
			}
		}
		if listed != pages || mirrored("log") != pages {
			t.Errorf("contextd lists %d of the log's %d pages (mirrors %d); want all", listed, pages, mirrored("log"))
		}
		t.Logf("the hub's entries beyond the log's pages, minute by minute: %v", beyond)
	})
}

// Holds in a row (many logs, each growing at its lists, held in turn)
// keep no server's new entries off contextd's list for good: an entry
// kept still by another server's hold is listed once it has waited three
// minutes, while the held server itself lists nothing new.
func TestHoldsInARowKeepOthersStillNoMoreThanAWhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mcptest.NewServer(map[string]string{"doc://a/0": "a's first page, on the release calendar\n"}, nil)
		b := mcptest.NewServer(map[string]string{"doc://b/0": "b's first page, on kafka consumer lag\n"}, nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond}, engine.Options{})
		host := f.connect(t, nil)
		listed := func() map[string]bool { return listedURIs(t, host, "") }
		add := func(s *mcpsdk.Server, uri string) {
			s.AddResource(&mcpsdk.Resource{URI: uri, Name: uri}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: "a page added while a was held"}}}, nil
			})
		}
		lists := f.eng.ServedLists()
		start := time.Now()
		lists.Hold("a", start.Add(time.Minute))
		time.Sleep(time.Second)
		add(a, "doc://a/1")
		add(b, "doc://b/1")
		for i := 1; i <= 6*60; i++ { // 6 minutes; a held again before each hold ends
			time.Sleep(time.Second)
			if i%50 == 0 {
				lists.Hold("a", time.Now().Add(time.Minute))
			}
			synctest.Wait()
			l := listed()
			if l["contextd:resource/a/doc://a/1"] {
				t.Fatalf("a's new entry listed %v in, while a was held", time.Since(start))
			}
			in, b1 := time.Since(start), l["contextd:resource/b/doc://b/1"]
			if in < mcpserver.MaxQuietWait && b1 || in > mcpserver.MaxQuietWait+5*time.Second && !b1 {
				t.Fatalf("%v in: b's new entry listed: %v; want it kept off for %v while a is held, then listed", in, b1, mcpserver.MaxQuietWait)
			}
		}
		if !lists.Quiet() {
			t.Fatal("no hold runs at the end")
		}
		for _, s := range f.eng.Servers() {
			if want := map[string]string{"a": "held", "b": "still"}[s.Server]; s.MCPListing != want {
				t.Errorf("%s: MCP listing %q, want %q", s.Server, s.MCPListing, want)
			}
		}
	})
}

// A log whose every page holds the page before it, read through contextd
// by a host, beside a bridge passing contextd's list back: each new page
// is a copy, give or take a line at its end, or a near copy of the page
// before, which contextd served, and of the bridge's copy of it. It is the log's own: its pages stay listed, and
// the log is not withheld, held once or not (the bridge is). Its images,
// which the content pass does not read, are listed too.
func testACumulativeLogBesideABridgeStaysListed(t *testing.T) {
	for _, perPage := range []int{1, 4} { // lines added at each page
		t.Run(fmt.Sprintf("%d lines a page", perPage), func(t *testing.T) {
			cumulativeLogBesideABridge(t, perPage)
		})
	}
}

func cumulativeLogBesideABridge(t *testing.T, perPage int) {
	synctest.Test(t, func(t *testing.T) {
		var lines []string
		page := func(i int) string {
			for j := range perPage {
				lines = append(lines, fmt.Sprintf("%02d:%02d entry %d: vacuum worker %d finished table t%d, removed %d dead tuples\n", i/12, i%12*5, i*4+j, j, i, i*97+j))
			}
			return strings.Join(lines, "")
		}
		logSrv := mcptest.NewServer(map[string]string{"log://day/0": page(0)}, nil)
		hub := newRenamingBridge(10)
		f := newFacade(t, map[string]*mcpsdk.Server{"log": logSrv, "hub": hub.srv}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond}, engine.Options{})
		tick := func() {
			hub.srv.AddResource(&mcpsdk.Resource{URI: "hub://tick", Name: "tick"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://tick", Text: "tick"}}}, nil
			})
		}
		hub.up.Store(f.connect(t, &mcpsdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) { go tick() }}))
		tick()
		host := f.connect(t, nil)
		pages := 1
		for step := range 10 * 12 {
			time.Sleep(5 * time.Second)
			if step%12 == 11 {
				uri := fmt.Sprintf("img://day/%d", step/12)
				logSrv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "image/png"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "image/png", Blob: []byte("\x89PNG\r\n\x1a\n a chart of the day")}}}, nil
				})
				pages++ // an entry of the log's as a page is
			}
			uri := fmt.Sprintf("log://day/%d", step+1)
			text := page(step + 1)
			logSrv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
			})
			pages++
			synctest.Wait()
			// The host reads the page before through contextd.
			_, _ = host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/log/log://day/%d", step)})
		}
		time.Sleep(5 * time.Minute) // every hold over
		synctest.Wait()
		listed := 0
		for r, err := range host.Resources(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(r.URI, "contextd:resource/log/") {
				listed++
			}
		}
		for _, s := range f.eng.Servers() {
			if s.Server == "log" && (strings.Contains(s.MCPListing, "withheld") || listed != pages) {
				t.Errorf("the log: MCP listing %q, %d of its %d pages and images listed; want all, not withheld", s.MCPListing, listed, pages)
			}
		}
	})
}

// A checked server's new entries are listed once the content pass read
// them, save those it found with no text or answered with an error; one
// it could not read in its time (slow, or left out by a bound) is listed
// after a while.
func TestACheckedServersEntriesAreListedOnceRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		docs := mcptest.NewServer(map[string]string{"doc://0": "the first page, on kafka consumer lag and partition rebalancing\n"}, nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"docs": docs}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond}, engine.Options{})
		f.eng.ServedLists().Check("docs", time.Now().Add(time.Hour))
		add := func(uri string, read func() (*mcpsdk.ReadResourceResult, error)) {
			docs.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return read()
			})
		}
		text := func(uri, s string) func() (*mcpsdk.ReadResourceResult, error) {
			return func() (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: s}}}, nil
			}
		}
		add("doc://text", text("doc://text", "a page on consumer group offsets and how to reset them safely\n"))
		add("doc://empty", text("doc://empty", ""))
		add("doc://error", func() (*mcpsdk.ReadResourceResult, error) { return nil, errors.New("403 forbidden") })
		add("doc://slow", func() (*mcpsdk.ReadResourceResult, error) {
			time.Sleep(20 * time.Second)
			return text("doc://slow", "a page that takes its time: broker configuration for retention\n")()
		})
		host := f.connect(t, nil)
		listed := func() map[string]bool { return listedURIs(t, host, "contextd:resource/docs/") }
		time.Sleep(30 * time.Second)
		synctest.Wait()
		l := listed()
		if !l["doc://0"] || !l["doc://text"] || l["doc://empty"] || l["doc://error"] || l["doc://slow"] {
			t.Errorf("30 s in, listed %v; want the first page and the text, not the empty, failing or slow ones", l)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		if l := listed(); !l["doc://slow"] || l["doc://empty"] || l["doc://error"] {
			t.Errorf("3.5 min in, listed %v; want the slow one too, still not the empty or failing ones", l)
		}
	})
}

// Entries new to the list past a server's burst (128 here) come at a
// pace: one each 10 s, those kept off longest first, each listed in the
// end; they answer Assemble meanwhile. A checked server's burst is any
// other's.
func TestNewEntriesPastTheBurstComeOldestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(uri string) string {
			return fmt.Sprintf("%s: a page on consumer group offsets, partition %s, and how to reset them safely\n", uri, uri)
		}
		page := map[string]string{"doc://0": text("doc://0")}
		docs := mcptest.NewServer(page, nil)
		notes := mcptest.NewServer(page, nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"docs": docs, "notes": notes}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}, engine.Options{})
		f.eng.ServedLists().Check("docs", time.Now().Add(24*time.Hour))
		add := func(s *mcpsdk.Server, uri string) {
			s.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
		}
		host := f.connect(t, nil)
		count := func(server, batch string) int { return countListed(t, host, server, batch) }
		// Their first lists come whole.
		time.Sleep(time.Second)
		synctest.Wait()
		if n := count("docs", "doc://"); n != 1 {
			t.Fatalf("%d of docs' first list listed, want its one page", n)
		}
		time.Sleep(settle) // what they add from now on is growth
		start := time.Now()
		for i := range 200 {
			add(docs, fmt.Sprintf("doc://a/%03d", i))
			add(notes, fmt.Sprintf("doc://a/%03d", i))
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		in := time.Since(start)
		for _, server := range []string{"docs", "notes"} {
			if n := count(server, "doc://a/"); n < 128 || n > 128+int(in/(10*time.Second))+1 {
				t.Errorf("%v in: %d of %s's 200 new entries listed; want %d or so", in, n, server, 128+int(in/(10*time.Second)))
			}
		}
		listing := func() map[string]string {
			out := map[string]string{}
			for _, s := range f.eng.Servers() {
				out[s.Server] = s.MCPListing
			}
			return out
		}
		if l := listing(); l["docs"] != "checked,paced" || l["notes"] != "paced" {
			t.Errorf("MCP listing %q; want docs checked,paced and notes paced", l)
		}
		listed := listedURIs(t, host, "contextd:resource/docs/")
		res, err := f.eng.Assemble(t.Context(), engine.AssembleRequest{Query: "consumer group offsets partition reset", TokenBudget: 4000})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(res.Items, func(it selector.Item) bool { return it.Server == "docs" && !listed[it.URI] }) {
			t.Errorf("Assemble answered with none of the checked server's entries kept off the list (%d items)", len(res.Items))
		}
		// Ten more while about 70 wait, named to come first by their
		// URIs: they come after those, through another server's hold
		// (which keeps every server's list still meanwhile).
		for i := range 10 {
			add(docs, fmt.Sprintf("doc://0/%d", i))
		}
		time.Sleep(time.Minute)
		f.eng.ServedLists().Hold("notes", time.Now().Add(30*time.Second))
		for _, at := range []time.Duration{8 * time.Minute, 12*time.Minute + 30*time.Second} {
			time.Sleep(at - time.Since(start))
			synctest.Wait()
			// The pace starts once the content pass read them: a few
			// seconds in.
			want := min(210, 128+int(at/(10*time.Second)))
			if a, b := count("docs", "doc://a/"), count("docs", "doc://0/"); a+b < want-3 || a+b > want+1 || b > 0 && a < 200 {
				t.Errorf("%v in: %d of the first 200 and %d of the 10 after listed; want %d or so in all, the first before", at, a, b, want)
			}
		}
		time.Sleep(15*time.Minute - time.Since(start))
		synctest.Wait()
		if a, b := count("docs", "doc://a/"), count("docs", "doc://0/"); a+b != 210 {
			t.Errorf("%d of the first 200 and %d of the 10 after listed 15 min in; want all", a, b)
		}
		if l := listing()["docs"]; l != "checked" {
			t.Errorf("docs: MCP listing %q once all are listed; want checked", l)
		}
	})
}

// A bridge in front of contextd that takes what contextd lists into a
// backlog, oldest first, and passes back three entries of it every 2 s,
// each read shifting every letter by one (no copy test can know a text
// rewritten whole), never pauses while contextd lists: what it passes
// back is listed, and so its backlog is contextd's list of it for good.
// Without the pace, contextd listed 747 of its entries 12 minutes in
// here (527 at 16 minutes in a daemon run); paced, past its first
// minutes it grows by one each 10 s past its burst (128 here, so that the
// burst is spent early: the default 1,024 takes some 11 minutes of this
// bridge), and honest servers growing beside it, one a page each 10 s,
// are listed in full.
func testASteadyBridgeRewritingEveryLetterGrowsByThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		page := func(server string, i int) (string, string) {
			return fmt.Sprintf("%s://%d", server, i), fmt.Sprintf("page %d of the %s, on the release calendar, week %d, and what ships in it\n", i, server, i)
		}
		servers := map[string]*mcpsdk.Server{}
		for _, name := range []string{"docs", "logs", "hub"} {
			pages := map[string]string{}
			for i := range map[string]int{"docs": 20, "logs": 5, "hub": 1}[name] {
				uri, text := page(name, i)
				pages[uri] = text
			}
			servers[name] = mcptest.NewServer(pages, nil)
		}
		f := newFacade(t, servers, &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: 2 * time.Minute}, engine.Options{})
		up := f.connect(t, nil)
		host := f.connect(t, nil)
		shift := func(s string) string {
			return strings.Map(func(c rune) rune {
				switch {
				case c >= 'a' && c <= 'z':
					return 'a' + (c-'a'+1)%26
				case c >= 'A' && c <= 'Z':
					return 'A' + (c-'A'+1)%26
				}
				return c
			}, s)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { // the bridge
			seen := map[string]time.Time{}
			passed := map[string]bool{}
			for {
				select {
				case <-done:
					return
				case <-time.After(2 * time.Second):
				}
				var ready []*mcpsdk.Resource // seen 20 s ago or more, not passed back
				for r, err := range up.Resources(t.Context(), nil) {
					if err != nil {
						break
					}
					if _, ok := seen[r.URI]; !ok {
						seen[r.URI] = time.Now()
					}
					if !passed[r.URI] && time.Since(seen[r.URI]) >= 20*time.Second {
						ready = append(ready, r)
					}
				}
				slices.SortStableFunc(ready, func(a, b *mcpsdk.Resource) int { return seen[b.URI].Compare(seen[a.URI]) }) // newest first
				for _, r := range ready[:min(3, len(ready))] {
					passed[r.URI] = true
					from, uri := r.URI, fmt.Sprintf("hub://up/%x", sha256.Sum256([]byte(r.URI)))
					servers["hub"].AddResource(&mcpsdk.Resource{URI: uri, Name: "hub_" + r.Name, MIMEType: "text/plain"}, func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						res, err := up.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: from})
						if err != nil {
							return nil, err
						}
						for _, c := range res.Contents {
							c.URI, c.Meta, c.Text = uri, nil, shift(c.Text)
						}
						return res, nil
					})
				}
			}
		})
		for name, every := range map[string]time.Duration{"docs": 30 * time.Second, "logs": 10 * time.Second} {
			wg.Go(func() { // honest servers adding a page at a steady pace
				for i := map[string]int{"docs": 20, "logs": 5}[name]; ; i++ {
					select {
					case <-done:
						return
					case <-time.After(every):
					}
					uri, text := page(name, i)
					servers[name].AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
					})
				}
			})
		}
		const run = 12 * time.Minute
		listed := func(server string) int { return countListed(t, host, server, "") }
		// What it lists in its first minutes is its first list; past
		// them, the pace: 128 at once, one each 10 s after.
		settled := 3 * time.Minute
		time.Sleep(settled)
		before := listed("hub")
		time.Sleep(run - settled)
		close(done)
		wg.Wait()
		for _, s := range f.eng.Servers() {
			t.Logf("%v in: %s: %d mirrored, %d listed, MCP listing %q", run, s.Server, s.Resources, listed(s.Server), s.MCPListing)
		}
		if n, most := listed("hub")-before, 128+int((run-settled)/(10*time.Second))+10; n > most {
			t.Errorf("contextd listed %d more of the hub's entries from %v to %v in (%d before); want %d at most", n, settled, run, before, most)
		}
		time.Sleep(5 * time.Minute) // every hold and wait over
		synctest.Wait()
		for name, want := range map[string]int{"docs": 20 + int(run/(30*time.Second)), "logs": 5 + int(run/(10*time.Second))} {
			if n := listed(name); n < want-1 {
				t.Errorf("contextd lists %d of %s's %d pages", n, name, want)
			}
		}
	})
}

// Any server's entries new to the list come at a pace, held or not (a
// bridge growing between lists that grow nothing is never held): its
// first list whole, then 1,024 at once (a large commit), checked or not,
// then one each 10 s.
func TestEveryServersNewEntriesComeAtAPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(uri string) string { return "a page on the release calendar: " + uri + "\n" }
		first := map[string]string{}
		for i := range 1500 {
			uri := fmt.Sprintf("doc://first/%04d", i)
			first[uri] = text(uri)
		}
		big := mcptest.NewServer(first, nil)
		grow := mcptest.NewServer(map[string]string{"doc://0": text("doc://0")}, nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"big": big, "grow": grow}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceSettle: settle}, engine.Options{})
		host := f.connect(t, nil)
		count := func(server string) int { return countListed(t, host, server, "") }
		time.Sleep(time.Second)
		synctest.Wait()
		if b, g := count("big"), count("grow"); b != 1500 || g != 1 {
			t.Fatalf("first lists: %d of big's 1,500 and %d of grow's 1 listed; want all", b, g)
		}
		time.Sleep(settle)                                              // what they add from now on is growth
		f.eng.ServedLists().Check("grow", time.Now().Add(24*time.Hour)) // as if held once
		for i := range 1500 {
			uri := fmt.Sprintf("doc://a/%04d", i)
			grow.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
		}
		start := time.Now()
		for _, at := range []time.Duration{20 * time.Second, 10 * time.Minute} {
			time.Sleep(at - time.Since(start))
			synctest.Wait()
			want := 1 + 1024 + int(at/(10*time.Second))
			if n := count("grow"); n < want-2 || n > want+1 {
				t.Errorf("%v after grow added 1,500: %d listed; want %d or so", at, n, want)
			}
		}
		for _, s := range f.eng.Servers() {
			if want := map[string]string{"big": "", "grow": "checked,paced"}[s.Server]; s.MCPListing != want {
				t.Errorf("%s: MCP listing %q, want %q", s.Server, s.MCPListing, want)
			}
		}
		// A rename of every page, and a list that empties and comes back,
		// add nothing past the most it had listed: listed at once.
		var old, renamed []string
		for i := range 1500 {
			old = append(old, fmt.Sprintf("doc://first/%04d", i))
			uri := fmt.Sprintf("doc://v2/%04d", i)
			renamed = append(renamed, uri)
			big.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
		}
		big.RemoveResources(old...)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n, v2 := count("big"), countListed(t, host, "big", "doc://v2/"); n != 1500 || v2 != 1500 {
			t.Errorf("20 s after a rename of its 1,500 pages: %d listed, %d of them renamed; want all", n, v2)
		}
		big.RemoveResources(renamed...)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := count("big"); n != 0 {
			t.Fatalf("%d listed of an empty server", n)
		}
		for _, uri := range renamed {
			big.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := count("big"); n != 1500 {
			t.Errorf("20 s after its list came back: %d of 1,500 listed; want all", n)
		}
	})
}

// countListed returns how many of server's entries whose upstream URIs
// begin with prefix the resource list cs sees holds.
func countListed(t *testing.T, cs *mcpsdk.ClientSession, server, prefix string) int {
	t.Helper()
	n := 0
	for u := range listedURIs(t, cs, "contextd:resource/"+server+"/") {
		if strings.HasPrefix(u, prefix) && !strings.HasPrefix(u, "contextd:resource/") {
			n++
		}
	}
	return n
}

// settle is the facades' mcpserver.Options.PaceSettle where a test adds
// entries after its first lists: what they add after it is growth.
const settle = 30 * time.Second

// slowEmbedder embeds as indextest.BagEmbedder does, taking a while for
// each text, so that a first sync stores its list over many of the
// facade's checks.
type slowEmbedder struct{ indextest.BagEmbedder }

func (e *slowEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	time.Sleep(5 * time.Millisecond)
	return e.BagEmbedder.Embed(ctx, text)
}

// A server's first list comes whole even when its first sync stores it
// over many of the facade's checks (a cold index, a large server), and
// when another server's hold keeps the list still as it ends: what the
// list held of it then is no measure of it.
func TestAFirstListStoredSlowlyComesWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pages := map[string]string{}
		for i := range 3000 {
			uri := fmt.Sprintf("doc://%04d", i)
			pages[uri] = "a page on the release calendar: " + uri + "\n"
		}
		ups := map[string]*mcpsdk.Server{"big": mcptest.NewServer(pages, nil), "other": mcptest.NewServer(map[string]string{"doc://0": "zero"}, nil)}
		f := startFacade(t, ups, &mcpserver.Options{CheckInterval: 250 * time.Millisecond}, engine.Options{Embedder: &slowEmbedder{}})
		host := f.connect(t, nil)
		stored := 0
		for stored == 0 || stored == 3000 {
			if f.eng.ListVersions()["big"].Syncs > 0 {
				t.Fatalf("the first sync ended before the test saw it part way (%d stored)", stored)
			}
			time.Sleep(10 * time.Millisecond)
			descs, err := f.eng.Descriptors("big")
			if err != nil {
				t.Fatal(err)
			}
			stored = len(descs)
		}
		// Part way through its first sync, another server is held: every
		// server's list is kept still, and applied again.
		f.eng.ServedLists().Hold("other", time.Now().Add(30*time.Second))
		time.Sleep(time.Second)
		synctest.Wait()
		if f.eng.ListVersions()["big"].Syncs > 0 {
			t.Logf("the first sync ended within a second of the hold")
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := countListed(t, host, "big", ""); n != 3000 {
			t.Errorf("%d of the first list's 3,000 entries listed a minute in (%d stored when the hold began); want all", n, stored)
		}
		for _, s := range f.eng.Servers() {
			if s.MCPListing != "" && s.MCPListing != "held" {
				t.Errorf("%s: MCP listing %q; want none", s.Server, s.MCPListing)
			}
		}
	})
}

// Entries taking the place of others are listed at once, as many as it
// had listed: a log listing its newest 1,000 records, 50 new each 2 s
// (the oldest dropped), a site renaming every page twice, and a list
// that empties and comes back twice. They never grow past what they
// listed, so no loop grows through them.
func testEntriesTakingThePlaceOfOthersAreListedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(uri string) string { return "a page on the release calendar: " + uri + "\n" }
		pages := func(prefix string, from, n int) map[string]string {
			out := map[string]string{}
			for i := from; i < from+n; i++ {
				uri := fmt.Sprintf("%s%05d", prefix, i)
				out[uri] = text(uri)
			}
			return out
		}
		add := func(s *mcpsdk.Server, uris map[string]string) {
			for uri := range uris {
				s.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
				})
			}
		}
		remove := func(s *mcpsdk.Server, uris map[string]string) {
			s.RemoveResources(slices.Collect(maps.Keys(uris))...)
		}
		log := mcptest.NewServer(pages("log://", 0, 1000), nil)
		site := mcptest.NewServer(pages("site://v0/", 0, 1500), nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"log": log, "site": site}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceSettle: settle}, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle) // what they list from now on is no first list
		synctest.Wait()
		if l, s := countListed(t, host, "log", ""), countListed(t, host, "site", ""); l != 1000 || s != 1500 {
			t.Fatalf("first lists: %d of log's 1,000 and %d of site's 1,500 listed; want all", l, s)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		next := 1000
		wg.Go(func() {
			for ; ; next += 50 {
				select {
				case <-done:
					return
				case <-time.After(2 * time.Second):
				}
				add(log, pages("log://", next, 50))
				remove(log, pages("log://", next-1000, 50))
			}
		})
		listedAfter := func(what string, server, prefix string, want int) {
			t.Helper()
			time.Sleep(20 * time.Second)
			synctest.Wait()
			if n := countListed(t, host, server, prefix); n != want {
				t.Errorf("20 s after %s: %d listed; want %d", what, n, want)
			}
		}
		for v := 1; v <= 2; v++ {
			add(site, pages(fmt.Sprintf("site://v%d/", v), 0, 1500))
			remove(site, pages(fmt.Sprintf("site://v%d/", v-1), 0, 1500))
			listedAfter("a rename of the site's 1,500 pages", "site", fmt.Sprintf("site://v%d/", v), 1500)
		}
		for range 2 {
			remove(site, pages("site://v2/", 0, 1500))
			time.Sleep(20 * time.Second)
			add(site, pages("site://v2/", 0, 1500))
			listedAfter("the site's list came back", "site", "site://v2/", 1500)
		}
		close(done)
		wg.Wait()
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		// The log turned its list over about three times: its newest
		// 1,000, all listed.
		newest := fmt.Sprintf("log://%05d", next-1)
		if n, ok := countListed(t, host, "log", ""), listedURIs(t, host, "contextd:resource/log/")[newest]; n != 1000 || !ok {
			t.Errorf("%d of the log's newest 1,000 records listed (%s listed: %v); want all", n, newest, ok)
		}
		for _, s := range f.eng.Servers() {
			if s.MCPListing != "" {
				t.Errorf("%s: MCP listing %q; want none", s.Server, s.MCPListing)
			}
		}
	})
}

// A server that lists a few entries while it starts, then all of them,
// is listed whole: what it lists in its first minutes is its first list
// (meanwhile paced as ever, what waits comes at their end); what it adds
// later is growth.
func TestAServerListingAFewWhileItStartsIsListedWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(uri string) string { return "a file of the repository: " + uri + "\n" }
		slow := mcptest.NewServer(map[string]string{"file:///a": text("file:///a"), "file:///b": text("file:///b"), "file:///c": text("file:///c")}, nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"slow": slow}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceSettle: 5 * time.Minute}, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(time.Minute)
		for i := range 3000 {
			uri := fmt.Sprintf("file:///src/%04d", i)
			slow.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
			if i == 1499 {
				time.Sleep(10 * time.Second) // in two steps
			}
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "slow", ""); n < 3+1024 || n > 3+1024+5 {
			t.Errorf("10 s after its list grew: %d listed; want its first 3, then 1,024 and a few at the pace while it settles", n)
		}
		time.Sleep(5*time.Minute - 80*time.Second + time.Second)
		synctest.Wait()
		if n := countListed(t, host, "slow", ""); n != 3003 {
			t.Errorf("once its list held still: %d of 3,003 listed; want all", n)
		}
		// Growth from then on is paced.
		for i := range 1500 {
			uri := fmt.Sprintf("file:///new/%04d", i)
			slow.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "slow", "file:///new/"); n < 1024 || n > 1030 {
			t.Errorf("20 s after it added 1,500 more: %d listed; want 1,024 and a few", n)
		}
	})
}

// A reload that replaces a server's mirror (its entry changed) keeps its
// pace: what waited still waits, and what the mirror holds is no first
// list (a loop of bridges doubled at each reload so).
func TestAReloadThatReplacesAServerKeepsItsPace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(uri string) string { return "a page on the release calendar: " + uri + "\n" }
		hub := mcptest.NewServer(map[string]string{"hub://0": text("hub://0")}, nil)
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle}, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + time.Second)
		for i := range 500 {
			uri := fmt.Sprintf("hub://a/%03d", i)
			hub.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
			})
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		before := countListed(t, host, "hub", "")
		if before < 129 || before > 135 {
			t.Fatalf("20 s after 500 were added: %d listed; want its 1 and 128 and a few", before)
		}
		// Changed (its environment), still the same server.
		cfg := &config.Config{Servers: []config.Server{{Name: "hub", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"HUB_LOG": "debug"}}}}
		ch, err := f.eng.Reload(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("reload: %+v", ch)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n > before+5 {
			t.Errorf("20 s after a reload replaced its mirror: %d listed (%d before); want the pace kept", n, before)
		}
		for _, s := range f.eng.Servers() {
			if s.Server == "hub" && s.Resources != 501 {
				t.Errorf("hub: %d mirrored after the reload; want 501", s.Resources)
			}
		}
	})
}

func TestARestartKeepsThePace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(uri string) string { return "a page on the release calendar: " + uri + "\n" }
		hub := mcptest.NewServer(map[string]string{"hub://0": text("hub://0")}, nil)
		add := func(prefix string, n int) {
			for i := range n {
				uri := fmt.Sprintf("hub://%s/%03d", prefix, i)
				hub.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text(uri)}}}, nil
				})
			}
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + time.Second)
		add("a", 500)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		before := countListed(t, host, "hub", "")
		if before < 129 || before > 135 {
			t.Fatalf("20 s after 500 were added: %d listed; want its 1 and 128 and a few", before)
		}
		host.Close()
		f.stop()
		if _, err := os.Stat(opts.StateFile); err != nil {
			t.Fatalf("no state written when the server stopped: %v", err)
		}

		// While contextd is down (30 min: the burst is whole again) the
		// server grows: that is growth, as it would have been with
		// contextd up, and comes after what waited before, which waits
		// as it did.
		add("b", 300)
		time.Sleep(30 * time.Minute)
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		n := countListed(t, host, "hub", "")
		if n < before+128 || n > before+128+5 {
			t.Errorf("20 s after a restart: %d listed (%d before, 370 waiting, 300 added while down); want %d and a few", n, before, before+128)
		}
		if b := countListed(t, host, "hub", "hub://b/"); b != 0 {
			t.Errorf("of those added while down, %d listed; want none before what waited longer", b)
		}
		// What waits keeps coming at the pace.
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if m := countListed(t, host, "hub", ""); m < n+25 || m > n+35 {
			t.Errorf("5 min later: %d listed (%d then); want about 30 more", m, n)
		}
	})
}

// A restart inside a server's first window keeps its first list's
// backlog whole: it comes when the window would have ended.
func TestARestartInsideTheFirstWindowKeepsItsBacklogWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(5 * time.Second)
		addPages(hub, "a", 500) // a slow starter's real list, inside its first window
		time.Sleep(15 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n > 140 {
			t.Fatalf("15 s after 500 came: %d listed; want the pace's 129 and a few", n)
		}
		host.Close()
		f.stop()
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(settle)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n != 501 {
			t.Errorf("after the first window's end, restarted inside it: %d listed; want all 501", n)
		}
	})
}

// A restart opens no window: what a server adds after it is growth,
// paced.
func TestGrowthAfterARestartIsPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + time.Second)
		addPages(hub, "a", 500)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		before := countListed(t, host, "hub", "")
		host.Close()
		f.stop()
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(10 * time.Second)
		addPages(hub, "b", 1000)
		time.Sleep(settle + 30*time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n > before+10 {
			t.Errorf("%v after 1,000 were added past a restart: %d listed (%d before); want a few more at the pace", settle+30*time.Second, n, before)
		}
	})
}

// addPages adds n text pages hub://prefix/NNN to hub.
func addPages(hub *mcpsdk.Server, prefix string, n int) {
	for i := range n {
		uri := fmt.Sprintf("hub://%s/%03d", prefix, i)
		hub.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "a page on the release calendar: " + uri + "\n"}}}, nil
		})
	}
}

// A restart inside a server's first window while it goes on growing (an
// indexer walking a repository): all it lists comes at the window's end,
// what waited before the restart included.
func TestARestartInsideTheFirstWindowOfAGrowingServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(3 * time.Second)
		addPages(hub, "a", 400)
		time.Sleep(7 * time.Second)
		host.Close()
		f.stop()
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(4 * time.Second)
		addPages(hub, "b", 600)
		time.Sleep(settle)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n != 1001 {
			t.Errorf("past the first window's end, restarted inside it as the server grew: %d listed; want all 1,001", n)
		}
	})
}

// Two restarts within moments of each other keep a settled server's
// backlog growth: it comes at the pace, not at some window's end.
func TestTwoRestartsInARowKeepTheBacklogPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		addPages(hub, "a", 300)
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		addPages(hub, "w", 600) // growth: 128 now, the rest waits
		time.Sleep(5 * time.Second)
		synctest.Wait()
		before := countListed(t, host, "hub", "")
		for range 2 {
			host.Close()
			f.stop()
			f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
			host = f.connect(t, nil)
			time.Sleep(2 * time.Second)
		}
		time.Sleep(settle + 10*time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n > before+10 {
			t.Errorf("%v after two restarts 2 s apart: %d listed (%d before); want a few more at the pace", settle+14*time.Second, n, before)
		}
	})
}

// pageURIs returns the URIs addPages(_, prefix, n) adds.
func pageURIs(prefix string, n int) []string {
	var uris []string
	for i := range n {
		uris = append(uris, fmt.Sprintf("hub://%s/%03d", prefix, i))
	}
	return uris
}

// What a server lacked when the state was written (a bridge that dropped
// what it passed back while contextd was down) is growth when it comes
// back after a restart, not listed: kept by what was off the list, it
// counted as listed, and a loop doubled (429 → 901 of 901).
func TestEntriesMissingAtARestartComeBackAsGrowth(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
				opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
				addPages(hub, "a", 300)
				f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
				host := f.connect(t, nil)
				time.Sleep(settle + 10*time.Second)
				addPages(hub, "w", 600) // 128 listed, 472 wait
				time.Sleep(5 * time.Second)
				synctest.Wait()
				before := countListed(t, host, "hub", "")
				host.Close()
				f.stop()
				hub.RemoveResources(pageURIs("w", 600)...)
				f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
				host = f.connect(t, nil)
				time.Sleep(20 * time.Second) // past a periodic write
				synctest.Wait()
				saved, err := os.ReadFile(opts.StateFile)
				if err != nil {
					t.Fatal(err)
				}
				host.Close()
				f.stop()
				if crash {
					// A crash: what the last periodic write saw.
					if err := os.WriteFile(opts.StateFile, saved, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				addPages(hub, "w", 600)
				f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
				host = f.connect(t, nil)
				time.Sleep(3 * time.Second)
				synctest.Wait()
				// Up to the most it had listed (the room of what left), and
				// the allowance: no more than it had.
				if n := countListed(t, host, "hub", ""); n > before+5 {
					t.Errorf("3 s after the second restart: %d listed (%d before the first); want no more than before and a few", n, before)
				}
				time.Sleep(60 * time.Second)
				synctest.Wait()
				if n := countListed(t, host, "hub", ""); n < before || n > before+12 {
					t.Errorf("a minute later: %d listed (%d before the first restart); want the pace's few more", n, before)
				}
			})
		})
	}
}

// A server that lists nothing at its first sync after a restart (a bridge
// whose upstream is down) and all it had and more later is paced as if
// it had listed all at once: what it adds is growth. Its restore waited
// for its first list, and all of that counted as listed.
func TestAServerEmptyAtItsFirstSyncAfterARestartIsPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		addPages(hub, "a", 300)
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		addPages(hub, "w", 600)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		before := countListed(t, host, "hub", "")
		host.Close()
		f.stop()
		hub.RemoveResources(append(append(pageURIs("a", 300), pageURIs("w", 600)...), "hub://0")...)
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(time.Minute)
		synctest.Wait()
		addPages(hub, "a", 300)
		addPages(hub, "w", 600)
		addPages(hub, "n", 1000)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", ""); n > before+10 {
			t.Errorf("5 s after the server listed all it had and 1,000 new: %d listed (%d before the restart); want what it had listed and a few", n, before)
		}
		if n := countListed(t, host, "hub", "hub://a/"); n != 300 {
			t.Errorf("%d of the 300 it had listed are listed again; want all", n)
		}
	})
}

// A state file of the previous format (which said what was off the list,
// not what was on it) is read as it was meant even when the server lists
// nothing at the first sync after it: rewritten then, what was listed
// had been worked out from an empty mirror, and the honest pages waited
// behind the backlog (an hour) at the next start.
func TestAnOlderStateFileKeepsWhatWasListedThroughAnEmptyStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		addPages(hub, "a", 300)
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		addPages(hub, "w", 600) // 128 listed, 472 wait
		time.Sleep(5 * time.Second)
		synctest.Wait()
		host.Close()
		f.stop()
		// Written as version 2 would have been.
		data, err := os.ReadFile(opts.StateFile)
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]any
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		st["version"] = 2
		for _, p := range st["servers"].(map[string]any) {
			delete(p.(map[string]any), "listed")
		}
		if data, err = json.Marshal(st); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(opts.StateFile, data, 0o600); err != nil {
			t.Fatal(err)
		}
		all := append(append(pageURIs("a", 300), pageURIs("w", 600)...), "hub://0")
		hub.RemoveResources(all...)
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(20 * time.Second) // past a periodic write
		synctest.Wait()
		host.Close()
		f.stop()
		addPages(hub, "a", 300)
		addPages(hub, "w", 600)
		hub.AddResource(&mcpsdk.Resource{URI: "hub://0", Name: "hub://0", MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: "hub://0", MIMEType: "text/plain", Text: "a page on the release calendar\n"}}}, nil
		})
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", "hub://a/"); n != 300 {
			t.Errorf("3 s after the second start: %d of the 300 pages listed before; want all", n)
		}
	})
}

// After a restart, a server that renamed what it lists while contextd was
// down gets its renamed entries in place of the old up to the most it had
// listed at once, whatever its allowance: with none left, they waited for
// its next entry's time (10 s).
func TestRenamesAfterARestartComeAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := mcptest.NewServer(map[string]string{"hub://0": "a page on the release calendar\n"}, nil)
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		addPages(hub, "a", 300)
		f := newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		addPages(hub, "w", 600) // the burst spent: 128 listed, 472 wait
		time.Sleep(5 * time.Second)
		synctest.Wait()
		before := countListed(t, host, "hub", "")
		host.Close()
		f.stop()
		hub.RemoveResources(append(append(pageURIs("a", 300), pageURIs("w", 600)...), "hub://0")...)
		addPages(hub, "r", before) // renamed: as many as were listed
		f = newFacade(t, map[string]*mcpsdk.Server{"hub": hub}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if n := countListed(t, host, "hub", "hub://r/"); n != before {
			t.Errorf("3 s after a restart: %d of %d renamed entries listed; want all", n, before)
		}
	})
}

// A bridge found passing back copies of what contextd served (withheld)
// that had shrunk gets no room and no allowance of its own after a
// restart: what the copy checks had found is not kept, and its copies
// came at once (310 → 610), even when it dropped them while contextd
// stopped (its state then said nothing was kept off).
func TestAWithheldBridgeGetsNoRoomAfterARestart(t *testing.T) {
	for _, dropped := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropped=%v", dropped), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
				for i := range 300 {
					addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
				}
				for i := range 500 {
					addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
				}
				opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
				f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
				host := f.connect(t, nil)
				time.Sleep(settle + 10*time.Second)
				for i := range 300 { // what contextd serves of a, read by a host
					if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)}); err != nil {
						t.Fatal(err)
					}
				}
				for i := 10; i < 500; i++ {
					b.RemoveResources(fmt.Sprintf("doc://b/own/%d", i))
				}
				time.Sleep(5 * time.Second)
				copies := make([]string, 300)
				for i := range 300 { // b passes back a's pages
					copies[i] = fmt.Sprintf("doc://b/c/%d", i)
					addText(b, copies[i], vacuumPage(i))
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if !f.eng.ServedLists().Withheld("b") {
					t.Fatal("b not withheld for passing back a's pages")
				}
				before := countListed(t, host, "b", "")
				if dropped {
					b.RemoveResources(copies...)
					time.Sleep(3 * time.Second)
				}
				host.Close()
				f.stop()
				if dropped {
					for i := range 300 {
						addText(b, copies[i], vacuumPage(i))
					}
				}
				f = newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
				host = f.connect(t, nil)
				time.Sleep(3 * time.Second)
				synctest.Wait()
				if n := countListed(t, host, "b", ""); n > before+5 {
					t.Errorf("3 s after a restart: b lists %d (%d before); want its copies paced", n, before)
				}
			})
		})
	}
}

// A name pointed at another server (its command's args, its URL), by a
// reload or across a restart, starts afresh: the new server's first list
// comes whole once read (a withheld bridge's name, pointed at an honest
// server, kept it to the pace: 10 → 430 over 70 minutes). But the same
// bridge reached another way (an argument added), or with its credential
// rotated, gets none of its copies listed: a reload forgot it for any
// change (128 copies listed), and an argument added listed all 300.
func TestANamePointedAtAnotherServerStartsAfresh(t *testing.T) {
	honest := func(prefix string) *mcpsdk.Server {
		c := mcptest.NewServer(nil, nil)
		for i := range 500 {
			addText(c, fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("c's page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		for i := range 20 { // too short to tell from a copy
			addText(c, fmt.Sprintf("note://c/%d", i), fmt.Sprintf("todo %d: ship it", i))
		}
		return c
	}
	for _, how := range []string{"restart", "reload"} {
		for _, to := range []string{"honest", "honest, the bridge's URIs", "honest, the bridge's URIs, content off", "same bridge, an argument added", "same bridge, an argument added, content off", "same bridge, its token rotated"} {
			t.Run(how+"/"+to, func(t *testing.T) {
				dir := t.TempDir() // the index is kept across the restart
				// Its texts not indexed once pointed elsewhere: what
				// tells its own from copies then is checkWithheld's reads.
				var off atomic.Bool
				at := func(env string, args ...string) engine.Options {
					o := engine.Options{Config: &config.Config{DataDir: dir, Servers: []config.Server{{Name: "b", Transport: config.TransportStdio, Command: "unused", Args: args, Env: map[string]string{"API_TOKEN": env}}}}}
					o.Mirror = func(o *ctxsync.Options) {
						if o.Server == "b" && off.Load() {
							o.ContentMaxResources = -1
						}
					}
					return o
				}
				synctest.Test(t, func(t *testing.T) {
					a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
					for i := range 300 {
						addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
					}
					for i := range 10 {
						addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
					}
					opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
					ups := map[string]*mcpsdk.Server{"a": a, "b": b}
					f := newFacade(t, ups, opts, at("tok_1a2b3c4d5e6f7a8b", "/srv/bridge.py"))
					host := f.connect(t, nil)
					time.Sleep(settle + 10*time.Second)
					readPages(t, host, "a", 300)
					for i := range 300 { // b passes back a's pages
						addText(b, fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i))
					}
					time.Sleep(time.Minute)
					synctest.Wait()
					if !f.eng.ServedLists().Withheld("b") {
						t.Fatal("b not withheld for passing back a's pages")
					}
					if n := countListed(t, host, "b", ""); n > 15 {
						t.Fatalf("the bridge lists %d; want its 10 own and a few", n)
					}
					next := at("tok_1a2b3c4d5e6f7a8b", "-u", "/srv/bridge.py")
					off.Store(strings.HasSuffix(to, "content off"))
					switch to {
					case "honest":
						ups["b"] = honest("doc://c/") // the facade's dial finds it by name
						next = at("tok_1a2b3c4d5e6f7a8b", "/srv/honest.py")
					case "honest, the bridge's URIs", "honest, the bridge's URIs, content off":
						// Its pages under the URIs the bridge listed its copies
						// under (a mirror of the same tree that was bridged):
						// what the record and the index hold of those are the
						// bridge's, not its.
						ups["b"] = honest("doc://b/c/")
						next = at("tok_1a2b3c4d5e6f7a8b", "/srv/honest.py")
					case "same bridge, its token rotated":
						next = at("tok_9f8e7d6c5b4a3f2e", "/srv/bridge.py")
					}
					switch how {
					case "restart":
						host.Close()
						f.stop()
						f = newFacade(t, ups, opts, next)
						host = f.connect(t, nil)
					case "reload":
						cfg := next.Config
						cfg.Servers = append(cfg.Servers, config.Server{Name: "a", Transport: config.TransportStdio, Command: "unused"})
						if _, err := f.eng.Reload(t.Context(), cfg); err != nil {
							t.Fatal(err)
						}
					}
					for _, wait := range []time.Duration{5 * time.Second, 10 * time.Minute, 55 * time.Minute} {
						time.Sleep(wait)
						synctest.Wait()
						if strings.HasPrefix(to, "honest") {
							prefix := "doc://c/"
							if to != "honest" {
								prefix = "doc://b/c/"
							}
							// Not indexed, its pages are read a few dozen a
							// pass: all within minutes.
							if n := countListed(t, host, "b", prefix); n != 500 && (wait > 5*time.Second || !off.Load()) {
								t.Errorf("%v after b was pointed at an honest server of 500 pages: %d listed; want all, its first list", wait, n)
							}
							// Its short notes wait for the hour's check to end
							// after a restart (they were kept off for good); a
							// name withheld in this run stays so for the run (a
							// bridge dropping its copies at the repoint came
							// back unwithheld after the hour).
							n := countListed(t, host, "b", "note://c/")
							if wait == 55*time.Minute && how == "restart" && n != 20 {
								t.Errorf("65 min after b was pointed at an honest server: %d of its 20 short notes listed; want all", n)
							}
							if how == "reload" && !f.eng.ServedLists().Withheld("b") {
								t.Errorf("%v after a reload pointed b elsewhere: not withheld; want it withheld for the run", wait)
							}
							continue
						}
						if n := countListed(t, host, "b", "doc://b/c/"); n > 0 {
							t.Errorf("%v after the bridge came back (%s): %d of its 300 copies listed; want none", wait, to, n)
						}
					}
				})
			})
		}
	}
}

// A restart inside a withheld bridge's first window counts at that
// window's end only what other filters let through (not the copies the
// copy checks held back) and does not make its allowance whole: it
// counted all the mirror held, copies included (310 → 610).
func TestAWithheldBridgeRestartedInItsFirstWindowIsPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 300 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 10 {
			addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: 10 * time.Minute, StateFile: mcpserver.StateFileIn(t.TempDir())}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(5 * time.Second)
		readPages(t, host, "a", 300)
		for i := range 300 {
			addText(b, fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Fatal("b not withheld for passing back a's pages")
		}
		before := countListed(t, host, "b", "")
		host.Close()
		f.stop()
		f = newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(10 * time.Minute) // past the first window's end
		synctest.Wait()
		// The pace's one each 10 s for the window's 9 minutes left, at most.
		if n := countListed(t, host, "b", ""); n > before+60 {
			t.Errorf("after the first window's end, restarted inside it: b lists %d (%d before); want its copies paced", n, before)
		}
	})
}

// What contextd served is remembered across a restart: a bridge that
// passes back, after the restart and before a host reads anything again,
// what a host read before it is told as a copy as without the restart.
// Forgotten, its copies came as plain growth, a burst of them at once.
func TestCopiesOfWhatWasServedBeforeARestartAreTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 300 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 10 {
			addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(t.TempDir())}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		readPages(t, host, "a", 300)
		before := countListed(t, host, "b", "")
		host.Close()
		f.stop()
		f = newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(3 * time.Second)
		for i := range 300 { // b passes back a's pages, read before the restart
			addText(b, fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if !f.eng.ServedLists().Withheld("b") {
			t.Error("b not withheld for passing back a's pages read before the restart")
		}
		if n := countListed(t, host, "b", ""); n > before+5 {
			t.Errorf("a minute after b passed back 300 pages read before the restart: b lists %d (%d before); want its copies kept off", n, before)
		}
	})
}

// A crash right after a host read is no gap in what the copy checks know
// after the restart: each read is on disk once answered. A bridge that
// had shrunk (its room: the most it listed) passing back what was read
// then had all of it listed at once (10 → 610).
func TestACrashRightAfterReadsKeepsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := mcptest.NewServer(nil, nil), mcptest.NewServer(nil, nil)
		for i := range 300 {
			addText(a, fmt.Sprintf("doc://a/%d", i), vacuumPage(i))
		}
		for i := range 500 {
			addText(b, fmt.Sprintf("doc://b/own/%d", i), fmt.Sprintf("b's own page %d, on kafka consumer rebalancing and partition lag, runbook %d\n", i, i))
		}
		dir := t.TempDir()
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(dir)}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(settle + 10*time.Second)
		for i := 10; i < 500; i++ { // b shrinks: room for 490
			b.RemoveResources(fmt.Sprintf("doc://b/own/%d", i))
		}
		time.Sleep(5 * time.Minute)
		readPages(t, host, "a", 300)
		// Killed at once: the files as they are now.
		files := map[string][]byte{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				files[e.Name()] = data
			}
		}
		before := countListed(t, host, "b", "")
		host.Close()
		f.stop()
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		f = newFacade(t, map[string]*mcpsdk.Server{"a": a, "b": b}, opts, engine.Options{})
		host = f.connect(t, nil)
		time.Sleep(3 * time.Second)
		for i := range 300 { // b passes back a's pages, read just before the crash
			addText(b, fmt.Sprintf("doc://b/c/%d", i), vacuumPage(i))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := countListed(t, host, "b", ""); n > before+5 {
			t.Errorf("a minute after b passed back 300 pages read just before a crash: b lists %d (%d before); want its copies kept off", n, before)
		}
	})
}

// Every read answered is on disk once answered, also once the record's
// appends have grown past its last whole write and its slack: a crash
// then lost those answered until Run's next tick wrote it whole.
func TestReadsPastTheRecordsSlackAreOnDiskOnceAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Pages of words their own, under URIs of 1,200 bytes: about 2 KB
		// written for each read.
		page := func(i int) string {
			var b strings.Builder
			for l := range 8 {
				for w := range 8 {
					fmt.Fprintf(&b, "p%dl%dw%d ", i, l, w)
				}
				b.WriteString("\n")
			}
			return b.String()
		}
		uri := func(i int) string { return fmt.Sprintf("doc://a/%d/%s", i, strings.Repeat("x", 1200)) }
		const pages = 800
		a := mcptest.NewServer(nil, nil)
		for i := range pages {
			addText(a, uri(i), page(i))
		}
		dir := t.TempDir()
		opts := &mcpserver.Options{CheckInterval: time.Hour, StateFile: mcpserver.StateFileIn(dir)}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a}, opts, engine.Options{})
		host := f.connect(t, nil)
		synctest.Wait()
		start := time.Now()
		for i := range pages {
			if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: "contextd:resource/a/" + uri(i)}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if time.Since(start) >= 15*time.Second {
			t.Fatalf("the reads took %v: Run's tick came between", time.Since(start))
		}
		// Killed now: what the file holds.
		if told := recordTells(t, filepath.Join(dir, "mcp-served-reads"), pages, page); told != pages {
			t.Errorf("the record on disk (%d whole writes) right after %d reads tells %d of them; want all", mcpserver.ServedWholeWrites(f.srv), pages, told)
		}
	})
}

// A record of what was served that cannot be written (a full disk, a
// directory in its place) costs reads nothing but a failed append: each
// read tried a whole write, every read waiting behind it (6 reads a
// second at 16 in flight), retried by Run's tick at most once a minute.
func TestAnUnwritableRecordOfReadsCostsReadsNoWholeWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mcptest.NewServer(nil, nil)
		for i := range 50 {
			addText(a, fmt.Sprintf("doc://a/%d", i), fmt.Sprintf("page %d on postgres vacuum tuning and the runbook an engineer follows", i))
		}
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "mcp-served-reads"), 0o700); err != nil {
			t.Fatal(err)
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, PaceBurst: 128, PaceSettle: settle, StateFile: mcpserver.StateFileIn(dir)}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a}, opts, engine.Options{})
		host := f.connect(t, nil)
		time.Sleep(time.Second)
		for round := range 4 {
			for i := range 50 {
				if _, err := host.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)}); err != nil {
					t.Fatalf("round %d, read %d: %v", round, i, err)
				}
			}
			time.Sleep(30 * time.Second)
		}
		// The start's, then at most one a minute from Run's tick.
		if n := mcpserver.ServedWholeWrites(f.srv); n > 4 {
			t.Errorf("200 reads over 2 minutes with the record unwritable: %d whole writes tried; want at most 4", n)
		}
	})
}

// A stop within a minute of a failed write of the record (a disk full for
// a few seconds) still writes it: the retry's wait skipped the last write,
// and every read answered since the failure was lost.
func TestAStopRightAfterAFailedWriteStillWritesTheRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := mcptest.NewServer(nil, nil)
		for i := range 50 {
			addText(a, fmt.Sprintf("doc://a/%d", i), fmt.Sprintf("page %d on postgres vacuum tuning and the runbook an engineer follows", i))
		}
		dir := t.TempDir()
		record := filepath.Join(dir, "mcp-served-reads")
		if err := os.Mkdir(record, 0o700); err != nil { // unwritable at the start
			t.Fatal(err)
		}
		opts := &mcpserver.Options{CheckInterval: 250 * time.Millisecond, StateFile: mcpserver.StateFileIn(dir)}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a}, opts, engine.Options{})
		host := f.connect(t, nil)
		synctest.Wait()
		if err := os.Remove(record); err != nil { // writable again
			t.Fatal(err)
		}
		readPages(t, host, "a", 50)
		time.Sleep(10 * time.Second)
		host.Close()
		f.stop()
		page := func(i int) string {
			return fmt.Sprintf("page %d on postgres vacuum tuning and the runbook an engineer follows", i)
		}
		if told := recordTells(t, record, 50, page); told != 50 {
			t.Errorf("the record written at the stop tells %d of the 50 reads; want all", told)
		}
	})
}

// recordTells restores the record of what was served at path, as a
// restart would, and returns how many of n texts, text(i), it tells as
// copies passed back by another server.
func recordTells(t *testing.T, path string, n int, text func(int) string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no record: %v", err)
	}
	var restored mcp.ServedLists
	if dropped, err := restored.Restore(data); err != nil || dropped != 0 {
		t.Fatalf("Restore of %d bytes: %d dropped, %v", len(data), dropped, err)
	}
	told := 0
	for i := range n {
		if c := restored.ServedBack(resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d", i)}, []resource.Content{{Text: text(i)}}); len(c.Of) > 0 {
			told++
		}
	}
	return told
}
