package sync

import (
	"container/list"
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
	order *lruSet // the cached URIs in insertion order, for eviction
	ttl   *lruSet // the URIs of TTL entries, the only ones that expire
	size  int64
	subs  map[string]bool // URIs subscribed on the current session
	idle  *lruSet         // subscribed URIs with no entry, least recently read or evicted by an update first
	gen   uint64          // bumped by every invalidation and by clear
	epoch uint64          // bumped by clear: the session
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
	return &readCache{max: max, maxIdle: maxIdleSubs, items: map[string]cached{}, order: newLRUSet(), ttl: newLRUSet(), subs: map[string]bool{}, idle: newLRUSet()}
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
// is unsubscribed in time: the read that follows calls put, unused or
// failed, which bound the idle ones.
func (c *readCache) markSubscribed(uri string, t ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.epoch != c.epoch {
		return
	}
	c.subs[uri] = true
	if _, ok := c.items[uri]; !ok {
		c.idle.touch(uri)
	}
}

// failed records that a read of uri failed: a subscription with nothing
// cached is worth nothing (the resource may not even exist), so it is
// forgotten and returned for unsubscribing, with the idle ones beyond
// maxIdleSubs.
func (c *readCache) failed(uri string) (unsubscribe []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[uri]; c.subs[uri] && !ok {
		c.unsubLocked(uri)
		unsubscribe = append(unsubscribe, uri)
	}
	return c.trimIdleLocked(unsubscribe)
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
		c.dropTTLWhereLocked(func(e cached) bool { return e.expired(at) })
	}
	for c.size+size > c.max && c.order.len() > 0 {
		old := c.order.oldest()
		c.dropLocked(old)
		if c.subs[old] {
			c.unsubLocked(old)
			unsubscribe = append(unsubscribe, old)
		}
	}
	c.items[uri] = cached{contents: contents, size: size, at: at, expires: expires}
	c.order.touch(uri)
	if !expires.IsZero() {
		c.ttl.touch(uri)
	}
	c.size += size
	c.idle.remove(uri)
	return true, c.trimIdleLocked(unsubscribe)
}

// unused records that a read of uri was not cached. A subscribed uri stays
// subscribed as the most recently read idle one; it returns the idle URIs
// beyond maxIdleSubs, least recently read first, now unsubscribed.
func (c *readCache) unused(uri string) (unsubscribe []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[uri]; c.subs[uri] && !ok {
		c.idle.touch(uri)
	}
	return c.trimIdleLocked(nil)
}

// trimIdleLocked forgets the least recently read idle subscriptions beyond
// maxIdle, appending their URIs to unsubscribe. Each costs O(1).
func (c *readCache) trimIdleLocked(unsubscribe []string) []string {
	for c.idle.len() > c.maxIdle {
		oldest := c.idle.oldest()
		c.unsubLocked(oldest)
		unsubscribe = append(unsubscribe, oldest)
	}
	return unsubscribe
}

// unsubLocked forgets uri's subscription.
func (c *readCache) unsubLocked(uri string) {
	delete(c.subs, uri)
	c.idle.remove(uri)
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

// uris returns the URIs with an entry, oldest first.
func (c *readCache) uris() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, c.order.len())
	for el := c.order.order.Front(); el != nil; el = el.Next() {
		out = append(out, el.Value.(string))
	}
	return out
}

// releaseIdle forgets the least recently read idle subscription and returns
// its URI, for unsubscribing, or false when there is none.
func (c *readCache) releaseIdle() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle.len() == 0 {
		return "", false
	}
	oldest := c.idle.oldest()
	c.unsubLocked(oldest)
	return oldest, true
}

// invalidate drops uri's cached content (notifications/resources/updated) and
// makes reads in flight uncacheable.
func (c *readCache) invalidate(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if _, ok := c.items[uri]; ok && c.subs[uri] {
		// Idle from now: the next read caches it again, or trims it.
		c.idle.touch(uri)
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
	c.dropTTLWhereLocked(func(cached) bool { return true })
}

// dropTTLWhereLocked drops every TTL entry for which drop is true; it
// looks at TTL entries only, so a cache of subscription entries costs
// nothing to scan.
func (c *readCache) dropTTLWhereLocked(drop func(cached) bool) {
	for el := c.ttl.order.Front(); el != nil; {
		next := el.Next()
		if u := el.Value.(string); drop(c.items[u]) {
			c.dropLocked(u)
		}
		el = next
	}
}

func (c *readCache) dropLocked(uri string) {
	e, ok := c.items[uri]
	if !ok {
		return
	}
	delete(c.items, uri)
	c.size -= e.size
	c.order.remove(uri)
	c.ttl.remove(uri)
}

// clear empties the cache and forgets subscriptions (the session is gone).
// It returns the URIs that were cached under a subscription, oldest first:
// reading them again on the next session subscribes them again.
func (c *readCache) clear() (uris []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.order.Front(); el != nil; el = el.Next() {
		if u := el.Value.(string); c.items[u].expires.IsZero() {
			uris = append(uris, u)
		}
	}
	c.gen++
	c.epoch++
	c.items = map[string]cached{}
	c.order, c.ttl = newLRUSet(), newLRUSet()
	c.size = 0
	c.subs = map[string]bool{}
	c.idle = newLRUSet()
	return uris
}

// An lruSet is a set of strings ordered by when each was last touched, with
// O(1) touch, remove and oldest.
type lruSet struct {
	order list.List // of string, least recently touched first
	elems map[string]*list.Element
}

func newLRUSet() *lruSet { return &lruSet{elems: map[string]*list.Element{}} }

func (s *lruSet) len() int { return len(s.elems) }

func (s *lruSet) has(k string) bool { _, ok := s.elems[k]; return ok }

// touch adds k, or makes it the most recently touched.
func (s *lruSet) touch(k string) {
	if e, ok := s.elems[k]; ok {
		s.order.MoveToBack(e)
		return
	}
	s.elems[k] = s.order.PushBack(k)
}

func (s *lruSet) remove(k string) {
	if e, ok := s.elems[k]; ok {
		s.order.Remove(e)
		delete(s.elems, k)
	}
}

// oldest returns the least recently touched key; the set must not be empty.
func (s *lruSet) oldest() string { return s.order.Front().Value.(string) }
