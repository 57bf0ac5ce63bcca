package sync

import (
	gosync "sync"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// readCache holds read results for subscribed URIs, bounded in bytes.
// Eviction is oldest-first. It is safe for concurrent use.
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

func (c *readCache) get(uri string) ([]resource.Content, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[uri]
	return e.contents, e.at, ok
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
// invalidated since. It reports whether it cached them, and returns the URIs
// whose subscriptions are no longer worth keeping: those evicted to make
// room, and uri itself when it can never fit.
func (c *readCache) put(uri string, t ticket, contents []resource.Content, at time.Time) (stored bool, unsubscribe []string) {
	var size int64
	for _, x := range contents {
		size += int64(len(x.Text) + len(x.Blob))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if uint64(t) != c.gen || !c.subs[uri] {
		return false, nil
	}
	if size > c.max {
		delete(c.subs, uri)
		return false, []string{uri}
	}
	c.dropLocked(uri)
	for c.size+size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.dropLocked(old)
		delete(c.subs, old)
		unsubscribe = append(unsubscribe, old)
	}
	c.items[uri] = cached{contents: contents, size: size, at: at}
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
// It returns the URIs that were cached, oldest first.
func (c *readCache) clear() (uris []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	uris = c.order
	c.gen++
	c.items = map[string]cached{}
	c.order = nil
	c.size = 0
	c.subs = map[string]bool{}
	return uris
}
