package sync

import (
	"slices"
	gosync "sync"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// readCache holds read results of one server, keyed by URI (the mirror is
// the server, so the key is (server, URI)), bounded in bytes (see
// entrySize). It is safe for concurrent use.
//
// An entry is kept fresh in one of two ways:
//   - subscription: the URI is subscribed on the current session
//     (resources/subscribe); the entry lives until
//     notifications/resources/updated for the URI, eviction for room, or the
//     end of the session.
//   - TTL: the server put ttlMs on the result (MCP draft, Server Utilities >
//     Caching); the entry is served until it expires, and also goes on
//     notifications/resources/updated for the URI, on
//     notifications/resources/list_changed, eviction for room, or the end of
//     the session.
//
// Eviction for room is oldest-first; expired entries go first.
//
// Subscriptions: a URI is subscribed before it is read, and the
// subscription is worth keeping while its result is cached. Evicting an
// entry for room gives back its subscription for unsubscribing. A
// subscribed URI with nothing cached (its result was private, its read
// raced a notification, or an update evicted it) is "idle": idle
// subscriptions are kept, so reading such a URI again does not subscribe
// again each time, but at most maxIdleSubs of them; beyond that the least
// recently read is given back for unsubscribing.
//
// A read races with notifications: an update that arrives while a read is in
// flight must not let the older content be cached. Callers take a ticket
// before subscribing and reading, and put only succeeds if nothing was
// invalidated and the session did not change since the ticket.
type readCache struct {
	max     int64
	maxIdle int

	// mu guards the fields that follow.
	mu    gosync.Mutex
	items map[string]cached
	order []string // insertion order, for eviction
	size  int64
	subs  map[string]bool   // URIs subscribed on the current session
	idle  map[string]uint64 // subscribed URIs with no entry → seq when last read or evicted by an update
	seq   uint64
	gen   uint64 // bumped by every invalidation and by clear
	epoch uint64 // bumped by clear: the session
}

// maxIdleSubs bounds the subscriptions kept for URIs with nothing cached.
const maxIdleSubs = 64

// The byte bound counts, for each entry, its URI and entryOverhead, and for
// each of its content items the URI, MIME type, text, blob and error plus
// contentOverhead: an approximation of the memory held (a resource.Content
// is 96 bytes on 64-bit platforms; an entry, its map slot and order slot
// about 128), so that items with no text, or long URIs, are not free.
const (
	contentOverhead = 96
	entryOverhead   = 128
)

// entrySize is what caching contents under uri counts against the bound.
func entrySize(uri string, contents []resource.Content) int64 {
	n := int64(entryOverhead + len(uri))
	for _, x := range contents {
		n += int64(contentOverhead + len(x.URI) + len(x.MIMEType) + len(x.Text) + len(x.Blob) + len(x.Error))
	}
	return n
}

type cached struct {
	contents []resource.Content
	size     int64
	at       time.Time // when it was read from the server
	expires  time.Time // TTL entries: when they stop being served; zero for subscription entries
}

// A ticket records the cache generation and session before a subscribe and
// read.
type ticket struct{ gen, epoch uint64 }

func newReadCache(max int64) *readCache {
	return &readCache{max: max, maxIdle: maxIdleSubs, items: map[string]cached{}, subs: map[string]bool{}, idle: map[string]uint64{}}
}

func (c *readCache) enabled() bool { return c.max > 0 }

func (c *readCache) ticket() ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ticket{c.gen, c.epoch}
}

// get returns uri's entry as of now. A TTL entry is fresh while now is
// before its expiry; an expired one is dropped and reported missing.
func (c *readCache) get(uri string, now time.Time) (cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[uri]
	if ok && e.expired(now) {
		c.dropLocked(uri)
		return cached{}, false
	}
	return e, ok
}

func (e cached) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

func (c *readCache) subscribed(uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.subs[uri]
}

// markSubscribed records a subscription made under t; it is ignored if the
// session changed since (clear). A notification since t does not matter:
// the subscription is live on the session, and must be accounted for so it
// is unsubscribed in time.
func (c *readCache) markSubscribed(uri string, t ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.epoch != c.epoch {
		return
	}
	c.subs[uri] = true
	if _, ok := c.items[uri]; !ok {
		c.seq++
		c.idle[uri] = c.seq
	}
}

