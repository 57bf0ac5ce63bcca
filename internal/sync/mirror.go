package sync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/contextd/contextd/internal/embed/remote"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
)

// State is a mirror's health as reported by ListServers.
type State int

// States.
const (
	StateConnecting State = iota + 1 // no session yet, or reconnecting before any sync
	StateReady                       // session up, last sync complete
	StateDegraded                    // session up, last sync incomplete or failed
	StateStale                       // session lost; the index holds the last good mirror
	StateFailed                      // never connected (the last attempt's error says why)
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateReady:
		return "ready"
	case StateDegraded:
		return "degraded"
	case StateStale:
		return "stale"
	case StateFailed:
		return "failed"
	}
	return "unknown"
}

// Defaults for Options fields left zero.
const (
	DefaultDebounce       = 250 * time.Millisecond
	DefaultMaxStormDelay  = 30 * time.Second
	DefaultPollInterval   = 5 * time.Minute
	DefaultMinBackoff     = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultConnectTimeout = 30 * time.Second
	DefaultSyncTimeout    = 2 * time.Minute
	DefaultCacheBytes     = 32 << 20
	DefaultReconnectWait  = 2 * time.Second
	// DefaultContentMaxResources and DefaultContentMaxBytes are in content.go.
)

// A DialFunc opens a session to the mirror's server, installing the
// notification callbacks given in opts.
type DialFunc func(ctx context.Context, opts *mcp.Options) (*mcp.Session, error)

// Options configures a Mirror.
type Options struct {
	// Server is the configured server name. Required.
	Server string
	// Served is what this process's MCP server listed lately: a server
	// listing it back (a bridge replacing URIs) is this contextd. Nil:
	// not checked.
	Served *mcp.ServedLists
	// Dial opens a session. Required.
	Dial DialFunc
	// Index receives the descriptors. Required.
	Index *index.Index
	// Logger; nil discards.
	Logger *slog.Logger
	// Debounce is the list_changed coalescing window. Zero means DefaultDebounce.
	Debounce time.Duration
	// MaxStormDelay caps the debounce window of a server that notifies again
	// right after every re-list. Zero means DefaultMaxStormDelay.
	MaxStormDelay time.Duration
	// PollInterval re-lists servers that do not declare
	// resources.listChanged. Zero means DefaultPollInterval; negative never polls.
	PollInterval time.Duration
	// MinBackoff and MaxBackoff bound reconnect delays (see backoff). A
	// session that stays up for MaxBackoff resets the sequence. Zero means
	// DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds one connect + initialize. Zero means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// SyncTimeout bounds one full sync (every page of both lists). A sync
	// that runs out marks the mirror degraded. Zero means DefaultSyncTimeout.
	SyncTimeout time.Duration
	// CacheBytes bounds the read cache: text and blob bytes, plus URIs,
	// MIME types and a fixed overhead per content item and per entry (96
	// and 128 bytes). Zero means DefaultCacheBytes; negative disables
	// caching.
	CacheBytes int64
	// ContentMaxResources caps how many of the server's resources have
	// their content indexed (the content pass, see indexContents and
	// index.SetContents), the most useful first (see ContentBytes). Zero
	// means no cap; negative turns the content index off for the server.
	ContentMaxResources int
	// ContentBytes bounds the server's text in the content index, in bytes
	// (each text counted up to index.MaxContentBytes). When the pass cannot
	// index everything, it reads by usefulness: first what the server said
	// changed, then resources that had text indexed and lost it (edited, or
	// removed and listed again: the bytes their last text took are kept
	// for them), then the others by the focus query (index.SetFocus), how
	// often queries hit them (index.NoteHits), their priority annotation,
	// and their lastModified (newest first); what does not fit waits
	// (Status.ContentWaiting). Zero means DefaultContentBytes; negative, no
	// bound for the server (the index's across all servers still holds).
	ContentBytes int64
	// ContentPassTime bounds one content pass: once it has run this long,
	// it reads no more resources that never had text, and those wait for
	// the next pass (a quarter of ContentMaxAge later, at least a minute).
	// Zero means DefaultContentPassTime; negative, no bound.
	ContentPassTime time.Duration
	// ContentMaxBytes is the largest declared size, in bytes, of a
	// resource read for the content index. Zero or negative means
	// DefaultContentMaxBytes.
	ContentMaxBytes int64
	// ContentMaxAge is how long indexed text of a resource without
	// lastModified is trusted: older text is read again (and re-embedded
	// only if it changed) by the passes after the first. A resource with
	// lastModified is read again when that changes. Zero means
	// DefaultContentMaxAge; negative never reads again for age alone.
	ContentMaxAge time.Duration
	// ReconnectWait bounds how long a read waits for a session while the
	// mirror reconnects (after a lost session, or during its first
	// connect): a read that finds no session waits up to this long for the
	// next one, and fails with ErrUnavailable at once when the next attempt
	// is due later than that, the server has never connected and its last
	// attempt failed, or another read already waited in vain since the
	// last session. Zero means DefaultReconnectWait; negative never
	// waits.
	ReconnectWait time.Duration
	// PassagesBeforeReady makes Ready wait, after the first content pass,
	// until every passage of the server's texts has a vector
	// (index.EmbedPassages), so a one-shot ranking (the eval) sees the
	// whole content index. By default Ready follows the pass, which embeds
	// each text's first passage only, and the others are embedded after.
	PassagesBeforeReady bool
	// Redact masks credentials in everything the mirror reports: Status's
	// LastError, the errors Read returns, its log. Nil masks URL
	// credentials, query values and bearer tokens only.
	Redact *redact.Redactor
	// TerminateDuration is passed to mcp.Options for stdio servers: how long
	// each shutdown stage (stdin closed, SIGTERM) may take before the next.
	// Zero means the SDK's default (5s).
	TerminateDuration time.Duration
	// MaxResources caps the descriptors the mirror keeps for its server
	// (mcp.Options.MaxResources): a list walk stops there, and partial
	// lists add no more. Zero means mcp.DefaultMaxResources.
	MaxResources int
	// MaxResourceBytes caps the text of those descriptors the same way
	// (mcp.Options.MaxResourceBytes). Zero means
	// mcp.DefaultMaxResourceBytes.
	MaxResourceBytes int
	// HiddenEnv returns, at each connect, what is passed to mcp.Options:
	// credentials a stdio server must not inherit from contextd's
	// environment (a reload may add some). Nil hides nothing.
	HiddenEnv func() []string
	// CallerText, when set, is the flag the mirrors of this server share
	// across reloads: set once any session of any of them carried a
	// caller's words, which the server may remember (see
	// CarriedCallerText). Nil gives the mirror a flag of its own.
	CallerText *atomic.Bool
	// Observer is told of syncs, upstream requests and cache lookups
	// (metrics). Nil tells nobody.
	Observer Observer
	// Owner, when set, reports whether this replica mirrors the server now
	// (a shared store gives each server one owner among the replicas).
	// While it reports false the mirror lists nothing, runs no content
	// pass and writes nothing to the index, which another replica keeps
	// (see SetShared); it connects only when a read needs a session, and
	// reads keep the cache, subscription and freshness rules. Call
	// OwnerChanged when its answer changes. Nil means always.
	Owner func() bool
	// OnSync, when set, is called after each successful sync with the
	// templates listed and the time, with the mirror's lock held: it must
	// not block or call the mirror.
	OnSync func(templates []resource.Template, at time.Time)
}

// Status is a snapshot of a mirror.
type Status struct {
	Server        string
	State         State
	Capabilities  mcp.Capabilities
	Resources     int  // descriptors in the index for this server
	Templates     int  // templates from the last sync
	ListComplete  bool // false when the last list walk stopped early
	Incomplete    string
	Rejected      int      // list entries dropped as malformed in the last sync
	Duplicates    int      // list entries dropped as repeats in the last sync
	Problems      []string // the first few of those, naming the page
	LastSync      time.Time
	LastError     string
	LastErrorTime time.Time
	ServerName    string // from initialize
	ServerVersion string
	Protocol      string // negotiated protocol version
	Syncs         int    // completed sync attempts since start
	Contents      int    // resources whose content is indexed (index.SetContents)
	// Activity says what a connected server's mirror is doing, or is empty:
	// "listing" while it walks the lists, "indexing N/M" while it stores the
	// M descriptors the list added or changed (embedding them).
	Activity string
	// DescriptorsPending counts listed descriptors without a vector yet
	// (index.Pending): they rank by BM25F alone meanwhile.
	DescriptorsPending int
	// ContentWaiting counts resources whose text the content pass wants but
	// the index does not hold: not read yet in the pass under way, or left
	// out of the last one by a bound (ContentBound).
	ContentWaiting int
	// ContentBytes is the server's text in the content index, in bytes;
	// ContentMaxBytes its bound (Options.ContentBytes; 0: none).
	ContentBytes, ContentMaxBytes int64
	// ContentBound says which bound left resources waiting in the last
	// pass: "bytes" (ContentMaxBytes), "time" (Options.ContentPassTime),
	// "count" (Options.ContentMaxResources), "index" (the index's bound
	// across servers), or "" for none.
	ContentBound string
	// PassagesPending counts passages of the server's indexed texts not
	// embedded yet (index.PendingPassages).
	PassagesPending int
}

// A Mirror keeps one server mirrored. Create it with New and run it with Run.
type Mirror struct {
	opts Options
	log  *slog.Logger
	red  atomic.Pointer[redact.Redactor] // see SetRedact; opts.Redact is the first
	// callerText is set once any session carried a caller's words: a
	// server (one over HTTP above all) may remember them across sessions.
	// Options.CallerText, or the mirror's own.
	callerText *atomic.Bool
	changed    chan struct{} // capacity 1: a re-list is pending
	missed     chan struct{} // capacity 1: a re-list to catch up is pending (see listMissed)
	// self is set once the server listed this very mirror's resources
	// back (see listsItself): it is this contextd, through a bridge.
	self atomic.Bool
	// readsBack counts the server's reads whose contents this contextd's
	// MCP server answered a read with meanwhile (see readHint).
	readsBack readsBack
	// withheldChecked holds the URIs checkWithheld read (the zero time)
	// or failed to read (when), under mu.
	withheldChecked map[string]time.Time
	// reread holds, under mu, the URIs Reread asked checkWithheld to
	// read again though they are known copies: what the name's earlier
	// server answered under them tells nothing of this one.
	reread map[string]bool
	// growth follows the server's lists for a loop (see growthWatch).
	growth growthWatch

	// mu guards the fields that follow.
	mu     gosync.Mutex
	status Status
	// refused holds the URIs the content pass read and found empty (not
	// private), or whose read the server answered with an error: what a
	// bridge answers of what it passes back (see ContentRefused).
	refused   map[string]bool
	sess      *mcp.Session
	templates []resource.Template
	tplGen    uint64        // counts the replacements of templates
	ready     chan struct{} // see Ready
	newSess   chan struct{} // closed and replaced whenever sess changes
	// backingOff is set while sess is nil and the run loop waits out a
	// backoff rather than reconnecting at once; retryAt is when that
	// backoff ends.
	backingOff bool
	retryAt    time.Time
	// waitedOut is set when a read waited ReconnectWait for a session in
	// vain; until a session comes, later reads fail at once.
	waitedOut bool
	cache     *readCache
	notFound  map[string]bool // URIs a read found missing, evicted after the next sync
	// unsubHung is the session whose last resources/unsubscribe got no
	// answer within unsubscribeTimeout; until unsubHungUntil, unsubscribes
	// over it are not sent.
	unsubHung      *mcp.Session
	unsubHungUntil time.Time
	// passEnd and passTook are when the last content pass ended, whole
	// or cut short by its session's end (Unix nanoseconds, 0 before the
	// first), and how long it took, across sessions (see serve);
	// passCuts counts the passes cut short, passWhole is set once one
	// ended whole.
	passEnd, passTook atomic.Int64
	passCuts          atomic.Int32
	passWhole         atomic.Bool
	// contentStale holds URIs whose indexed content the server said was
	// updated; recontent (capacity 1) asks the run loop for a content pass.
	contentStale map[string]bool
	recontent    chan struct{}
	// contentFailed holds the reads of the content pass that failed, so
	// later passes skip them until the descriptor changes or the retry
	// time comes. contentSuspects holds the URIs whose reads were cut off
	// when the last session broke during a pass: the next pass reads them
	// first, alone, and one cut off again goes to contentKillers (a
	// resource whose read kills the server), left alone for a while by
	// URI. contentNoRoom holds texts the content index had no room for.
	// Only the content worker uses these.
	contentFailed   map[string]contentFailure
	contentSuspects map[string]bool
	contentKillers  map[string]time.Time // URI → until: reads that ended sessions
	contentNoRoom   map[string]contentNoRoom
	// contentHad maps the URIs whose text was indexed to its size in
	// bytes, kept when the text goes (an edit, a removal from the list):
	// such a resource is read before those that never had text, and its
	// bytes are kept for it (see Options.ContentBytes).
	contentHad map[string]int
	// contentPassed is set once a content pass has counted ContentWaiting.
	contentPassed bool
	// answerable is closed once the resources the focus query ranks high
	// have their text indexed (see Answerable).
	answerable     chan struct{}
	answerableOnce gosync.Once
	// unwarm holds cached URIs whose re-read after a reconnect was cut off
	// by the session's end: the next session does not re-read them.
	unwarm map[string]bool
	// relisten holds cached URIs whose subscription the server ended, to be
	// read (and so subscribed) again by the session's relisten worker;
	// relistened says when each was last queued. relistenKick (capacity 1)
	// wakes the worker.
	relisten     map[string]bool
	relistened   map[string]time.Time
	relistenKick chan struct{}
	// readyDeferred is set once a session ended before its first content
	// pass completed and left Ready to the next one; a second such session
	// closes Ready (see serve's content worker).
	readyDeferred bool
	// demand (capacity 1) wakes a mirror that does not own its server
	// (Options.Owner) to connect: a read needs a session, or it became
	// the owner.
	demand chan struct{}
}

