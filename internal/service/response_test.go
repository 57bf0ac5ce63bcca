package service_test

import (
	"context"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

func TestAssembleResponseSaysWhenAndHowEachItemWasFetched(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	res := &engine.AssembleResult{
		Result: selector.Result{Items: []selector.Item{
			{Candidate: selector.Candidate{Server: "s", URI: "doc://cached"}},
			{Candidate: selector.Candidate{Server: "s", URI: "doc://read"}},
			{Candidate: selector.Candidate{Server: "s", URI: "doc://ttl"}},
		}},
		Fetched: map[resource.Key]ctxsync.Fetch{
			{Server: "s", URI: "doc://cached"}: {At: at, Subscribed: true},
			{Server: "s", URI: "doc://read"}:   {At: at.Add(time.Second)},
			{Server: "s", URI: "doc://ttl"}:    {At: at, Expires: at.Add(time.Minute)},
		},
	}
	out := service.AssembleResponse(res, 100)
	if got := out.Items[0]; got.GetFreshness() != "subscription" || !got.GetFetchedAt().AsTime().Equal(at) || got.GetExpiresAt() != nil {
		t.Errorf("cached item: freshness %q fetched %v expires %v", got.GetFreshness(), got.GetFetchedAt().AsTime(), got.GetExpiresAt())
	}
	if got := out.Items[1]; got.GetFreshness() != "read" || !got.GetFetchedAt().AsTime().Equal(at.Add(time.Second)) || got.GetExpiresAt() != nil {
		t.Errorf("read item: freshness %q fetched %v expires %v", got.GetFreshness(), got.GetFetchedAt().AsTime(), got.GetExpiresAt())
	}
	if got := out.Items[2]; got.GetFreshness() != "ttl" || !got.GetFetchedAt().AsTime().Equal(at) || !got.GetExpiresAt().AsTime().Equal(at.Add(time.Minute)) {
		t.Errorf("ttl item: freshness %q fetched %v expires %v; want ttl until %v", got.GetFreshness(), got.GetFetchedAt().AsTime(), got.GetExpiresAt(), at.Add(time.Minute))
	}
}

// End to end: an upstream whose read results carry ttlMs and cacheScope
// "public" is read once for two Assembles, and both answers report the
// item as kept fresh by "ttl", with the first fetch's time and its expiry.
func TestAssembleReportsTTLFreshness(t *testing.T) {
	const ttl = time.Hour
	srv := mcptest.NewServer(map[string]string{"doc://a": "# Alpha\n\nThe alpha document.\n"}, &mcpsdk.ServerOptions{
		SetCacheable: func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
			if _, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.TTLMs, c.CacheScope = int(ttl.Milliseconds()), "public"
			}
		},
	})
	var rec mcptest.Recorder
	srv.AddReceivingMiddleware(rec.Middleware())
	cfg := &config.Config{Tokenizer: "cl100k_base", Servers: []config.Server{{Name: "docs", Transport: config.TransportStdio, Command: "unused"}}}
	eng, err := engine.New(t.Context(), engine.Options{
		Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{},
		Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, srv) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; eng.Close() })
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := eng.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	synced := rec.Count("resources/read") // the content pass's read
	assemble := func() *contextdv1.Item {
		t.Helper()
		res, err := eng.Assemble(wctx, engine.AssembleRequest{Query: "alpha", TokenBudget: 100, Pinned: []resource.Key{{Server: "docs", URI: "doc://a"}}})
		if err != nil {
			t.Fatal(err)
		}
		out := service.AssembleResponse(res, 100)
		if len(out.GetItems()) == 0 || out.GetItems()[0].GetUri() != "doc://a" {
			t.Fatalf("items = %v, want doc://a first", out.GetItems())
		}
		return out.GetItems()[0]
	}
	first, second := assemble(), assemble()
	for i, it := range []*contextdv1.Item{first, second} {
		fetched, expires := it.GetFetchedAt().AsTime(), it.GetExpiresAt().AsTime()
		if it.GetFreshness() != "ttl" || it.GetExpiresAt() == nil || expires.Sub(fetched) != ttl {
			t.Errorf("answer %d: freshness %q, fetched %v, expires %v; want ttl, expiring %v after the fetch", i+1, it.GetFreshness(), fetched, expires, ttl)
		}
	}
	if !second.GetFetchedAt().AsTime().Equal(first.GetFetchedAt().AsTime()) {
		t.Errorf("second answer fetched at %v, want the first fetch (%v)", second.GetFetchedAt().AsTime(), first.GetFetchedAt().AsTime())
	}
	if n := rec.Count("resources/read") - synced; n != 1 {
		t.Errorf("%d reads for two answers within the TTL, want 1", n)
	}
}

func TestAssembleRequestCarriesTheValueFloorOnlyWhenSet(t *testing.T) {
	if got := service.AssembleRequest(&contextdv1.AssembleRequest{Query: "q", TokenBudget: 10}); got.ValueFloor != nil {
		t.Errorf("unset value_floor became %v, want the daemon's default (nil)", *got.ValueFloor)
	}
	zero := 0.0
	if got := service.AssembleRequest(&contextdv1.AssembleRequest{Query: "q", TokenBudget: 10, ValueFloor: &zero}); got.ValueFloor == nil || *got.ValueFloor != 0 {
		t.Errorf("value_floor 0 (keep everything) was lost: %v", got.ValueFloor)
	}
}

func TestAssembleResponseCarriesFormValueAndLines(t *testing.T) {
	res := &engine.AssembleResult{Result: selector.Result{Items: []selector.Item{{
		Candidate: selector.Candidate{Server: "s", URI: "doc://big"}, Form: selector.FormSections, Value: 0.75,
		Contents: []selector.ItemContent{{Content: selector.Content{Text: "## Retries\n"}, Tokens: 3, Truncated: true, StartLine: 40, EndLine: 40}},
	}}}}
	it := service.AssembleResponse(res, 100).GetItems()[0]
	if it.GetForm() != "sections" || it.GetValue() != 0.75 || it.GetContents()[0].GetStartLine() != 40 || it.GetContents()[0].GetEndLine() != 40 {
		t.Fatalf("item %v", it)
	}
}

// A connected server that is still syncing says what it does.
func TestListServersResponseSaysWhatAServerDoes(t *testing.T) {
	resp := service.ListServersResponse([]engine.ServerStatus{{
		Status:    ctxsync.Status{Server: "s", State: ctxsync.StateConnecting, Activity: "indexing 812/1838"},
		Transport: "stdio",
	}})
	if got := resp.GetServers()[0].GetActivity(); got != "indexing 812/1838" {
		t.Errorf("activity %q, want indexing 812/1838", got)
	}
}

// Server info is the name and version, without a trailing space when the
// version is empty (a withheld server info has none).
func TestListServersResponseJoinsServerInfo(t *testing.T) {
	resp := service.ListServersResponse([]engine.ServerStatus{
		{Status: ctxsync.Status{Server: "a", ServerName: "files", ServerVersion: "1.2"}},
		{Status: ctxsync.Status{Server: "b", ServerName: "(withheld)"}},
	})
	for i, want := range []string{"files 1.2", "(withheld)"} {
		if got := resp.GetServers()[i].GetServerInfo(); got != want {
			t.Errorf("server info %q, want %q", got, want)
		}
	}
}
