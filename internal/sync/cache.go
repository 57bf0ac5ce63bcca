package sync

import (
	gosync "sync"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// readCache holds read results of one server, keyed by URI (the mirror is
// the server, so the key is (server, URI)), bounded in bytes. It is safe for
// concurrent use.
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
// A read races with notifications: an update that arrives while a read is in
// flight must not let the older content be cached. Callers take a ticket
// before subscribing and reading, and put only succeeds if nothing was
// invalidated and the session did not change since the ticket.
type readCache struct {
	max int64

	// mu guards the fields that follow.
	mu    gosync.Mutex
	items map[string]cached
	order []string // insertion order, for eviction
	size  int64
	subs  map[string]bool // URIs subscribed on the current session
	gen   uint64          // bumped by every invalidation and by clear
}

type cached struct {
	contents []resource.Content
	size     int64
	at       time.Time // when it was read from the server
	expires  time.Time // TTL entries: when they stop being served; zero for subscription entries
}

// A ticket records the cache generation before a subscribe and read.
type ticket uint64

func newReadCache(max int64) *readCache {
	return &readCache{max: max, items: map[string]cached{}, subs: map[string]bool{}}
}

func (c *readCache) enabled() bool { return c.max > 0 }

func (c *readCache) ticket() ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ticket(c.gen)
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
// session changed since (clear bumped the generation).
func (c *readCache) markSubscribed(uri string, t ticket) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if uint64(t) == c.gen {
		c.subs[uri] = true
	}
}

// put caches contents read at time at under t, unless anything was
// invalidated since. With expires zero the entry is a subscription entry and
// needs uri to be subscribed; otherwise it is a TTL entry served until
// expires. It reports whether it cached them, and
// returns the URIs whose subscriptions are no longer worth keeping: those
// evicted to make room, and uri itself when it can never fit.
func (c *readCache) put(uri string, t ticket, contents []resource.Content, at, expires time.Time) (stored bool, unsubscribe []string) {
	var size int64
	for _, x := range contents {
		size += int64(len(x.Text) + len(x.Blob))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if uint64(t) != c.gen {
		return false, nil
	}
	if expires.IsZero() && !c.subs[uri] {
		return false, nil
	}
	if size > c.max {
		if c.subs[uri] {
			delete(c.subs, uri)
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
			delete(c.subs, old)
			unsubscribe = append(unsubscribe, old)
		}
	}
	c.items[uri] = cached{contents: contents, size: size, at: at, expires: expires}
	c.order = append(c.order, uri)
	c.size += size
	return true, unsubscribe
}

// invalidate drops uri's cached content (notifications/resources/updated) and
// makes reads in flight uncacheable.
func (c *readCache) invalidate(uri string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
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
	c.items = map[string]cached{}
	c.order = nil
	c.size = 0
	c.subs = map[string]bool{}
	return uris
}
