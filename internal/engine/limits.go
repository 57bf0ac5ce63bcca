package engine

import (
	"fmt"
	"sync"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/template"
)

// checkPins enforces max_pins and the pin policy: a pinned URI must be
// listed by its server (in the index) or be an expansion of one of the
// server's templates (template.Matches), unless the server's configuration
// sets allow_unlisted_pins. A pin goes to the server with contextd's
// credentials, so without the policy any caller could make the daemon read
// whatever the server would serve it (an unlisted dotfile, a "../" path).
//
// Errors: ErrInvalidArgument.
func (e *Engine) checkPins(pins []resource.Key) error {
	if len(pins) > e.limits.MaxPins {
		return fmt.Errorf("%w: %d pinned resources; at most %d (max_pins)", ErrInvalidArgument, len(pins), e.limits.MaxPins)
	}
	for _, k := range pins {
		if _, ok := e.ix.Get(k); ok {
			continue
		}
		if srv, _ := e.cfg.Server(k.Server); srv.AllowUnlistedPins {
			continue
		}
		if !e.offeredByTemplate(k) {
			return fmt.Errorf("%w: pinned %q: server %q does not list it and none of its templates yields it (set allow_unlisted_pins: true on the server to pin any URI)", ErrInvalidArgument, k.URI, k.Server)
		}
	}
	return nil
}

// offeredByTemplate reports whether one of k.Server's templates expands to k.URI.
func (e *Engine) offeredByTemplate(k resource.Key) bool {
	m, ok := e.mirrors[k.Server]
	if !ok {
		return false
	}
	for _, t := range m.Templates() {
		if tp, err := template.Parse(t); err == nil && tp.Matches(k.URI) {
			return true
		}
	}
	return false
}

// A readBudget bounds the reads of one Assemble: at most MaxReads reads, and
// at most MaxResponseBytes bytes of contents (text and blobs) in all. It is
// safe for concurrent use.
type readBudget struct {
	lim config.Limits

	mu    sync.Mutex
	reads int
	bytes int
}

// start claims one read; it fails when the request has used up its reads
// or its bytes.
func (b *readBudget) start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.reads >= b.lim.MaxReads:
		return fmt.Errorf("not read: this request made its %d reads (max_reads)", b.lim.MaxReads)
	case b.bytes >= b.lim.MaxResponseBytes:
		return fmt.Errorf("not read: this request read its %d bytes (max_response_bytes)", b.lim.MaxResponseBytes)
	}
	b.reads++
	return nil
}

// spend counts the bytes of contents read; it fails, and the contents are
// not used, when they would take the request past MaxResponseBytes.
func (b *readBudget) spend(contents []resource.Content) error {
	n := 0
	for _, c := range contents {
		n += len(c.Text) + len(c.Blob)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes+n > b.lim.MaxResponseBytes {
		return fmt.Errorf("dropped: %d bytes would take this request past %d (max_response_bytes)", n, b.lim.MaxResponseBytes)
	}
	b.bytes += n
	return nil
}
