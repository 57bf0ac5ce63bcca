package sync

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
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

// Defaults of the content pass (Options.ContentMaxBytes,
// Options.ContentBytes, Options.ContentPassTime and Options.ContentMaxAge).
const (
	DefaultContentMaxBytes = index.MaxContentBytes
	// DefaultContentBytes is a quarter of index.DefaultContentBytes, so
	// one big server leaves room for others.
	DefaultContentBytes    = 64 << 20
	DefaultContentPassTime = 10 * time.Minute
	DefaultContentMaxAge   = time.Hour
)

// contentRetryAfter is how long a resource whose read failed in a content
// pass is skipped by later passes, unless its descriptor changes.
const contentRetryAfter = 30 * time.Minute

// A contentFailure is a failed read of the content pass: which version of
// the descriptor failed, and until when it is not tried again.
type contentFailure struct {
	stamp string
	until time.Time
	// stale: the read got no answer after the server said the resource
	// changed, so the server's word is already spent on it (see
	// indexContents).
	stale bool
}

// embedPassages embeds the passages of the server's texts that have no
// vector yet (index.EmbedPassages), the shallowest first, a round at a
// time, until none is left (or the index's cap on passages is reached),
// ctx ends, or, between rounds, a pass is asked for on kick (nil: never);
// it reports false in that last case, having taken the request, which the
// caller renews after it.
func (m *Mirror) embedPassages(ctx context.Context, kick <-chan struct{}) bool {
	if !m.owns() {
		return true // the owner embeds them
	}
	ix := m.opts.Index
	start, last, total := time.Now(), time.Now(), 0
	defer func() {
		if total > 0 {
			m.log.Info("passages embedded", "passages", total, "left", ix.PendingPassages(m.opts.Server), "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}()
	for ctx.Err() == nil {
		n, err := ix.EmbedPassages(ctx, m.opts.Server, passagesPerRound)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("content index: embedding passages failed", "err", err)
			}
			return true
		}
		if n == 0 {
			return true
		}
		select {
		case <-kick:
			return false
		default:
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			m.log.Info("embedding passages", "embedded", total, "left", ix.PendingPassages(m.opts.Server), "elapsed", time.Since(start).Round(time.Second))
		}
	}
	return true
}

// passagesPerRound is how many passages embedPassages embeds between looks
// at kick: a few seconds with USE-lite on two cores.
const passagesPerRound = 64

// contentNoRoom is a text the content index had no room for: the pass does
// not read that version of the resource again while the room left is
// smaller than size (bytes).
type contentNoRoom struct {
	stamp string
	size  int
}

// dropStale takes out of the index the text of resources the server said
// changed but whose new text cannot be read now, so stale text never ranks;
// they count as read with nothing until they are read again.
func (m *Mirror) dropStale(ctx context.Context, ds []resource.Descriptor) {
	if len(ds) == 0 {
		return
	}
	cs := make([]index.Content, len(ds))
	for i, d := range ds {
		cs[i] = index.Content{Key: d.Key(), Stamp: index.ContentStamp(d)}
	}
	if _, err := m.opts.Index.SetContents(context.WithoutCancel(ctx), cs...); err != nil {
		m.log.Warn("content index: dropping stale text failed", "err", err)
	}
}

// sessionEnd tells the content pass whether, and how, its session ended.
type sessionEnd struct {
	done chan struct{} // closed when the session has ended
	err  error         // why (the session's Wait); read only after done
}

// wait waits up to d for the session to end and returns whether it did,
// and why.
func (e *sessionEnd) wait(ctx context.Context, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.done:
		return true, e.err
	case <-ctx.Done():
	case <-t.C:
	}
	select { // the end and ctx's cancellation race: the end says more
	case <-e.done:
		return true, e.err
	default:
		return false, nil
	}
}

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

// refuse records whether the content pass found uri's text refused: read
// with no text, or answered with an error (see ContentRefused).
func (m *Mirror) refuse(uri string, refused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !refused {
		delete(m.refused, uri)
		return
	}
	if m.refused == nil {
		m.refused = map[string]bool{}
	}
	m.refused[uri] = true
}

