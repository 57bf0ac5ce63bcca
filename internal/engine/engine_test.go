package engine_test

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

func newEngine(t testing.TB, dataDir string, servers map[string]*mcpsdk.Server, readTimeout time.Duration) *engine.Engine {
	t.Helper()
	return newEngineOpts(t, dataDir, servers, engine.Options{ReadTimeout: readTimeout})
}

func newEngineOpts(t testing.TB, dataDir string, servers map[string]*mcpsdk.Server, opts engine.Options) *engine.Engine {
	t.Helper()
	if opts.Config == nil {
		opts.Config = &config.Config{DataDir: dataDir}
		for name := range servers {
			opts.Config.Servers = append(opts.Config.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused"})
		}
	}
	opts.InMemory = dataDir == ""
	if opts.Embedder == nil {
		opts.Embedder = &indextest.BagEmbedder{}
	}
	if opts.Dial == nil {
		opts.Dial = func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, servers[s.Name]) }
	}
	eng, err := engine.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return eng
}

func TestSlowReadFailsAloneWithinReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
		slow := mcptest.NewServer(nil, nil)
		for _, u := range []string{"doc://slow-architecture", "doc://slow-architecture-2", "doc://slow-architecture-3"} {
			slow.AddResource(&mcpsdk.Resource{URI: u, Name: "architecture slow"},
				func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					<-ctx.Done() // never answers
					return nil, ctx.Err()
				})
		}
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv, "slow": slow}, 5*time.Second)
		start := time.Now()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < 5*time.Second || el > 6*time.Second {
			t.Errorf("Assemble took %v, want one 5s read timeout for the three silent resources", el)
		}
		timedOut, skipped := 0, 0
		for _, o := range res.Omitted {
			if o.Server != "slow" {
				continue
			}
			switch {
			case o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, "skipped"):
				skipped++
			case o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, "no answer within 5s"):
				timedOut++
			default:
				t.Errorf("slow resource omitted as %+v", o)
			}
		}
		if timedOut != 1 || skipped != 2 {
			t.Errorf("timed out %d, skipped %d; want 1 and 2", timedOut, skipped)
		}
		if len(res.Items) != 1 || res.Items[0].URI != "doc://fast-architecture" {
			t.Errorf("items = %+v, want the fast resource", res.Items)
		}

		// The next answers wait for the slow server only SlowReadTimeout.
		for range 3 {
			start = time.Now()
			res, err = eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el != engine.DefaultSlowReadTimeout {
				t.Errorf("Assemble during the slow spell took %v, want %v", el, engine.DefaultSlowReadTimeout)
			}
			if len(res.Items) != 1 || res.Items[0].URI != "doc://fast-architecture" {
				t.Errorf("items = %+v, want the fast resource", res.Items)
			}
		}
		// The spell's background probe, with the full timeout, timed out
		// too: the spell goes on past its minute, and requests still wait
		// only SlowReadTimeout.
		time.Sleep(engine.DefaultSlowFor)
		start = time.Now()
		if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500}); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != engine.DefaultSlowReadTimeout {
			t.Errorf("Assemble after the spell's minute took %v, want %v: its probe timed out", el, engine.DefaultSlowReadTimeout)
		}
	})
}

func TestRemovedServerIsDroppedFromThePersistentIndex(t *testing.T) {
	dir := t.TempDir()
	a := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	b := mcptest.NewServer(map[string]string{"doc://b": "beta"}, nil)
	eng := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a, "b": b}, 0)
	if hits, _ := eng.Search(t.Context(), engine.SearchRequest{Query: "beta"}); len(hits) == 0 {
		t.Fatal("b not indexed")
	}
	eng.Close()

	eng2 := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a}, 0)
	hits, err := eng2.Search(t.Context(), engine.SearchRequest{Query: "beta alpha", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Key() == (resource.Key{Server: "b", URI: "doc://b"}) {
			t.Errorf("descriptor of server b, no longer configured, still returned: %+v", h)
		}
	}
	if len(hits) != 1 {
		t.Errorf("hits = %+v, want only a's descriptor", hits)
	}
}

func TestOneShotLimitedToSomeServersKeepsTheOthers(t *testing.T) {
	dir := t.TempDir()
	a := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	b := mcptest.NewServer(map[string]string{"doc://b": "beta"}, nil)
	eng := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a, "b": b}, 0)
	eng.Close()

	// Like "assemble --server a": only a is configured for this run.
	only := newEngineOpts(t, dir, map[string]*mcpsdk.Server{"a": a}, engine.Options{KeepOtherServers: true})
	if hits, _ := only.Search(t.Context(), engine.SearchRequest{Query: "beta"}); len(hits) != 1 || hits[0].Server != "a" {
		t.Errorf("search scoped to configured servers returned %+v, want only a's descriptor", hits)
	}
	only.Close()

	again := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a, "b": b}, 0)
	st := again.Servers()
	for _, s := range st {
		if s.Server == "b" && s.Resources != 1 {
			t.Errorf("b has %d resources after a run limited to a; want its descriptor kept", s.Resources)
		}
	}
}

func TestSecondProcessOnTheSameDataDirUsesMemory(t *testing.T) {
	dir := t.TempDir()
	a := mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)
	first := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a}, 0)
	_ = first
	// The lock is per open file description, so a second engine in this
	// process contends exactly as a second process would.
	b := mcptest.NewServer(map[string]string{"doc://b": "beta"}, nil)
	cfg := &config.Config{DataDir: dir, Servers: []config.Server{{Name: "b", Transport: config.TransportStdio, Command: "unused"}}}
	if _, err := engine.New(t.Context(), engine.Options{Config: cfg, Embedder: &indextest.BagEmbedder{}}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second daemon on a locked data_dir: err = %v, want an in-use error", err)
	}
	second := newEngineOpts(t, dir, map[string]*mcpsdk.Server{"b": b}, engine.Options{SharedDataDir: true})
	if hits, _ := second.Search(t.Context(), engine.SearchRequest{Query: "beta"}); len(hits) != 1 {
		t.Fatalf("second engine does not serve: %+v", hits)
	}
	// The first engine's persisted descriptors were not pruned by the second.
	if hits, _ := first.Search(t.Context(), engine.SearchRequest{Query: "alpha"}); len(hits) != 1 {
		t.Errorf("first engine lost its descriptors: %+v", hits)
	}
	second.Close()
	first.Close()
	third := newEngine(t, dir, map[string]*mcpsdk.Server{"a": a}, 0)
	for _, s := range third.Servers() {
		if s.Server == "a" && s.Resources != 1 {
			t.Errorf("persisted index damaged: %+v", s)
		}
	}
}

