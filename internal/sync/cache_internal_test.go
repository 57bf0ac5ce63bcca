package sync

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

var t0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func text(uri, s string) []resource.Content { return []resource.Content{{URI: uri, Text: s}} }

// notifications/resources/updated for a URI contextd does not hold (never
// subscribed, or evicted) is ignored: nothing cached is dropped.
func TestUpdatedForAnUnsubscribedURIDropsNothing(t *testing.T) {
	c := newReadCache(1 << 20)
	tk := c.ticket()
	c.markSubscribed("x://a", tk)
	c.put("x://a", tk, text("x://a", "alpha"), t0, time.Time{})
	c.invalidate("x://not-subscribed")
	if got, ok := c.get("x://a", t0); !ok || got.contents[0].Text != "alpha" {
		t.Fatalf("x://a after an update for another URI = %v, %v; want it still cached", got, ok)
	}
	if c.subscribed("x://not-subscribed") {
		t.Error("an update made a URI subscribed")
	}
	c.invalidate("x://a")
	if _, ok := c.get("x://a", t0); ok {
		t.Error("x://a still cached after its own update")
	}
}

// A TTL entry is served while the clock is before its expiry and never at
// or after it (MCP draft, Caching: fresh for ttlMs after receipt).
func TestTTLEntryExpiresExactly(t *testing.T) {
	c := newReadCache(1 << 20)
	exp := t0.Add(time.Second)
	if stored, _ := c.put("x://t", c.ticket(), text("x://t", "tea"), t0, exp); !stored {
		t.Fatal("a TTL result was not cached")
	}
	if e, ok := c.get("x://t", exp.Add(-time.Nanosecond)); !ok || !e.at.Equal(t0) || !e.expires.Equal(exp) {
		t.Fatalf("1ns before expiry: %+v, %v; want the entry read at %v", e, ok, t0)
	}
	if _, ok := c.get("x://t", exp); ok {
		t.Fatal("served at its expiry time")
	}
	if c.size != 0 || c.order.len() != 0 {
		t.Errorf("expired entry still held: size %d, order %d", c.size, c.order.len())
	}
}

// A TTL entry needs no subscription, but an invalidation (update or list
// change) between the ticket and the put keeps it out.
func TestTTLEntryIsNotCachedOverANotification(t *testing.T) {
	for name, notify := range map[string]func(*readCache){
		"updated":      func(c *readCache) { c.invalidate("x://t") },
		"list_changed": func(c *readCache) { c.listChanged() },
	} {
		c := newReadCache(1 << 20)
		tk := c.ticket()
		notify(c)
		if stored, _ := c.put("x://t", tk, text("x://t", "old"), t0, t0.Add(time.Minute)); stored {
			t.Errorf("%s during the read: the older result was cached", name)
		}
	}
}

// list_changed drops TTL entries (they have no per-URI notification) and
// keeps subscription entries (updated covers them one by one).
func TestListChangedDropsTTLEntriesOnly(t *testing.T) {
	c := newReadCache(1 << 20)
	tk := c.ticket()
	c.markSubscribed("x://sub", tk)
	c.put("x://sub", tk, text("x://sub", "sub"), t0, time.Time{})
	c.put("x://ttl", tk, text("x://ttl", "ttl"), t0, t0.Add(time.Hour))
	c.listChanged()
	if _, ok := c.get("x://ttl", t0); ok {
		t.Error("TTL entry survived list_changed")
	}
	if _, ok := c.get("x://sub", t0); !ok {
		t.Error("subscription entry dropped by list_changed")
	}
	if want := entrySize("x://sub", text("x://sub", "sub")); c.size != want {
		t.Errorf("size = %d after list_changed, want %d", c.size, want)
	}
}

