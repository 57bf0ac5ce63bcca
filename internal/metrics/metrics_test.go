package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/metrics"
	"github.com/contextd/contextd/internal/metrics/metricstest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// TestMetricsMoveWithCalls runs an engine with the metrics as its observer
// against an in-memory server and a server that never connects, scrapes
// /metrics over HTTP, answers an Assemble and a Search, and scrapes again.
func TestMetricsMoveWithCalls(t *testing.T) {
	m := metrics.New()
	srv := mcptest.NewServer(map[string]string{
		"doc://architecture": "# Architecture\n\nThe walrus service is organised in layers.\n",
		"doc://billing":      "# Billing\n\nInvoices go out monthly.\n",
	}, &mcpsdk.ServerOptions{
		// Subscribed reads are cached, so a second read is a cache hit.
		SubscribeHandler:          func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil },
		SupportedProtocolVersions: []string{"2025-11-25"},
	})
	cfg := &config.Config{Servers: []config.Server{
		{Name: "broken", Transport: config.TransportStdio, Command: "unused"},
		{Name: "docs", Transport: config.TransportStdio, Command: "unused"},
	}}
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg, InMemory: true, Embedder: &indextest.BagEmbedder{}, Observer: m,
		Dial: func(s config.Server) ctxsync.DialFunc {
			if s.Name == "broken" {
				return func(context.Context, *mcp.Options) (*mcp.Session, error) { return nil, context.DeadlineExceeded }
			}
			return mcptest.Dial(t, s.Name, srv)
		},
		Mirror: func(o *ctxsync.Options) { o.MinBackoff, o.MaxBackoff = time.Hour, time.Hour },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Watch(eng)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(m.Handler(false))
	defer web.Close()
	url := web.URL + "/metrics"

	before := metricstest.Scrape(t, url)
	for key, want := range map[string]float64{
		metricstest.Key("contextd_server_state", "server", "docs", "state", "ready"):                                      1,
		metricstest.Key("contextd_server_state", "server", "docs", "state", "failed"):                                     0,
		metricstest.Key("contextd_server_state", "server", "broken", "state", "failed"):                                   1,
		metricstest.Key("contextd_server_resources", "server", "docs"):                                                    2,
		metricstest.Key("contextd_index_descriptors"):                                                                     2,
		metricstest.Key("contextd_content_index_texts"):                                                                   2,
		metricstest.Key("contextd_syncs_total", "server", "docs", "result", "ok"):                                         1,
		metricstest.Key("contextd_upstream_requests_total", "server", "docs", "method", "resources/list", "result", "ok"): 1,
		metricstest.Key("contextd_upstream_requests_total", "server", "docs", "method", "resources/read", "result", "ok"): 2, // the content pass
		metricstest.Key("contextd_config_last_reload_successful"):                                                         1,
	} {
		if got, ok := before[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	if before[metricstest.Key("contextd_content_index_bytes")] <= 0 {
		t.Errorf("contextd_content_index_bytes = %v, want the texts' size", before[metricstest.Key("contextd_content_index_bytes")])
	}
	if _, ok := before[metricstest.Key("contextd_embedding_queue_passages")]; !ok {
		t.Error("contextd_embedding_queue_passages missing")
	}
	if before[metricstest.Key("contextd_server_last_sync_timestamp_seconds", "server", "docs")] < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Error("docs' last sync timestamp is not recent")
	}
	if _, ok := before[metricstest.Key("go_goroutines")]; !ok {
		t.Error("Go runtime metrics missing")
	}

	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "how is the walrus service organised", TokenBudget: 400})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: "invoices"}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: " "}); err == nil {
		t.Fatal("empty search succeeded")
	}
	m.GRPC("/contextd.v1.ContextService/Assemble", codes.OK, time.Millisecond)
	m.GRPCRefused("busy")
	m.Reloaded(context.Canceled)

	after := metricstest.Scrape(t, url)
	delta := func(key string) float64 { return after[key] - before[key] }
	reads := metricstest.Key("contextd_upstream_requests_total", "server", "docs", "method", "resources/read", "result", "ok")
	if got := delta(reads); got != float64(res.Reads) || got < 1 {
		t.Errorf("reads counted %v, want the Assemble's %d", got, res.Reads)
	}
	if got := delta(metricstest.Key("contextd_read_cache_requests_total", "server", "docs", "result", "miss")); got != float64(res.Reads) {
		t.Errorf("cache misses counted %v, want %d", got, res.Reads)
	}
	for key, want := range map[string]float64{
		metricstest.Key("contextd_request_duration_seconds_count", "method", "assemble", "result", "ok"):               1,
		metricstest.Key("contextd_request_duration_seconds_count", "method", "search", "result", "ok"):                 1,
		metricstest.Key("contextd_request_duration_seconds_count", "method", "search", "result", "error"):              1,
		metricstest.Key("contextd_assemble_tokens_count"):                                                              1,
		metricstest.Key("contextd_assemble_tokens_sum"):                                                                float64(res.TotalTokens),
		metricstest.Key("contextd_grpc_requests_total", "method", "contextd.v1.ContextService/Assemble", "code", "OK"): 1,
		metricstest.Key("contextd_config_reloads_total", "result", "error"):                                            1,
		metricstest.Key("contextd_grpc_refused_at_headers_total", "reason", "busy"):                                    1,
	} {
		if got := delta(key); got != want {
			t.Errorf("%s moved by %v, want %v", key, got, want)
		}
	}
	// The same answer again comes from the read cache.
	again, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "how is the walrus service organised", TokenBudget: 400})
	if err != nil {
		t.Fatal(err)
	}
	third := metricstest.Scrape(t, url)
	hits := metricstest.Key("contextd_read_cache_requests_total", "server", "docs", "result", "hit")
	if got := third[hits] - after[hits]; got != float64(len(again.Items)) || got < 1 {
		t.Errorf("cache hits counted %v, want one per item of the repeated Assemble (%d)", got, len(again.Items))
	}
	if got := third[reads] - after[reads]; got != 0 {
		t.Errorf("the repeated Assemble counted %v reads upstream, want 0 (cached)", got)
	}
	if res.TotalTokens == 0 {
		t.Error("the Assemble returned no tokens; the test needs some")
	}
	if after[metricstest.Key("contextd_config_last_reload_successful")] != 0 {
		t.Error("a refused reload left contextd_config_last_reload_successful at 1")
	}
}