func TestNoSyncedServerIsUnavailable(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{{Name: "down", Transport: config.TransportStdio, Command: "unused"}}}
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg, ShowServerText: true, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Dial: func(config.Server) ctxsync.DialFunc {
			return func(context.Context, *mcp.Options) (*mcp.Session, error) {
				return nil, errors.New("connection refused")
			}
		},
		Mirror: func(o *ctxsync.Options) { o.MinBackoff, o.MaxBackoff = time.Hour, time.Hour },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	defer func() { cancel(); wg.Wait(); eng.Close() }()
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 10})
	if !errors.Is(err, engine.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want ErrUnavailable naming the server's error", err)
	}
}

func TestPagedListMirroredAndListChangedFoundBySearch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		docs := map[string]string{}
		for _, n := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"} {
			docs["doc://"+n] = n
		}
		srv := mcptest.NewServer(docs, &mcpsdk.ServerOptions{PageSize: 3}) // 3 pages
		var rec mcptest.Recorder
		srv.AddReceivingMiddleware(rec.Middleware())
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv}, 0)
		st := eng.Servers()[0]
		if st.Resources != 7 || !st.ListComplete || st.State != ctxsync.StateReady {
			t.Fatalf("after the first sync: %+v; want 7 resources, complete, ready", st)
		}
		if lists := rec.Count("resources/list"); lists != 3 {
			t.Errorf("%d resources/list requests for 7 resources at 3 per page, want 3", lists)
		}

		t0 := time.Now()
		mcptest.AddText(srv, "doc://architecture", "architecture", "how the system is organised")
		time.Sleep(ctxsync.DefaultDebounce + 50*time.Millisecond) // fake time: the debounce window plus the SDK's notification delay
		synctest.Wait()
		hits, err := eng.Search(t.Context(), engine.SearchRequest{Query: "architecture", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].URI != "doc://architecture" {
			t.Errorf("Search %v after list_changed = %+v, want doc://architecture", time.Since(t0), hits)
		}
	})
}

// TestIndexContentFalseReadsNothingAfterSync checks the per-server switch:
// a server configured with index_content: false is ranked by descriptors
// alone, and the content pass does not read it.
func TestIndexContentFalseReadsNothingAfterSync(t *testing.T) {
	on := mcptest.NewServer(map[string]string{"doc://a": "walrus"}, nil)
	off := mcptest.NewServer(map[string]string{"doc://b": "walrus"}, nil)
	var rec mcptest.Recorder
	off.AddReceivingMiddleware(rec.Middleware())
	cfg := &config.Config{Servers: []config.Server{
		{Name: "off", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true},
		{Name: "on", Transport: config.TransportStdio, Command: "unused"},
	}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"on": on, "off": off}, engine.Options{Config: cfg})
	got := map[string]int{}
	for _, s := range eng.Servers() {
		got[s.Server] = s.Contents
	}
	if got["on"] != 1 || got["off"] != 0 {
		t.Errorf("contents indexed = %v, want on:1 off:0", got)
	}
	if n := rec.Count("resources/read"); n != 0 {
		t.Errorf("server with index_content: false was read %d times during sync", n)
	}
}

// A server that answers every read just inside the read timeout never lets
// one time out, so it never started a slow spell: every request that read
// it waited that long, holding its admission turn, as for a hung server
// (ten callers querying every server kept a caller of another server
// refused as busy for as long as they went on). A read answered after more
// than a quarter of the read timeout starts a spell as a timeout does.
func TestLateAnswersStartASlowSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
		late := mcptest.NewServer(nil, nil)
		late.AddResource(&mcpsdk.Resource{URI: "doc://late-architecture", Name: "architecture late"},
			func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				select {
				case <-time.After(4 * time.Second): // inside the 5 s timeout
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "late notes on the architecture"}}}, nil
			})
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv, "late": late}, 5*time.Second)
		start := time.Now()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500})
		if err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != 4*time.Second {
			t.Errorf("first Assemble took %v, want the late server's 4s", el)
		}
		if len(res.Items) != 2 {
			t.Errorf("first Assemble: %d items, want both (the late answer is used)", len(res.Items))
		}
		for range 3 {
			start = time.Now()
			if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500}); err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el != engine.DefaultSlowReadTimeout {
				t.Errorf("Assemble after a late answer took %v, want the slow spell's %v", el, engine.DefaultSlowReadTimeout)
			}
		}
	})
}

// A read that takes long because it is large is not a slow server: past
// the lateness of one read (7.5 s of the default 30 s), an answer of 64 KiB
// or more a second starts no spell, so every request still waits for it
// (an honest server answering 1 MB in 10 s lost its results for a minute
// at a time under a stricter rule). What such a server can hold is bounded
// by the slow-read places instead (TestSlowReadsOfOneServerHoldFewTurns).
func testLargeLateAnswersStartNoSlowSpell(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		after time.Duration
		want  []time.Duration // how long each Assemble takes
	}{
		{"4 MB after 9 s", 4 << 20, 9 * time.Second, []time.Duration{9 * time.Second, 9 * time.Second, 9 * time.Second}},
		{"1 MB after 10 s", 1 << 20, 10 * time.Second, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second}},
		{"2 MB after 28 s", 2 << 20, 28 * time.Second, []time.Duration{28 * time.Second, 28 * time.Second, 28 * time.Second}},
		{"100 KB after 10 s", 100 << 10, 10 * time.Second, []time.Duration{10 * time.Second, engine.DefaultSlowReadTimeout, engine.DefaultSlowReadTimeout}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
				late := mcptest.NewServer(nil, nil)
				text := strings.Repeat("late notes on the architecture\n", tc.size/31)
				late.AddResource(&mcpsdk.Resource{URI: "doc://late-architecture", Name: "architecture late"},
					func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						select {
						case <-time.After(tc.after):
						case <-ctx.Done():
							return nil, ctx.Err()
						}
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
					})
				eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv, "late": late}, 0)
				for i, want := range tc.want {
					start := time.Now()
					if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500}); err != nil {
						t.Fatal(err)
					}
					if el := time.Since(start); el != want {
						t.Errorf("Assemble %d took %v, want %v", i, el, want)
					}
				}
			})
		})
	}
}