// put caches contents read at time at under t, unless anything was
// invalidated since. With expires zero the entry is a subscription entry and
// needs uri to be subscribed; otherwise it is a TTL entry served until
// expires. It reports whether it cached them, and
// returns the URIs whose subscriptions are no longer worth keeping: those
// evicted to make room, uri itself when it can never fit, and idle ones
// beyond maxIdleSubs. When it did not cache them, the caller calls unused.
func (c *readCache) put(uri string, t ticket, contents []resource.Content, at, expires time.Time) (stored bool, unsubscribe []string) {
	size := entrySize(uri, contents)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t != (ticket{c.gen, c.epoch}) {
		return false, nil
	}
	if expires.IsZero() && !c.subs[uri] {
		return false, nil
	}
	if size > c.max {
		if c.subs[uri] {
			c.unsubLocked(uri)
			unsubscribe = append(unsubscribe, uri)
		}
		return false, unsubscribe
	}
	c.dropLocked(uri)
	if c.size+size > c.max {
		c.dropWhereLocked(func(e cached) bool { return e.expired(at) })
	}
	for c.size+size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.dropLocked(old)
		if c.subs[old] {
			c.unsubLocked(old)
			unsubscribe = append(unsubscribe, old)
		}
	}
	c.items[uri] = cached{contents: contents, size: size, at: at, expires: expires}
	c.order = append(c.order, uri)
	c.size += size
	delete(c.idle, uri)
	return true, c.trimIdleLocked(unsubscribe)
}

// unused records that a read of uri was not cached. A subscribed uri stays
// subscribed as the most recently read idle one; it returns the idle URIs
// beyond maxIdleSubs, least recently read first, now unsubscribed.
func (c *readCache) unused(uri string) (unsubscribe []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[uri]; c.subs[uri] && !ok {
		c.seq++
		c.idle[uri] = c.seq
	}
	return c.trimIdleLocked(nil)
}

// trimIdleLocked forgets the least recently read idle subscriptions beyond
// maxIdle, appending their URIs to unsubscribe.
func (c *readCache) trimIdleLocked(unsubscribe []string) []string {
	for len(c.idle) > c.maxIdle {
		var oldest string
		var at uint64
		for u, seq := range c.idle {
			if oldest == "" || seq < at {
				oldest, at = u, seq
			}
		}
		c.unsubLocked(oldest)
		unsubscribe = append(unsubscribe, oldest)
	}
	return unsubscribe
}

// unsubLocked forgets uri's subscription.
func (c *readCache) unsubLocked(uri string) {
	delete(c.subs, uri)
	delete(c.idle, uri)
}

// lost forgets uri's subscription, which the server ended (a
// subscriptions/listen stream it answered or that broke), and drops its
// cached content, since updates may have been missed; reads in flight are
// not cached. The next read of uri subscribes again. It reports whether
// uri had an entry under the subscription.
func (c *readCache) lost(uri string) (cached bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	e, ok := c.items[uri]
	cached = ok && e.expires.IsZero() && c.subs[uri]
	c.dropLocked(uri)
	c.unsubLocked(uri)
	return cached
}

// uris returns the URIs with an entry.
func (c *readCache) uris() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.order)
}

// releaseIdle forgets the least recently read idle subscription and returns
// its URI, for unsubscribing, or false when there is none.
func (c *readCache) releaseIdle() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var oldest string
	var at uint64
	found := false
	for u, seq := range c.idle {
		if !found || seq < at {
			oldest, at, found = u, seq, true
		}
	}
	if found {
		c.unsubLocked(oldest)
	}
	return oldest, found
}

// invalidate drops uri's cached content (notifications/resources/updated) and
// makes reads in flight uncacheable.
func (c *readCache) invalidate(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if _, ok := c.items[uri]; ok && c.subs[uri] {
		// Idle from now: the next read caches it again, or trims it.
		c.seq++
		c.idle[uri] = c.seq
	}
	c.dropLocked(uri)
}

// listChanged drops every TTL entry (notifications/resources/list_changed:
// a TTL entry has no per-URI notification to rely on, so any change the
// server announces may concern it) and makes reads in flight uncacheable.
// Subscription entries stay: the server notifies their updates one by one.
func (c *readCache) listChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.dropWhereLocked(func(e cached) bool { return !e.expires.IsZero() })
}

// dropWhereLocked drops every entry for which drop is true.
func (c *readCache) dropWhereLocked(drop func(cached) bool) {
	keep := c.order[:0]
	for _, u := range c.order {
		e := c.items[u]
		if drop(e) {
			delete(c.items, u)
			c.size -= e.size
			continue
		}
		keep = append(keep, u)
	}
	clear(c.order[len(keep):])
	c.order = keep
}

func (c *readCache) dropLocked(uri string) {
	e, ok := c.items[uri]
	if !ok {
		return
	}
	delete(c.items, uri)
	c.size -= e.size
	for i, u := range c.order {
		if u == uri {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// clear empties the cache and forgets subscriptions (the session is gone).
// It returns the URIs that were cached under a subscription, oldest first:
// reading them again on the next session subscribes them again.
func (c *readCache) clear() (uris []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.order {
		if c.items[u].expires.IsZero() {
			uris = append(uris, u)
		}
	}
	c.gen++
	c.epoch++
	c.items = map[string]cached{}
	c.order = nil
	c.size = 0
	c.subs = map[string]bool{}
	c.idle = map[string]uint64{}
	return uris
}
