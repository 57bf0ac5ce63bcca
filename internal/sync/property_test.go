package sync_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

var freshnessSeed = flag.Uint64("freshness.seed", 0, "run TestFreshnessProperty with this seed only")

// modelServer is a go-sdk server whose resources doc://0 … hold texts
// "doc://i vN", N the resource's version, and that records what it
// announced.
type modelServer struct {
	srv *mcpsdk.Server

	mu       gosync.Mutex
	version  map[string]int
	listed   map[string]bool
	sessions []*mcpsdk.ServerSession
}

func newModelServer(n int, subscribe bool, ttl time.Duration) *modelServer {
	ms := &modelServer{version: map[string]int{}, listed: map[string]bool{}}
	opts := &mcpsdk.ServerOptions{
		SetCacheable: func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
			if _, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.TTLMs, c.CacheScope = int(ttl.Milliseconds()), "public"
			}
		},
	}
	if subscribe {
		opts.SubscribeHandler = func(context.Context, *mcpsdk.SubscribeRequest) error { return nil }
		opts.UnsubscribeHandler = func(context.Context, *mcpsdk.UnsubscribeRequest) error { return nil }
		opts.Capabilities = &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{ListChanged: true, Subscribe: true}}
	}
	ms.srv = mcptest.NewServer(nil, opts)
	for i := range n {
		uri := fmt.Sprintf("doc://%d", i)
		ms.version[uri] = 1
		ms.add(uri)
	}
	return ms
}

func (ms *modelServer) text(uri string) string {
	return fmt.Sprintf("%s v%d", uri, ms.version[uri])
}

// add (re)lists uri with a descriptor whose size changes with its version
// (a stand-in for its text's length); the server sends list_changed.
func (ms *modelServer) add(uri string) {
	ms.mu.Lock()
	ms.listed[uri] = true
	size := 1000 + ms.version[uri]
	ms.mu.Unlock()
	ms.srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri, MIMEType: "text/plain", Size: int64(size)},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			ms.mu.Lock()
			defer ms.mu.Unlock()
			if !ms.listed[uri] {
				return nil, mcpsdk.ResourceNotFoundError(uri)
			}
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: ms.text(uri)}}}, nil
		})
}

func (ms *modelServer) dial(t *testing.T, proto string) ctxsync.DialFunc {
	return era(proto, dialWith(t, ms.srv, func(ss *mcpsdk.ServerSession) {
		ms.mu.Lock()
		ms.sessions = append(ms.sessions, ss)
		ms.mu.Unlock()
	}))
}

// TestFreshnessProperty drives random sequences of edits (announced by
// notifications/resources/updated, or by a descriptor change that only a
// re-list shows), removals, re-additions, lost sessions and reads against
// an in-memory go-sdk server, and checks after every read that:
//   - an item served as "subscription" or "ttl" carries no text older than
//     the last change the server announced, once that announcement has been
//     processed (a notification once handled; a list change once the
//     debounced re-list has run);
//   - a resource removed from the list is never returned once the re-list
//     that shows it gone has run;
//   - no text is newer than the server's, and a "read" is the server's text.
//
// It runs a fixed set of seeds (the first is the default) for three servers:
// subscriptions on 2025-11-25 (resources/subscribe) and on 2026-07-28
// (subscriptions/listen), and TTL caching without subscriptions; each with
// and without removals and lost sessions.
// -freshness.seed=N runs seed N alone.
func TestFreshnessProperty(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if *freshnessSeed != 0 {
		seeds = []uint64{*freshnessSeed}
	}
	variants := []struct {
		name      string
		proto     string
		subscribe bool
		ttl       time.Duration
	}{
		{"subscribe-2025-11-25", "2025-11-25", true, 0},
		{"listen-2026-07-28", "2026-07-28", true, 0},
		{"ttl-2026-07-28", "2026-07-28", false, time.Minute},
	}
	for _, v := range variants {
		// With churn, removals and lost sessions too; without, the re-lists
		// they cause cannot hide a list change that went unnoticed.
		for _, churn := range []bool{true, false} {
			for _, seed := range seeds {
				t.Run(fmt.Sprintf("%s/churn=%t/seed=%d", v.name, churn, seed), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						runFreshness(t, seed, v.proto, v.subscribe, v.ttl, churn)
					})
				})
			}
		}
	}
}