// At most slowReadPlaces (2 per server by default) requests wait on one server's
// reads past the slow-read timeout at once: the others stop that read
// after it and answer without the server. A server answering every read
// after 25 s with 2 MB (enough to pass as merely large) held every
// caller's turn for 25 s.
func TestSlowReadsOfOneServerHoldFewTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
		late := mcptest.NewServer(nil, nil)
		text := strings.Repeat("late notes on the architecture\n", 2<<20/31)
		late.AddResource(&mcpsdk.Resource{URI: "doc://late-architecture", Name: "architecture late"},
			func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				select {
				case <-time.After(25 * time.Second):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
			})
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv, "late": late}, 0)
		const callers = 5
		took := make(chan time.Duration, callers)
		stopped := make(chan bool, callers)
		for range callers {
			go func() {
				start := time.Now()
				res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500})
				if err != nil {
					t.Error(err)
				}
				took <- time.Since(start)
				stopped <- omittedFor(res, "doc://late-architecture", "other requests were waiting on reads past")
			}()
		}
		var long, short, cut int
		for range callers {
			// Stopped: the slow-read timeout, and a tenth of it more.
			switch d := <-took; d {
			case 25 * time.Second:
				long++
			case engine.DefaultSlowReadTimeout * 11 / 10:
				short++
			default:
				t.Errorf("an Assemble took %v, want 25s or %v", d, engine.DefaultSlowReadTimeout*11/10)
			}
			if <-stopped {
				cut++
			}
		}
		if long != 2 || short != callers-2 || cut != callers-2 {
			t.Errorf("%d Assembles waited for the slow server, %d stopped at the slow-read timeout (%d said why); want 2 and %d", long, short, cut, callers-2)
		}
	})
}

// A request's reads share its slow-read time: once they have taken the
// slow-read timeout in all, a further read waits only with a place (2 per
// server, 4 in all by default). Servers answering every read just under
// the timeout (1.9 s) held each request for every read they made, with
// no place needed, and several such servers held every turn.
func TestReadsJustUnderTheSlowReadTimeoutHoldFewTurns(t *testing.T) {
	for _, tc := range []struct{ servers, reads, callers, places int }{{1, 3, 5, 2}, {4, 2, 8, 4}} {
		t.Run(fmt.Sprintf("%d servers", tc.servers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				servers := map[string]*mcpsdk.Server{"s": mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)}
				for i := range tc.servers {
					late := mcptest.NewServer(nil, nil)
					for k := range tc.reads {
						late.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://late%d-architecture-%d", i, k), Name: "architecture late"},
							func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
								select {
								case <-time.After(1900 * time.Millisecond):
								case <-ctx.Done():
									return nil, ctx.Err()
								}
								return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "late notes on the architecture"}}}, nil
							})
					}
					servers[fmt.Sprintf("late%d", i)] = late
				}
				eng := newEngine(t, "", servers, 0)
				took := make(chan time.Duration, tc.callers)
				for range tc.callers {
					go func() {
						start := time.Now()
						res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 2000})
						if err != nil {
							t.Error(err)
						} else if !slices.ContainsFunc(res.Items, func(it selector.Item) bool { return it.URI == "doc://fast-architecture" }) {
							t.Errorf("an answer without the fast server's item: %d items, omitted %+v", len(res.Items), res.Omitted)
						}
						took <- time.Since(start)
					}()
				}
				// Past its slow-read time without a place, a request's
				// reads get the slow-read timeout once more in all (and
				// 20 ms each when that is spent).
				short := 2*engine.DefaultSlowReadTimeout + time.Duration(tc.servers)*100*time.Millisecond
				long := 0
				var all []time.Duration
				for range tc.callers {
					d := <-took
					all = append(all, d)
					if d > short {
						long++
					}
				}
				t.Logf("Assembles took %v", all)
				if long == 0 || long > tc.places {
					t.Errorf("%d of %d Assembles read for longer than %v, want 1 to %d", long, tc.callers, short, tc.places)
				}
			})
		})
	}
}

// An honest server answering each read in a few hundred milliseconds
// keeps its items when many callers read it at once (all of them), or
// after a hostile server has used up their slow-read time (half): past
// it, a read gets twice what the server usually takes. With a flat
// 200 ms, such a server lost half its items under 8 callers, and all of
// them beside the hostile one.
func TestHonestServersKeepTheirItemsUnderConcurrentCallers(t *testing.T) {
	for _, hostile := range []bool{false, true} {
		t.Run(fmt.Sprintf("hostile %v", hostile), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				honest := mcptest.NewServer(nil, nil)
				const n = 12
				for k := range n {
					honest.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://honest-%d", k), Name: "architecture notes"},
						func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							select {
							case <-time.After(300 * time.Millisecond):
							case <-ctx.Done():
								return nil, ctx.Err()
							}
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "architecture notes, part " + req.Params.URI}}}, nil
						})
				}
				servers := map[string]*mcpsdk.Server{"honest": honest}
				var pins []resource.Key
				if hostile {
					hang := mcptest.NewServer(nil, nil)
					hang.AddResource(&mcpsdk.Resource{URI: "doc://hang", Name: "architecture"},
						func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							<-ctx.Done()
							return nil, ctx.Err()
						})
					servers["hang"] = hang
					pins = []resource.Key{{Server: "hang", URI: "doc://hang"}}
				}
				eng := newEngine(t, "", servers, 0)
				req := engine.AssembleRequest{Query: "architecture notes", TokenBudget: 8000, ValueFloor: new(float64), Pinned: pins}
				count := func(res *engine.AssembleResult) int {
					k := 0
					for _, it := range res.Items {
						if strings.HasPrefix(it.URI, "doc://honest-") {
							k++
						}
					}
					return k
				}
				// A request before them, as a running daemon has served:
				// what the honest server takes is known.
				if _, err := eng.Assemble(t.Context(), req); err != nil {
					t.Fatal(err)
				}
				// Beside the hostile server, whose read takes the
				// request's first 2 s (in a slow spell now), the rest of
				// its slow-read time and its grace hold half the items.
				want := n
				if hostile {
					want = n / 2
				}
				const callers = 8
				got := make(chan int, callers)
				for range callers {
					go func() {
						res, err := eng.Assemble(t.Context(), req)
						if err != nil {
							t.Error(err)
							got <- 0
							return
						}
						got <- count(res)
					}()
				}
				for range callers {
					if k := <-got; k < want {
						t.Errorf("an Assemble among %d got %d of the honest server's %d items, want at least %d", callers, k, n, want)
					}
				}
			})
		})
	}
}

