package sync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
)

// Defaults of the content pass (Options.ContentMaxResources and
// Options.ContentMaxBytes).
const (
	DefaultContentMaxResources = 1000
	DefaultContentMaxBytes     = 64 << 10
)

// Content pass limits.
const (
	contentReaders     = 4                // reads in flight per server
	contentChunk       = 32               // reads indexed together
	contentReadTimeout = 10 * time.Second // per read
	contentMaxFailures = 8                // consecutive failed reads that end a pass
)

// contentWanted reports whether d is read for the content-level index: a
// resource a model may be given (its audience, if any, includes
// "assistant"), not binary by its MIME type, and not declared bigger than
// maxBytes (an undeclared size is read; the text indexed is capped by
// index.MaxContentBytes).
func contentWanted(d resource.Descriptor, maxBytes int64) bool {
	if len(d.Audience) > 0 && !slices.Contains(d.Audience, "assistant") {
		return false
	}
	if d.MIMEType != "" && budget.ClassOf(d.MIMEType) == budget.Binary {
		return false
	}
	return d.Size <= maxBytes
}

// contentText joins the text items of a read, in order; blobs and unusable
// items are left out.
func contentText(cs []resource.Content) string {
	var parts []string
	for _, c := range cs {
		if !c.IsBlob && c.Error == "" && strings.TrimSpace(c.Text) != "" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// contentUpdated is called with the URI of notifications/resources/updated:
// indexed content of that resource is read again on the next content pass,
// scheduled after the debounce window.
func (m *Mirror) contentUpdated(uri string) {
	if has, _ := m.opts.Index.HasContent(resource.Key{Server: m.opts.Server, URI: uri}); !has {
		return // not indexed: nothing is stale
	}
	m.mu.Lock()
	m.contentStale[uri] = true
	m.mu.Unlock()
	select {
	case m.recontent <- struct{}{}:
	default:
	}
}

// indexContents is the content pass: it reads the text of the server's
// resources that contentWanted accepts and whose content is not indexed for
// their current descriptor (or that the server said were updated), and
// indexes it (index.SetContents), at most ContentMaxResources per server,
// in list order. Reads go straight to the session, without subscribing or
// caching; a result whose cacheScope is set and not "public" is recorded as
// read but its text is not indexed. A failed read is skipped until the
// descriptor changes or the next pass; after contentMaxFailures failures in
// a row the pass stops. It reports progress every few seconds on big
// servers.
func (m *Mirror) indexContents(ctx context.Context, sess *mcp.Session) {
	if m.opts.ContentMaxResources < 0 || !sess.Capabilities().Resources {
		return
	}
	ix := m.opts.Index
	m.mu.Lock()
	stale := m.contentStale
	m.contentStale = map[string]bool{}
	m.mu.Unlock()
	var todo []resource.Descriptor
	have := 0
	for _, d := range ix.Descriptors(m.opts.Server) {
		if !contentWanted(d, m.opts.ContentMaxBytes) {
			continue
		}
		if has, _ := ix.HasContent(d.Key()); has && !stale[d.URI] {
			have++
			continue
		}
		todo = append(todo, d)
	}
	if room := max(m.opts.ContentMaxResources-have, 0); len(todo) > room {
		m.log.Info("content index full for this server; the rest are ranked by their descriptors",
			"indexed", have, "left_out", len(todo)-room, "max", m.opts.ContentMaxResources)
		todo = todo[:room]
	}
	if len(todo) == 0 {
		return
	}
	start := time.Now()
	var read, failed, empty, fails int
	last := start
	for len(todo) > 0 && ctx.Err() == nil {
		chunk := todo[:min(contentChunk, len(todo))]
		todo = todo[len(chunk):]
		got := make([]*index.Content, len(chunk))
		errs := make([]error, len(chunk))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(contentReaders)
		for i, d := range chunk {
			g.Go(func() error {
				rctx, cancel := context.WithTimeout(gctx, contentReadTimeout)
				defer cancel()
				cs, hint, err := sess.ReadHint(rctx, d.URI)
				if err != nil {
					errs[i] = err
					return nil
				}
				c := &index.Content{Key: d.Key(), Stamp: index.ContentStamp(d)}
				if hint.Scope == "" || hint.Public() {
					c.Text = contentText(cs)
				}
				got[i] = c
				return nil
			})
		}
		_ = g.Wait()
		var cs []index.Content
		for i, c := range got {
			err := errs[i]
			switch {
			case c != nil:
				cs = append(cs, *c)
				read++
				fails = 0
				if c.Text == "" {
					empty++ // no text, or a private result
				}
			case errors.Is(err, mcp.ErrSessionExpired) || ctx.Err() != nil:
				return // the next session's sync runs a new pass
			default:
				failed++
				fails++
				var nf *mcp.NotFoundError
				if errors.As(err, &nf) {
					m.mu.Lock()
					m.notFound[chunk[i].URI] = true
					m.mu.Unlock()
					m.notifyListChanged()
				}
				m.log.Debug("reading for the content index failed", "uri", chunk[i].URI, "err", err)
			}
		}
		if _, err := ix.SetContents(ctx, cs...); err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Warn("content index: indexing failed", "err", err)
			return
		}
		if fails >= contentMaxFailures {
			m.log.Warn("content index: stopping after failed reads in a row; the rest keep their descriptors only", "failed", fails)
			break
		}
		if time.Since(last) > 5*time.Second && len(todo) > 0 {
			last = time.Now()
			m.log.Info("indexing contents", "read", read, "left", len(todo), "elapsed", time.Since(start).Round(time.Second))
		}
	}
	m.log.Info("contents indexed", "read", read, "failed", failed, "without_text", empty, "indexed_total", ix.ContentLen(m.opts.Server), "elapsed", time.Since(start).Round(time.Millisecond))
}
