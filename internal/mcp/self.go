package mcp

import (
	"crypto/rand"
	"errors"
	"hash/fnv"
	"sync"
	"time"
)

// InstanceMetaKey is the _meta key under which contextd's own MCP server
// names its process in every initialize (and server/discover) result:
// Instance's value. A contextd whose configuration lists its own
// mcp_listen (a host file read as is, a bridge such as mcp-remote to it)
// would otherwise mirror itself, one level deeper at each list_changed it
// sends itself, every read going round through its own endpoint.
const InstanceMetaKey = "contextd/instance"

var instance = rand.Text()

// Instance returns this process's instance name: 26 random base32
// characters, drawn at start.
func Instance() string { return instance }

// ErrSelf is the error of a connect to a server that is this contextd
// itself.
var ErrSelf = errors.New("the server is this contextd itself (its own mcp_listen, directly or through a bridge): not mirrored; remove that entry from the configuration")

// isSelf reports whether meta, an initialize or discover result's _meta,
// names this process.
func isSelf(meta map[string]any) bool {
	v, ok := meta[InstanceMetaKey].(string)
	return ok && v == instance
}

// A listed descriptor's fingerprint: what a bridge passes on when it
// replaces URIs (name, title, description, MIME type; not the size, which
// bridges drop).
func listedFingerprint(e ListedEntry) uint64 {
	h := fnv.New64a()
	for _, s := range []string{e.Name, e.Title, e.Description, e.MIMEType} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// ServedLists remembers the last pages one process's MCP server listed: a
// bridge that answers initialize itself, drops _meta and replaces URIs
// with opaque ones (hub://up/<hash>) passes contextd's own list back to it
// while its mirror lists that bridge, and it would otherwise mirror itself
// one level deeper at each list. The engine holds one, shared by its
// mirrors (ListsServedBack) and its MCP server (Note). A nil *ServedLists
// remembers nothing. Safe for concurrent use.
type ServedLists struct {
	mu    sync.Mutex
	pages []servedPage // oldest first, at most maxServedPages
}

type servedPage struct {
	at     time.Time
	origin map[uint64]string // fingerprint → the server the entry was mirrored from
}

const maxServedPages = 64

// A ListedEntry is one entry of a listed page, for ServedLists.
type ListedEntry struct {
	Origin                             string // the server it was mirrored from
	Name, Title, Description, MIMEType string
}

// Note records a resources/list page the MCP server served: for each
// entry, the server it was mirrored from (its contextd/server _meta) and
// its name, title, description and MIME type.
func (s *ServedLists) Note(entries []ListedEntry) {
	if s == nil {
		return
	}
	p := servedPage{at: time.Now(), origin: make(map[uint64]string, len(entries))}
	for _, e := range entries {
		p.origin[listedFingerprint(e)] = e.Origin
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages = append(s.pages, p)
	if n := len(s.pages); n > maxServedPages {
		s.pages = append(s.pages[:0:0], s.pages[n-maxServedPages:]...)
	}
}

// ServedBackWindow is how long before a server's list began a page the MCP
// server listed counts for ListsServedBack: a bridge may list contextd,
// then tell its own clients its list changed, and be listed again a moment
// later.
const ServedBackWindow = 30 * time.Second

// ListsServedBack reports whether entries, a list that server answered
// between from and to, are mostly entries the MCP server listed from
// ServedBackWindow before from until to, mirrored from other servers than
// that one: the server is this contextd, through a bridge that passed the
// list on. Two of them at least (one if that is all), and more than half.
// A zero from counts every page remembered. A server configured twice
// under two names, listing the same entries, passes for it when a host
// listed contextd in that window.
func (s *ServedLists) ListsServedBack(server string, entries []ListedEntry, from, to time.Time) bool {
	if s == nil || len(entries) == 0 {
		return false
	}
	from = from.Add(-ServedBackWindow)
	served := map[uint64]bool{}
	s.mu.Lock()
	for _, p := range s.pages {
		if p.at.Before(from) || p.at.After(to) {
			continue
		}
		for fp, origin := range p.origin {
			if origin != server {
				served[fp] = true
			}
		}
	}
	s.mu.Unlock()
	if len(served) == 0 {
		return false
	}
	m := 0
	for _, e := range entries {
		if served[listedFingerprint(e)] {
			m++
		}
	}
	return m >= min(2, len(entries)) && 2*m > len(entries)
}
