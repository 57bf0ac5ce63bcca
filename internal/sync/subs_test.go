package sync_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	gosync "sync"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// maxIdle is the mirror's bound on subscriptions kept for URIs with nothing
// cached (maxIdleSubs).
const maxIdle = 64

// subscriber is a go-sdk server of n text resources doc://0 … whose read
// results carry cacheScope scope, and that keeps the set of URIs it holds a
// subscription for.
type subscriber struct {
	srv *mcpsdk.Server

	mu         gosync.Mutex
	live       map[string]bool
	subscribes int
}

func newSubscriber(n int, scope string) *subscriber {
	s := &subscriber{live: map[string]bool{}}
	docs := map[string]string{}
	for i := range n {
		docs[fmt.Sprintf("doc://%d", i)] = fmt.Sprintf("text %d", i)
	}
	s.srv = mcptest.NewServer(docs, &mcpsdk.ServerOptions{
		SetCacheable: func(_ context.Context, req mcpsdk.Request, c *mcpsdk.Cacheable) {
			if _, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				c.TTLMs, c.CacheScope = 0, scope
			}
		},
		SubscribeHandler: func(_ context.Context, r *mcpsdk.SubscribeRequest) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.live[r.Params.URI] = true
			s.subscribes++
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcpsdk.UnsubscribeRequest) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.live, r.Params.URI)
			return nil
		},
	})
	return s
}

func (s *subscriber) state() (live []string, subscribes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.live)), s.subscribes
}

func uris(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("doc://%d", i))
	}
	return slices.Sorted(slices.Values(out))
}

// Reading many distinct private resources (subscribed before the read, never
// cached) keeps at most maxIdle subscriptions, the most recently read: the
// others are unsubscribed, not left to pile up until the session ends. A
// kept one is not subscribed again when read again.
func TestSubscriptionsOfUncachedResultsStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 3 * maxIdle
		s := newSubscriber(n, "private")
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", s.srv))})
		start(t, m)
		<-m.Ready()
		for i := range n {
			if f := read(t, m, fmt.Sprintf("doc://%d", i)); f.Freshness() != "read" {
				t.Fatalf("private doc://%d: %s, want read (not cached)", i, f.Freshness())
			}
			if live, _ := s.state(); len(live) > maxIdle {
				t.Fatalf("after reading %d private resources: %d live subscriptions, want at most %d", i+1, len(live), maxIdle)
			}
		}
		live, subs := s.state()
		if want := uris(n-maxIdle, n); !slices.Equal(live, want) {
			t.Fatalf("live subscriptions %q, want the %d most recently read %q", live, maxIdle, want)
		}
		read(t, m, fmt.Sprintf("doc://%d", n-maxIdle)) // kept: not subscribed again, and now the most recent
		read(t, m, "doc://0")                          // unsubscribed: subscribed again, the oldest kept goes
		live, again := s.state()
		if again != subs+1 || len(live) != maxIdle || !slices.Contains(live, "doc://0") ||
			!slices.Contains(live, fmt.Sprintf("doc://%d", n-maxIdle)) || slices.Contains(live, fmt.Sprintf("doc://%d", n-maxIdle+1)) {
			t.Errorf("after re-reading a kept and a dropped URI: %d subscribes (want %d), live %q", again, subs+1, live)
		}
	})
}

// Entries evicted by notifications/resources/updated leave their
// subscriptions idle: the next reads that do not cache them again unsubscribe
// all but maxIdle of them.
func TestSubscriptionsOfUpdatedEntriesStayBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 2 * maxIdle
		s := newSubscriber(n+1, "public")
		nt := &notifier{t: t, srv: s.srv}
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(nt.dial)})
		start(t, m)
		<-m.Ready()
		for i := range n {
			if f := read(t, m, fmt.Sprintf("doc://%d", i)); f.Freshness() != "subscription" {
				t.Fatalf("doc://%d: %s, want cached under its subscription", i, f.Freshness())
			}
		}
		if live, _ := s.state(); len(live) != n {
			t.Fatalf("%d live subscriptions for %d cached entries", len(live), n)
		}
		for i := range n {
			nt.send("notifications/resources/updated", map[string]string{"uri": fmt.Sprintf("doc://%d", i)})
		}
		read(t, m, fmt.Sprintf("doc://%d", n)) // cached, subscribed
		live, _ := s.state()
		if want := append(uris(n-maxIdle, n), fmt.Sprintf("doc://%d", n)); !slices.Equal(live, slices.Sorted(slices.Values(want))) {
			t.Errorf("live subscriptions %q, want the %d most recently updated and the one cached %q", live, maxIdle, want)
		}
	})
}

