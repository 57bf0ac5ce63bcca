package sync

import (
	"context"
	"errors"
	"slices"
	"strings"
	gosync "sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	contentMaxFailures = 8                // reads in a row without an answer that end a pass
)

// errStopContent cancels the reads of a content pass that is ending.
var errStopContent = errors.New("content pass stopped")

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
// items are left out. It keeps a little more than the index.MaxContentBytes
// that SetContents indexes (which cuts at a rune), in a copy: a chunk of
// reads waiting to be indexed holds that much each, not whole reads.
func contentText(cs []resource.Content) string {
	var b strings.Builder
	for _, c := range cs {
		if b.Len() >= index.MaxContentBytes {
			break
		}
		if !c.IsBlob && c.Error == "" && strings.TrimSpace(c.Text) != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			rest := index.MaxContentBytes + utf8.UTFMax - b.Len()
			b.WriteString(c.Text[:min(len(c.Text), rest)])
		}
	}
	return b.String()
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
// descriptor changes or the next pass; one the server answers with "not
// found" evicts the descriptor at the end of the pass, as Read does. After
// contentMaxFailures reads in a row get no answer (they time out or the
// connection fails) the pass cancels the reads in flight and stops. It
// reports progress every few seconds on big servers.
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
	// The server said these were updated: they stay stale until their new
	// text is indexed, however this pass ends, or the old text would stay
	// indexed for good.
	pending := map[string]bool{}
	for _, d := range todo {
		if stale[d.URI] {
			pending[d.URI] = true
		}
	}
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for uri := range pending {
			m.contentStale[uri] = true
		}
	}()
	if room := max(m.opts.ContentMaxResources-have, 0); len(todo) > room {
		m.log.Info("content index full for this server; the rest are ranked by their descriptors",
			"indexed", have, "left_out", len(todo)-room, "max", m.opts.ContentMaxResources)
		todo = todo[:room]
	}
	if len(todo) == 0 {
		return
	}
	start := time.Now()
	var read, failed, empty int
	// streak counts reads in a row, in the order they end, that got no
	// answer (a timeout, a broken connection); an error answer shows the
	// server is alive and only that resource is unreadable, so it neither
	// counts nor resets. A streak of contentMaxFailures cancels the reads
	// in flight and ends the pass.
	var smu gosync.Mutex
	streak, stop := 0, false
	evict := false // a read said not found
	last := start
	for len(todo) > 0 && ctx.Err() == nil && !stop {
		chunk := todo[:min(contentChunk, len(todo))]
		todo = todo[len(chunk):]
		got := make([]*index.Content, len(chunk))
		errs := make([]error, len(chunk))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(contentReaders)
		for i, d := range chunk {
			g.Go(func() error {
				if gctx.Err() != nil {
					return nil // the pass is ending: not read
				}
				rctx, cancel := context.WithTimeout(gctx, contentReadTimeout)
				defer cancel()
				cs, hint, err := sess.ReadHint(rctx, d.URI)
				if err != nil && gctx.Err() != nil {
					return nil // cut short by the pass ending, not the resource's failure
				}
				if err != nil {
					errs[i] = err
					if errors.Is(err, mcp.ErrSessionExpired) {
						return err // the rest would fail too
					}
					var werr *jsonrpc.Error
					var nf *mcp.NotFoundError
					if errors.As(err, &werr) || errors.As(err, &nf) {
						return nil
					}
					smu.Lock()
					defer smu.Unlock()
					if streak++; streak >= contentMaxFailures {
						stop = true
						return errStopContent
					}
					return nil
				}
				c := &index.Content{Key: d.Key(), Stamp: index.ContentStamp(d)}
				if hint.Scope == "" || hint.Public() {
					c.Text = contentText(cs)
				}
				got[i] = c
				smu.Lock()
				streak = 0
				smu.Unlock()
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
				if c.Text == "" {
					empty++ // no text, or a private result
				}
			case err == nil:
				// not read: the pass is ending
			case errors.Is(err, mcp.ErrSessionExpired) || ctx.Err() != nil:
				return // the next session's sync runs a new pass
			default:
				failed++
				var nf *mcp.NotFoundError
				if errors.As(err, &nf) {
					// Evicted at the end of the pass. No re-list: the list
					// was just read (or the server will say it changed),
					// and a re-list would add it back, read it and evict
					// it again, forever.
					m.mu.Lock()
					m.notFound[chunk[i].URI] = true
					m.mu.Unlock()
					evict = true
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
		for _, c := range cs {
			delete(pending, c.Key.URI)
		}
		if stop {
			m.log.Warn("content index: stopping after reads in a row got no answer; the rest keep their descriptors only", "unanswered", streak)
			break
		}
		if time.Since(last) > 5*time.Second && len(todo) > 0 {
			last = time.Now()
			m.log.Info("indexing contents", "read", read, "left", len(todo), "elapsed", time.Since(start).Round(time.Second))
		}
	}
	if evict {
		m.evictNotFound(ctx)
	}
	m.log.Info("contents indexed", "read", read, "failed", failed, "without_text", empty, "indexed_total", ix.ContentLen(m.opts.Server), "elapsed", time.Since(start).Round(time.Millisecond))
}