// ContentRefused reports whether the content pass's last read of uri
// answered no text (private or not) or an error: a bridge's
// answer for what it passes back when it cannot, or will not, give it.
// Reads that took too long, were left out by a bound, or are not made
// (see ContentWanted) are not refused.
func (m *Mirror) ContentRefused(uri string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused[uri]
}

// ContentWanted reports whether the content pass reads d for the content
// index (a text a model may be given, within the server's bounds), so
// that an empty index entry for it means it was not read yet, or read
// empty or failing. False when the server's content is not indexed.
func (m *Mirror) ContentWanted(d resource.Descriptor) bool {
	return m.opts.ContentMaxResources >= 0 && contentWanted(d, m.opts.ContentMaxBytes)
}

// textBytes returns the bytes of cs's texts.
func textBytes(cs []resource.Content) int {
	n := 0
	for _, c := range cs {
		if !c.IsBlob {
			n += len(c.Text)
		}
	}
	return n
}

// withheldChecks bounds the reads checkWithheld makes in one pass.
const withheldChecks = 32

// checkWithheld reads, once each, the resources a withheld server whose
// texts are not indexed listed since it was withheld, for what contextd's
// MCP server lists of it: a text that is no copy of what it served is
// listed (mcp.ServedLists.NoteOwn), a copy not. Without it, such a server
// (two servers holding the same pages, a host reading one's through
// contextd) would have nothing it lists later listed. The texts are
// neither kept nor indexed. At most withheldChecks a pass, the oldest
// first, and none after contentMaxFailures fail in a row (a server that
// hangs); reads that fail are tried again after contentRetryAfter.
func (m *Mirror) checkWithheld(ctx context.Context, sess *mcp.Session) {
	if !m.opts.Served.Withheld(m.opts.Server) || !sess.Capabilities().Resources {
		return
	}
	uris := m.readsBack.listedSinceWithheld()
	if len(uris) == 0 {
		return
	}
	now := time.Now()
	m.mu.Lock()
	if m.withheldChecked == nil {
		m.withheldChecked = map[string]time.Time{}
	}
	todo := slices.DeleteFunc(uris, func(uri string) bool {
		at, ok := m.withheldChecked[uri]
		return ok && (at.IsZero() || now.Sub(at) < contentRetryAfter)
	})
	reread := maps.Clone(m.reread)
	m.mu.Unlock()
	read, failed := 0, 0
	for _, uri := range todo {
		if read == withheldChecks {
			// More wait: another pass soon (at the pace the content
			// passes keep), not at the server's next change.
			select {
			case m.recontent <- struct{}{}:
			default:
			}
			break
		}
		if failed == contentMaxFailures || ctx.Err() != nil {
			break
		}
		k := resource.Key{Server: m.opts.Server, URI: uri}
		d, ok := m.opts.Index.Get(k)
		if !ok || !contentWanted(d, m.opts.ContentMaxBytes) || m.opts.Served.IsCopy(k) && !reread[uri] || m.opts.Served.IsOwn(k) {
			continue
		}
		read++
		rctx, cancel := context.WithTimeout(ctx, contentReadTimeout)
		_, _, err := m.readHint(rctx, sess, uri, true)
		cancel()
		failed++
		if err == nil {
			failed = 0
		}
		m.mu.Lock()
		if err == nil {
			delete(m.reread, uri)
		}
		if len(m.withheldChecked) < maxReadsBack {
			at := time.Time{} // checked
			if err != nil {
				at = time.Now() // tried again later
			}
			m.withheldChecked[uri] = at
		}
		m.mu.Unlock()
	}
	if read > 0 {
		m.log.Debug("read resources listed since the server was withheld, to tell its own from copies", "read", read, "left", max(len(todo)-read, 0))
	}
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

// Reread has the next content pass read again every resource of the
// server whose text the index holds, as if the server had said each was
// updated, and checkWithheld read again those known as copies: the
// server's name now stands for another server (its endpoint changed; see
// config.Server.Endpoint), so those texts, and the copies found among
// them, are the earlier server's. Until read, the old texts stay indexed
// and the copies stay copies. It asks for a content pass at once.
func (m *Mirror) Reread() {
	ds := m.opts.Index.Descriptors(m.opts.Server)
	// Asked of the index before the lock: reads wait on m.mu.
	indexed := make([]bool, len(ds))
	for i, d := range ds {
		indexed[i], _ = m.opts.Index.HasContent(d.Key())
	}
	m.mu.Lock()
	if m.reread == nil {
		m.reread = map[string]bool{}
	}
	for i, d := range ds {
		if len(m.reread) < maxReadsBack {
			m.reread[d.URI] = true
			delete(m.withheldChecked, d.URI)
		}
		if indexed[i] {
			m.contentStale[d.URI] = true
		}
	}
	m.mu.Unlock()
	select {
	case m.recontent <- struct{}{}:
	default:
	}
}

// indexContents is the content pass: it reads the text of the server's
// resources that contentWanted accepts and indexes it (index.SetContents):
// first those the server said were updated, then those with no text
// indexed for their current descriptor (at most ContentMaxResources
// indexed per server, in URI order), then, with refreshAged, those without
// lastModified whose text is older than ContentMaxAge. Reads go straight to
// the session, without subscribing or caching; a result whose cacheScope is set and not "public" is recorded as
// read but its text is not indexed. A failed read is not tried again for
// contentRetryAfter, unless the descriptor changes, or the server says the
// resource was updated after the failure, or the failure after that word
// was an error answer (a read that got no answer then waits, its stale text
// dropped); one the server answers with "not found" evicts the descriptor at
// the end of the pass, as Read does. After contentMaxFailures reads in a row get no answer (they time
// out or the connection fails) the pass cancels the reads in flight and
// stops; the next pass skips those and goes on. It reports progress every
// few seconds on big servers. Only the content worker calls it, one pass at
// a time. It reports whether the pass was cut short: its session ended
// (end), or ctx did.
//
// When reads fail without an answer, the pass waits up to a second to see
// whether the session ended. If it did (and the server did not merely
// expire it, the normal end of an HTTP session), the reads it cut off are
// suspects: the next session's pass reads them first, one at a time, and
// one whose lone read ends that session too is left alone for
// contentRetryAfter, whatever its version or the server's word that it
// changed (a resource whose read kills the server). If the session lives
// on, the failures were the reads' own.
func (m *Mirror) indexContents(ctx context.Context, sess *mcp.Session, refreshAged bool, end *sessionEnd) (cut bool) {
	if !m.owns() {
		return // the owner indexes them
	}
	if m.opts.ContentMaxResources < 0 {
		// Off: text indexed by an earlier run (a kept data_dir) must not
		// go on ranking this server.
		if n, err := m.opts.Index.DropContents(ctx, m.opts.Server); err != nil {
			m.log.Warn("content index: dropping this server's indexed text failed", "err", err)
		} else if n > 0 {
			m.log.Info("content index is off for this server; dropped its indexed text", "resources", n)
		}
		m.checkWithheld(ctx, sess)
		return
	}
	if !sess.Capabilities().Resources {
		return
	}
	ix := m.opts.Index
	m.mu.Lock()
	stale := m.contentStale
	m.contentStale = map[string]bool{}
	m.mu.Unlock()
	var updated, regain, fresh, aged []resource.Descriptor
	var held []resource.Descriptor // stale, but not to be read yet: they stay stale, their old text gone
	have := 0
	now := time.Now()
	listed := map[string]bool{}
	for _, d := range ix.Descriptors(m.opts.Server) {
		listed[d.URI] = true
		if !contentWanted(d, m.opts.ContentMaxBytes) {
			continue
		}
		has, at := ix.HasContent(d.Key())
		if has {
			have++
			if size := ix.ContentSize(d.Key()); size > 0 {
				m.contentHad[d.URI] = size
			}
		}
		// A resource whose read ended sessions is left alone for a while,
		// whatever its version or the server's word that it changed (its
		// old text goes, and it stays stale).
		if until, ok := m.contentKillers[d.URI]; ok {
			if now.Before(until) {
				if stale[d.URI] {
					held = append(held, d)
				}
				continue
			}
			delete(m.contentKillers, d.URI)
		}
		// The server's word that a resource changed outweighs a read that
		// failed before it, or was answered with an error after it: its old
		// text is stale, so it is tried on every pass. A read that got no
		// answer after it waits out the retry time like any other, its old
		// text gone.
		if f, ok := m.contentFailed[d.URI]; ok && f.stamp == index.ContentStamp(d) && now.Before(f.until) && (!stale[d.URI] || f.stale) {
			if stale[d.URI] {
				held = append(held, d)
			}
			continue
		}
		switch {
		case stale[d.URI]:
			updated = append(updated, d)
		case !has && m.contentHad[d.URI] > 0:
			regain = append(regain, d) // edited, or removed and listed again
		case !has:
			fresh = append(fresh, d)
		case refreshAged && d.LastModified == "" && m.opts.ContentMaxAge > 0 && now.Sub(at) > m.opts.ContentMaxAge:
			aged = append(aged, d)
		}
	}
	for uri := range m.contentFailed {
		if !listed[uri] {
			delete(m.contentFailed, uri)
		}
	}
	for uri := range m.contentNoRoom {
		if !listed[uri] {
			delete(m.contentNoRoom, uri)
		}
	}
	for uri := range m.contentKillers {
		if !listed[uri] {
			delete(m.contentKillers, uri)
		}
	}
	if len(m.contentHad) > 2*len(listed)+1024 {
		// Forget removed resources once they would outnumber the listed.
		for uri := range m.contentHad {
			if !listed[uri] {
				delete(m.contentHad, uri)
			}
		}
	}
	useful := m.usefulness(ctx)
	slices.SortStableFunc(fresh, useful.compare)
	focusLeft := 0 // focus resources this pass reads
	for _, d := range slices.Concat(updated, regain, fresh) {
		if _, ok := useful.focus[d.URI]; ok {
			focusLeft++
		}
	}
	// What waits for a bound, and which bound.
	waiting, bound := 0, ""
	leave := func(n int, why string) {
		if n > 0 {
			waiting += n
			if bound == "" {
				bound = why
			}
		}
	}
	if m.opts.ContentMaxResources > 0 {
		if room := max(m.opts.ContentMaxResources-have-len(regain), 0); len(fresh) > room {
			m.log.Info("content index full for this server (count); the rest are ranked by their descriptors",
				"indexed", have, "left_out", len(fresh)-room, "max", m.opts.ContentMaxResources)
			leave(len(fresh)-room, "count")
			fresh = fresh[:room]
		}
	}
	// The server's byte bound: resources that had text keep the bytes it
	// took; the others are taken in order of usefulness while they fit
	// (by declared size, or the size a read found before; an undeclared
	// one is checked once read).
	serverRoom := int64(math.MaxInt64)
	if m.opts.ContentBytes > 0 {
		serverRoom = m.opts.ContentBytes - ix.ServerContentBytes(m.opts.Server)
		for _, d := range regain {
			serverRoom -= int64(m.contentHad[d.URI])
		}
		var planned int64
		kept := fresh[:0]
		for _, d := range fresh {
			size := m.knownSize(d)
			if planned+size > serverRoom {
				leave(1, "bytes")
				continue
			}
			planned += size
			kept = append(kept, d)
		}
		if n := len(fresh) - len(kept); n > 0 {
			m.log.Info("content bound of this server reached; the less useful resources are ranked by their descriptors",
				"left_out", n, "bound_bytes", m.opts.ContentBytes)
		}
		fresh = kept
	}
	var spent int64 // bytes of the server's room taken this pass: new texts, and what old ones grew by
	todo := slices.Concat(updated, regain, fresh, aged)
	isRegain := make(map[string]bool, len(regain))
	for _, d := range regain {
		isRegain[d.URI] = true
	}
	m.setContentWaiting(len(todo)+waiting, bound)
	defer func() { m.setContentWaiting(len(todo)+waiting, bound) }()
	if focusLeft == 0 && len(useful.focus) > 0 {
		m.markAnswerable() // what the focus query needs is indexed already
	}
	// Reads the connection cut off when the last session broke go first,
	// one at a time: if the session breaks again during one of them, that
	// read is the cause (a resource whose read kills the server), and it
	// alone is left for a while. The others in flight with it were not.
	prev := m.contentSuspects
	slices.SortStableFunc(todo, func(a, b resource.Descriptor) int {
		switch {
		case prev[a.URI] && !prev[b.URI]:
			return -1
		case prev[b.URI] && !prev[a.URI]:
			return 1
		}
		return 0
	})
	// The server said these were updated: they stay stale until their new
	// text is indexed, however this pass ends, or the old text would stay
	// indexed for good.
	pending := map[string]bool{}
	for _, d := range updated {
		pending[d.URI] = true
	}
	for _, d := range held {
		pending[d.URI] = true
	}
	m.dropStale(ctx, held)
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for uri := range pending {
			m.contentStale[uri] = true
		}
	}()
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
	isFresh := make(map[string]bool, len(fresh))
	for _, d := range fresh {
		isFresh[d.URI] = true
	}
	noRoom := 0 // texts left out for the index's cap
	defer func() {
		if noRoom > 0 {
			m.log.Warn("content index full across servers; resources whose text has no room are ranked by their descriptors",
				"left_out", noRoom, "room_bytes", ix.ContentRoom())
		}
	}()
	// suspects: URIs whose reads the connection cut off in this pass.
	suspects := map[string]bool{}
	attempted := map[string]bool{} // reads sent in this pass
	defer func() {
		// Suspects this pass did not get to stay suspects.
		for uri := range prev {
			if !attempted[uri] {
				suspects[uri] = true
			}
		}
		m.contentSuspects = suspects
	}()
	for len(todo) > 0 && ctx.Err() == nil && !stop {
		select {
		case <-end.done:
			return true // nothing more is sent on a dead connection
		default:
		}
		if m.opts.ContentPassTime > 0 && time.Since(start) > m.opts.ContentPassTime {
			// Out of time: resources that never had text wait for the next
			// pass; the others still go.
			n := len(todo)
			todo = slices.DeleteFunc(todo, func(d resource.Descriptor) bool { return isFresh[d.URI] })
			if n > len(todo) {
				m.log.Info("content pass ran out of time; the rest wait for the next pass", "left", n-len(todo), "pass_time", m.opts.ContentPassTime)
				leave(n-len(todo), "time")
			}
			if len(todo) == 0 {
				break
			}
		}
		// The index holds at most its cap of text across all servers: a
		// new text that cannot fit (its declared size, or the size it had
		// when it was left out before, is over the room left, or there is
		// none) is not read, since it would be thrown away. Texts that
		// replace one are read: they may fit.
		room := ix.ContentRoom()
		n := len(todo)
		todo = slices.DeleteFunc(todo, func(d resource.Descriptor) bool {
			if !isFresh[d.URI] {
				return false
			}
			size := min(d.Size, index.MaxContentBytes)
			if nr, ok := m.contentNoRoom[d.URI]; ok && nr.stamp == index.ContentStamp(d) {
				size = max(size, int64(nr.size))
			}
			return room <= 0 || size > room
		})
		noRoom += n - len(todo)
		leave(n-len(todo), "index")
		if len(todo) == 0 {
			break
		}
		size := contentChunk
		if prev[todo[0].URI] {
			size = 1
		}
		chunk := todo[:min(size, len(todo))]
		todo = todo[len(chunk):]
		got := make([]*index.Content, len(chunk))
		blank := make([]bool, len(chunk)) // read, with no text in it
		errs := make([]error, len(chunk))
		cut := make([]bool, len(chunk)) // the read failed because the pass ended
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(contentReaders)
		for i, d := range chunk {
			g.Go(func() error {
				if gctx.Err() != nil {
					return nil // the pass is ending: not read
				}
				rctx, cancel := context.WithTimeout(gctx, contentReadTimeout)
				defer cancel()
				smu.Lock()
				attempted[d.URI] = true
				smu.Unlock()
				cs, hint, err := m.readHint(rctx, sess, d.URI, true)
				m.opts.Observer.Called(m.opts.Server, MethodRead, err)
				if err != nil && gctx.Err() != nil {
					cut[i] = true // by the pass ending, not the resource's failure
					errs[i] = err
					return nil
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
				blank[i] = !slices.ContainsFunc(cs, func(c resource.Content) bool { return !c.IsBlob && strings.TrimSpace(c.Text) != "" })
				got[i] = c
				smu.Lock()
				streak = 0
				smu.Unlock()
				return nil
			})
		}
		_ = g.Wait()
		// Did the session end under these reads?
		unanswered := func(err error) bool {
			var werr *jsonrpc.Error
			var nf *mcp.NotFoundError
			return err != nil && !errors.As(err, &werr) && !errors.As(err, &nf) && !errors.Is(err, context.DeadlineExceeded)
		}
		ended, blame := false, false
		if ctx.Err() != nil || slices.ContainsFunc(errs, unanswered) {
			var endErr error
			ended, endErr = end.wait(ctx, time.Second)
			blame = ended && !errors.Is(endErr, mcp.ErrSessionExpired)
			ended = ended || ctx.Err() != nil
		}
		var cs []index.Content
		var staleFailed []resource.Descriptor
		for i, c := range got {
			err := errs[i]
			uri := chunk[i].URI
			if blame && unanswered(err) {
				suspects[uri] = true
				if prev[uri] && len(chunk) == 1 {
					m.contentKillers[uri] = time.Now().Add(contentRetryAfter)
					m.log.Warn("content index: the session ended during this resource's read twice, the second time with no other read in flight; not reading it again for a while",
						"uri", uri, "retry_after", contentRetryAfter)
				}
			}
			var nf *mcp.NotFoundError
			switch {
			case c != nil:
				cs = append(cs, *c)
				delete(m.contentFailed, uri)
				read++
				if c.Text == "" {
					empty++ // no text, or a private result
				}
				m.refuse(uri, blank[i])
			case err == nil || cut[i] || ended:
				// not read: the pass is ending (the next session's sync
				// runs a new one)
			default:
				failed++
				// Remembered when the resource itself failed: the server
				// answered an error, did not answer in time, or sent what
				// could not be used while the session lived on.
				// A resource the server said changed is read again on the
				// next pass after an error answer (the server is alive),
				// but not after no answer: a read that hangs or kills the
				// server would do it again at every session.
				var werr *jsonrpc.Error
				hold := stale[uri] && !errors.As(err, &werr) && !errors.As(err, &nf)
				m.refuse(uri, errors.As(err, &werr))
				m.contentFailed[uri] = contentFailure{stamp: index.ContentStamp(chunk[i]), until: time.Now().Add(contentRetryAfter), stale: hold}
				if stale[uri] && !errors.As(err, &nf) {
					staleFailed = append(staleFailed, chunk[i]) // its old text goes either way
				}
				if errors.As(err, &nf) {
					// Evicted at the end of the pass. No re-list: the list
					// was just read (or the server will say it changed),
					// and a re-list would add it back, read it and evict
					// it again, forever.
					m.mu.Lock()
					m.notFound[uri] = true
					m.mu.Unlock()
					evict = true
				}
				m.log.Debug("reading for the content index failed", "uri", uri, "err", err)
			}
		}
		// A text that never had a place takes the server's bytes only while
		// they last; one that had (edited, updated, re-added, aged) keeps
		// the bytes it took, and what it grew by comes out of the same room.
		if m.opts.ContentBytes > 0 {
			cs = slices.DeleteFunc(cs, func(c index.Content) bool {
				size := int64(min(len(c.Text), index.MaxContentBytes))
				if !isFresh[c.Key.URI] {
					base := int64(ix.ContentSize(c.Key))
					if isRegain[c.Key.URI] {
						base = int64(m.contentHad[c.Key.URI])
					}
					grow := size - base
					if grow <= 0 {
						return false
					}
					if spent+grow > serverRoom {
						m.contentNoRoom[c.Key.URI] = contentNoRoom{stamp: c.Stamp, size: int(size)}
						leave(1, "bytes")
						return true
					}
					spent += grow
					return false
				}
				if spent+size > serverRoom {
					m.contentNoRoom[c.Key.URI] = contentNoRoom{stamp: c.Stamp, size: int(size)}
					leave(1, "bytes")
					return true
				}
				spent += size
				return false
			})
		}
		// What was read is stored however the pass ends: the index is
		// local, and the reads were answered.
		_, err := ix.SetContents(context.WithoutCancel(ctx), cs...)
		var full *index.ContentFullError
		switch {
		case errors.As(err, &full):
			// The rest of cs is stored. A text left out took the old one
			// with it, so none stays stale; it is not read again while
			// the room left is smaller than it.
			leave(len(full.Left), "index")
			for k, size := range full.Left {
				noRoom++
				for _, c := range cs {
					if c.Key == k {
						m.contentNoRoom[k.URI] = contentNoRoom{stamp: c.Stamp, size: size}
					}
				}
			}
		case err != nil:
			m.log.Warn("content index: indexing failed", "err", err)
			return ended
		}
		for _, c := range cs {
			delete(pending, c.Key.URI)
			if full == nil || full.Left[c.Key] == 0 {
				delete(m.contentNoRoom, c.Key.URI)
				if size := ix.ContentSize(c.Key); size > 0 {
					m.contentHad[c.Key.URI] = size
				}
			}
		}
		for _, d := range chunk {
			if _, ok := useful.focus[d.URI]; ok {
				focusLeft--
			}
		}
		if focusLeft <= 0 && len(useful.focus) > 0 {
			m.markAnswerable()
		}
		m.setContentWaiting(len(todo)+waiting, bound)
		m.dropStale(ctx, staleFailed) // they stay pending
		if ended {
			return true
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
	return ctx.Err() != nil
}

// setContentWaiting records Status.ContentWaiting and ContentBound.
func (m *Mirror) setContentWaiting(n int, bound string) {
	m.mu.Lock()
	m.contentPassed = true
	m.status.ContentWaiting, m.status.ContentBound = n, bound
	m.mu.Unlock()
}

// knownSize is the bytes d's text is expected to take in the content
// index: what a read found when it was left out before (for this version),
// else its declared size (0 when undeclared), at most MaxContentBytes.
func (m *Mirror) knownSize(d resource.Descriptor) int64 {
	size := min(d.Size, index.MaxContentBytes)
	if nr, ok := m.contentNoRoom[d.URI]; ok && nr.stamp == index.ContentStamp(d) {
		size = max(size, int64(nr.size))
	}
	return size
}

// focusDepth is how many of the focus query's best-ranked resources a
// content pass reads first (each of its dense and lexical lists).
const focusDepth = 48

// A usefulness orders resources that never had text for the content pass.
type usefulness struct {
	ix    *index.Index
	focus map[string]int // URI → best rank for the focus query
}

// usefulness ranks the server's descriptors for the index's focus query
// (index.SetFocus), if any, by its dense and lexical lists.
func (m *Mirror) usefulness(ctx context.Context) usefulness {
	u := usefulness{ix: m.opts.Index, focus: map[string]int{}}
	q := u.ix.Focus()
	if q == "" {
		return u
	}
	f := index.Filter{Servers: []string{m.opts.Server}}
	lex := u.ix.Lexical(q, focusDepth, f)
	dense, err := u.ix.Dense(ctx, q, focusDepth, f)
	if err != nil {
		m.log.Debug("ranking for the focus query failed", "err", err)
	}
	for _, hs := range [][]index.Hit{dense, lex} {
		for i, h := range hs {
			if r, ok := u.focus[h.Key.URI]; !ok || i < r {
				u.focus[h.Key.URI] = i
			}
		}
	}
	return u
}

// compare orders a before b when a is more useful: ranked for the focus
// query (the better rank first), then more often among queries'
// candidates (index.Hits), then a higher priority annotation (none counts
// as 0.5), then a later lastModified (none counts as oldest), then by URI.
func (u usefulness) compare(a, b resource.Descriptor) int {
	fa, oka := u.focus[a.URI]
	fb, okb := u.focus[b.URI]
	switch {
	case oka && okb:
		if c := cmp.Compare(fa, fb); c != 0 {
			return c
		}
	case oka:
		return -1
	case okb:
		return 1
	}
	if c := cmp.Compare(u.ix.Hits(b.Key()), u.ix.Hits(a.Key())); c != 0 {
		return c
	}
	prio := func(d resource.Descriptor) float64 {
		if d.Priority > 0 {
			return d.Priority
		}
		return 0.5
	}
	if c := cmp.Compare(prio(b), prio(a)); c != 0 {
		return c
	}
	if c := modified(b).Compare(modified(a)); c != 0 {
		return c
	}
	return strings.Compare(a.URI, b.URI)
}

// modified parses d's lastModified (ISO 8601), zero when absent or
// unreadable.
func modified(d resource.Descriptor) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, d.LastModified); err == nil {
			return t
		}
	}
	return time.Time{}
}