// A copy from the cache is no answer from the server: reading one must not
// end a slow spell, or a server that answered one read late (cached under
// its subscription) and makes every other read wait would get the full
// read timeout again at every request.
func TestCachedReadsDoNotEndASlowSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
		late := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
			Capabilities:       &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{Subscribe: true, ListChanged: true}},
			SubscribeHandler:   func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		})
		// The first is read in time for the read timeout (5 s) and cached;
		// the second never is, even by the probe in the background that
		// has the whole timeout, so each request reads it (cached, it
		// would take no time at all).
		for u, after := range map[string]time.Duration{"doc://late-architecture": 4 * time.Second, "doc://late-architecture-notes": 6 * time.Second} {
			late.AddResource(&mcpsdk.Resource{URI: u, Name: "architecture late"},
				func(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					select {
					case <-time.After(after):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "late notes on the architecture"}}}, nil
				})
		}
		eng := newEngine(t, "", map[string]*mcpsdk.Server{"s": srv, "late": late}, 5*time.Second)
		if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500}); err != nil {
			t.Fatal(err)
		}
		// The clock stands still in the bubble: a copy cached at the
		// instant the next request starts would count as its answer.
		time.Sleep(time.Second)
		for range 3 {
			start := time.Now()
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500})
			if err != nil {
				t.Fatal(err)
			}
			if el := time.Since(start); el != engine.DefaultSlowReadTimeout {
				t.Errorf("Assemble took %v, want the slow spell's %v (items %d, omitted %+v)", el, engine.DefaultSlowReadTimeout, len(res.Items), res.Omitted)
			}
		}
	})
}

// A server whose resources rank first and whose reads fail or answer
// empty does not take every place of a request: each such candidate is
// replaced by the next ranked one, and the answer holds the other
// server's texts, with the failed ones listed as omitted.
func TestFailedReadsAreReplacedByTheNextCandidates(t *testing.T) {
	// "sticky": one read brings a character, every other fails, so the
	// server is not one none of whose reads brought anything.
	// "binary", "user" and "duplicate" come to nothing whatever the budget
	// (a binary MIME type, an audience of the user only, every read the
	// same text) without a read failing.
	// "pointer": each is too large for the budget and of a type never cut
	// into sections, so it can only be a pointer: kept in the answer, but
	// replaced all the same.
	for _, mode := range []string{"empty", "error", "whitespace", "sticky", "binary", "user", "duplicate", "pointer"} {
		t.Run(mode, func(t *testing.T) {
			bad := mcptest.NewServer(nil, nil)
			for i := range 60 { // more than every candidate ranked, replacements included
				uri := fmt.Sprintf("doc://bad/%d", i)
				r := &mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("river mountain notes %d river mountain", i),
					Description: "river mountain river mountain notes"}
				switch mode {
				case "binary":
					r.MIMEType = "image/png"
				case "user":
					r.Annotations = &mcpsdk.Annotations{Audience: []mcpsdk.Role{"user"}}
				case "pointer":
					r.MIMEType, r.Size = "application/x-custom", 10<<20
				}
				bad.AddResource(r,
					func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						switch {
						case mode == "error", mode == "sticky" && i > 0:
							return nil, errors.New("unavailable")
						case mode == "whitespace":
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: " \n\t \n"}}}, nil
						case mode == "sticky":
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "x"}}}, nil
						case mode == "duplicate", mode == "binary", mode == "user":
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "river mountain notes, the same for every one\n"}}}, nil
						}
						return &mcpsdk.ReadResourceResult{}, nil
					})
			}
			docs := map[string]string{}
			for i := range 20 {
				docs[fmt.Sprintf("doc://ok/%d", i)] = fmt.Sprintf("notes %d on the river and the mountain trail\n", i)
			}
			eng := newEngine(t, "", map[string]*mcpsdk.Server{"bad": bad, "ok": mcptest.NewServer(docs, nil)}, 5*time.Second)
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "river mountain notes", TokenBudget: 2000})
			if err != nil {
				t.Fatal(err)
			}
			ok, failed := 0, 0
			for _, it := range res.Items {
				switch {
				case it.Server == "ok" && it.Form != selector.FormPointer:
					ok++
				case it.Server == "bad" && it.Form == selector.FormPointer:
					failed++ // kept as a pointer
				}
			}
			for _, o := range res.Omitted {
				if o.Server == "bad" && (o.Read || mode == "binary" || mode == "user") {
					failed++
				}
			}
			if ok < 5 || failed == 0 {
				t.Errorf("%d items from the honest server, %d failed reads listed; want at least 5 and the failures (%d items, %d omitted)", ok, failed, len(res.Items), len(res.Omitted))
			}
			if res.Reads > 3*engine.CandidatesFor(2000) {
				t.Errorf("%d reads; want at most %d", res.Reads, 3*engine.CandidatesFor(2000))
			}
		})
	}
}

// The servers whose candidates come to nothing may be several: each is
// ranked out as it turns up, and passed over after two reads that brought
// nothing, so up to eight such servers whose descriptors rank first (ten
// or more each) cannot take the places one after another, nor use up
// max_reads. With
// the first alone ranked out, the next filled the ranking made without it,
// and the honest server got nothing.
func TestServersComingToNothingOneAfterAnotherAreAllReplaced(t *testing.T) {
	for _, c := range []struct{ k, per int }{{2, 30}, {3, 20}, {4, 15}, {5, 20}, {6, 20}, {8, 20}, {5, 10}} {
		k := c.k
		t.Run(fmt.Sprintf("%dx%d", c.k, c.per), func(t *testing.T) {
			servers := map[string]*mcpsdk.Server{}
			for j := range k {
				bad := mcptest.NewServer(nil, nil)
				for i := range c.per {
					uri := fmt.Sprintf("doc://bad%d/%d", j, i)
					bad.AddResource(&mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("river mountain notes %d river mountain", i), Description: "river mountain river mountain notes"},
						func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							return &mcpsdk.ReadResourceResult{}, nil
						})
				}
				servers[fmt.Sprintf("bad%d", j)] = bad
			}
			docs := map[string]string{}
			for i := range 20 {
				docs[fmt.Sprintf("doc://ok/%d", i)] = fmt.Sprintf("notes %d on the river and the mountain trail\n", i)
			}
			servers["ok"] = mcptest.NewServer(docs, nil)
			eng := newEngine(t, "", servers, 5*time.Second)
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "river mountain notes", TokenBudget: 2000})
			if err != nil {
				t.Fatal(err)
			}
			ok := 0
			for _, it := range res.Items {
				if it.Server == "ok" {
					ok++
				}
			}
			if ok < 5 {
				t.Errorf("%d servers coming to nothing: %d honest items of %d (%d reads); want at least 5", k, ok, len(res.Items), res.Reads)
			}
		})
	}
}