// A read that fails (the URI does not exist) gives back the subscription
// made for it: pinning many missing URIs leaves no subscriptions behind,
// and the ones kept for earlier reads stay within maxIdle.
func TestFailedReadsGiveBackTheirSubscriptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSubscriber(maxIdle/2, "private")
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", s.srv))})
		start(t, m)
		<-m.Ready()
		for i := range maxIdle / 2 { // idle: private results, not cached
			read(t, m, fmt.Sprintf("doc://%d", i))
		}
		const missing = 5 * maxIdle
		for i := range missing {
			if _, err := m.Read(t.Context(), fmt.Sprintf("doc://missing/%d", i)); err == nil {
				t.Fatalf("Read(doc://missing/%d) succeeded", i)
			}
		}
		live, subs := s.state()
		if subs != maxIdle/2+missing {
			t.Fatalf("%d subscribes, want %d (one per read)", subs, maxIdle/2+missing)
		}
		if want := uris(0, maxIdle/2); !slices.Equal(live, want) {
			t.Fatalf("live subscriptions after %d failed reads: %d (%q…); want only the %d idle ones read before", missing, len(live), live[:min(3, len(live))], len(want))
		}
	})
}

// A read that times out still gives its subscription back: the unsubscribe
// is sent after the read's own context has ended.
func TestTimedOutReadGivesBackItsSubscription(t *testing.T) {
	s := newSubscriber(0, "")
	s.srv.AddResource(&mcpsdk.Resource{URI: "doc://hang", Name: "hang"},
		func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", s.srv)), ContentMaxResources: -1})
	start(t, m)
	<-m.Ready()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := m.Read(ctx, "doc://hang"); err == nil {
		t.Fatal("a read that never answers succeeded")
	}
	if _, subs := s.state(); subs != 1 {
		t.Fatalf("%d subscribes, want 1", subs)
	}
	eventually(t, "the subscription given back", func() bool { live, _ := s.state(); return len(live) == 0 })
}

// A server that never answers resources/unsubscribe made every read that
// gave a subscription back (each failed read does) wait the unsubscribe's
// timeout: an Assemble reading ten such candidates took 50 s, holding its
// turn, and no slow spell started (the reads were answered, with errors).
// After one unsubscribe goes unanswered, none is sent over that session for
// a while.
func TestUnansweredUnsubscribesDoNotHoldEveryRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu gosync.Mutex
		unsubscribes := 0
		srv := mcptest.NewServer(nil, &mcpsdk.ServerOptions{
			Capabilities:     &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{Subscribe: true}},
			SubscribeHandler: func(context.Context, *mcpsdk.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(ctx context.Context, _ *mcpsdk.UnsubscribeRequest) error {
				mu.Lock()
				unsubscribes++
				mu.Unlock()
				<-ctx.Done() // never answers
				return ctx.Err()
			},
		})
		m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: legacy(mcptest.Dial(t, "s", srv)), ContentMaxResources: -1})
		start(t, m)
		<-m.Ready()
		start := time.Now()
		const reads = 10
		for i := range reads {
			_, err := m.Read(t.Context(), fmt.Sprintf("doc://missing/%d", i))
			if err == nil {
				t.Fatalf("Read(doc://missing/%d) succeeded", i)
			}
		}
		if el := time.Since(start); el > 6*time.Second {
			t.Errorf("%d failed reads took %v, want one unanswered unsubscribe's wait at most", reads, el)
		}
		mu.Lock()
		defer mu.Unlock()
		if unsubscribes != 1 {
			t.Errorf("%d unsubscribes sent, want 1 (then none while the server does not answer)", unsubscribes)
		}
	})
}