// focusCandidates is how many resources focusFirst embeds and reads before
// the rest of the list: twice the most candidates an answer considers.
const focusCandidates = 80

// focusMinList is how many descriptors a list must add for focusFirst to
// go ahead of it: two chunks of index.Upsert, a few seconds of embedding
// with USE-lite on two idle cores.
const focusMinList = 512

// focusFirst serves a one-shot query before the rest of a big list: when
// the index has a focus query (index.SetFocus), Answerable is not closed
// yet, and the list adds at least focusMinList descriptors, it stores the listed descriptors the query matches best by
// BM25F (index.FocusCandidates), reads the text of those the content pass
// wants and indexes it, and reports true: the caller closes Answerable
// once the rest of the list is pending (it ranks lexically until stored).
// Reads that fail are left to the content pass.
func (m *Mirror) focusFirst(ctx context.Context, sess *mcp.Session, listed []resource.Descriptor) bool {
	select {
	case <-m.answerable:
		return false
	default:
	}
	ix := m.opts.Index
	unstored := 0
	for _, d := range listed {
		if _, ok := ix.Get(d.Key()); !ok {
			unstored++
		}
	}
	if unstored < focusMinList {
		return false // storing the whole list first costs little
	}
	top := ix.FocusCandidates(listed, focusCandidates)
	if len(top) == 0 {
		return false
	}
	start := time.Now()
	if _, err := ix.Upsert(ctx, top...); err != nil {
		m.log.Debug("storing the focus query's candidates failed", "err", err)
		return false
	}
	if m.opts.ContentMaxResources >= 0 && sess.Capabilities().Resources {
		got := make([]*index.Content, len(top))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(contentReaders)
		for i, d := range top {
			if has, _ := ix.HasContent(d.Key()); has || !contentWanted(d, m.opts.ContentMaxBytes) {
				continue
			}
			g.Go(func() error {
				rctx, cancel := context.WithTimeout(gctx, contentReadTimeout)
				defer cancel()
				cs, hint, err := m.readHint(rctx, sess, d.URI, true)
				if err != nil {
					return nil // the content pass tries again
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
		for _, c := range got {
			if c != nil {
				cs = append(cs, *c)
			}
		}
		if _, err := ix.SetContents(context.WithoutCancel(ctx), cs...); err != nil && !errors.Is(err, index.ErrContentFull) {
			m.log.Debug("indexing the focus query's candidates failed", "err", err)
		}
	}
	m.log.Info("indexed the focus query's candidates first", "resources", len(top), "elapsed", time.Since(start).Round(time.Millisecond))
	return true
}