// A server most of whose first candidates come to nothing (reads failing
// for now, images, resources for the user only) still gets its next ones
// when no other server has any: its places went to nobody, and an answer
// of 4 items of 20 matching held less than the budget allowed.
func TestAServerAloneIsReadPastWhatCameToNothing(t *testing.T) {
	for _, mode := range []string{"failing", "images"} {
		t.Run(mode, func(t *testing.T) {
			srv := mcptest.NewServer(nil, nil)
			for i := range 20 {
				uri := fmt.Sprintf("doc://notes/%d", i)
				r := &mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("river mountain notes %d", i), MIMEType: "text/plain"}
				if i < 6 {
					// The first six rank first and come to nothing.
					r.Name = fmt.Sprintf("river mountain notes river mountain %d", i)
					switch {
					case mode == "images" && i%2 == 0:
						r.MIMEType = "image/png"
					case mode == "images":
						r.Annotations = &mcpsdk.Annotations{Audience: []mcpsdk.Role{"user"}}
					}
				}
				srv.AddResource(r, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					if mode == "failing" && i < 6 {
						return nil, errors.New("502 bad gateway")
					}
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: fmt.Sprintf("notes %d on the river and the mountain trail\n", i)}}}, nil
				})
			}
			eng := newEngine(t, "", map[string]*mcpsdk.Server{"notes": srv}, 5*time.Second)
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "river mountain notes", TokenBudget: 2000})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Items); n < 8 {
				t.Errorf("%d items of the 14 that bring something; want at least 8", n)
			}
		})
	}
}

// An honest server whose two best pages cannot be read (a permission
// revoked, a rate limit) still gives the answer its other pages; a second
// server with weaker matches does not take their places. Its later
// candidates were passed over after those two reads.
func TestTwoFailedReadsDoNotPassAnHonestServerOver(t *testing.T) {
	docs := mcptest.NewServer(nil, nil)
	for i := range 20 {
		uri := fmt.Sprintf("doc://docs/%d", i)
		name := fmt.Sprintf("kubernetes deployment rollback procedure, step %d of the runbook", i)
		if i < 2 {
			name = "kubernetes deployment rollback procedure kubernetes deployment rollback procedure" // ranked first
		}
		docs.AddResource(&mcpsdk.Resource{URI: uri, Name: name, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			if i < 2 {
				return nil, errors.New("403 forbidden")
			}
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: fmt.Sprintf("step %d of rolling back a kubernetes deployment\n", i)}}}, nil
		})
	}
	wiki := map[string]string{}
	for i := range 20 {
		wiki[fmt.Sprintf("doc://wiki/%d", i)] = fmt.Sprintf("cluster admin page %d, on deployment\n", i)
	}
	eng := newEngine(t, "", map[string]*mcpsdk.Server{"docs": docs, "wiki": mcptest.NewServer(wiki, nil)}, 5*time.Second)
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "kubernetes deployment rollback procedure", TokenBudget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range res.Items {
		if it.Server == "docs" {
			n++
		}
	}
	if n < 8 {
		t.Errorf("%d items from the server with the best pages (%d items in all); want at least 8", n, len(res.Items))
	}
}

// Servers that answer the first read of a request and fail the rest are
// passed over once most of their reads bring nothing: eight of them, their
// descriptors ranked first, used up max_reads one round each, and the
// honest server's candidates were not read.
func TestServersAnsweringOnceThenFailingArePassedOver(t *testing.T) {
	res := hostileBesideHonest(t, 8, func(reads *atomic.Int32, uri string) (*mcpsdk.ReadResourceResult, error) {
		if reads.Add(1) > 1 {
			return nil, errors.New("401 unauthorized")
		}
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "river mountain notes\n"}}}, nil
	})
	// The honest candidates are reached (whether they then pass the
	// value floor beside the hostile servers' one answer each, whose
	// descriptors rank higher, is the ranking's business, not this
	// test's): before, max_reads ran out first.
	reached, refused := 0, 0
	for _, it := range res.Items {
		if it.Server == "ok" {
			reached++
		}
	}
	for _, o := range res.Omitted {
		if o.Server == "ok" {
			reached++
		}
		if strings.Contains(o.Detail, "max_reads") {
			refused++
		}
	}
	if reached < 5 || refused > 0 {
		t.Errorf("%d honest candidates reached, %d refused a read by max_reads (%d reads); want at least 5 and none", reached, refused, res.Reads)
	}
}

// Servers whose reads come to nothing without failing (blobs the request
// does not take; one text for every read) or that answer one duplicate per
// two failures add up as failing servers across rounds: three blob servers
// gave an empty answer in 40 reads, and eight of the second kind used up
// max_reads.
func TestServersComingToNothingWithoutFailingAddUp(t *testing.T) {
	for _, c := range []struct {
		mode string
		k    int
	}{{"blob", 3}, {"blob", 8}, {"same text", 3}, {"duplicate per two failures", 8}} {
		t.Run(fmt.Sprintf("%s x%d", c.mode, c.k), func(t *testing.T) {
			res := hostileBesideHonest(t, c.k, func(reads *atomic.Int32, uri string) (*mcpsdk.ReadResourceResult, error) {
				switch c.mode {
				case "blob":
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Blob: []byte("river mountain notes")}}}, nil
				case "same text":
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "river mountain notes, the same for every one\n"}}}, nil
				}
				if reads.Add(1)%3 != 0 {
					return nil, errors.New("401 unauthorized")
				}
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "river mountain notes, the same for every one\n"}}}, nil
			})
			// The honest server's candidates are reached and its best
			// packed (the value floor then keeps those near the best:
			// ranking by descriptors alone here, they are far apart).
			ok, reached, refused := 0, 0, 0
			for _, it := range res.Items {
				if it.Server == "ok" {
					ok++
					reached++
				}
			}
			for _, o := range res.Omitted {
				if o.Server == "ok" {
					reached++
					if strings.Contains(o.Detail, "max_reads") {
						refused++
					}
				}
			}
			if ok == 0 || reached < 5 || refused > 0 {
				for _, it := range res.Items {
					t.Log("item", it.Server, it.URI, it.Score)
				}
				for _, o := range res.Omitted {
					t.Log("omit", o.Server, o.URI, o.Reason, o.Detail)
				}
				t.Errorf("%d honest items, %d candidates reached, %d refused by max_reads (%d reads); want some, at least 5 and none", ok, reached, refused, res.Reads)
			}
		})
	}
}