// New returns a mirror; it does nothing until Run.
func New(opts Options) *Mirror {
	if opts.Server == "" || opts.Dial == nil || opts.Index == nil {
		panic("sync: Options.Server, Dial and Index are required")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxStormDelay <= 0 {
		opts.MaxStormDelay = DefaultMaxStormDelay
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	if opts.ContentBytes == 0 {
		opts.ContentBytes = DefaultContentBytes
	}
	if opts.ContentPassTime == 0 {
		opts.ContentPassTime = DefaultContentPassTime
	}
	if opts.ContentMaxBytes <= 0 {
		opts.ContentMaxBytes = DefaultContentMaxBytes
	}
	if opts.ContentMaxAge == 0 {
		opts.ContentMaxAge = DefaultContentMaxAge
	}
	if opts.ReconnectWait == 0 {
		opts.ReconnectWait = DefaultReconnectWait
	}
	if opts.Observer == nil {
		opts.Observer = noObserver{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Mirror{
		opts:     opts,
		changed:  make(chan struct{}, 1),
		missed:   make(chan struct{}, 1),
		status:   Status{Server: opts.Server, State: StateConnecting},
		ready:    make(chan struct{}),
		newSess:  make(chan struct{}),
		cache:    newReadCache(opts.CacheBytes),
		notFound: map[string]bool{},

		contentStale:    map[string]bool{},
		recontent:       make(chan struct{}, 1),
		contentFailed:   map[string]contentFailure{},
		contentSuspects: map[string]bool{},
		contentKillers:  map[string]time.Time{},
		unwarm:          map[string]bool{},
		relisten:        map[string]bool{},
		relistened:      map[string]time.Time{},
		relistenKick:    make(chan struct{}, 1),
		contentNoRoom:   map[string]contentNoRoom{},
		contentHad:      map[string]int{},
		answerable:      make(chan struct{}),
		demand:          make(chan struct{}, 1),
	}
	m.callerText = cmp.Or(opts.CallerText, new(atomic.Bool))
	m.red.Store(opts.Redact)
	m.log = slog.New(redact.HandlerFunc(log.Handler(), m.redactor)).With("server", opts.Server)
	return m
}

// Answerable is closed when a one-shot query can be answered well: the
// first sync has listed every descriptor (those not embedded yet rank
// lexically) and stored, read and indexed first the resources the focus
// query (index.SetFocus) matches best (focusFirst), or the content pass
// has indexed those it ranks highest; or when Ready is closed. Without a
// focus query it is closed with Ready.
func (m *Mirror) Answerable() <-chan struct{} { return m.answerable }

func (m *Mirror) markAnswerable() {
	m.answerableOnce.Do(func() { close(m.answerable) })
}

// owns reports whether this replica mirrors the server (Options.Owner).
func (m *Mirror) owns() bool { return m.opts.Owner == nil || m.opts.Owner() }

// OwnerChanged tells the mirror Options.Owner's answer may have changed:
// a new owner connects (if it was not) and lists the server at once.
func (m *Mirror) OwnerChanged() {
	m.wantSession()
	m.notifyListChanged()
}

// wantSession wakes a mirror waiting to connect on demand; it never blocks.
func (m *Mirror) wantSession() {
	select {
	case m.demand <- struct{}{}:
	default:
	}
}

// SetShared gives a mirror that does not own its server the templates and
// last sync time the owner stored (a shared store): Templates and Status
// report them, and the mirror counts as synced. It does nothing while the
// mirror owns the server. It keeps the first mcp.DefaultMaxTemplates, as a
// list walk does: every request parses every template in scope, and the
// store's row is another replica's word, not the server's.
func (m *Mirror) SetShared(templates []resource.Template, lastSync time.Time) {
	if m.owns() {
		return
	}
	if len(templates) > mcp.DefaultMaxTemplates {
		m.log.Warn("the shared store lists more templates for this server than a list walk keeps; using the first", "templates", len(templates), "max", mcp.DefaultMaxTemplates)
		templates = templates[:mcp.DefaultMaxTemplates]
	}
	m.mu.Lock()
	m.templates = slices.Clone(templates)
	m.tplGen++
	m.status.Templates = len(templates)
	m.status.LastSync = lastSync
	m.status.Syncs = max(m.status.Syncs, 1)
	if m.status.State == StateConnecting || m.status.State == StateFailed {
		m.status.State = StateReady
	}
	m.mu.Unlock()
	m.markReady()
}

// Status returns a snapshot.
func (m *Mirror) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.status
	ix := m.opts.Index
	s.Resources = ix.Len(m.opts.Server)
	s.Contents = ix.ContentLen(m.opts.Server)
	s.DescriptorsPending = ix.Pending(m.opts.Server)
	s.ContentBytes = ix.ServerContentBytes(m.opts.Server)
	s.ContentMaxBytes = max(m.opts.ContentBytes, 0)
	s.PassagesPending = ix.PendingPassages(m.opts.Server)
	if !m.contentPassed && m.opts.ContentMaxResources >= 0 {
		// No pass has counted yet: every listed resource without text waits.
		s.ContentWaiting = max(s.Resources-s.Contents, 0)
	}
	return s
}

// A ListVersion identifies the list a mirror last applied: it changes when
// a sync completes or the server's descriptor count moves.
type ListVersion struct {
	Syncs     int
	LastSync  time.Time
	Resources int
}

// ListVersion returns the mirror's ListVersion. Unlike Status it walks
// nothing (Status counts the server's texts over the whole index), so a
// poller may ask often.
func (m *Mirror) ListVersion() ListVersion {
	m.mu.Lock()
	defer m.mu.Unlock()
	return ListVersion{Syncs: m.status.Syncs, LastSync: m.status.LastSync, Resources: m.opts.Index.Len(m.opts.Server)}
}

// Templates returns the templates from the last sync.
func (m *Mirror) Templates() []resource.Template {
	ts, _ := m.TemplateList()
	return ts
}

// TemplateGen returns the generation TemplateList would, without copying
// the list.
func (m *Mirror) TemplateGen() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tplGen
}

// TemplateList is Templates, with a generation that changes whenever the
// list is replaced (by a sync, or from the shared store), so that what is
// derived from the list (parsed templates) can be kept until it does.
func (m *Mirror) TemplateList() ([]resource.Template, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]resource.Template(nil), m.templates...), m.tplGen
}

// Ready is closed once a connect attempt has failed (to connect or to
// sync), or a session has synced and finished its first content pass (see
// indexContents), or the mirror stops, so a one-shot caller can wait for the
// initial mirror. The first session that ends before its first pass
// completes does not count: the next attempt decides. A second such
// session closes it.
func (m *Mirror) Ready() <-chan struct{} { return m.ready }

// relistDutyFactor spaces re-lists a server asks for (list_changed) so
// that they take at most about one part in relistDutyFactor of the time:
// the next starts relistDutyFactor times the last one's duration after
// it, at most MaxStormDelay after the notification.
const relistDutyFactor = 10

// maxContentSpacing bounds the wait relistDutyFactor gives a content pass
// after a long one (asked for by resources/updated, a re-list, a new
// session or its age): reads are not delayed meanwhile (a notification
// drops the cached text), only the index's copy of the texts. Only passes
// over 6 minutes reach it: a tighter bound let a server moving every
// lastModified at each list have them run half the time, for good.
const maxContentSpacing = time.Hour

// Run mirrors the server until ctx ends, then closes the session. It returns
// nil on cancellation: that is how a mirror stops.
//
// Reconnects back off (see backoff), except once after a Streamable HTTP
// server expired a session that had synced: that is the server's normal
// session lifecycle, so the mirror re-initializes at once. A server that
// expires sessions again within MaxBackoff gets the backoff.
func (m *Mirror) Run(ctx context.Context) error {
	attempt := 0
	var warm []string       // URIs cached on the last session: re-subscribed on the next
	var expiredAt time.Time // last immediate reconnect after an expired session
	for ctx.Err() == nil {
		if !m.owns() {
			// Another replica mirrors the server: connect when a read
			// needs a session or this one becomes the owner.
			select {
			case <-ctx.Done():
				continue
			case <-m.demand:
			}
		}
		sess, err := m.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			attempt++
			m.fail(err)
			m.setSession(nil, true) // reads waiting for a new session give up
			if !m.backOff(ctx, m.backoff(attempt)) {
				break
			}
			continue
		}
		began := time.Now()
		end, synced := m.serve(ctx, sess, warm)
		if time.Since(began) >= m.opts.MaxBackoff {
			attempt = 0 // it stayed up a while: the next failure starts over
		}
		_ = sess.Close()
		warm = m.cache.clear()
		m.mu.Lock()
		warm = slices.DeleteFunc(warm, func(uri string) bool { return m.unwarm[uri] })
		clear(m.unwarm)
		m.mu.Unlock()
		immediate := errors.Is(end, mcp.ErrSessionExpired) && synced && time.Since(expiredAt) >= m.opts.MaxBackoff
		m.setSession(nil, !immediate)
		if ctx.Err() != nil {
			break
		}
		if immediate {
			expiredAt = time.Now()
			m.log.Info("session expired by the server; re-initializing")
			continue
		}
		attempt++
		if !m.backOff(ctx, m.backoff(attempt)) {
			break
		}
	}
	m.markReady()
	return nil
}

// backOff sleeps d before the next connect, telling reads (awaitSession)
// when that connect is due. It reports false when ctx ended first.
func (m *Mirror) backOff(ctx context.Context, d time.Duration) bool {
	m.mu.Lock()
	m.retryAt = time.Now().Add(d)
	m.mu.Unlock()
	ok := m.sleep(ctx, d)
	m.mu.Lock()
	m.retryAt = time.Time{}
	m.mu.Unlock()
	return ok
}

// awaitSession waits, up to Options.ReconnectWait, for the session of a
// mirror that has none; see Options.ReconnectWait for when it does not wait.
// Once a read has waited in vain, the others fail at once until a session
// comes, so a request with many reads of one server waits once.
func (m *Mirror) awaitSession(ctx context.Context) (*mcp.Session, error) {
	wait := m.opts.ReconnectWait
	deadline := time.Now().Add(wait)
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		m.mu.Lock()
		sess, wake, state, retryAt, waitedOut := m.sess, m.newSess, m.status.State, m.retryAt, m.waitedOut
		m.mu.Unlock()
		switch {
		case sess != nil:
			return sess, nil
		case wait <= 0 || waitedOut:
			return nil, fmt.Errorf("server %q: %w", m.opts.Server, ErrUnavailable)
		case state == StateFailed:
			return nil, fmt.Errorf("server %q: %w (never connected)", m.opts.Server, ErrUnavailable)
		case retryAt.After(deadline):
			return nil, fmt.Errorf("server %q: %w (reconnecting in %v)", m.opts.Server, ErrUnavailable, time.Until(retryAt).Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("server %q: %w (reconnecting): %w", m.opts.Server, ErrUnavailable, ctx.Err())
		case <-timeout:
			m.mu.Lock()
			m.waitedOut = m.sess == nil
			m.mu.Unlock()
			return nil, fmt.Errorf("server %q: %w (reconnecting; no session within %v)", m.opts.Server, ErrUnavailable, wait)
		case <-wake:
		}
	}
}

// setSession installs the live session, or nil and whether the run loop is
// backing off before the next connect, and wakes reads waiting for a new one.
func (m *Mirror) setSession(sess *mcp.Session, backingOff bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sess, m.backingOff = sess, backingOff
	if sess != nil {
		m.waitedOut = false
	}
	close(m.newSess)
	m.newSess = make(chan struct{})
}

// nextSession waits until a session other than old is live. It gives up when
// ctx ends or the run loop backs off instead of reconnecting at once.
func (m *Mirror) nextSession(ctx context.Context, old *mcp.Session) (*mcp.Session, error) {
	for {
		m.mu.Lock()
		sess, wake, backingOff := m.sess, m.newSess, m.backingOff
		m.mu.Unlock()
		switch {
		case sess != nil && sess != old:
			return sess, nil
		case sess == nil && backingOff:
			m.mu.Lock()
			last := m.status.LastError
			m.mu.Unlock()
			return nil, fmt.Errorf("reconnecting after a backoff (last error: %s)", firstLine(last))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-wake:
		}
	}
}