// TTL entries count against the byte bound; expired ones make room before
// live ones are evicted, and evicting a TTL entry unsubscribes nothing.
func TestByteBoundHoldsWithTTLEntries(t *testing.T) {
	// Room for two entries of four bytes of text, and 2 bytes to spare.
	c := newReadCache(2*entrySize("x://sub", text("x://sub", "ssss")) + 2)
	tk := c.ticket()
	c.markSubscribed("x://sub", tk)
	c.put("x://sub", tk, text("x://sub", "ssss"), t0, time.Time{})         // oldest
	c.put("x://old", tk, text("x://old", "oooo"), t0, t0.Add(time.Second)) // expires first
	// At t0+2s x://old has expired: it makes room, the older x://sub stays.
	stored, unsub := c.put("x://new", tk, text("x://new", "nnnn"), t0.Add(2*time.Second), t0.Add(time.Hour))
	if !stored || len(unsub) != 0 {
		t.Fatalf("put x://new = %v, unsubscribe %v; want stored, nothing unsubscribed", stored, unsub)
	}
	if _, ok := c.get("x://sub", t0.Add(2*time.Second)); !ok {
		t.Error("a live subscription entry was evicted while an expired entry held room")
	}
	if c.size > c.max {
		t.Errorf("size %d over the bound %d", c.size, c.max)
	}
	// Room for one more 4-byte entry means evicting the oldest live one.
	stored, unsub = c.put("x://more", tk, text("x://more", "mmmm"), t0.Add(3*time.Second), t0.Add(time.Hour))
	if !stored || !slices.Equal(unsub, []string{"x://sub"}) || c.size > c.max {
		t.Errorf("put x://more = %v, unsubscribe %v, size %d; want x://sub evicted and unsubscribed, size <= %d", stored, unsub, c.size, c.max)
	}
	stored, unsub = c.put("x://more", tk, text("x://more", "mmmm"), t0.Add(4*time.Second), t0.Add(time.Hour))
	if !stored || len(unsub) != 0 {
		t.Errorf("replacing a TTL entry: stored %v, unsubscribe %v", stored, unsub)
	}
	// Larger than the whole cache: not cached, nothing evicted.
	before := c.size
	if stored, unsub := c.put("x://big", tk, text("x://big", strings.Repeat("0", int(c.max))), t0.Add(5*time.Second), t0.Add(time.Hour)); stored || len(unsub) != 0 || c.size != before {
		t.Errorf("oversized TTL result: stored %v, unsubscribe %v, size %d → %d", stored, unsub, before, c.size)
	}
}

// After a session ends only subscription entries are worth reading again
// (to subscribe again); TTL entries are not.
func TestClearReturnsOnlySubscribedURIs(t *testing.T) {
	c := newReadCache(1 << 20)
	tk := c.ticket()
	c.markSubscribed("x://sub", tk)
	c.put("x://sub", tk, text("x://sub", "s"), t0, time.Time{})
	c.put("x://ttl", tk, text("x://ttl", "t"), t0, t0.Add(time.Hour))
	if got := c.clear(); !slices.Equal(got, []string{"x://sub"}) {
		t.Errorf("clear() = %v, want [x://sub]", got)
	}
}

// A disabled cache (Options.CacheBytes < 0) keeps nothing, TTL or not.
func TestDisabledCacheKeepsNoTTLEntries(t *testing.T) {
	c := newReadCache(-1)
	if stored, _ := c.put("x://t", c.ticket(), text("x://t", "t"), t0, t0.Add(time.Hour)); stored {
		t.Error("a disabled cache stored a TTL entry")
	}
}

// A result without a TTL is cached only while its URI is subscribed: a read
// that raced the eviction (and unsubscription) of its URI must not leave a
// copy no update will ever evict.
func TestSubscriptionEntryNeedsASubscription(t *testing.T) {
	c := newReadCache(1 << 20)
	if stored, _ := c.put("x://a", c.ticket(), text("x://a", "alpha"), t0, time.Time{}); stored {
		t.Error("cached without a subscription or a TTL")
	}
}