// hostileBesideHonest assembles "river mountain notes" over k hostile
// servers, bad0…, each listing 20 descriptors that rank first and read by
// read (reads counts that server's reads), beside an honest server "ok"
// of 20 matching notes. No content pass runs: the request's reads are the
// servers' first.
func hostileBesideHonest(t *testing.T, k int, read func(reads *atomic.Int32, uri string) (*mcpsdk.ReadResourceResult, error)) *engine.AssembleResult {
	t.Helper()
	servers := map[string]*mcpsdk.Server{}
	for j := range k {
		bad := mcptest.NewServer(nil, nil)
		reads := new(atomic.Int32)
		for i := range 20 {
			uri := fmt.Sprintf("doc://bad%d/%d", j, i)
			bad.AddResource(&mcpsdk.Resource{URI: uri, Name: fmt.Sprintf("river mountain notes %d river mountain", i), Description: "river mountain river mountain notes"},
				func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					return read(reads, uri)
				})
		}
		servers[fmt.Sprintf("bad%d", j)] = bad
	}
	docs := map[string]string{}
	for i := range 20 {
		docs[fmt.Sprintf("doc://ok/%d", i)] = fmt.Sprintf("notes %d on the river and the mountain trail\n", i)
	}
	servers["ok"] = mcptest.NewServer(docs, nil)
	cfg := &config.Config{}
	for name := range servers {
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true})
	}
	eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg, ReadTimeout: 5 * time.Second})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "river mountain notes", TokenBudget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An honest server whose best pages cannot be read (a permission revoked
// on three of them, stubs with no text, a backend whose first reads after
// a restart fail) still gives the answer its other pages, ahead of a
// second server's weaker matches: passed over after those reads, it gets
// a probe read, and one that brings something takes it back. Three such
// pages gave the weaker server every place.
func TestAnHonestServerWhoseBestPagesFailIsProbed(t *testing.T) {
	for _, c := range []struct {
		mode        string
		bad         int
		broken, per int  // servers whose every read fails (a token expired), descriptors each
		wiki        bool // a server with weaker matches
	}{
		{"403", 3, 0, 0, true}, {"403", 4, 0, 0, true}, {"blank", 3, 0, 0, true},
		{"403", 1, 5, 20, true}, {"403", 1, 8, 20, true}, {"403", 3, 2, 20, true}, {"403", 3, 1, 40, false}, {"403", 2, 3, 20, true}, {"403", 1, 4, 20, false}, {"blank", 1, 4, 20, true},
		{"403", 2, 5, 20, false}, {"403", 2, 8, 20, false}, {"403", 2, 5, 20, true}, {"403", 2, 8, 20, true},
	} {
		t.Run(fmt.Sprintf("%s x%d beside %d broken", c.mode, c.bad, c.broken), func(t *testing.T) {
			servers := map[string]*mcpsdk.Server{}
			for j := range c.broken {
				servers[fmt.Sprintf("broken%d", j)] = rankedFirst(fmt.Sprintf("broken%d", j), c.per, func(context.Context) error {
					return errors.New("401 unauthorized")
				})
			}
			servers["docs"] = runbook(c.bad, func(i int) (string, error) {
				switch {
				case c.mode == "403" && i < c.bad:
					return "", errors.New("403 forbidden")
				case c.mode == "blank" && i < c.bad:
					return " \n", nil
				}
				return fmt.Sprintf("step %d of rolling back a kubernetes deployment\n", i), nil
			})
			if c.wiki {
				wiki := map[string]string{}
				for i := range 20 {
					wiki[fmt.Sprintf("doc://wiki/%d", i)] = fmt.Sprintf("cluster admin page %d, on deployment\n", i)
				}
				servers["wiki"] = mcptest.NewServer(wiki, nil)
			}
			eng := newEngine(t, "", servers, 5*time.Second)
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "kubernetes deployment rollback procedure", TokenBudget: 2000})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, it := range res.Items {
				if it.Server == "docs" {
					n++
				}
			}
			if n < 8 {
				for _, it := range res.Items {
					t.Log("item", it.Server, it.URI, it.Score)
				}
				for _, o := range res.Omitted {
					t.Log("omit", o.Server, o.URI, o.Reason, o.Detail)
				}
				t.Errorf("%d items from the server with the best pages (%d items in all, %d reads); want at least 8", n, len(res.Items), res.Reads)
			}
		})
	}
}

// Many servers answering their first read and failing the rest, their
// descriptors ranked first and taking turns in the ranking, cost two reads
// each once the request's reads that came to nothing reach a quarter of
// max_reads: at three or four each, twenty-four of them (their one answer
// taken by the content pass) used up max_reads, and the honest server's
// candidates were not read.
func TestManyServersAnsweringOnceThenFailingLeaveReads(t *testing.T) {
	for _, c := range []struct {
		k, budget int
		index     bool
	}{{16, 8000, false}, {20, 8000, false}, {16, 8000, true}, {16, 4000, true}, {16, 2000, true}, {20, 8000, true}} {
		k := c.k
		t.Run(fmt.Sprint(c), func(t *testing.T) {
			servers := map[string]*mcpsdk.Server{}
			for j := range k {
				bad := mcptest.NewServer(nil, nil)
				reads := new(atomic.Int32)
				for i := range 20 {
					uri := fmt.Sprintf("doc://bad%d/%d", j, i)
					// The i-th of every server ranks alike: the servers take turns.
					bad.AddResource(&mcpsdk.Resource{URI: uri, Name: "river mountain notes" + strings.Repeat(" trail", i), Description: "river mountain river mountain notes"},
						func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							if reads.Add(1) > 1 {
								return nil, errors.New("401 unauthorized")
							}
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: "river mountain notes from " + uri + "\n"}}}, nil
						})
				}
				servers[fmt.Sprintf("bad%d", j)] = bad
			}
			docs := map[string]string{}
			for i := range 20 {
				docs[fmt.Sprintf("doc://ok/%d", i)] = fmt.Sprintf("notes %d on the river and the mountain trail\n", i)
			}
			servers["ok"] = mcptest.NewServer(docs, nil)
			cfg := &config.Config{}
			for name := range servers {
				cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: !c.index})
			}
			eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg, ReadTimeout: 5 * time.Second})
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "river mountain notes", TokenBudget: c.budget})
			if err != nil {
				t.Fatal(err)
			}
			reached, refused := 0, 0
			for _, it := range res.Items {
				if it.Server == "ok" {
					reached++
				}
			}
			for _, o := range res.Omitted {
				if o.Server == "ok" {
					reached++
					if strings.Contains(o.Detail, "max_reads") {
						refused++
					}
				}
			}
			if reached < 5 || refused > 0 {
				t.Errorf("%d servers: %d honest candidates reached, %d refused a read by max_reads (%d reads); want at least 5 and none", k, reached, refused, res.Reads)
			}
		})
	}
}