func (m *Mirror) connect(ctx context.Context) (*mcp.Session, error) {
	cctx, cancel := context.WithTimeout(ctx, m.opts.ConnectTimeout)
	defer cancel()
	var hidden []string
	if m.opts.HiddenEnv != nil {
		hidden = m.opts.HiddenEnv()
	}
	return m.opts.Dial(cctx, &mcp.Options{
		Logger:        m.log,
		OnListChanged: m.listChanged,
		OnListMissed:  m.listMissed,
		OnUpdated: func(uri string) {
			m.cache.invalidate(uri)
			m.contentUpdated(uri)
		},
		OnSubscriptionEnded: m.subscriptionEnded,

		TerminateDuration: m.opts.TerminateDuration,
		Redact:            m.redactor(),
		CallerText:        m.callerText.Load(),
		MaxResources:      m.opts.MaxResources,
		MaxResourceBytes:  m.opts.MaxResourceBytes,
		HiddenEnv:         hidden,
	})
}

// serve runs one session: a full sync, then events until the session ends.
// It returns why the session ended (nil when ctx ended) and whether a sync
// succeeded on it. warm lists URIs the previous session cached: they are read
// again after the first sync, which re-subscribes them.
func (m *Mirror) serve(ctx context.Context, sess *mcp.Session, warm []string) (end error, synced bool) {
	name, version, proto := sess.ServerInfo()
	// A server names itself: what it says is shown to callers, masked
	// like everything else it says.
	// Shown side by side, the two may spell a secret one half each (the
	// name cut inside it): looked for as the server sent them.
	red := m.redactor()
	split := red.Holds(strings.TrimSuffix(name, redact.Cut)+version) || red.Holds(name+" "+version)
	name, version, proto = red.String(name), red.String(version), red.String(proto)
	if split {
		name, version = redact.Mask, redact.Mask
	}
	if m.callerText.Load() {
		// The server may have kept a caller's words from an earlier
		// session (see CarriedCallerText); it is logged below.
		m.log.Debug("server info withheld", "server_info", name+" "+version)
		name, version = "(withheld)", ""
	}
	m.setSession(sess, false)
	m.mu.Lock()
	m.status.Capabilities = sess.Capabilities()
	m.status.ServerName, m.status.ServerVersion, m.status.Protocol = name, version, proto
	m.mu.Unlock()
	m.log.Info("connected", "server_info", name+" "+version, "protocol", proto, "capabilities", fmt.Sprintf("%+v", sess.Capabilities()))

	done := make(chan error, 1)
	sessEnd := &sessionEnd{done: make(chan struct{})}
	go func() {
		err := sess.Wait()
		sessEnd.err = err
		close(sessEnd.done)
		done <- err
	}()

	// Drain a list_changed that raced the initial sync: the full sync covers it.
	select {
	case <-m.changed:
	default:
	}
	select {
	case <-m.missed:
	default:
	}
	// One timer drives every re-list: the debounce after list_changed, the
	// retry after a failed sync, and polling for servers that never notify.
	// schedule only ever moves the deadline earlier.
	var timer *time.Timer
	var fire <-chan time.Time
	var due time.Time
	schedule := func(d time.Duration) {
		at := time.Now().Add(d)
		if fire != nil && !at.Before(due) {
			return
		}
		if timer != nil {
			timer.Stop()
		}
		timer, due = time.NewTimer(d), at
		fire = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// The content pass runs beside this loop, so notifications and the
	// session's end are handled while it reads; a kick asks for a pass
	// (kicks during one coalesce into the next). Ready is marked after the
	// first pass, so one-shot commands and the eval rank with contents.
	kick := make(chan struct{}, 1)
	pass := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	// What the worker tells this loop of its passes (see recontent below):
	// whether one runs; when the last ended and how long it took are the
	// Mirror's (m.passEnd, m.passTook), kept across sessions.
	var passing atomic.Bool
	passEnd, passTook := &m.passEnd, &m.passTook
	passDone := make(chan struct{}, 1)
	wctx, stopWorker := context.WithCancel(ctx)
	var worker gosync.WaitGroup
	defer func() { stopWorker(); worker.Wait() }()
	worker.Go(func() { m.relistenWorker(wctx, sess) })
	worker.Go(func() {
		// The first session that ends before its first pass completes
		// leaves Ready to the next session (its first pass, or a failure
		// to connect or sync), so a one-shot command does not rank with
		// part of the text because a session was cut. Only once: a server
		// that dies on every session (a read that kills it, an exit right
		// after listing) would otherwise keep Ready open for good. A
		// mirror that stops marks Ready on its way out (Run).
		defer func() {
			// Run marks Ready itself when the mirror stops; after a
			// first pass, Ready is closed already and this changes nothing.
			if ctx.Err() != nil {
				return
			}
			m.mu.Lock()
			deferred := m.readyDeferred
			m.readyDeferred = true
			m.mu.Unlock()
			if deferred {
				m.markReady()
			}
		}()
		var refresh <-chan time.Time
		for first := true; ; first = false {
			select {
			case <-wctx.Done():
				return
			case <-kick:
			case <-refresh:
			}
			began := time.Now()
			passing.Store(true)
			// The first pass leaves old text for later, so Ready does not
			// wait for texts that are only being checked.
			if m.indexContents(wctx, sess, !first, sessEnd) {
				// Cut short by the session's end: it cost as much as a
				// pass (a server ending each session before its pass
				// ends had one at each session's start, for good).
				passTook.Store(int64(time.Since(began)))
				passEnd.Store(time.Now().UnixNano())
				m.passCuts.Add(1)
				return
			}
			if m.opts.PassagesBeforeReady {
				m.embedPassages(wctx, nil)
			}
			m.markReady()
			if !m.embedPassages(wctx, kick) {
				pass() // a pass was asked for meanwhile: it goes first
			}
			passTook.Store(int64(time.Since(began)))
			passEnd.Store(time.Now().UnixNano())
			m.passWhole.Store(true)
			passing.Store(false)
			select {
			case passDone <- struct{}{}:
			default:
			}
			if m.opts.ContentMaxAge > 0 && m.opts.ContentMaxResources >= 0 {
				spaced := min(relistDutyFactor*time.Duration(passTook.Load()), maxContentSpacing)
				refresh = time.After(max(m.opts.ContentMaxAge/4, time.Minute, spaced))
			}
		}
	})
	var contentDue <-chan time.Time // a content pass after resources/updated or a re-list
	var lastContent time.Time       // when the last one was asked for
	contentPending := false         // one waits for the running pass to end
	contentWait, quickContent := m.opts.Debounce, 0
	// contentSpacing is how long a pass asked for by resources/updated
	// or a re-list waits yet for the last one's cost (see
	// relistDutyFactor).
	contentSpacing := func() time.Duration {
		end := time.Unix(0, passEnd.Load()).Add(relistDutyFactor * time.Duration(passTook.Load()))
		return min(time.Until(end), maxContentSpacing)
	}
	failures, quick := 0, 0
	relist := false // a re-list for a notification is scheduled
	// stormCap bounds the window of a notification storm, and the spacing
	// of re-lists by their cost.
	stormCap := max(m.opts.Debounce, m.opts.MaxStormDelay)
	var lastSync time.Time
	var syncTook time.Duration // the last re-list's
	resync := func() {
		began := time.Now()
		ok := m.sync(ctx, sess)
		syncTook = time.Since(began)
		first := !synced
		synced = synced || ok
		switch {
		case ok && first && (passEnd.Load() == 0 || !m.passWhole.Load() && m.passCuts.Load() == 1):
			// The mirror's first, which Ready waits for; or its second,
			// the first having been cut short (Ready waits for that
			// one too, see the worker). Once: a server cutting every
			// pass short has them spaced as any.
			pass()
		case ok && contentDue == nil && !contentPending:
			// Spaced as those resources/updated asks for: a server
			// notifying list_changed with every lastModified changed
			// after each pass, or ending each session soon after its
			// pass, had them run back to back.
			contentDue = time.After(contentSpacing())
		}
		lastSync = time.Now()
		m.evictNotFound(ctx)
		switch {
		case !ok:
			// Retried with backoff, without waiting for a notification the
			// server may never send.
			failures++
			schedule(m.backoff(failures))
		case !sess.Capabilities().ListChanged && m.opts.PollInterval > 0:
			failures = 0
			schedule(m.opts.PollInterval)
		default:
			failures = 0
		}
	}
	resync()
	if !synced {
		m.markReady() // no pass follows a failed sync
	}
	if synced && len(warm) > 0 {
		rctx, stop := context.WithCancel(ctx)
		var rw gosync.WaitGroup
		// Waited for, so what it learns (unwarm) is in before Run takes
		// the next session's list.
		defer func() { stop(); rw.Wait() }()
		rw.Go(func() { m.rewarm(rctx, sess, warm, sessEnd) })
	}
	for {
		select {
		case <-ctx.Done():
			return nil, synced
		case err := <-done:
			if err == nil {
				err = errors.New("session closed by server")
			}
			if line := sess.StderrLine(); line != "" {
				err = fmt.Errorf("%w; stderr: %s", err, line)
			}
			m.setStale(err)
			return err, synced
		case <-m.changed:
			// Coalesce: wait out the debounce window. A server that keeps
			// notifying right after each re-list (a storm, or one
			// notification per list) gets, from the third time in a row, a
			// window that doubles each time up to MaxStormDelay; a quiet
			// spell resets it.
			if relist {
				continue // already covered by the re-list that is scheduled
			}
			if time.Since(lastSync) < m.opts.Debounce {
				quick = min(quick+1, 20)
			} else {
				quick = 0
			}
			relist = true
			wait := min(m.opts.Debounce<<max(quick-2, 0), stormCap)
			// And re-lists take at most a tenth of the time: a server
			// notifying a little after each re-list (past the window,
			// which resets the storm count) had a list of 20,000 re-listed
			// each second, a quarter of a core.
			wait = max(wait, min(time.Until(lastSync.Add(relistDutyFactor*syncTook)), stormCap))
			schedule(wait)
		case <-m.missed:
			// Spaced only by the last re-list's cost (see
			// relistDutyFactor), after the debounce.
			if relist {
				continue
			}
			relist = true
			schedule(max(m.opts.Debounce, min(time.Until(lastSync.Add(relistDutyFactor*syncTook)), stormCap)))
		case <-fire:
			fire, relist = nil, false
			resync()
		case <-m.recontent:
			// A server that says its resources changed again right after
			// each content pass (within twice the last window, or 2 s)
			// gets, from the third time in a row, a window that doubles up
			// to MaxStormDelay, as list_changed does: the pass re-reads and
			// re-embeds what changed, and a storm would keep it busy for
			// good. Reads are not delayed: the notification already
			// dropped the cached text.
			// And passes take at most about a tenth of the time: a storm
			// whose passes outlasted the window (64 texts of 8 MB, 22 s a
			// pass) had them run back to back, half a core for good.
			if contentDue == nil && !contentPending {
				last := lastContent
				if end := time.Unix(0, passEnd.Load()); end.After(last) {
					last = end
				}
				if time.Since(last) < max(2*contentWait, 2*time.Second) {
					quickContent = min(quickContent+1, 20)
				} else {
					quickContent = 0
				}
				contentWait = min(m.opts.Debounce<<max(quickContent-2, 0), max(m.opts.Debounce, m.opts.MaxStormDelay))
				contentDue = time.After(max(contentWait, contentSpacing()))
			}
		case <-contentDue:
			contentDue = nil
			if passing.Load() {
				contentPending = true // asked for once it ends, spaced by its cost
				break
			}
			lastContent = time.Now()
			pass()
		case <-passDone:
			if contentPending {
				contentPending = false
				contentDue = time.After(contentSpacing())
			}
		}
	}
}

// rewarm reads again, one at a time, the URIs the previous session had
// cached and still listed: Read subscribes before it reads, so the
// subscriptions come back with the content. A URI whose re-read the session
// ended during, or just after (rewarmGrace), is left out of the next
// session's list (unwarm): cached again, it would end every session.
func (m *Mirror) rewarm(ctx context.Context, sess *mcp.Session, uris []string, end *sessionEnd) {
	for _, uri := range uris {
		if _, ok := m.opts.Index.Get(resource.Key{Server: m.opts.Server, URI: uri}); !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, m.opts.ConnectTimeout)
		// On this session only: a read that waited for the next one
		// (ReadFetch) would be laid to the wrong session.
		_, _, err := m.read(rctx, sess, uri)
		cancel()
		if ended, why := end.wait(ctx, rewarmGrace); ended {
			if !errors.Is(why, mcp.ErrSessionExpired) {
				m.mu.Lock()
				m.unwarm[uri] = true
				m.mu.Unlock()
				m.log.Warn("the session ended as a cached resource was re-read after a reconnect; the next session does not re-read it", "uri", uri)
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.log.Debug("re-reading a cached resource after reconnect failed", "uri", uri, "err", err)
		}
	}
}

// relistenEvery is how often at most a URI whose subscription the server
// ended is subscribed again at once: a server that ends a stream each time
// it is opened gets one re-listen a minute, not a loop; later reads
// subscribe it again anyway.
const relistenEvery = time.Minute

// maxRelistened bounds the URIs whose last re-listen is remembered: one is
// added for each cached URI whose subscription the server ends, for good
// without a bound. Past it, those older than relistenEvery are forgotten,
// and if that is not enough, all of them.
const maxRelistened = 4096

// subscriptionEnded is the session's OnSubscriptionEnded: the server ended
// the subscriptions of uris (protocol 2026-07-28), so their cached copies
// go. Those that were cached are read again, which listens again, unless
// that was done within relistenEvery. It never blocks.
func (m *Mirror) subscriptionEnded(uris []string) {
	queued := false
	for _, uri := range uris {
		if !m.cache.lost(uri) {
			continue
		}
		m.mu.Lock()
		if now := time.Now(); now.Sub(m.relistened[uri]) >= relistenEvery {
			if len(m.relistened) >= maxRelistened {
				maps.DeleteFunc(m.relistened, func(_ string, at time.Time) bool { return now.Sub(at) >= relistenEvery })
				if len(m.relistened) >= maxRelistened {
					clear(m.relistened) // a crude bound: forget them all
				}
			}
			m.relisten[uri], m.relistened[uri] = true, now
			queued = true
		}
		m.mu.Unlock()
	}
	if queued {
		select {
		case m.relistenKick <- struct{}{}:
		default:
		}
	}
}

// relistenWorker reads the URIs subscriptionEnded queues, one at a time,
// over sess, until ctx ends.
func (m *Mirror) relistenWorker(ctx context.Context, sess *mcp.Session) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.relistenKick:
		}
		m.mu.Lock()
		uris := slices.Sorted(maps.Keys(m.relisten))
		clear(m.relisten)
		m.mu.Unlock()
		for _, uri := range uris {
			rctx, cancel := context.WithTimeout(ctx, m.opts.ConnectTimeout)
			_, _, err := m.read(rctx, sess, uri)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				m.log.Debug("listening again after the server ended a subscription failed", "uri", uri, "err", err)
			}
		}
	}
}