func TestForgetDropsARemovedServersSeries(t *testing.T) {
	m := metrics.New()
	m.Called("gone", "resources/read", nil)
	m.Called("kept", "resources/read", nil)
	m.Synced("gone", true)
	m.Cached("gone", false)
	m.Forget("gone")
	web := httptest.NewServer(m.Handler(false))
	defer web.Close()
	got := metricstest.Scrape(t, web.URL+"/metrics")
	for key := range got {
		if strings.Contains(key, `server="gone"`) {
			t.Errorf("%s still exported after Forget", key)
		}
	}
	if got[metricstest.Key("contextd_upstream_requests_total", "server", "kept", "method", "resources/read", "result", "ok")] != 1 {
		t.Error("Forget dropped another server's series")
	}
}

func TestPprofOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		web := httptest.NewServer(metrics.New().Handler(on))
		resp, err := http.Get(web.URL + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		web.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Errorf("pprof %v: /debug/pprof/ answered %d, want %d", on, resp.StatusCode, want)
		}
	}
}

// A profile is served for at most MaxProfileSeconds, and at most
// MaxProfiles at once: an hour's heap delta or trace asked by many
// connections held every slot and gigabytes.
func TestProfilesAreBoundedInTimeAndNumber(t *testing.T) {
	web := httptest.NewServer(metrics.New().Handler(true))
	defer web.Close()
	for _, path := range []string{"/debug/pprof/heap?seconds=3600", "/debug/pprof/trace?seconds=61", "/debug/pprof/profile?seconds=NaN", "/debug/pprof/goroutine?seconds=1e9"} {
		resp, err := http.Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", path, resp.StatusCode)
		}
	}
	// A POSTed form is not read: only symbol takes a POST.
	resp, err := http.PostForm(web.URL+"/debug/pprof/trace", url.Values{"seconds": {"3600"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST trace seconds=3600: %d, want 405", resp.StatusCode)
	}
	// Nor is a form in a GET's body (multipart, which FormValue reads).
	body := "--b\r\nContent-Disposition: form-data; name=\"seconds\"\r\n\r\n3600\r\n--b--\r\n"
	req, _ := http.NewRequest(http.MethodGet, web.URL+"/debug/pprof/heap", strings.NewReader(body))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if resp, err := http.DefaultClient.Do(req.WithContext(ctx)); err != nil {
		t.Errorf("GET heap with a multipart seconds=3600: %v (it ran for the body's seconds)", err)
	} else {
		resp.Body.Close()
	}
	// A dump of every goroutine's stack stops the world: one per DumpInterval.
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		resp, err := http.Get(web.URL + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("goroutine dump %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}

	// MaxProfiles 3-second deltas at once (each asked until it is
	// served); one more, a second in, is refused at once.
	var wg sync.WaitGroup
	for range metrics.MaxProfiles {
		wg.Go(func() {
			for {
				resp, err := http.Get(web.URL + "/debug/pprof/heap?seconds=3")
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusTooManyRequests {
					return
				}
			}
		})
	}
	time.Sleep(time.Second)
	resp, err = http.Get(web.URL + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a profile beside %d running ones got %d, want 429", metrics.MaxProfiles, resp.StatusCode)
	}
	wg.Wait()
	// Once they end, a profile is served again.
	resp, err = http.Get(web.URL + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("heap after the others ended: %d, want 200", resp.StatusCode)
	}
}

// A symbol lookup reads at most MaxSymbolBody of addresses: its answer, a
// line per address, is buffered whole.
func TestSymbolLookupsAreBounded(t *testing.T) {
	web := httptest.NewServer(metrics.New().Handler(true))
	defer web.Close()
	addr := fmt.Sprintf("%#x+", reflect.ValueOf(TestSymbolLookupsAreBounded).Pointer())
	resp, err := http.Post(web.URL+"/debug/pprof/symbol", "text/plain", strings.NewReader(strings.Repeat(addr, (1<<20)/len(addr))))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Count(string(b), "\n")
	if lines == 0 {
		t.Fatalf("the lookup answered nothing (%d): it no longer resolves the test's address", resp.StatusCode)
	}
	if max := metrics.MaxSymbolBody/len(addr) + 2; lines > max {
		t.Errorf("1 MiB of addresses answered %d lines, want at most %d (the body cut at %d KiB)", lines, max, metrics.MaxSymbolBody>>10)
	}
}