// A server whose reads fail but one in four, which answers a text naming
// one of the task's words (lorem ipsum; a login page naming the product),
// its descriptors ranked first, gets probes and is forgiven each time one
// brings that text; what it brought must not set the value floor: one such
// text had every honest page fall under the floor.
func TestAServerGamingItsProbesDoesNotSetTheFloor(t *testing.T) {
	for _, c := range []struct {
		text   string
		k      int
		budget int
	}{
		{"lorem ipsum dolor sit amet procedure", 1, 8000},
		{"lorem ipsum dolor sit amet procedure", 4, 8000},
		{"Sign in to continue to the kubernetes dashboard", 1, 8000},
		{"Sign in to continue to the kubernetes dashboard", 2, 2000},
	} {
		t.Run(fmt.Sprintf("%.20s x%d budget %d", c.text, c.k, c.budget), func(t *testing.T) {
			servers := map[string]*mcpsdk.Server{}
			for j := range c.k {
				bad := mcptest.NewServer(nil, nil)
				reads := new(atomic.Int32)
				for i := range 20 {
					uri := fmt.Sprintf("doc://bad%d/%d", j, i)
					bad.AddResource(&mcpsdk.Resource{URI: uri, Name: "kubernetes deployment rollback procedure kubernetes deployment rollback procedure"},
						func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
							if reads.Add(1)%4 != 0 {
								return nil, errors.New("503 service unavailable")
							}
							return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: fmt.Sprintf("%s (%d)\n", c.text, reads.Load())}}}, nil
						})
				}
				servers[fmt.Sprintf("bad%d", j)] = bad
			}
			docs := map[string]string{}
			for i := range 20 {
				docs[fmt.Sprintf("doc://docs/%d", i)] = fmt.Sprintf("step %d of the kubernetes deployment rollback runbook: undo the rollout\n", i)
			}
			servers["docs"] = mcptest.NewServer(docs, nil)
			eng := newEngine(t, "", servers, 5*time.Second)
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "kubernetes deployment rollback procedure", TokenBudget: c.budget})
			if err != nil {
				t.Fatal(err)
			}
			n, floored := itemsFrom(res, "docs"), 0
			for _, o := range res.Omitted {
				if o.Server == "docs" && o.Reason == selector.OmitLowValue {
					floored++
				}
			}
			if n < 10 || floored > 0 {
				for _, it := range res.Items {
					t.Log("item", it.Server, it.URI, it.Score)
				}
				for _, o := range res.Omitted {
					t.Log("omit", o.Server, o.URI, o.Reason, o.Detail)
				}
				t.Errorf("%d honest items, %d under the value floor (%d items in all, %d reads); want at least 10 and none", n, floored, len(res.Items), res.Reads)
			}
		})
	}
}

// Servers answering each read late with an error, their descriptors ranked
// first, take their share of the request's read time and are then not
// read; they must not be probed either: their probes failed unread round
// after round, never counted, and an honest server whose best page
// answers 403 got no place (an empty answer). Once reads that came to
// nothing took half of the request's read time, a server that brought
// nothing gets short reads: eight such servers took all of it, a share
// each, and the honest server was never read.
func TestServersFailingLateAreNotProbed(t *testing.T) {
	for _, c := range []struct {
		k         int
		docsDelay time.Duration
		want      int
	}{
		{5, 0, 8}, {8, 0, 8},
		// An honest server answering in a while (1.5 s at the defaults),
		// not read before half the read time went, its best page a quick
		// 403: its reads get the slow-read timeout, not half of it, which
		// cut it every time; its share of lateness then allows it three.
		{4, 100 * time.Millisecond, 3},
	} {
		t.Run(fmt.Sprint(c.k, c.docsDelay), func(t *testing.T) {
			eng := lateServersBesideDocs(t, c.k, c.docsDelay)
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "kubernetes deployment rollback procedure", TokenBudget: 2000})
			if err != nil {
				t.Fatal(err)
			}
			if n := itemsFrom(res, "docs"); n < c.want {
				for _, o := range res.Omitted {
					t.Log("omit", o.Server, o.URI, o.Reason, o.Detail)
				}
				t.Errorf("%d items from the honest server (%d items in all, %d reads); want at least %d", n, len(res.Items), res.Reads, c.want)
			}
		})
	}
}

// lateServersBesideDocs returns an engine over k servers, late0…, whose
// descriptors rank first for "kubernetes deployment rollback procedure"
// and which answer each read with an error after 200 ms, beside an honest
// server "docs" of 20 runbook pages whose best answers 403, each read
// answered after docsDelay. Reads time out after 2 s (a server's reads in
// a request share 0.5 s of lateness: each late server is read twice, then
// cut; the request reads for 4 s), and after 150 ms in a slow spell. No
// content pass runs.
func lateServersBesideDocs(t *testing.T, k int, docsDelay time.Duration) *engine.Engine {
	t.Helper()
	servers := map[string]*mcpsdk.Server{}
	for j := range k {
		servers[fmt.Sprintf("late%d", j)] = rankedFirst(fmt.Sprintf("late%d", j), 20, func(ctx context.Context) error {
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
			}
			return errors.New("502 bad gateway")
		})
	}
	servers["docs"] = runbook(1, func(i int) (string, error) {
		time.Sleep(docsDelay)
		if i == 0 {
			return "", errors.New("403 forbidden")
		}
		return fmt.Sprintf("step %d of rolling back a kubernetes deployment\n", i), nil
	})
	cfg := &config.Config{}
	for name := range servers {
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true})
	}
	return newEngineOpts(t, "", servers, engine.Options{Config: cfg, ReadTimeout: 2 * time.Second, SlowReadTimeout: 150 * time.Millisecond})
}

// rankedFirst returns a server of n resources, doc://<name>/<i>, whose
// descriptors rank first for "kubernetes deployment rollback procedure"
// and whose every read fails with what fail returns (after it returns).
func rankedFirst(name string, n int, fail func(ctx context.Context) error) *mcpsdk.Server {
	srv := mcptest.NewServer(nil, nil)
	for i := range n {
		srv.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://%s/%d", name, i), Name: "kubernetes deployment rollback procedure kubernetes deployment rollback procedure"},
			func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return nil, fail(ctx)
			})
	}
	return srv
}