// rewarmGrace is how long after a re-read a session's end is still laid to
// it.
const rewarmGrace = 250 * time.Millisecond

// evictNotFound removes from the index the URIs reads found missing, even if
// the server still lists them: a descriptor that cannot be read must not be
// ranked again until the server's list changes.
func (m *Mirror) evictNotFound(ctx context.Context) {
	if !m.owns() {
		return // the owner's next list decides
	}
	m.mu.Lock()
	keys := make([]resource.Key, 0, len(m.notFound))
	for uri := range m.notFound {
		keys = append(keys, resource.Key{Server: m.opts.Server, URI: uri})
	}
	clear(m.notFound)
	m.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	if err := m.opts.Index.Delete(ctx, keys...); err != nil {
		m.log.Warn("evicting not-found resources failed", "err", err)
	}
}

// listChanged is the SDK callback for notifications/resources/list_changed;
// it never blocks. It drops the TTL entries of the read cache and schedules
// a re-list.
func (m *Mirror) listChanged() {
	m.cache.listChanged()
	m.notifyListChanged()
}

// listMissed is the session's callback for a list change it may have
// missed (mcp.Options.OnListMissed); it never blocks. It schedules a
// re-list that, announcing no change, neither drops TTL entries nor counts
// toward a notification storm's window: a cache that evicts often ends
// listen streams as often, and re-lists spaced as a storm's (up to
// MaxStormDelay) left descriptor changes, and the copies they make stale,
// unseen for as long.
func (m *Mirror) listMissed() {
	select {
	case m.missed <- struct{}{}:
	default:
	}
}

// notifyListChanged schedules a re-list; it never blocks.
func (m *Mirror) notifyListChanged() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// sync lists everything, within SyncTimeout, and applies it to the index
// (without a deadline: embedding is local work). It reports whether every
// request succeeded (an incomplete list is not a failure).
func (m *Mirror) sync(parent context.Context, sess *mcp.Session) (ok bool) {
	if !m.owns() {
		return true // the owner lists it
	}
	// SyncTimeout bounds the talking to the server; applying the list to the
	// index is local work (embedding thousands of descriptors can take
	// minutes) and only stops with the mirror.
	ctx, cancel := context.WithTimeout(parent, m.opts.SyncTimeout)
	defer cancel()
	m.setActivity("listing")
	defer m.setActivity("")
	listFrom := time.Now()
	res, rerr := sess.ListResources(ctx)
	if errors.Is(rerr, mcp.ErrSelf) || rerr == nil && m.listsItself(res.Items) {
		m.self.Store(true)
	}
	self := m.self.Load()
	if self {
		// Its entries would come back one level deeper at each list,
		// every read going round through this contextd: none is kept.
		_, _ = m.opts.Index.Replace(context.WithoutCancel(parent), m.opts.Server, nil)
		rerr = fmt.Errorf("%w (it lists this contextd's own %s:resource/%s/… back)", mcp.ErrSelf, "contextd", m.opts.Server)
		m.log.Warn("the server is this contextd itself, reached through a bridge: not mirrored")
	}
	if rerr == nil {
		res = m.maskListed(res)
		m.dropRelisted(res)
		firstIndexed := func(uri string) (time.Time, bool) {
			return m.opts.Index.FirstIndexed(resource.Key{Server: m.opts.Server, URI: uri})
		}
		m.watchGrowth(listFrom, m.readsBack.noteListed(res.Items, firstIndexed))
		m.opts.Served.NoteBesideCopies(m.opts.Server, m.readsBack.besideCopies())
	}
	tpl, terr := sess.ListTemplates(ctx)
	if terr == nil {
		tpl = m.maskTemplates(tpl)
	}
	if self {
		// Its templates are this contextd's own: expanded, a read of
		// contextd:context would assemble inside an assemble.
		tpl.Items, terr = nil, nil
	}
	if sess.Capabilities().Resources {
		m.opts.Observer.Called(m.opts.Server, MethodList, rerr)
		m.opts.Observer.Called(m.opts.Server, MethodTemplates, terr)
	}
	var diff index.Diff
	var ierr error
	if rerr == nil {
		// Answerable once the rest of the list is pending (searchable
		// lexically): Replace lists it before its first progress call.
		focused := m.focusFirst(parent, sess, res.Items)
		if focused {
			defer m.markAnswerable()
		}
		ictx := index.WithProgress(parent, func(done, total int) {
			if focused {
				m.markAnswerable()
			}
			m.setActivity(fmt.Sprintf("indexing %d/%d", done, total))
		})
		switch {
		case res.Complete, res.Capped:
			// A capped list is the server's first entries: they stand for it.
			diff, ierr = m.opts.Index.Replace(ictx, m.opts.Server, res.Items)
			if ierr == nil && res.Complete {
				// Forgotten once the index holds them no more: forgotten
				// before, those the server dropped would be listed as no
				// copies while Replace embeds what came.
				listed := make(map[string]bool, len(res.Items))
				for _, d := range res.Items {
					listed[d.URI] = true
				}
				m.opts.Served.Prune(m.opts.Server, listed)
			}
		default:
			// A partial list must not delete what the missing pages hold,
			// nor take the server past the entries one list may hold.
			_, ierr = m.opts.Index.Upsert(ictx, m.within(res.Items)...)
		}
	}
	if parent.Err() != nil {
		return false
	}

	err := errors.Join(rerr, ierr, terr)
	m.opts.Observer.Synced(m.opts.Server, err == nil)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status.Syncs++
	if terr == nil {
		m.templates = tpl.Items
		m.tplGen++
		m.status.Templates = len(tpl.Items)
	}
	if rerr == nil {
		m.status.ListComplete = res.Complete
		m.status.Incomplete = res.Incomplete
		m.status.Rejected = res.Rejected + tpl.Rejected
		m.status.Duplicates = res.Duplicates
		m.status.Problems = append(slices.Clip(res.Problems), tpl.Problems...)
		for i, p := range m.status.Problems {
			m.status.Problems[i] = m.redactor().String(p)
		}
		if n := len(m.status.Problems); n > 0 && (m.callerText.Load() || sess.CarriedCallerText()) { // under m.mu
			m.log.Debug("dropped list entries", "problems", m.status.Problems)
			m.status.Problems = []string{fmt.Sprintf("%d list entries dropped %s", n, withheld)}
		}
		if len(m.status.Problems) > 0 {
			m.log.Warn("dropped list entries", "rejected", m.status.Rejected, "duplicates", res.Duplicates, "problems", m.status.Problems)
		}
	}
	if err != nil {
		m.status.State = StateDegraded
		m.status.LastError = m.redactor().String(err.Error())
		if sess.CarriedCallerText() || m.callerText.Load() {
			// It may quote a caller's words (see ReadFetch).
			m.status.LastError = "list failed: " + failure(err) + " " + withheld
		}
		m.status.LastErrorTime = time.Now()
		m.log.Warn("sync failed", "err", err)
		return false
	}
	m.status.LastSync = time.Now()
	if res.Complete && (tpl.Complete || !sess.Capabilities().Resources) {
		m.status.State = StateReady
		// What went wrong before (a lost session, a sync that failed: a full
		// disk, a server error) no longer holds.
		m.status.LastError, m.status.LastErrorTime = "", time.Time{}
	} else {
		m.status.State = StateDegraded
		m.status.LastError = m.redactor().String("list incomplete: " + res.Incomplete + tpl.Incomplete)
		if m.callerText.Load() || sess.CarriedCallerText() { // under m.mu
			m.status.LastError = "list incomplete " + withheld
		}
		m.status.LastErrorTime = time.Now()
	}
	if m.opts.OnSync != nil {
		m.opts.OnSync(slices.Clone(tpl.Items), m.status.LastSync)
	}
	m.log.Info("synced", "resources", len(res.Items), "templates", len(tpl.Items),
		"added", diff.Added, "updated", diff.Updated, "removed", diff.Removed, "embedded", diff.Embedded)
	return true
}

// within returns the descriptors of a partial list that the index takes,
// while the server keeps fewer than mcp.Options.MaxResources holding at
// most MaxResourceBytes of text: those it holds already, when they grew by
// no more than the room left (a partial list never removes anything, so
// shifting lists could otherwise grow every held descriptor to its
// fields' caps), and new ones while there is room.
func (m *Mirror) within(ds []resource.Descriptor) []resource.Descriptor {
	room := cmp.Or(m.opts.MaxResources, mcp.DefaultMaxResources) - m.opts.Index.Len(m.opts.Server)
	roomBytes := cmp.Or(m.opts.MaxResourceBytes, mcp.DefaultMaxResourceBytes) - m.opts.Index.TextBytes(m.opts.Server)
	out := ds[:0:0]
	for _, d := range ds {
		if old, ok := m.opts.Index.Get(d.Key()); ok {
			if grow := d.TextBytes() - old.TextBytes(); grow <= roomBytes {
				roomBytes -= grow
				out = append(out, d)
			}
		} else if room > 0 && d.TextBytes() <= roomBytes {
			room--
			roomBytes -= d.TextBytes()
			out = append(out, d)
		}
	}
	return out
}

// maskListed masks the credentials contextd sent the server in its
// descriptors' names, titles, descriptions, MIME types, dates and audiences
// (redact.Redactor.Configured): a server may echo them, and its
// descriptors reach every caller. URIs are its identifiers and stay as
// listed (the configuration counts a URL's query values and long path
// segments among its secrets: a workspace id would drop every entry).
func (m *Mirror) maskListed(res mcp.List[resource.Descriptor]) mcp.List[resource.Descriptor] {
	red := m.redactor()
	for i := range res.Items {
		d := &res.Items[i]
		d.Name, d.Title, d.Description = red.Configured(d.Name), red.Configured(d.Title), red.Configured(d.Description)
		d.MIMEType, d.LastModified = red.Configured(d.MIMEType), red.Configured(d.LastModified)
		for j, a := range d.Audience {
			d.Audience[j] = red.Configured(a)
		}
	}
	return res
}

// maskTemplates is maskListed for templates.
func (m *Mirror) maskTemplates(tpl mcp.List[resource.Template]) mcp.List[resource.Template] {
	red := m.redactor()
	for i := range tpl.Items {
		t := &tpl.Items[i]
		t.Name, t.Title, t.Description = red.Configured(t.Name), red.Configured(t.Title), red.Configured(t.Description)
		t.MIMEType = red.Configured(t.MIMEType)
	}
	return tpl
}

// dropRelisted drops the cached contents of the resources whose descriptor
// the list shows changed since the index took it (size, lastModified or MIME
// type: index.ContentStamp) or that the index did not have (a copy read
// before the mirror knew the resource has no version to compare), and, when
// the list is complete, of every URI it does not show, listed before or not
// (a URI read while the server listed it, before a sync saw it, and removed
// since, was never in the index). The server announced those changes (even
// without notifications/resources/updated), so the cached copies are stale
// from now: they are dropped before the list is applied to the index, and
// reads in flight are not cached. A URI dropped this way that is read again
// goes to the server (and fails there if the server no longer has it).
func (m *Mirror) dropRelisted(res mcp.List[resource.Descriptor]) {
	listed := make(map[string]bool, len(res.Items))
	for _, d := range res.Items {
		listed[d.URI] = true
		if old, ok := m.opts.Index.Get(d.Key()); !ok || index.ContentStamp(old) != index.ContentStamp(d) {
			m.cache.invalidate(d.URI)
		}
	}
	if !res.Complete {
		return
	}
	for _, uri := range m.cache.uris() {
		if !listed[uri] {
			m.cache.invalidate(uri)
		}
	}
	for _, d := range m.opts.Index.Descriptors(m.opts.Server) {
		if !listed[d.URI] {
			m.cache.invalidate(d.URI)
		}
	}
}

