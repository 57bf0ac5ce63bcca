package sync

import (
	"context"
	"fmt"

	"github.com/contextd/contextd/internal/mcp"
)

// OffersCompletions reports whether the server's current session declared
// the completions capability (MCP 2025-11-25, Server Features › Utilities ›
// Completion). It is false while no session is live.
func (m *Mirror) OffersCompletions() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sess != nil && m.sess.Capabilities().Completions
}

// Complete asks the server, over the current session, to complete the value
// of variable arg of the resource template uriTemplate (see
// mcp.Session.Complete); resolved holds the values already chosen for the
// template's other variables. ctx bounds the call: callers on a query's
// path give it a short deadline.
//
// Errors: ErrUnavailable (no live session), mcp.ErrNoCompletions (the
// server does not offer completions; nothing sent), or the call's error.
func (m *Mirror) Complete(ctx context.Context, uriTemplate, arg, value string, resolved map[string]string) (mcp.Completion, error) {
	m.mu.Lock()
	sess := m.sess
	m.mu.Unlock()
	if sess == nil {
		return mcp.Completion{}, fmt.Errorf("server %q: %w", m.opts.Server, ErrUnavailable)
	}
	m.noteCallerText() // the value is a caller's (see CarriedCallerText)
	return sess.Complete(ctx, uriTemplate, arg, value, resolved)
}