func runFreshness(t *testing.T, seed uint64, proto string, subscribe bool, ttl time.Duration, churn bool) {
	const (
		n        = 6
		steps    = 300
		debounce = 100 * time.Millisecond
		settle   = 2 * time.Second // past the debounce window, storm delay and a reconnect
	)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	ms := newModelServer(n, subscribe, ttl)
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), ContentMaxResources: noContentIndex, Dial: ms.dial(t, proto),
		Debounce: debounce, MaxStormDelay: 4 * debounce, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		CacheBytes: 1200}) // room for a few entries: eviction happens too
	start(t, m)
	<-m.Ready()

	floor := map[string]int{}     // URI → version no cached copy may be older than
	pending := map[string]int{}   // URI → version announced by a list change not yet processed
	gone := map[string]bool{}     // URI → its removal is processed
	goneSoon := map[string]bool{} // URI → removed; the re-list has not run yet
	var trace []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, after %s:\n"+format, append([]any{seed, strings.Join(trace, ", ")}, args...)...)
	}
	settleAll := func() {
		time.Sleep(settle)
		synctest.Wait()
		for u, v := range pending {
			floor[u] = max(floor[u], v)
		}
		clear(pending)
		for u := range goneSoon {
			gone[u] = true
		}
		clear(goneSoon)
	}
	for range steps {
		uri := fmt.Sprintf("doc://%d", rng.IntN(n))
		ms.mu.Lock()
		listed := ms.listed[uri]
		ms.mu.Unlock()
		switch op := rng.IntN(100); {
		case op < 15: // an edit announced by notifications/resources/updated
			ms.mu.Lock()
			ms.version[uri]++
			v := ms.version[uri]
			ms.mu.Unlock()
			trace = append(trace, "update "+uri)
			if err := ms.srv.ResourceUpdated(t.Context(), &mcpsdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if subscribe {
				// Without a subscription the server sends it to no one,
				// so only the subscribing servers announce it.
				floor[uri] = max(floor[uri], v)
			}
		case op < 30 && listed: // an edit only the descriptor shows (list_changed)
			ms.mu.Lock()
			ms.version[uri]++ // and so its size
			v := ms.version[uri]
			ms.mu.Unlock()
			trace = append(trace, "edit "+uri)
			ms.add(uri)
			pending[uri] = v
		case op < 37 && listed && churn: // removal (list_changed)
			ms.mu.Lock()
			ms.listed[uri] = false
			ms.mu.Unlock()
			trace = append(trace, "remove "+uri)
			ms.srv.RemoveResources(uri)
			goneSoon[uri] = true
		case op < 45 && !listed: // back in the list
			trace = append(trace, "add "+uri)
			ms.add(uri)
			delete(gone, uri)
			delete(goneSoon, uri)
		case op < 48 && churn: // the session is lost
			trace = append(trace, "drop session")
			ms.mu.Lock()
			last := ms.sessions[len(ms.sessions)-1]
			ms.mu.Unlock()
			last.Close()
			synctest.Wait()
		case op < 58:
			trace = append(trace, "settle")
			settleAll()
		case op < 65:
			d := time.Duration(rng.IntN(300)) * time.Millisecond
			trace = append(trace, "sleep "+d.String())
			time.Sleep(d)
			synctest.Wait()
		default:
			trace = append(trace, "read "+uri)
			c, f, err := m.ReadFetch(t.Context(), uri)
			ms.mu.Lock()
			current, listedNow := ms.version[uri], ms.listed[uri]
			ms.mu.Unlock()
			if err != nil {
				var nf *mcp.NotFoundError
				if listedNow && !errors.Is(err, ctxsync.ErrUnavailable) && !errors.As(err, &nf) {
					fail("read %s: %v", uri, err)
				}
				continue
			}
			if gone[uri] {
				fail("read %s: removed (and re-listed without it), yet returned %q as %s", uri, c[0].Text, f.Freshness())
			}
			v := version(t, c)
			switch {
			case v > current:
				fail("read %s: %q is newer than the server's v%d", uri, c[0].Text, current)
			case f.Freshness() == "read" && v != current:
				fail("read %s: %q read from the server, which has v%d", uri, c[0].Text, current)
			case f.Freshness() != "read" && v < floor[uri]:
				fail("read %s: %q served as %s, older than the announced v%d", uri, c[0].Text, f.Freshness(), floor[uri])
			}
		}
		if len(trace) > 40 {
			trace = trace[len(trace)-40:]
		}
	}
}

// version parses the N of a read's "doc://i vN".
func version(t *testing.T, c []resource.Content) int {
	t.Helper()
	if len(c) != 1 {
		t.Fatalf("read returned %d items, want 1", len(c))
	}
	_, v, ok := strings.Cut(c[0].Text, " v")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		t.Fatalf("unexpected text %q", c[0].Text)
	}
	return n
}