// fail records a failed connect. The same failure again (a server that is
// down stays down) is logged at debug level, so a dead server does not
// repeat its warning at every backoff; Status still has the latest.
func (m *Mirror) fail(err error) {
	msg := m.redactor().String(err.Error())
	if m.callerText.Load() {
		msg = "connect failed: " + failure(err) + " " + withheld
	}
	m.mu.Lock()
	again := (m.status.State == StateFailed || m.status.State == StateStale) && m.status.LastError == msg
	if m.status.Syncs == 0 {
		m.status.State = StateFailed
	} else {
		m.status.State = StateStale
	}
	m.status.LastError = msg
	m.status.LastErrorTime = time.Now()
	m.mu.Unlock()
	if again {
		m.log.Debug("connect failed again", "err", err)
	} else {
		m.log.Warn("connect failed", "err", err)
	}
	m.markReady()
}

// setActivity records what the mirror is doing (Status.Activity).
func (m *Mirror) setActivity(a string) {
	m.mu.Lock()
	m.status.Activity = a
	m.mu.Unlock()
}

func (m *Mirror) setStale(err error) {
	msg := m.redactor().String(err.Error())
	if m.CarriedCallerText() {
		// What ended the session may quote what the server sent (a
		// message it could not decode, a session ID).
		msg = "session lost (the connection broke, the server exited or sent what could not be decoded) " + withheld
	}
	m.mu.Lock()
	m.status.State = StateStale
	m.status.LastError = msg
	m.status.LastErrorTime = time.Now()
	m.mu.Unlock()
	m.log.Warn("session lost; keeping the last mirror until reconnected", "err", err)
}

// redactor returns what masks the mirror's reports (Options.Redact, or
// the latest SetRedact).
func (m *Mirror) redactor() *redact.Redactor { return m.red.Load() }

// SetRedact replaces what masks the mirror's reports and log (a reload
// added secrets that a server kept running may hold): from now on, and in
// the status already kept (last error, list problems, server info).
func (m *Mirror) SetRedact(r *redact.Redactor) {
	m.red.Store(r)
	if m.CarriedCallerText() {
		// The status holds no words of the server's, only what failed,
		// with numbers it chose (an error code, a count): masking those
		// anew would tell which equals a secret.
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status.LastError = r.String(m.status.LastError)
	st := &m.status
	split := r.Holds(strings.TrimSuffix(st.ServerName, redact.Cut)+st.ServerVersion) || r.Holds(st.ServerName+" "+st.ServerVersion)
	st.ServerName, st.ServerVersion, st.Protocol = r.String(st.ServerName), r.String(st.ServerVersion), r.String(st.Protocol)
	if split { // as serve masks them
		st.ServerName, st.ServerVersion = redact.Mask, redact.Mask
	}
	problems := make([]string, len(m.status.Problems)) // Status's copies share the old
	for i, p := range m.status.Problems {
		problems[i] = r.String(p)
	}
	m.status.Problems = problems
}

func (m *Mirror) markReady() {
	m.markAnswerable()
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.ready:
	default:
		close(m.ready)
	}
}

// backoff returns the delay before the n-th consecutive reconnect: the
// exponential step d = min(MaxBackoff, MinBackoff·2^(n-1)) with "equal
// jitter", uniform in [d/2, d) (AWS Architecture Blog, "Exponential Backoff
// and Jitter", 2015), so the delay never exceeds MaxBackoff and never
// collapses to zero.
func (m *Mirror) backoff(n int) time.Duration {
	d := m.opts.MinBackoff << min(n-1, 30)
	if d <= 0 || d > m.opts.MaxBackoff {
		d = m.opts.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

func (m *Mirror) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ErrUnavailable is returned by Read when the mirror has no live session
// (and none came within Options.ReconnectWait).
var ErrUnavailable = errors.New("server not connected")

// Read returns the contents of uri, from the cache when a copy there is
// fresh (see ReadFetch), otherwise from a resources/read. A not-found answer
// removes the descriptor from the index and schedules a re-list. When the
// server expired the session (mcp.ErrSessionExpired), Read waits, within ctx,
// for the mirror to initialize a new session and retries once on it.
func (m *Mirror) Read(ctx context.Context, uri string) ([]resource.Content, error) {
	c, _, err := m.ReadFetch(ctx, uri)
	return c, err
}

// A Fetch says when contents were read from the server and how they are
// kept fresh.
type Fetch struct {
	// At is when the contents were read from the server.
	At time.Time
	// Subscribed is true when the contents are cached under a
	// resources/subscribe subscription: the server's
	// notifications/resources/updated evicts them, so a cached copy is
	// current.
	Subscribed bool
	// Expires, when not zero, is when a copy cached under the ttlMs the
	// server put on its read result (MCP draft, Server Utilities > Caching)
	// stops being served: At + ttlMs. Until then later reads get this copy,
	// unless notifications/resources/updated for the URI or a
	// notifications/resources/list_changed evicts it first. It is zero when
	// Subscribed is true (the subscription keeps the copy current, so the
	// TTL is not needed) and for contents read for this request only.
	Expires time.Time
	// Private is set when the server marked the result for the
	// requesting user only (a cacheScope "private", or one the protocol
	// does not define): it is not cached, and what remembers what was
	// served keeps it no longer than the process.
	Private bool
}

// Freshness names how the contents are kept fresh: "subscription" (cached
// under a subscription), "ttl" (cached until Expires) or "read" (read from
// the server for this request, not cached).
func (f Fetch) Freshness() string {
	switch {
	case f.Subscribed:
		return "subscription"
	case !f.Expires.IsZero():
		return "ttl"
	}
	return "read"
}

// ReadFetch is Read, also saying when the contents were fetched and how
// they are kept fresh. Errors: ErrUnavailable (no session), and Read's.
//
// A result is cached (within Options.CacheBytes) and served to later reads,
// from any caller, in two cases:
//   - the URI is subscribed (resources/subscribe, on servers that declare
//     resources.subscribe and a protocol before 2026-07-28): until the
//     server's notifications/resources/updated for it. A result whose
//     cacheScope is "private" or a value the protocol does not define is
//     not cached even then; one without cacheScope is (the field does not
//     exist before 2026-07-28).
//   - the result carries ttlMs > 0 and cacheScope "public" (MCP draft,
//     Server Utilities > Caching): for ttlMs milliseconds after it was
//     received (capped at mcp.MaxCacheTTL), or until
//     notifications/resources/updated for the URI or any
//     notifications/resources/list_changed from the server, whichever comes
//     first. A request at or after the expiry reads again.
//
// Everything else is read from the server for each request and not kept:
// ttlMs absent, 0 or negative ("immediately stale"), and any result whose
// cacheScope is not "public". contextd has no notion of who is calling, so
// it cannot keep a private result for its own caller only; it keeps none.
// contextd does not poll contents: without a subscription or a TTL, every
// request reads.
func (m *Mirror) ReadFetch(ctx context.Context, uri string) ([]resource.Content, Fetch, error) {
	c, f, err := m.readFetch(ctx, uri)
	if err == nil {
		return c, f, nil
	}
	if _, listed := m.opts.Index.Get(resource.Key{Server: m.opts.Server, URI: uri}); !listed {
		// A URI the caller wrote (a pin, a template's expansion), which
		// the server's error may quote re-encoded or cut: masked, it
		// would show the caller which of its words are secrets. The
		// error says what failed, not what the server said.
		m.log.Debug("read of a URI the server does not list failed", "uri", uri, "err", err)
		return c, f, redact.Withheld(err, fmt.Sprintf("server %q: read of a URI it does not list failed: %s (what the server said is in the log at debug level: it may quote the URI, so it is not shown)", m.opts.Server, failure(err)))
	}
	if m.CarriedCallerText() {
		// The server was sent a caller's words (an earlier pin or
		// expansion) and may quote them in any error it gives since.
		m.log.Debug("read failed", "uri", uri, "err", err)
		return c, f, redact.Withheld(err, fmt.Sprintf("server %q: read failed: %s (what the server said is in the log at debug level: it may quote what a caller sent it, so it is not shown)", m.opts.Server, failure(err)))
	}
	return c, f, m.redactor().Error(err)
}

// noteCallerText records that a caller's words are about to be sent to the
// server: from now on what it says is withheld (see CarriedCallerText).
func (m *Mirror) noteCallerText() { m.callerText.Store(true) }

// withheld stands for what a server said, once it may quote a caller's
// words (see CarriedCallerText).
const withheld = "(what the server said is in the log: it may quote what a caller sent it)"

// CarriedCallerText reports whether a session of this server has carried
// a caller's text (mcp.Session.CarriedCallerText), this one or an earlier
// one (of an earlier mirror too, when they share Options.CallerText): a
// server may remember what it was sent across sessions, and quote it in
// anything it answers later.
func (m *Mirror) CarriedCallerText() bool {
	if m.callerText.Load() {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sess != nil && m.sess.CarriedCallerText()
}

// failure names the kind of a read's failure without quoting the server:
// "resource not found (-32002)", "the server answered error -32603".
func failure(err error) string {
	var nf *mcp.NotFoundError
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &nf):
		return fmt.Sprintf("resource not found (%d)", nf.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, ErrUnavailable):
		return ErrUnavailable.Error()
	case errors.Is(err, mcp.ErrSessionExpired):
		return "the session expired"
	case errors.Is(err, mcp.ErrTooLarge):
		return mcp.ErrTooLarge.Error()
	case errors.Is(err, mcp.ErrInputRequired):
		return mcp.ErrInputRequired.Error()
	case errors.Is(err, mcp.ErrNoResources):
		return mcp.ErrNoResources.Error()
	case errors.Is(err, mcp.ErrSelf):
		return mcp.ErrSelf.Error()
	}
	if local := localFailure(err); local != "" {
		return local
	}
	if errors.As(err, &je) {
		if je.Code == mcpRejected {
			// The go-sdk's code for a request its transport could not
			// complete: no server answered it.
			return "the HTTP request failed (refused, unresolved, a TLS error or an HTTP error status: the log says which)"
		}
		return fmt.Sprintf("the server answered error %d", je.Code)
	}
	return "the request failed (the connection broke, or the server exited)"
}

// mcpRejected is the JSON-RPC code the go-sdk's client transports give a
// request they could not complete (jsonrpc2's ErrRejected).
const mcpRejected = -32005

// localFailure names a failure contextd met itself, in words that hold
// nothing a server or the embedder chose: a command that would not start
// (its program's name when that is a plain name; a command line written
// whole may hold a key), a refused or reset connection, a failed DNS
// lookup (without the name: a redirect may choose it), an HTTP error
// status (its code), a missing working directory, the embedder's kind of
// failure. "" for any other.
func localFailure(err error) string {
	var ee *exec.Error
	var pe *fs.PathError
	var dns *net.DNSError
	var errno syscall.Errno
	var hs *mcp.HTTPStatusError
	switch {
	case errors.As(err, &hs):
		return httpFailure(hs.Code)
	case errors.Is(err, mcp.ErrWorkingDir):
		return "cannot start the server: " + mcp.ErrWorkingDir.Error()
	case errors.As(err, &ee):
		return "cannot start " + programName(ee.Name) + ": " + ee.Err.Error()
	case errors.As(err, &pe) && pe.Op == "fork/exec":
		return "cannot start " + programName(pe.Path) + ": " + pe.Err.Error()
	case errors.Is(err, remote.ErrUnauthorized):
		return "the embedder refused its API key (check embedder.api_key)"
	case errors.Is(err, remote.ErrNotFound):
		return "the embedder does not serve its URL or model (check embedder.url and embedder.model)"
	case errors.Is(err, remote.ErrRejected):
		return "the embedder rejected a request"
	case errors.Is(err, remote.ErrUnavailable):
		return "the embedder is unavailable"
	case errors.Is(err, remote.ErrBadResponse):
		return "the embedder's answer was malformed"
	case errors.As(err, &dns):
		return "the server's host name did not resolve"
	case errors.As(err, &errno):
		return "the connection failed: " + errno.Error()
	}
	return ""
}

// httpFailure names a connection's failure by the status code of its last
// HTTP answer, in Go's words for it (never the server's reason phrase or
// body), with what to check for the statuses a configuration causes.
func httpFailure(code int) string {
	msg := fmt.Sprintf("the server answered HTTP %d", code)
	if text := http.StatusText(code); text != "" {
		msg += " " + text
	}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg += " (check the credentials in its headers or url)"
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		msg += " (check its url: is the MCP endpoint's path right?)"
	}
	return msg
}

