// Package sync keeps contextd's index in step with each upstream MCP server:
// one [Mirror] per configured server owns that server's session, its
// descriptors in the index, and its read cache.
//
// Import it as ctxsync; the package shares its name with the standard library.
//
// # Lifecycle
//
// [Mirror.Run] connects, runs a full sync (every page of resources/list and
// resources/templates/list, applied to the index as a diff), then waits for
// events until its context ends. When the session drops, the mirror reports
// itself stale — the index keeps the last good descriptors — and reconnects
// with capped exponential backoff with jitter; the next full sync replaces
// the stale entries.
//
// # Events, ordering and backpressure
//
// The SDK calls notification handlers on its reader goroutine, so handlers
// never block:
//
//   - notifications/resources/list_changed sets a one-slot pending flag (a
//     buffered channel of capacity 1; a send to a full channel is dropped,
//     because one pending re-list already covers it). The run loop starts a
//     debounce timer on the first pending flag; notifications during the
//     window coalesce into it. When the timer fires the loop re-lists once. At
//     most one re-list is in flight per server, so a storm costs at most one
//     re-list per debounce window.
//   - A server that keeps notifying right after each re-list (a storm, or
//     one notification per list) gets, from the third time in a row, a
//     debounce window that doubles up to [Options.MaxStormDelay] (30s).
//   - A server that does not declare resources.listChanged is re-listed
//     every [Options.PollInterval] (5m), and a failed sync is retried with
//     backoff, so neither depends on a notification that never comes.
//   - notifications/resources/updated drops the cached content of that URI
//     (compared byte for byte); a URI with nothing cached is ignored. One
//     for an indexed URI asks for a content pass after a debounce window;
//     a server that notifies again right after each pass gets, from the
//     third time in a row, a window that doubles up to MaxStormDelay.
//   - Each re-list drops the cached content of every URI whose descriptor
//     changed (size, lastModified, MIME type) or, when the list is
//     complete, that is no longer listed, before the list reaches the index.
//
// # Read cache
//
// Each mirror caches read results, keyed by URI, bounded by
// [Options.CacheBytes] and cleared when the session drops. A result is
// cached in two cases (see [Mirror.ReadFetch]): its URI is subscribed
// (servers that declare resources.subscribe; the mirror subscribes before
// it reads, with resources/subscribe or, from protocol 2026-07-28, a
// subscriptions/listen stream the server acknowledged for the URI; and
// notifications/resources/updated evicts), or the server put
// ttlMs > 0 and cacheScope "public" on it (MCP draft, Server Utilities >
// Caching; served until the TTL runs out, and evicted earlier by
// notifications/resources/updated for the URI or any
// notifications/resources/list_changed). Results marked "private", with an
// unknown scope, or without a TTL or subscription are read on every
// request: contextd does not know its callers apart, so it keeps nothing it
// may not share, and it does not poll contents.
//
// A read that finds no session while the mirror reconnects waits for the
// next one, up to [Options.ReconnectWait].
package sync
