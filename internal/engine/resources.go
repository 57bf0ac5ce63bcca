package engine

import (
	"context"
	"fmt"

	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// Descriptors returns the mirrored descriptors of server, or of every
// configured server when server is "", sorted by (server, URI).
//
// Errors: ErrInvalidArgument (server is not configured).
func (e *Engine) Descriptors(server string) ([]resource.Descriptor, error) {
	if server != "" {
		if err := e.checkServers([]string{server}); err != nil {
			return nil, err
		}
		return e.ix.Descriptors(server), nil
	}
	out := e.ix.Descriptors("")
	mirrors := e.set().mirrors
	// The index may still hold servers a one-shot run kept but did not
	// configure; they are not this engine's to show.
	kept := out[:0]
	for _, d := range out {
		if _, ok := mirrors[d.Server]; ok {
			kept = append(kept, d)
		}
	}
	return kept, nil
}

// Read reads one resource through its server's mirror, under the same rules
// as Assemble's reads: the mirror's cache and freshness (see
// ctxsync.Mirror.ReadFetch), bounded by the read timeout and the server's
// slow spell. The resource must be listed, or offered by one of the
// server's templates, unless the server sets allow_unlisted_pins (the pin
// policy), and the read is bounded by max_response_bytes.
//
// Errors: ErrInvalidArgument (unknown server, empty URI, a URI the pin
// policy refuses), the mirror's
// (ctxsync.ErrUnavailable when the server is not connected, the upstream's
// read error, such as *mcp.NotFoundError), or ctx's.
func (e *Engine) Read(ctx context.Context, k resource.Key) ([]resource.Content, ctxsync.Fetch, error) {
	defer e.enter()()
	if err := e.checkServers([]string{k.Server}); err != nil {
		return nil, ctxsync.Fetch{}, err
	}
	if k.URI == "" {
		return nil, ctxsync.Fetch{}, fmt.Errorf("%w: empty URI", ErrInvalidArgument)
	}
	// A read goes upstream with contextd's credentials: the pin policy
	// applies, and so do the per-request read limits. A server that has
	// not synced cannot say what it lists: that is its state, not the
	// caller's mistake.
	m, _ := e.mirror(k.Server) // checked above
	if st := m.Status(); st.Syncs == 0 {
		return nil, ctxsync.Fetch{}, fmt.Errorf("server %q has not synced yet: %w", k.Server, ctxsync.ErrUnavailable)
	}
	if err := e.carriesCredential(k); err != nil {
		return nil, ctxsync.Fetch{}, err
	}
	if tries := maxTemplateMatches; !e.readable(k, &tries) {
		return nil, ctxsync.Fetch{}, fmt.Errorf("%w: resource %q not found: server %q does not list it and none of its templates yields it (set allow_unlisted_pins: true on the server to read any URI)", ErrInvalidArgument, k.URI, k.Server)
	}
	log := &fetchLog{m: map[resource.Key]ctxsync.Fetch{}}
	budget := e.newReadBudget(ctx)
	cs, err := e.reader(log, budget, newPassOvers(budget.lim.MaxReads))(ctx, k.Server, k.URI)
	if err != nil {
		return nil, ctxsync.Fetch{}, err
	}
	return cs, log.m[k], nil
}

// Ready returns a channel closed once server's mirror has finished its first
// connect attempt and, when it synced, its first content pass (see
// WaitReady); nil when server is not configured.
func (e *Engine) Ready(server string) <-chan struct{} {
	m, ok := e.mirror(server)
	if !ok {
		return nil
	}
	return m.Ready()
}

// ContentBytes returns the bytes of k's text the content index holds (the
// content pass read it, and it was no copy of a resource this contextd's
// MCP server served; see ctxsync.Mirror), 0 when it holds none.
func (e *Engine) ContentBytes(k resource.Key) int {
	return e.ix.ContentSize(k)
}

// ContentWanted reports whether d's text is read for the content index
// (ctxsync.Mirror.ContentWanted); false for a server not configured.
func (e *Engine) ContentWanted(d resource.Descriptor) bool {
	m := e.set().mirrors[d.Server]
	return m != nil && m.ContentWanted(d)
}

// ContentRead reports whether the content pass has read k (its text may
// be empty or private).
func (e *Engine) ContentRead(k resource.Key) bool {
	has, _ := e.ix.HasContent(k)
	return has
}

// Reread has server's mirror read again the texts the index holds of it
// (ctxsync.Mirror.Reread): its name now stands for another server. It
// does nothing for a server not configured.
func (e *Engine) Reread(server string) {
	if m := e.set().mirrors[server]; m != nil {
		m.Reread()
	}
}

// ContentRefused reports whether the content pass's last read of k found
// an empty text or an error (ctxsync.Mirror.ContentRefused).
func (e *Engine) ContentRefused(k resource.Key) bool {
	m := e.set().mirrors[k.Server]
	return m != nil && m.ContentRefused(k.URI)
}

// ContentCount returns how many of server's resources the content index
// holds the text of.
func (e *Engine) ContentCount(server string) int {
	return e.ix.ContentLen(server)
}