// runbook returns an honest server of 20 runbook pages, doc://docs/<i>,
// the first best of which rank with rankedFirst's descriptors; page i
// reads as read(i) returns (a text/plain text, or an error).
func runbook(best int, read func(i int) (string, error)) *mcpsdk.Server {
	docs := mcptest.NewServer(nil, nil)
	for i := range 20 {
		uri := fmt.Sprintf("doc://docs/%d", i)
		name := fmt.Sprintf("kubernetes deployment rollback procedure, step %d of the runbook", i)
		if i < best {
			name = "kubernetes deployment rollback procedure kubernetes deployment rollback procedure" // ranked first
		}
		docs.AddResource(&mcpsdk.Resource{URI: uri, Name: name, MIMEType: "text/plain"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			text, err := read(i)
			if err != nil {
				return nil, err
			}
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
		})
	}
	return docs
}

// itemsFrom returns how many of res's items come from server.
func itemsFrom(res *engine.AssembleResult, server string) int {
	n := 0
	for _, it := range res.Items {
		if it.Server == server {
			n++
		}
	}
	return n
}

// A server whose share of a request's read time went on answers that
// brought nothing (an error after a few seconds, every read) is read with
// the slow spell's short timeout by the requests that follow: each
// request paid each such server its share again (five of them, 37.5 s a
// query at the defaults).
func TestServersFailingLateAreReadShortNextTime(t *testing.T) {
	eng := lateServersBesideDocs(t, 3, 0)
	for n := range 2 {
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "kubernetes deployment rollback procedure", TokenBudget: 2000})
		if err != nil {
			t.Fatal(err)
		}
		spelled, lateReads := map[string]bool{}, 0
		for _, o := range res.Omitted {
			if strings.HasPrefix(o.Server, "late") && o.Read {
				lateReads++
				if strings.Contains(o.Detail, "has been slow") {
					spelled[o.Server] = true
				}
			}
		}
		if docs := itemsFrom(res, "docs"); docs < 8 {
			t.Errorf("request %d: %d items from the honest server; want at least 8", n+1, docs)
		}
		if n == 1 && len(spelled) != 3 {
			for _, o := range res.Omitted {
				t.Log("omit", o.Server, o.URI, o.Reason, o.Detail)
			}
			t.Errorf("second request: %d of the 3 late servers read with the slow spell's timeout (%d of their reads made); want all", len(spelled), lateReads)
		}
	}
}

// A background probe of a hung server lives no longer than the server's
// mirror: a reload taking the server out, and the daemon stopping, wait
// for the mirror's calls, and a probe's read held each for a whole read
// timeout (27 s past a 10 s stop grace; a token rotation queued behind
// the reload stayed unapplied as long).
func TestAProbeOfAHungServerEndsWithItsMirror(t *testing.T) {
	for _, how := range []string{"reload", "stop"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hung := make(chan struct{})
				defer close(hung)
				srv := mcptest.NewServer(map[string]string{"doc://fast-architecture": "fast notes on the architecture\n"}, nil)
				slow := mcptest.NewServer(nil, nil)
				slow.AddResource(&mcpsdk.Resource{URI: "doc://slow-architecture", Name: "architecture slow"},
					func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						<-hung // never answers, nor hears a cancellation
						return nil, errors.New("hung")
					})
				const readTO = 30 * time.Second
				servers := map[string]*mcpsdk.Server{"s": srv, "slow": slow}
				cfg := &config.Config{}
				for name := range servers {
					cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused"})
				}
				eng, err := engine.New(t.Context(), engine.Options{
					Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{}, ReadTimeout: readTO,
					Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, servers[s.Name]) },
				})
				if err != nil {
					t.Fatal(err)
				}
				defer eng.Close()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				ran := make(chan struct{})
				go func() { _ = eng.Run(ctx); close(ran) }()
				if err := eng.WaitReady(t.Context()); err != nil {
					t.Fatal(err)
				}
				// The first read times out and starts a slow spell; the
				// next Assemble, in it, starts a probe with the full timeout.
				for range 2 {
					if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500, Filter: engine.Filter{Servers: []string{"slow"}}}); err != nil {
						t.Fatal(err)
					}
				}
				synctest.Wait()
				start := time.Now()
				switch how {
				case "reload":
					keep := &config.Config{Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused"}}}
					if _, err := eng.Reload(t.Context(), keep); err != nil {
						t.Fatal(err)
					}
				case "stop":
					cancel()
					<-ran
				}
				if took := time.Since(start); took >= readTO/2 {
					t.Errorf("the %s took %v with a probe of the hung server reading; want it not to wait for the probe's %v timeout", how, took, readTO)
				}
			})
		})
	}
}

// A reload that stops no mirror (nothing changed, or a server added)
// does not wait for the requests in flight: reloads run one at a time,
// and one waiting on a slow request held back the next, and a token
// rotated by it, for as long (13–28 s).
func TestAReloadStoppingNoMirrorDoesNotWaitForRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hung := make(chan struct{})
		defer close(hung)
		slow := mcptest.NewServer(nil, nil)
		slow.AddResource(&mcpsdk.Resource{URI: "doc://slow-architecture", Name: "architecture slow"},
			func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				<-hung
				return nil, errors.New("hung")
			})
		servers := map[string]*mcpsdk.Server{
			"slow":  slow,
			"added": mcptest.NewServer(map[string]string{"doc://added": "added architecture notes"}, nil),
		}
		const readTO = 30 * time.Second
		server := func(name string) config.Server {
			return config.Server{Name: name, Transport: config.TransportStdio, Command: "unused"}
		}
		eng := newEngineOpts(t, "", servers, engine.Options{
			ReadTimeout: readTO,
			Config:      &config.Config{Servers: []config.Server{server("slow")}},
			Dial:        func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, servers[s.Name]) },
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = eng.Assemble(context.Background(), engine.AssembleRequest{Query: "architecture", TokenBudget: 500, Filter: engine.Filter{Servers: []string{"slow"}}})
		}()
		synctest.Wait() // the Assemble waits on its read
		for _, cfg := range []*config.Config{
			{Servers: []config.Server{server("slow")}},
			{Servers: []config.Server{server("slow"), server("added")}},
		} {
			start := time.Now()
			if _, err := eng.Reload(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("a reload to %d servers, stopping none, took %v with a request in flight; want no wait", len(cfg.Servers), took)
			}
		}
		select {
		case <-done:
			t.Fatal("the Assemble ended before the reloads; the test needs it in flight")
		default:
		}
		<-done
	})
}