// plainProgram matches a program's name that is only a name.
var plainProgram = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,39}$`)

// programName returns how a failure names the program path: its base name,
// quoted, when that is a plain name and no token ("npx", "python3");
// otherwise "the server's command".
func programName(path string) string {
	// A command line written whole ("K=v npx …", "server --api-key K/x")
	// is no path: its last "/" may be inside a key.
	if strings.ContainsAny(path, " \t=") {
		return "the server's command"
	}
	if base := filepath.Base(path); plainProgram.MatchString(base) && !redact.TokenShaped(base) {
		return strconv.Quote(base)
	}
	return "the server's command"
}

func (m *Mirror) readFetch(ctx context.Context, uri string) ([]resource.Content, Fetch, error) {
	if e, ok := m.cache.get(uri, time.Now()); ok {
		m.opts.Observer.Cached(m.opts.Server, true)
		return e.contents, Fetch{At: e.at, Subscribed: e.expires.IsZero(), Expires: e.expires}, nil
	}
	m.opts.Observer.Cached(m.opts.Server, false)
	m.mu.Lock()
	sess := m.sess
	m.mu.Unlock()
	if sess == nil {
		m.wantSession()
		var err error
		if sess, err = m.awaitSession(ctx); err != nil {
			return nil, Fetch{}, err
		}
	}
	contents, f, err := m.read(ctx, sess, uri)
	if !errors.Is(err, mcp.ErrSessionExpired) {
		return contents, f, err
	}
	next, werr := m.nextSession(ctx, sess)
	if werr != nil {
		return nil, Fetch{}, fmt.Errorf("%w; not retried: %w", err, werr)
	}
	return m.read(ctx, next, uri)
}

// read subscribes (when the server supports it and the cache is on), reads
// and caches uri over sess.
func (m *Mirror) read(ctx context.Context, sess *mcp.Session, uri string) ([]resource.Content, Fetch, error) {
	// Subscribe before reading, so a change after the read is notified; the
	// ticket keeps content from being cached if a notification (or a new
	// session) came in meanwhile.
	t := m.cache.ticket()
	if _, listed := m.opts.Index.Get(resource.Key{Server: m.opts.Server, URI: uri}); !listed {
		sess.NoteCallerText()
		m.noteCallerText()
	}
	if sess.Capabilities().Subscribe && m.cache.enabled() && !m.cache.subscribed(uri) {
		err := sess.Subscribe(ctx, uri)
		if errors.Is(err, mcp.ErrListenLimit) {
			// Each subscription is a stream (2026-07-28): give up the
			// least recently read one that caches nothing, and try again.
			if old, ok := m.cache.releaseIdle(); ok {
				m.unsubscribe(ctx, sess, []string{old})
				err = sess.Subscribe(ctx, uri)
			}
		}
		switch {
		case err == nil:
			m.cache.markSubscribed(uri, t)
		case errors.Is(err, mcp.ErrSessionExpired):
			return nil, Fetch{}, err
		default:
			// Not honoured, over the stream bound, or failed: the URI is
			// not subscribed, so its result is not cached under one.
			m.log.Debug("subscribe failed; not caching", "uri", uri, "err", err)
		}
	}
	contents, hint, err := m.readHint(ctx, sess, uri, false)
	m.opts.Observer.Called(m.opts.Server, MethodRead, err)
	at := time.Now()
	if err != nil {
		var nf *mcp.NotFoundError
		if _, listed := m.opts.Index.Get(resource.Key{Server: m.opts.Server, URI: uri}); listed && errors.As(err, &nf) {
			// The mirror is out of date: re-list soon, and evict the
			// descriptor after that re-list (the run loop and the content
			// worker write the index, so this read does not wait behind a
			// sync). A URI that was never listed (a template's, or a pin
			// the server may not have) says nothing about the list: a
			// caller pinning missing URIs would make the daemon list the
			// whole server every few seconds.
			m.mu.Lock()
			m.notFound[uri] = true
			m.mu.Unlock()
			m.notifyListChanged()
		}
		// Nothing is cached, so the subscription made for it is given back
		// (a request pinning thousands of missing URIs must not leave
		// thousands of subscriptions behind).
		m.unsubscribe(ctx, sess, m.cache.failed(uri))
		return nil, Fetch{}, err
	}
	var stored bool
	var drop []string
	var expires time.Time
	switch {
	case m.cache.subscribed(uri):
		// A subscription keeps the copy current; its ttlMs is not needed.
		// Before 2026-07-28 results carry no cacheScope, so only a scope
		// that says anything but "public" keeps the result out.
		if hint.Scope == "" || hint.Public() {
			stored, drop = m.cache.put(uri, t, contents, at, time.Time{})
		}
	case hint.TTL > 0 && hint.Public():
		expires = at.Add(hint.TTL)
		stored, drop = m.cache.put(uri, t, contents, at, expires)
	}
	if !stored {
		// A subscribed URI whose result was not cached keeps its
		// subscription, so a private resource is not subscribed again on
		// every read, but only among the maxIdleSubs most recently read.
		drop = append(drop, m.cache.unused(uri)...)
	}
	// A subscription exists for what is cached and the few idle ones:
	// drop those evicted and those beyond the idle bound.
	m.unsubscribe(ctx, sess, drop)
	switch {
	case !stored:
		return contents, Fetch{At: at, Private: hint.Scope != "" && !hint.Public()}, nil
	case expires.IsZero():
		return contents, Fetch{At: at, Subscribed: true}, nil
	}
	return contents, Fetch{At: at, Expires: expires}, nil
}

// unsubscribeTimeout bounds each resources/unsubscribe. They are sent even
// when the read's own context has ended (a read that timed out still gives
// its subscription back).
const unsubscribeTimeout = 5 * time.Second

// unsubscribeHungFor is how long a session whose unsubscribe got no answer
// is sent no more: the reads that give subscriptions back wait for their
// unsubscribes, and would each wait unsubscribeTimeout again.
const unsubscribeHungFor = time.Minute

// unsubscribe sends resources/unsubscribe for uris over sess, unless an
// unsubscribe over it got no answer within the last unsubscribeHungFor (the
// URIs are forgotten here all the same: the server may keep them, and
// notify updates nobody reads).
func (m *Mirror) unsubscribe(ctx context.Context, sess *mcp.Session, uris []string) {
	if len(uris) == 0 {
		return
	}
	m.mu.Lock()
	hung := m.unsubHung == sess && time.Now().Before(m.unsubHungUntil)
	m.mu.Unlock()
	if hung {
		return
	}
	for _, u := range uris {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unsubscribeTimeout)
		err := sess.Unsubscribe(uctx, u)
		cancel()
		if err != nil {
			m.log.Debug("unsubscribe failed", "uri", u, "err", err)
			if errors.Is(err, context.DeadlineExceeded) {
				m.mu.Lock()
				m.unsubHung, m.unsubHungUntil = sess, time.Now().Add(unsubscribeHungFor)
				m.mu.Unlock()
			}
			if errors.Is(err, mcp.ErrSessionExpired) || errors.Is(err, context.DeadlineExceeded) {
				return // the session is gone or hung: the rest would wait too
			}
		}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// listsItself reports whether items, the server's list, hold this
// contextd's own mirror of this very server listed back to it, one level
// deeper: an entry whose URI, percent-decoded (a bridge may wrap it:
// hub://up/contextd%3Aresource%2F…), holds contextd:resource/<this
// server's name>/<inner>, where inner holds contextd's own namespace
// again and is how another entry this mirror holds ends. A bridge that answers
// initialize itself and drops _meta (so that the instance name never
// arrives) still passes the list on. Another contextd that has a server
// of the same name wraps that server's URIs, not contextd's namespace.
func (m *Mirror) listsItself(items []resource.Descriptor) bool {
	prefix := "contextd:resource/"
	own := prefix + m.opts.Server + "/"
	var held []string // decoded URIs this mirror holds, read once if needed
	for _, d := range items {
		u := decodeAll(d.URI)
		i := strings.Index(u, own)
		if i < 0 {
			continue
		}
		inner := u[i+len(own):]
		if !strings.Contains(inner, prefix) {
			continue
		}
		if held == nil {
			for _, h := range m.opts.Index.Descriptors(m.opts.Server) {
				held = append(held, decodeAll(h.URI))
			}
		}
		for _, h := range held {
			if h != u && strings.HasSuffix(h, inner) {
				return true
			}
		}
	}
	return false
}

// readHint reads uri over sess. A resource whose read answers what this
// contextd's MCP server answered a read of another resource with (give or
// take a header line; see mcp.ServedLists.ServedBack) is a copy of a
// resource contextd serves: one passed back by a bridge in front of it
// (renamed, among the bridge's own, read ahead of time), or an honest
// copy (a server's boilerplate, another server's page) of a text a host
// read from contextd. So is one that holds such a text nearly whole,
// rewritten (a near copy), and a short text equal to one (a short copy).
// Copies stay mirrored: the resource contextd served may be gone
// tomorrow, or its server be one that served copies of this one's pages
// to have them dropped. Once two of a server's resources are copies or
// near copies of another server's, or copies of its own listed before
// them equal as a whole, or eight are short copies of another server's,
// the server is withheld: contextd's MCP server lists of it only what it
// listed before and what the content pass read and found no copy, so
// that what it passes back does not come back one level deeper at each
// list. pass is set for the content pass's reads (and checkWithheld's),
// unset for reads that answer a caller.
func (m *Mirror) readHint(ctx context.Context, sess *mcp.Session, uri string, pass bool) ([]resource.Content, mcp.CacheHint, error) {
	began := time.Now()
	cs, hint, err := sess.ReadHint(ctx, uri)
	if err != nil {
		return cs, hint, err
	}
	red := m.redactor()
	for i, c := range cs {
		// Not its URI: an identifier, which the configuration's secrets
		// (a URL's query values, long path segments) may name.
		cs[i].MIMEType = red.Configured(c.MIMEType)
		if c.IsBlob {
			cs[i].Blob = red.ConfiguredBytes(c.Blob)
		} else {
			cs[i].Text = red.Configured(c.Text)
		}
	}
	k := resource.Key{Server: m.opts.Server, URI: uri}
	c := m.opts.Served.ServedBack(k, cs)
	if c.Own && (c.Near && m.holdsOwn(c) || !c.Equal && m.extendsOwn(c)) && !m.opts.Served.Withheld(m.opts.Server) {
		// A page holding one of the server's own before it rewritten
		// or with lines added (a log, a changelog) is its own, whoever
		// passed that page back meanwhile (see extendsOwn). Not once
		// the server is withheld: a bridge rewriting its own pages at
		// each level would pass them back so.
		c = mcp.Copy{}
	}
	m.opts.Served.NoteCopy(k, len(c.Of) > 0)
	if len(c.Of) == 0 {
		m.readsBack.forget(uri)
		if m.opts.ContentMaxResources < 0 && textBytes(cs) >= mcp.MinDigestBytes {
			// Its text is not indexed: the read tells the MCP server
			// it is the server's own (see checkWithheld).
			m.opts.Served.NoteOwn(k)
		}
		return cs, hint, nil
	}
	// A copy of another server's resource counts towards withholding the
	// server; so does an exact copy of its own that came after what it
	// copies (a bridge passing back only the server's own entries lists
	// them one list later), where a server's boilerplate was there from
	// the start, and a page holding a page before it (a log, a changelog)
	// is its own. And it must have been first listed after contextd's
	// MCP server answered a read of what it copies (a bridge reads before
	// it passes back), or, read by the content pass, have had that
	// answered meanwhile (a bridge reading through when read; a host
	// reading both at once is not): an alias of the server's newest page
	// ("latest", then the page itself listed), read by a host after the
	// page was listed, is no copy of anything passed back. (Read between
	// the page's coming and contextd's list of it, it still is: a short
	// while for a server that says its list changed.)
	kind := copyExact
	switch {
	case c.Near:
		kind = copyNear
	case c.Short:
		kind = copyShort
	}
	counts := c.Other(m.opts.Server)
	if !counts && kind == copyExact {
		listed, _ := m.readsBack.firstListed(uri)
		for i, o := range c.Of {
			if m.readsBack.listedBefore(o.URI, uri) && (listed.After(c.First[i]) || pass && !c.Last[i].Before(began)) {
				counts = true
				break
			}
		}
	}
	// Passed back: first listed after the read of what it copies (since
	// the mirror's first list, or the index's first holding it before
	// that), or, read by the content pass, that read answered meanwhile,
	// and none in throughQuiet before (a bridge reading through contextd
	// when read, whatever it listed before). A resource that held
	// a text of its own and now answers a copy is not: an honest mirror's
	// page brought to the original's new edition does that too, and
	// neither when it was read nor how alike the two texts are tells them
	// apart (both were tried; each was gamed, or lost honest pages).
	at, later := m.readsBack.listedLater(uri)
	readThrough := false
	for i := range c.Of {
		// Not read before for a while: a host polling the page reads it
		// during some of the content pass's reads too. (Nor a host's
		// first read of a page may be, but a bridge reading through
		// pages no host read looks the same.)
		readThrough = readThrough || pass && !c.Last[i].Before(began) && c.Prev[i].Before(began.Add(-throughQuiet))
	}
	if counts && (later && slices.ContainsFunc(c.First, at.After) || readThrough) {
		m.opts.Served.NotePassedBack(k)
		if m.readsBack.notePassedBack(uri) {
			m.opts.Served.NoteBesideCopies(m.opts.Server, m.readsBack.besideCopies())
		}
	}
	if withhold, added := m.readsBack.add(uri, counts, kind); added {
		if withhold {
			m.opts.Served.Withhold(m.opts.Server)
			m.log.Warn("the server passes back resources this contextd serves, or copies of them (a bridge in front of contextd?): contextd's MCP server lists of it only what it listed before and what was read since and found its own")
		}
		m.log.Debug("a copy of a resource this contextd served", "uri", uri, "near", c.Near, "short", c.Short)
	}
	return cs, hint, nil
}

// extendsOwn reports whether a copy that holds its text with lines added
// (not Equal) holds one of the server's own pages that is no copy, and
// of other servers' pages only copies: a log or a changelog whose page
// holds the page before it, whoever passed that page back meanwhile. A
// bridge adding a line to what it passes back holds its own copy a level
// up, or another server's page beside its own.
func (m *Mirror) extendsOwn(c mcp.Copy) bool {
	for _, o := range c.Of {
		if o.Server != m.opts.Server && !m.opts.Served.IsCopy(o) {
			return false
		}
	}
	return m.holdsOwn(c)
}

// holdsOwn reports whether a copy holds one of the server's own pages
// that is no copy. A near copy of such a page is the server's own,
// whatever else it holds: a rewriting bridge's copy of a log page may
// not be known as a copy yet when the log's next page is read, and that
// page, taken for a copy, would make the next one too. A near copy of
// the server's own copies alone is a bridge rewriting what it passes
// back, one level up each time.
func (m *Mirror) holdsOwn(c mcp.Copy) bool {
	return slices.ContainsFunc(c.Of, func(o resource.Key) bool {
		return o.Server == m.opts.Server && !m.opts.Served.IsCopy(o)
	})
}

// The kinds of copy (see mcp.ServedLists.ServedBack).
const (
	copyExact = iota
	copyNear
	copyShort
)

// throughQuiet is how long before a content pass's read of a copy its
// original must not have been read for a read answered meanwhile to tell
// a bridge reading through contextd: a host polling a page more often is
// no bridge's doing.
const throughQuiet = 5 * time.Minute

// readsBack holds the URIs of a server that are copies of resources this
// contextd serves (see readHint), at most maxReadsBack, with their kind
// and whether each counts towards withholding the server; and when each
// URI was first listed.
type readsBack struct {
	mu     gosync.Mutex
	kinds  map[string]int  // URI → kind of copy
	counts map[string]bool // URI → it counts
	// counted are the copies that count, by kind.
	counted [3]int
	// listed holds the URIs of the server's last list, each with the
	// list that first held it (lists counts them);
	// withheldAt is the number of the last list when the server was
	// withheld (0: not withheld).
	listed     map[string]listing
	lists      uint64
	withheldAt uint64
	// passedAt is when the first copy found passed back was first
	// listed (zero: none was found).
	passedAt time.Time
}

// A listing is the list that first held a URI: its number, and when it
// was answered (or, for the first list, when the index first held it).
type listing struct {
	n  uint64
	at time.Time
	// known: at is when the server first listed it (a later list, or
	// the index holding it from before the first), not the first list's
	// time.
	known bool
}

const (
	// readsBackWithheld is how many of a server's copies must count
	// before contextd's MCP server lists only what of it was read: of
	// exact and near copies together, or of short ones (short texts are
	// alike more often).
	readsBackWithheld      = 2
	readsBackShortWithheld = 8
	maxReadsBack           = 100_000
)

// add records that uri is a copy of kind, counting or not; it returns
// whether the server is to be withheld from now on, and whether uri was
// not known as that kind of copy before.
func (r *readsBack) add(uri string, counts bool, kind int) (withhold, added bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.kinds[uri]; ok && old == kind || !ok && len(r.kinds) >= maxReadsBack {
		return false, false
	}
	if old, ok := r.kinds[uri]; ok && r.counts[uri] {
		r.counted[old]--
	}
	if r.kinds == nil {
		r.kinds, r.counts = map[string]int{}, map[string]bool{}
	}
	before := r.withheld()
	r.kinds[uri], r.counts[uri] = kind, counts
	if counts {
		r.counted[kind]++
	}
	if !before && r.withheld() {
		if r.withheldAt == 0 {
			r.withheldAt = max(r.lists, 1)
		}
		return true, true
	}
	return false, true
}

// withheld reports whether enough copies count. r.mu is held.
func (r *readsBack) withheld() bool {
	return r.counted[copyExact]+r.counted[copyNear] >= readsBackWithheld || r.counted[copyShort] >= readsBackShortWithheld
}

// forget records that uri is no copy (any longer). What counted still
// does: the server was seen passing copies back.
func (r *readsBack) forget(uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.kinds, uri)
	delete(r.counts, uri)
}

// noteListed records items, the server's list just answered; it returns
// by how many entries it outgrew the last (0 the first time, and for a
// list no longer: a bridge's own entries may come and go).
func (r *readsBack) noteListed(items []resource.Descriptor, firstIndexed func(uri string) (time.Time, bool)) (grown int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists++
	now := time.Now()
	listed := make(map[string]listing, len(items))
	for _, d := range items {
		l, ok := r.listed[d.URI]
		if !ok {
			l = listing{n: r.lists, at: now, known: r.lists > 1}
			if since, ok := firstIndexed(d.URI); ok && since.Before(now) && r.lists == 1 {
				// In the first list (a start, a reload), listed since
				// the index first held it (kept on disk).
				l.at, l.known = since, true
			}
		}
		listed[d.URI] = l
	}
	if r.lists > 1 {
		grown = max(0, len(listed)-len(r.listed))
	}
	r.listed = listed
	return grown
}

// A growthWatch follows a server's lists for the shape of a loop through
// contextd, whatever the bridge does to what it passes back: its list
// grows at each list, each time after contextd's MCP server listed a
// page (a bridge passes back what contextd lists, and contextd lists
// what it mirrored of the bridge). Seen at growthStreak of its last
// growthLists lists, the server is held (mcp.ServedLists.Hold): for
// growthHold, contextd's MCP server lists nothing new of any server, so a
// bridge has nothing new to pass back, where an honest server growing on
// its own goes on. From its first hold on, what the server lists is
// listed once read and found not empty (mcp.ServedLists.Check): a bridge
// whose reads fail or answer nothing is cut however late it passes back.
//
// After the hold (counted to when contextd's list was still no more, as
// other servers' holds may keep it still longer), the server grows with
// what contextd lists if
//   - it did not grow in the hold's second half, having grown more often
//     than that before, and grows again within
//     growthRegrow of its end (a bridge passing back at once what
//     contextd listed meanwhile; a server whose content is not indexed,
//     so not checked, is held twice as long from the first); or
//   - it grew in the hold's second half and grows within growthRegrow of
//     its end by more than twice what it added in one list before (see
//     burst): a bridge growing on its own beside as it passes back (these
//     two only while no echo in the row told a longer lag: such a bridge
//     cannot grow again at once); or
//   - it echoes contextd's list still around the hold or the one before
//     it in a row, a lag later (see echo), within growthEchoWithin of
//     the hold's end, after contextd listed a page. A bridge passing
//     back what contextd lists lag late grows a lag after each time
//     contextd's list grew (mcp.ServedLists.NoteAdded): it grows on
//     through the hold with what contextd listed before it, pauses as
//     long as contextd's list was still, from a lag after it went still
//     (its own growth may fill that pause), and grows a lag after the
//     list grew again by what it listed then. The first echo in a row
//     tells the lag, and the server is held again as long; those after
//     count if they keep to it (growthLagOff more or less).
//
// Found so, it is held again, twice as long each time: growthTrials
// times in a row, and it is frozen (contextd's MCP server lists no more
// of it; others as ever) for growthFreeze, twice as long at each freeze
// after. Otherwise it grows on its own and is let be for growthCool. A
// server growing at a steady pace pauses as long whatever contextd's list
// does, where holds in a row are longer each time, so it is not frozen;
// one adding an entry at a time at random seldom echoes a hold twice as
// late.
// Only the sync goroutine uses it.
type growthWatch struct {
	recent uint8            // of the last 8 lists, those that grew after a page listed (bits)
	prev   time.Time        // when the last list began
	phase  int              // growthWatching, growthHeld, growthReleased, growthFrozen
	start  time.Time        // when the hold began
	length time.Duration    // how long the hold was to last
	window time.Duration    // how soon after it growing again counts
	until  time.Time        // when the hold ends or ended (or another server's, later)
	grew   bool             // the server's list grew while held, past half the hold
	last   time.Time        // when the last list that grew began
	gaps   [3]time.Duration // between the last lists that grew, newest last
	pace   time.Duration    // their median when first held
	sizes  [3]int           // how many entries the last lists that grew added, newest last
	growth []growthAt       // the last lists that grew, at most growthKept, oldest first
	size   int              // their median when first held
	most   int              // the most one list added while held
	held   [2]heldSpan      // the last two holds in a row, newest last
	lag    time.Duration    // from a hold's end to its echo, the first in a row
	// lagBurst is set when a burst (not a pause) told lag.
	lagBurst bool
	cool     time.Time // no watching before then
	trials   int       // holds it grew again promptly after, in a row
	frozen   int       // times it was frozen
}

// A heldSpan is one hold of a server: when it began and ended (later
// than it was to if another server's hold kept contextd's list still
// longer).
type heldSpan struct {
	start, end time.Time
}

// A growthAt is a list that grew: when it began, and by how many.
type growthAt struct {
	at    time.Time
	added int
}

// growthKept is how many lists that grew a growthWatch remembers.
const growthKept = 128

const (
	growthWatching = iota
	growthHeld
	growthReleased
	growthFrozen
)

const (
	// growthStreak is how many of a server's last growthLists lists must
	// grow, each after contextd listed a page, before it is held: a
	// bridge may hide what it passes back at every other list.
	growthStreak = 3
	growthLists  = 5
	// growthHold is how long a server is first held (then twice as long
	// at each hold in a row, growthHoldDoublings times at most: 30, 60,
	// 120, 120 s).
	growthHold          = 30 * time.Second
	growthHoldDoublings = 2
	// growthRegrow is how soon after a hold's end a server must grow
	// again to be held again: a bridge passes back at once; an honest
	// server at random times seldom grows so soon four times running.
	growthRegrow = 15 * time.Second
	// growthTrials is how many holds in a row the server must grow again
	// promptly after before it is frozen.
	growthTrials = 4
	// growthEchoWithin is how long after a hold the server's growth may
	// end a pause and still echo the hold: a bridge passing back later
	// is not told by its timing.
	growthEchoWithin = 10 * time.Minute
	// growthLagOff is how much sooner or later than the first each echo
	// in a row may end after its hold (a bridge lists contextd every few
	// seconds).
	growthLagOff = 10 * time.Second
	// growthCool is how long after its hold a server found growing on
	// its own, or not growing again, is not watched.
	growthCool = 10 * time.Minute
	// growthFreeze is how long a server is first frozen; each freeze
	// after lasts twice the last, growthFreezeDoublings times at most
	// (32 h). A bridge adds a few levels between freezes, fewer and fewer
	// an hour; an honest server frozen by mistake (someone adding to it
	// just after each hold) is listed again within the hour.
	growthFreeze          = time.Hour
	growthFreezeDoublings = 5
	// growthChecked is how long after its last hold a server's new
	// entries are listed once read (mcp.ServedLists.Check): a bridge is
	// held again within growthCool of a hold, an honest server held once
	// is listed as before a day later.
	growthChecked = 24 * time.Hour
)

// watchGrowth follows a list that began at from and outgrew the last by
// added entries (see growthWatch).
func (m *Mirror) watchGrowth(from time.Time, added int) {
	w := &m.growth
	served := !w.prev.IsZero() && m.opts.Served.ListedSince(w.prev)
	w.prev = from
	now := time.Now()
	paused := from.Sub(w.last) // since the last list that grew
	if added > 0 {
		if !w.last.IsZero() {
			w.gaps = [3]time.Duration{w.gaps[1], w.gaps[2], paused}
		}
		w.sizes = [3]int{w.sizes[1], w.sizes[2], added}
		w.last = from
		if len(w.growth) >= growthKept {
			w.growth = slices.Delete(w.growth, 0, len(w.growth)-growthKept+1)
		}
		w.growth = append(w.growth, growthAt{from, added})
	}
	hold := func() {
		longer := 0
		w.window = growthRegrow
		if m.opts.ContentMaxResources < 0 {
			longer = 1 // not checked: 60, 120, 120, 120 s
		}
		w.length = growthHold << min(w.trials+longer, growthHoldDoublings)
		if w.trials == 0 {
			g, n := w.gaps, w.sizes
			slices.Sort(g[:])
			slices.Sort(n[:])
			w.pace, w.size = g[1], n[1]
		}
		w.most = 0
		w.phase, w.start, w.until, w.grew = growthHeld, now, now.Add(w.length), false
		m.opts.Served.Hold(m.opts.Server, w.until)
		if m.opts.ContentMaxResources >= 0 {
			// However late it passes back, what it lists from now on is
			// listed once read, and not if empty or a copy.
			m.opts.Served.Check(m.opts.Server, now.Add(growthChecked))
		}
	}
	calm := func() {
		// Let be growthCool from the hold's end, however long an echo
		// was waited for.
		w.phase, w.recent, w.trials, w.lag, w.lagBurst, w.cool = growthWatching, 0, 0, 0, false, w.until.Add(growthCool)
		w.held = [2]heldSpan{}
	}
	// trial counts a hold the server grew with what contextd listed
	// after (found, with args for the log): held again, longer, or frozen
	// after growthTrials in a row.
	trial := func(found string, args ...any) {
		if w.trials++; w.trials < growthTrials {
			hold()
			m.log.Info("the server's list "+found+": it is held again, longer", append(args, "hold", w.length, "holds", w.trials)...)
			return
		}
		w.phase, w.until = growthFrozen, now.Add(growthFreeze<<min(w.frozen, growthFreezeDoublings))
		w.frozen++
		m.opts.Served.Freeze(m.opts.Server, w.until)
		m.log.Warn("the server's list "+found+", hold after hold: it grows with what contextd lists (a bridge in front of contextd?); contextd's MCP server lists no more of it than it does now, for a while", append(args, "holds", w.trials, "for", w.until.Sub(now))...)
	}
	switch w.phase {
	case growthFrozen:
		if now.Before(w.until) {
			return
		}
		w.phase, w.recent, w.trials = growthWatching, 0, 0
		m.log.Info("the server's freeze ran out: contextd's MCP server lists it again, and watches its growth again")
		return
	case growthWatching:
		if now.Before(w.cool) {
			return
		}
		w.recent <<= 1
		if added > 0 && served {
			w.recent |= 1
		}
		if bits.OnesCount8(w.recent&(1<<growthLists-1)) >= growthStreak {
			hold()
			m.log.Info("the server's list grew at most of its last lists, each after contextd's MCP server listed a page: contextd's MCP server lists nothing new for a while, to see whether it grows on its own", "hold", w.length)
		}
		return
	case growthHeld:
		// Another server's hold may keep contextd's list still for longer:
		// the hold lasts until the list grows again (not through other
		// holds in a row after, whose stillness is theirs: a server
		// adding at a steady pace would echo them).
		if q := m.opts.Served.QuietUntil(); q.After(w.until) {
			if !m.opts.Served.GrewSince(w.until) {
				w.until = q
			}
		}
		if now.Before(w.until) {
			w.grew = w.grew || added > 0 && from.Sub(w.start) >= w.length/2
			w.most = max(w.most, added)
			return
		}
		w.phase = growthReleased // since w.until; this list is the first after
		w.held[0], w.held[1] = w.held[1], heldSpan{w.start, w.until}
	}
	if w.phase != growthReleased {
		return
	}
	since := now.Sub(w.until)
	switch {
	// Growing again at once says nothing of a server whose echoes told a
	// lag: a bridge passing back that late cannot.
	// Not growing in the hold's second half says so only of a server that
	// grows more often than that before (a page each 30 s seldom grows in
	// 15 s); one growing more seldom than that is a slow loop at most,
	// which the pace of contextd's MCP list of it bounds.
	case w.lag <= w.window && !w.grew && w.pace < w.length/2 && added > 0 && served && since <= w.window:
		trial("stopped growing while contextd's MCP server listed nothing new, and grew again as soon as it listed more", "after", since.Round(time.Second), "added", added)
		return
	case w.lag <= w.window && w.grew && served && since <= w.window && w.burst(added):
		// Growing on its own through the hold, and passing back at once
		// what contextd listed as it ended.
		trial("grew as soon as contextd's MCP server listed more by more than twice what it added in any one list before", "after", since.Round(time.Second), "added", added)
		return
	}
	if added > 0 && served {
		if lag, found, pause, ok := w.echo(m.opts.Served, from.Add(-paused), from, added); ok {
			if w.lag == 0 || !w.keeps(lag) {
				// The first echo in a row tells the lag (a pause may
				// tell it anew after a burst); those after must keep to
				// it to count.
				w.lag, w.lagBurst = max(lag, time.Nanosecond), !pause
				hold()
				m.log.Info("the server's list "+found+": it is held again, to see whether it echoes it as late again", "paused", paused.Round(time.Second), "lag", lag.Round(time.Second), "added", added, "hold", w.length)
				return
			}
			trial(found, "paused", paused.Round(time.Second), "lag", lag.Round(time.Second), "added", added)
			return
		}
	}
	// However it paused meanwhile (a bridge lagging more than its pace
	// first passes back what contextd listed before the list went still),
	// it echoed nothing within growthEchoWithin: it grows on its own.
	if since > growthEchoWithin {
		calm()
		if w.grew {
			w.frozen = 0 // grown on its own: a freeze before was a mistake
		}
		m.log.Info("the server's list did not echo contextd's still list within a while after the hold: it grows on its own, and is not watched for a while", "for", growthCool, "after", since.Round(time.Second), "grew_while_held", w.grew)
	}
}

// echo reports whether a list that began at b and added added entries,
// after the server's list last grew at a, echoes contextd's MCP list
// still around the last hold or the one before it in a row, a lag later
// (from when contextd's list grew again to b): a bridge passing back what
// contextd lists, lag late, grows a lag after each time contextd's list
// grew, so
//   - it pauses as long as contextd's list was still (growthLagOff or an
//     eighth of its pace more or less: it lists contextd every few
//     seconds), its last growth before a lag after contextd's, and grows
//     again by more than one entry (what contextd listed at once as the
//     hold ended); or
//   - beside its own growth, which fills that pause, it grows by about
//     as many (half to twice, and four more) as contextd's list gained
//     at once when it grew again, four or more, having grown less than
//     half as fast in the lag after the list went still as before.
//
// Once a row's lag is known (w.lag), the echo must keep to it
// (growthLagOff more or less), save a pause after a burst told it. found
// says which it was, for the log, and pause whether a pause.
func (w *growthWatch) echo(lists *mcp.ServedLists, a, b time.Time, added int) (lag time.Duration, found string, pause, ok bool) {
	const (
		pauseFound = "paused as long as contextd's MCP server listed nothing new, a lag later, and grew by what it listed after"
		burstFound = "grew, a lag after contextd's MCP server listed four or more at once after listing nothing new, by about as many, after growing less than half as fast as before"
	)
	tol := max(growthLagOff, w.pace/8)
	var seen []heard
	for _, h := range []heldSpan{w.held[1], w.held[0]} {
		if h.start.IsZero() {
			continue
		}
		last, next, known := lists.Stillness(h.end)
		if !known {
			continue
		}
		lag := b.Sub(next.At)
		if lag <= 0 || lag > growthEchoWithin {
			continue
		}
		if next.At.Sub(last.At) < w.shortest()/2 {
			continue // the list grew while held (entries that waited too long)
		}
		seen = append(seen, heard{lag: lag, last: last, next: next})
	}
	// A pause tells more than a burst: the pause first, on either hold.
	// Holds in a row as long may both fit it, lags a hold apart. The one
	// keeping to the row's lag counts; else one whose lag the server's
	// growth did not belie (at that lag it grew while it would have
	// paused for the other hold), one past the regrow window first (a
	// bridge passing back sooner grows again at once, see watchGrowth);
	// a belied one last; the newer first. A pause as long, begun a lag after, may tell the
	// lag anew if a burst told it before (the burst may have been
	// another's echo).
	paused := b.Sub(a)
	rank := func(e heard) int {
		switch {
		case w.lag != 0 && w.keeps(e.lag):
			return 0
		case w.belied(seen, e, tol, b):
			return 3
		case e.lag > w.window:
			return 1
		}
		return 2
	}
	best, bestRank := -1, 0
	if added >= 2 && !a.IsZero() {
		for i, e := range seen {
			still := e.next.At.Sub(e.last.At)
			if paused < still-tol || paused > still+tol || w.lag != 0 && !w.keeps(e.lag) && !w.lagBurst {
				continue
			}
			if r := rank(e); best < 0 || r < bestRank {
				best, bestRank = i, r
			}
		}
	}
	if best >= 0 {
		return seen[best].lag, pauseFound, true, true
	}
	for _, e := range seen {
		if w.lag != 0 && !w.keeps(e.lag) {
			continue
		}
		// Its own growth fills the pause: what it grew by in the lag
		// after contextd was still must be half at most of what it grew by
		// as long before.
		still := e.next.At.Sub(e.last.At)
		quiet, before := w.grownIn(e.last.At.Add(e.lag+tol), b), w.grownIn(e.last.At.Add(e.lag-still), e.last.At.Add(e.lag))
		if added >= 4 && 2*added >= e.next.Added && added <= 2*e.next.Added+4 && 2*quiet < added && 2*quiet <= before {
			return e.lag, burstFound, false, true
		}
	}
	return 0, "", false, false
}

// A heard is a stillness of contextd's MCP list around a hold, and the
// lag a list growing after it would echo it at.
type heard struct {
	lag        time.Duration
	last, next mcp.ListGrowth
}

// belied reports whether the server's growth before b belies the lag e
// tells: at e.lag, it would have paused through another stillness in
// seen (tol short of each end), and it grew then.
func (w *growthWatch) belied(seen []heard, e heard, tol time.Duration, b time.Time) bool {
	for _, o := range seen {
		if o == e {
			continue
		}
		from, to := o.last.At.Add(e.lag+tol), o.next.At.Add(e.lag-tol)
		if to.After(b) {
			to = b
		}
		if from.Before(to) && w.grownIn(from, to) > 0 {
			return true
		}
	}
	return false
}

// burst reports whether a list that added added entries grew by more
// than twice what the server added in one list before the hold or while
// held, four at least: what contextd listed as the hold ended, passed
// back at once by a bridge that grows on its own beside.
func (w *growthWatch) burst(added int) bool {
	return added >= 4 && added > 2*max(w.most, w.size)
}

// keeps reports whether an echo lag late keeps to the row's lag
// (growthLagOff more or less).
func (w *growthWatch) keeps(lag time.Duration) bool {
	return lag >= w.lag-growthLagOff && lag <= w.lag+growthLagOff
}

// grownIn returns how many entries the server's lists that began from a
// to before b added.
func (w *growthWatch) grownIn(a, b time.Time) int {
	n := 0
	for _, g := range w.growth {
		if !g.at.Before(a) && g.at.Before(b) {
			n += g.added
		}
	}
	return n
}

// shortest returns the shorter of the last two holds in a row.
func (w *growthWatch) shortest() time.Duration {
	q := w.held[1].end.Sub(w.held[1].start)
	if h := w.held[0]; !h.start.IsZero() {
		q = min(q, h.end.Sub(h.start))
	}
	return q
}

// listedSinceWithheld returns the URIs of the server's last list first
// listed by the list it was withheld after, or later, the oldest first;
// all of them if this mirror did not find it so (withheld before its
// first list: by an earlier run, or the name's earlier server), of which
// the MCP server lists only what was read since and found its own. Its
// callers know the server is withheld.
func (r *readsBack) listedSinceWithheld() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	from := max(r.withheldAt, 1)
	var uris []string
	for uri, l := range r.listed {
		if l.n >= from {
			uris = append(uris, uri)
		}
	}
	slices.SortFunc(uris, func(a, b string) int {
		return cmp.Or(cmp.Compare(r.listed[a].n, r.listed[b].n), strings.Compare(a, b))
	})
	return uris
}

// notePassedBack records that uri, in the server's last list, is a copy
// passed back; it reports whether that moved passedAt back (besideCopies
// then holds more).
func (r *readsBack) notePassedBack(uri string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.listed[uri]
	if !ok || !r.passedAt.IsZero() && !l.at.Before(r.passedAt) {
		return false
	}
	r.passedAt = l.at
	return true
}

// besideCopies returns the URIs of the server's last list first listed
// when the first copy passed back was, or later; none if no copy was
// found passed back. What a start's first list holds counts as listed
// when the index first held it: a server's own pages listed for long are
// not beside a copy its first list after a restart holds.
func (r *readsBack) besideCopies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.passedAt.IsZero() {
		return nil
	}
	var uris []string
	for uri, l := range r.listed {
		if !l.at.Before(r.passedAt) {
			uris = append(uris, uri)
		}
	}
	return uris
}

// firstListed returns when the server's lists first held uri, if its
// last one holds it.
func (r *readsBack) firstListed(uri string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.listed[uri]
	return l.at, ok
}

// listedLater returns when uri was first listed, if that is known: after
// the mirror's first list, or before it when the index held it already.
// Otherwise what the first list holds (at a start, a reload) may have been
// listed for long, and a page two servers shared before a host read it
// would look passed back after each restart.
func (r *readsBack) listedLater(uri string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.listed[uri]
	return l.at, ok && l.known
}

// listedBefore reports whether the server's lists held a before they
// held b, both in its last list.
func (r *readsBack) listedBefore(a, b string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	la, oka := r.listed[a]
	lb, okb := r.listed[b]
	return oka && okb && la.n < lb.n
}

// decodeAll percent-decodes s until it no longer changes (a URI wrapped
// once or twice by bridges), at most 4 times.
func decodeAll(s string) string {
	for range 4 {
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			return s
		}
		s = d
	}
	return s
}
