package sync

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// The byte bound counts what an entry holds besides text and blobs: content
// URIs, MIME types and errors, and a fixed overhead per item and per entry,
// so many items, long URIs or empty items are not cached for free.
func TestByteBoundCountsMoreThanText(t *testing.T) {
	one := []resource.Content{{URI: "x://a", MIMEType: "text/plain", Text: "hi"}}
	if got, want := entrySize("x://a", one), int64(entryOverhead+5+contentOverhead+5+10+2); got != want {
		t.Errorf("entrySize = %d, want %d", got, want)
	}
	if contentOverhead != 96 || entryOverhead != 128 {
		t.Errorf("overheads %d and %d: update Options.CacheBytes and README", contentOverhead, entryOverhead)
	}
	longURIs := make([]resource.Content, 64)
	for i := range longURIs {
		longURIs[i] = resource.Content{URI: "x://" + strings.Repeat("u", 1<<20), MIMEType: "text/plain"}
	}
	empty := make([]resource.Content, 64)
	for name, contents := range map[string][]resource.Content{"1 MB URIs": longURIs, "empty items": empty} {
		c := newReadCache(1024)
		if stored, _ := c.put("x://a", c.ticket(), contents, t0, t0.Add(time.Hour)); stored || c.size != 0 {
			t.Errorf("%s: 64 items stored under a 1 KB bound (size %d)", name, c.size)
		}
	}
	// Entries without any content still count: a 1 KB cache holds a few.
	c := newReadCache(1024)
	for i := range 100 {
		c.put("x://"+strings.Repeat("e", i), c.ticket(), nil, t0, t0.Add(time.Hour))
		if c.size > c.max || len(c.items) > int(c.max/entryOverhead) {
			t.Fatalf("after %d empty results: %d entries of size %d under a bound of %d", i+1, len(c.items), c.size, c.max)
		}
	}
}

// A subscription made while a notification came in is still the session's:
// it is tracked (and so, idle, bounded), though its result is not cached.
// Idle subscriptions beyond maxIdle are given back least recently read first.
func TestIdleSubscriptionsAreTrackedAndBounded(t *testing.T) {
	c := newReadCache(1 << 20)
	c.maxIdle = 2
	tk := c.ticket()
	c.invalidate("x://other")
	c.markSubscribed("x://a", tk)
	if !c.subscribed("x://a") {
		t.Fatal("a subscription made during a notification was not recorded")
	}
	if stored, _ := c.put("x://a", tk, text("x://a", "old"), t0, time.Time{}); stored {
		t.Fatal("a result read across a notification was cached")
	}
	if un := c.unused("x://a"); len(un) != 0 {
		t.Fatalf("unused(x://a) = %v with one idle subscription", un)
	}
	for _, u := range []string{"x://b", "x://c"} {
		tk := c.ticket()
		c.markSubscribed(u, tk)
		c.unused(u)
	}
	// x://a was read first: it goes.
	if !slices.Equal(c.unused("x://c"), nil) || c.idle.len() != 2 || c.subscribed("x://a") {
		t.Errorf("idle %v, x://a subscribed %v; want x://b and x://c", c.idle, c.subscribed("x://a"))
	}
	// Reading x://b again makes x://c the least recently read.
	tk = c.ticket()
	c.unused("x://b")
	c.markSubscribed("x://d", tk)
	if un := c.unused("x://d"); !slices.Equal(un, []string{"x://c"}) {
		t.Errorf("unused(x://d) = %v, want [x://c]", un)
	}
	// An idle URI cached again is idle no more; an update makes it idle again.
	tk = c.ticket()
	if stored, _ := c.put("x://b", tk, text("x://b", "b"), t0, time.Time{}); !stored || c.idle.len() != 1 {
		t.Fatalf("put x://b: stored %v, idle %v", stored, c.idle)
	}
	c.invalidate("x://b")
	if !c.idle.has("x://b") || c.idle.len() != 2 {
		t.Errorf("after an update for cached x://b: idle %v", c.idle)
	}
	// A session change forgets them all, and a subscription made on the old
	// session is not recorded.
	tk = c.ticket()
	c.clear()
	c.markSubscribed("x://e", tk)
	if c.idle.len() != 0 || c.subscribed("x://e") {
		t.Errorf("after clear: idle %v, x://e subscribed %v", c.idle, c.subscribed("x://e"))
	}
}

// BenchmarkTrimIdleSubscriptions marks 60,000 URIs subscribed with nothing
// cached (what failed reads used to leave behind), then trims them to
// maxIdleSubs with one read: linear in the URIs, not quadratic.
func BenchmarkTrimIdleSubscriptions(b *testing.B) {
	const n = 60_000
	uris := make([]string, n)
	for i := range uris {
		uris[i] = fmt.Sprintf("doc://missing/%d", i)
	}
	for b.Loop() {
		c := newReadCache(1 << 20)
		tk := c.ticket()
		for _, u := range uris {
			c.markSubscribed(u, tk)
		}
		if un := c.unused(uris[0]); len(un) != n-maxIdleSubs {
			b.Fatalf("unused gave back %d, want %d", len(un), n-maxIdleSubs)
		}
	}
}

// BenchmarkEvictManySmallEntries fills the cache with 100,000 tiny
// subscription entries, then caches one that needs the room of all of
// them: each eviction costs O(1), so the put is linear, not quadratic.
func BenchmarkEvictManySmallEntries(b *testing.B) {
	const n = 100_000
	uris := make([]string, n)
	for i := range uris {
		uris[i] = fmt.Sprintf("doc://%d", i)
	}
	small := entrySize(uris[0], text(uris[0], "x"))
	big := text("doc://big", strings.Repeat("x", int(small)*(n-2)))
	for b.Loop() {
		b.StopTimer()
		c := newReadCache(small * n)
		c.maxIdle = n
		tk := c.ticket()
		for _, u := range uris {
			c.markSubscribed(u, tk)
			c.put(u, tk, text(u, "x"), t0, time.Time{})
		}
		c.markSubscribed("doc://big", tk)
		b.StartTimer()
		stored, un := c.put("doc://big", tk, big, t0, time.Time{})
		if !stored || len(un) < n/2 {
			b.Fatalf("big entry stored %v, %d evicted", stored, len(un))
		}
	}
}

// A server ending the subscription of every URI it is read for cannot make
// the mirror remember each of them for good.
func TestRelistenedURIsAreBounded(t *testing.T) {
	m := &Mirror{cache: newReadCache(1 << 30), relisten: map[string]bool{}, relistened: map[string]time.Time{}, relistenKick: make(chan struct{}, 1)}
	for i := range 3 * maxRelistened {
		uri := fmt.Sprintf("x://%d", i)
		tk := m.cache.ticket()
		m.cache.markSubscribed(uri, tk)
		m.cache.put(uri, tk, []resource.Content{{URI: uri, Text: "t"}}, t0, time.Time{})
		m.subscriptionEnded([]string{uri})
		if !m.relisten[uri] {
			t.Fatalf("%s: not queued for a re-listen", uri)
		}
		clear(m.relisten)
	}
	if n := len(m.relistened); n > maxRelistened {
		t.Errorf("%d URIs remembered after %d ended subscriptions; want at most %d", n, 3*maxRelistened, maxRelistened)
	}
}
