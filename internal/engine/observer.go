package engine

import (
	"time"

	ctxsync "github.com/contextd/contextd/internal/sync"
)

// An Observer is told what the engine does, for metrics: what its mirrors
// do upstream (ctxsync.Observer) and each Assemble and Search it answers.
// Its methods are called concurrently, on request and mirror goroutines,
// and must return quickly.
type Observer interface {
	ctxsync.Observer
	// Assembled is called after each Assemble: how long it took, the
	// tokens it returned (0 when it failed) and its error.
	Assembled(took time.Duration, tokens int, err error)
	// Searched is called after each Search with how long it took and its
	// error.
	Searched(took time.Duration, err error)
}

// mirrorObserver is every mirror's ctxsync.Observer: it closes the
// engine's Synced channel at the first sync that succeeds and passes each
// event on to Options.Observer.
type mirrorObserver struct{ e *Engine }

func (o mirrorObserver) Synced(server string, ok bool) {
	if ok {
		o.e.syncedOnce.Do(func() { close(o.e.synced) })
	}
	if o.e.observer != nil {
		o.e.observer.Synced(server, ok)
	}
}

func (o mirrorObserver) Called(server, method string, err error) {
	if o.e.observer != nil {
		o.e.observer.Called(server, method, err)
	}
}

func (o mirrorObserver) Cached(server string, hit bool) {
	if o.e.observer != nil {
		o.e.observer.Cached(server, hit)
	}
}

// IndexStats is the size of the engine's index.
type IndexStats struct {
	// Descriptors is how many descriptors the index holds, all servers.
	Descriptors int
	// Contents is how many resources have text in the content index.
	Contents int
	// ContentBytes is the text the content index holds, in bytes.
	ContentBytes int64
	// PendingPassages is how many passages of indexed texts wait to be
	// embedded (the embedding queue).
	PendingPassages int
}

// IndexStats reports the index's size now. It walks the index: call it
// at a metrics scrape, not per request.
func (e *Engine) IndexStats() IndexStats {
	return IndexStats{
		Descriptors:     e.ix.Len(""),
		Contents:        e.ix.ContentLen(""),
		ContentBytes:    e.ix.ContentBytes(),
		PendingPassages: e.ix.PendingPassages(""),
	}
}
