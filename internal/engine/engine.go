// Package engine wires contextd's stages into the service the daemon and the
// one-shot CLI expose: configured servers → mirrors → index → ranking →
// selection under a token budget. It knows nothing of gRPC: the service layer
// maps its errors ([ErrInvalidArgument], [ErrUnavailable]) to status codes.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	gosync "sync"
	"sync/atomic"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/embed/glove"
	"github.com/contextd/contextd/internal/embed/use"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/resource"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// Sentinel errors; the service layer maps them to status codes.
var (
	// ErrInvalidArgument wraps every request validation failure: an empty
	// query, a budget below 1, an unknown server name.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnavailable means no server in the request's scope has a usable mirror.
	ErrUnavailable = errors.New("unavailable")
)

// Options configures New.
type Options struct {
	// Config lists the servers and settings. Required.
	Config *config.Config
	// Focus is the query a one-shot command will answer, or "": the
	// mirrors embed and read first what it needs (index.SetFocus), and
	// WaitAnswerable returns once that is indexed.
	Focus string
	// Embedder embeds descriptors and queries. Nil means the one Config
	// names (ConfiguredEmbedder).
	Embedder embed.Embedder
	// InMemory keeps the index in memory instead of Config.DataDir.
	InMemory bool
	// Logger; nil discards.
	Logger *slog.Logger
	// Dial overrides how a server is connected (tests). Nil uses mcp.Connect.
	Dial func(srv config.Server) ctxsync.DialFunc
	// SharedDataDir lets a run whose data_dir is locked by another process
	// go on with an in-memory index (one-shot commands next to a daemon).
	// When false, a locked data_dir is an error.
	SharedDataDir bool
	// ShowServerText shows callers what servers say (their errors, list
	// problems, stderr line, server info, the URIs their items claim)
	// masked, as long as no server was sent a caller's words (a pin it
	// does not list, a template's value, a value to complete). Set it only
	// when the caller holds the configuration (a one-shot command run by
	// its owner): masked text is an oracle for secrets to anyone who can
	// make a server say chosen words (by the pins, tasks and queries it
	// sends, which reach the servers and the embedder), so by default what
	// servers say is withheld, and callers are told what failed; the log
	// has the rest. A shared store withholds it regardless.
	ShowServerText bool
	// KeepOtherServers keeps the persisted descriptors of servers absent
	// from Config (a one-shot run limited to some servers); by default they
	// are deleted at startup.
	KeepOtherServers bool
	// Mirror adjusts each mirror's options (tests: debounce, backoff).
	Mirror func(*ctxsync.Options)
	// Candidates is how many ranked descriptors Assemble considers. Zero
	// sizes the pool by the request's budget (CandidatesFor).
	Candidates int
	// QueryCache is how many query vectors the index remembers (see
	// index.Options.QueryCache).
	QueryCache int
	// Observer is told of syncs, upstream requests, cache lookups and
	// answers (metrics). Nil tells nobody.
	Observer Observer
	// Ranking is how Search and Assemble rank descriptors. The zero value
	// means DefaultRanking.
	Ranking Ranking
	// ReadTimeout bounds one resources/read; a read that takes longer is
	// omitted as read_failed and selection goes on. Zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// SlowReadTimeout bounds reads from a server that let a read time out
	// within the last SlowFor, so one slow server delays later answers by
	// at most this much. A read that succeeds ends the spell. A server
	// whose first read after a spell times out again starts a spell twice
	// as long as its last, up to maxSlowDoublings doublings of SlowFor,
	// until a read it answers in time. Zero means DefaultSlowReadTimeout
	// and DefaultSlowFor.
	SlowReadTimeout, SlowFor time.Duration
	// RequestReadTime bounds the time one Assemble spends reading: each
	// read gets at most what is left of it, and a candidate reached after
	// it ran out is omitted as read_failed, so a server answering every
	// read just within ReadTimeout cannot hold a request (and its turn)
	// for max_reads read timeouts. Zero means twice ReadTimeout.
	RequestReadTime time.Duration
	// Replica adjusts the replica's options when Config.Store names a
	// PostgreSQL store (tests: lease times, holder names).
	Replica func(*replica.Options)
}

// Defaults for the slow-server spell (see Options.SlowReadTimeout).
const (
	DefaultSlowReadTimeout = 2 * time.Second
	DefaultSlowFor         = time.Minute
)

// NewEmbedder returns the built-in embedder named by the config's embedder
// key; "" means config.DefaultEmbedder, Universal Sentence Encoder lite,
// the best the eval measured among the embedders that run offline in pure
// Go (see eval/README.md).
func NewEmbedder(name string) (embed.Embedder, error) {
	switch name {
	case "", config.EmbedderUSELite:
		return use.New()
	case config.EmbedderGloVe:
		return glove.New()
	}
	return nil, fmt.Errorf("unknown embedder %q (want %q or %q)", name, config.EmbedderUSELite, config.EmbedderGloVe)
}

// DefaultReadTimeout bounds one resources/read during Assemble.
const DefaultReadTimeout = 30 * time.Second

// DefaultCandidates is the fewest ranked descriptors Assemble considers,
// and how many the eval's baselines are given.
const DefaultCandidates = 10

// MaxCandidates is the most ranked descriptors Assemble considers.
const MaxCandidates = 40

// tokensPerCandidate sizes Assemble's pool: one candidate per this many
// tokens of budget, between DefaultCandidates and MaxCandidates. A big
// budget has room for more resources than the best ten, and those the
// value floor leaves out are never read, so a deeper pool costs a read
// only where the budget can use it.
const tokensPerCandidate = 200

// ServedLists returns what the MCP server serving this engine should tell
// of the pages it lists (mcp.ServedLists.Note): its mirrors then know a
// bridge passing that list back as this contextd.
func (e *Engine) ServedLists() *mcp.ServedLists { return e.served }

// WrapLog returns h behind what the engine's own log goes through: the
// configured credentials masked (those of the configuration loaded last)
// and what a terminal would act on escaped (redact.HandlerFunc).
func (e *Engine) WrapLog(h slog.Handler) slog.Handler { return redact.HandlerFunc(h, e.logRed.Load) }

// CandidatesFor returns how many ranked descriptors Assemble considers for
// a token budget.
func CandidatesFor(tokenBudget int) int {
	return min(max(tokenBudget/tokensPerCandidate, DefaultCandidates), MaxCandidates)
}

// An Engine answers Assemble, Search and ListServers.
type Engine struct {
	served     *mcp.ServedLists // what the MCP server serving this engine listed lately
	log        *slog.Logger
	logRed     *atomic.Pointer[redact.Redactor] // what log masks: the current set's red
	callerText *atomic.Bool                     // withhold what servers say: every mirror's sync.Options.CallerText
	ix         *index.Index
	tok        *budget.Tokenizer
	candidates int
	est        *budget.Estimator // learns each server's bytes per token across requests
	ranking    Ranking
	readTO     time.Duration
	reqReadTO  time.Duration // Options.RequestReadTime, resolved
	slowTO     time.Duration
	slowFor    time.Duration
	slowMu     gosync.Mutex
	slowUntil  map[string]time.Time // server → end of its slow spell
	slowStreak map[string]int       // server → spells in a row without a read answered in time
	probeAt    map[string]time.Time // server → when its last probe started (see probe); slowMu
	// probes run the probes' reads; stopProbes (at Close) cancels them.
	probes     gosync.WaitGroup
	probeCtx   context.Context
	stopProbes context.CancelFunc
	readTimes  map[string]time.Duration // server → its typical read time (see noteReadTime); slowMu
	slowReads  slowReads                // per server, reads past slowTO
	unlock     func()                   // releases data_dir; nil for an in-memory index
	dataDir    string                   // data_dir while unlock holds it
	tooLarge   tooLargeReads
	shared     *shared // nil for an embedded index

	// How mirrors are made (New, Reload).
	dial     func(srv config.Server) ctxsync.DialFunc
	adjust   func(*ctxsync.Options)
	observer Observer
	// synced is closed when a mirror first completes a sync (Synced).
	synced     chan struct{}
	syncedOnce gosync.Once

	// setMu guards cur and retired. cur is replaced whole by Reload;
	// retired holds the mirrors Reload took out, by name, until the
	// requests that began before it have finished.
	setMu   gosync.RWMutex
	cur     *serverSet
	retired map[string]*ctxsync.Mirror

	parsed parsedCache // the mirrors' templates, parsed

	// reloadMu serialises Reload. runMu guards spawn and runs: spawn
	// starts a mirror under Run's context (nil outside Run), runs holds
	// each running mirror's stop function.
	reloadMu gosync.Mutex
	runMu    gosync.Mutex
	spawn    func(*ctxsync.Mirror) *mirrorRun
	runs     map[*ctxsync.Mirror]*mirrorRun
	runWG    gosync.WaitGroup
}

// A serverSet is the configuration the engine serves at one moment: its
// servers' mirrors and the limits. It is never modified once installed.
type serverSet struct {
	cfg     *config.Config
	mirrors map[string]*ctxsync.Mirror
	names   []string      // configured order (sorted)
	limits  config.Limits // with defaults
	// secrets are every credential of cfg, the daemon's token included,
	// and of every configuration installed before it: a reload that
	// removes a server leaves its ${VAR} credential in the daemon's
	// environment, and in text already fetched.
	secrets []string
	// red masks secrets in what the daemon shows.
	red *redact.Redactor
	// given masks, by server name, that server's text: every secret
	// whole, pieces and cut ends only of those it was given (see
	// givenRedactors).
	given map[string]*redact.Redactor
	// callers finds what a caller's text (a pin, a template value) may not
	// carry to a server: the daemon's own token, which every caller holds
	// when it is set, and what the generic rules find (user info, bearer
	// and secret-named values). Never another configured secret: a caller
	// told which of its words are refused would learn, a dictionary at a
	// time, which one is a server's password.
	callers *redact.Redactor
	// inflight counts the requests that began under this set; Reload
	// waits for them before it stops the mirrors it took out.
	inflight gosync.WaitGroup
}

// mayNotCarry reports whether a caller's text (a pin, a template value)
// holds a credential it may not send to a server: what set.callers finds,
// or a token in a common service's format (redact.TokenShaped).
func (set *serverSet) mayNotCarry(s string) bool {
	return set.callers.HoldsWhole(s) || redact.TokenShaped(s)
}

// callerRedactor returns the redactor for caller text under cfg (see
// serverSet.callers).
func callerRedactor(cfg *config.Config) *redact.Redactor {
	if cfg.Auth.Token == "" {
		return redact.New()
	}
	return redact.New(cfg.Auth.Token)
}

// givenRedactors returns serverSet.given for cfg, whose secrets (and
// those of earlier configurations) are all: each server's text is masked
// for every secret whole, and for the pieces of those it was given (its
// configuration's, and for a stdio server what it inherits of contextd's
// environment).
func givenRedactors(cfg *config.Config, all []string) map[string]*redact.Redactor {
	var inherited []string
	for _, kv := range mcp.InheritedEnv(os.Environ(), all) {
		_, v, _ := strings.Cut(kv, "=")
		inherited = append(inherited, v)
	}
	out := make(map[string]*redact.Redactor, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		given := srv.Given(all)
		if srv.Transport == config.TransportStdio {
			for _, sec := range all {
				if sec != "" && slices.ContainsFunc(inherited, func(v string) bool { return strings.Contains(v, sec) }) {
					given = append(given, sec)
				}
			}
		}
		out[srv.Name] = redact.NewFor(given, all).WithWords(srv.URLWords())
	}
	return out
}

// mirrorRun is one running mirror.
type mirrorRun struct {
	ctx    context.Context // cancelled when the mirror stops (a reload, or Run's end)
	cancel context.CancelFunc
	done   chan struct{}
}

// New opens the index and the tokenizer and prepares one mirror per server.
// Nothing connects until Run.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Config == nil {
		panic("engine: Options.Config is nil")
	}
	if r := cmp.Or(opts.Ranking, DefaultRanking); !r.valid() {
		return nil, fmt.Errorf("engine: ranking %+v: weights must be >= 0 and not both 0", r)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Every server's credentials are masked everywhere: one server's error
	// may quote another's (a shared proxy URL, a copied header).
	secrets := opts.Config.Secrets()
	red := redact.New(secrets...)
	logRed := new(atomic.Pointer[redact.Redactor])
	logRed.Store(red)
	log = slog.New(redact.HandlerFunc(log.Handler(), logRed.Load))
	tok, err := budget.NewTokenizer(opts.Config.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	emb := opts.Embedder
	if emb == nil {
		if emb, err = ConfiguredEmbedder(ctx, opts.Config, log.With("component", "embedder")); err != nil {
			return nil, fmt.Errorf("embedder: %w", err)
		}
	}
	dir := ""
	var unlock func()
	var e *Engine
	var sh *shared
	var onChange func(resource.Key)
	est := budget.NewEstimator()
	if opts.Config.Store != "" {
		// The shared store holds the mirror; the index is its in-memory
		// copy, and data_dir is not used.
		if sh, err = openShared(ctx, opts, emb, est, log, &e); err != nil {
			return nil, err
		}
		onChange = sh.rep.Changed
	} else if !opts.InMemory {
		dir = filepath.Join(opts.Config.DataDir, "index")
		unlock, err = lockDir(opts.Config.DataDir)
		switch {
		case errors.Is(err, errLocked) && opts.SharedDataDir:
			log.Warn("data_dir is in use by another contextd; using an in-memory index for this run", "data_dir", opts.Config.DataDir)
			dir = ""
		case errors.Is(err, errLocked):
			return nil, fmt.Errorf("data_dir %s is in use by another contextd (a daemon?); stop it or set another data_dir", opts.Config.DataDir)
		case err != nil:
			return nil, err
		default:
			// Earlier versions created data_dir with the umask's mode.
			switch before, changed, err := tightenDir(opts.Config.DataDir); {
			case err != nil:
				log.Warn("data_dir is readable by other users and could not be made private", "data_dir", opts.Config.DataDir, "mode", before, "err", err)
			case changed:
				log.Info("data_dir was readable by other users: made it private (0700)", "data_dir", opts.Config.DataDir, "mode_was", before)
			case before&0o077 != 0:
				log.Warn("data_dir is readable by other users and owned by another: the index holds your servers' content; chmod 700 it", "data_dir", opts.Config.DataDir, "mode", before)
			}
		}
	}
	ix, err := index.Open(ctx, index.Options{Dir: dir, Embedder: emb, Logger: log.With("component", "index"), QueryCache: opts.QueryCache, OnChange: onChange})
	if err != nil {
		if unlock != nil {
			unlock()
		}
		if sh != nil {
			sh.store.Close()
		}
		return nil, err
	}
	ix.SetFocus(opts.Focus)
	e = &Engine{served: &mcp.ServedLists{}, log: log, logRed: logRed, ix: ix, tok: tok, candidates: opts.Candidates, est: est, unlock: unlock, shared: sh,
		dial: opts.Dial, adjust: opts.Mirror, observer: opts.Observer, synced: make(chan struct{}),
		retired: map[string]*ctxsync.Mirror{}, runs: map[*ctxsync.Mirror]*mirrorRun{}}
	if unlock != nil {
		e.dataDir = opts.Config.DataDir
	}
	if e.candidates < 0 {
		e.candidates = 0
	}
	e.callerText = new(atomic.Bool)
	e.callerText.Store(!opts.ShowServerText) // see Options.ShowServerText
	e.readTO = cmp.Or(opts.ReadTimeout, DefaultReadTimeout)
	e.reqReadTO = cmp.Or(opts.RequestReadTime, 2*e.readTO)
	e.ranking = cmp.Or(opts.Ranking, DefaultRanking)
	e.slowTO = min(cmp.Or(opts.SlowReadTimeout, DefaultSlowReadTimeout), e.readTO)
	e.slowFor = cmp.Or(opts.SlowFor, DefaultSlowFor)
	e.slowUntil = map[string]time.Time{}
	e.slowStreak = map[string]int{}
	e.probeAt = map[string]time.Time{}
	e.probeCtx, e.stopProbes = context.WithCancel(context.Background())
	e.readTimes = map[string]time.Duration{}
	e.cur = &serverSet{cfg: opts.Config, mirrors: map[string]*ctxsync.Mirror{}, limits: opts.Config.Limits.WithDefaults(), secrets: secrets, red: red, callers: callerRedactor(opts.Config), given: givenRedactors(opts.Config, secrets)}
	for _, srv := range opts.Config.Servers {
		e.cur.mirrors[srv.Name] = e.newMirror(e.cur, srv)
		e.cur.names = append(e.cur.names, srv.Name)
	}
	if sh != nil {
		// Every replica serves from the store's copy, loaded without
		// embedding; servers this one does not configure stay in the
		// store for the replicas that do (queries are scoped to
		// configured servers).
		sh.rep.Attach(ix)
		n, err := sh.rep.Load(ctx)
		if err != nil {
			e.Close()
			return nil, err
		}
		log.Info("loaded the shared mirror", "descriptors", n, "replica", sh.rep.Holder())
	}
	// Descriptors of servers no longer configured are dropped (queries are
	// scoped to configured servers either way).
	if !opts.KeepOtherServers && sh == nil {
		stale := map[string]bool{}
		for _, d := range ix.Descriptors("") {
			if _, ok := e.cur.mirrors[d.Server]; !ok {
				stale[d.Server] = true
			}
		}
		for server := range stale {
			if _, err := ix.Replace(ctx, server, nil); err != nil {
				e.Close()
				return nil, err
			}
		}
	}
	return e, nil
}

// newMirror makes the mirror of srv, one of cfg's servers.
func (e *Engine) newMirror(set *serverSet, srv config.Server) *ctxsync.Mirror {
	cfg := set.cfg
	dial := dialer(srv, cfg.MaxMessageBytes)
	if e.dial != nil {
		dial = e.dial(srv)
	}
	// No stdio server inherits the daemon's token or another server's
	// credentials (a removed server's too) from contextd's environment.
	mo := ctxsync.Options{Server: srv.Name, Served: e.served, Dial: dial, Index: e.ix, Logger: e.log.With("component", "sync"), PollInterval: cfg.PollInterval, Redact: set.given[srv.Name],
		Observer: mirrorObserver{e}, HiddenEnv: e.hiddenEnv, ContentBytes: cfg.ContentBytes, ContentPassTime: cfg.ContentPassTime}
	mo.CallerText = e.callerText
	if srv.NoContentIndex {
		mo.ContentMaxResources = -1
	}
	if e.shared != nil {
		e.shared.mirrorOptions(&mo)
	}
	if e.adjust != nil {
		e.adjust(&mo)
	}
	return ctxsync.New(mo)
}

// hiddenEnv returns what no stdio server may inherit, at its connect: the
// credentials of the configuration installed then and of every one before
// (see serverSet.secrets), so that a server a reload kept does not
// inherit a credential the reload added when it reconnects.
func (e *Engine) hiddenEnv() []string {
	e.setMu.RLock()
	defer e.setMu.RUnlock()
	if e.cur == nil {
		return nil
	}
	return e.cur.secrets
}

func dialer(srv config.Server, maxMessage int) ctxsync.DialFunc {
	return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.MaxMessageBytes = maxMessage
		return mcp.Connect(ctx, srv, o)
	}
}

// Run mirrors every server until ctx ends, including those Reload adds
// meanwhile. A server that fails does not stop the others. Run returns
// once every mirror has stopped; call it once.
func (e *Engine) Run(ctx context.Context) error {
	e.runMu.Lock()
	if e.spawn != nil {
		e.runMu.Unlock()
		panic("engine: Run called twice")
	}
	e.spawn = func(m *ctxsync.Mirror) *mirrorRun {
		mctx, cancel := context.WithCancel(ctx)
		r := &mirrorRun{ctx: mctx, cancel: cancel, done: make(chan struct{})}
		e.runWG.Go(func() {
			defer close(r.done)
			_ = m.Run(mctx)
		})
		return r
	}
	for _, m := range e.set().mirrors {
		e.runs[m] = e.spawn(m)
	}
	if e.shared != nil {
		e.runWG.Go(func() {
			if err := e.shared.rep.Run(ctx); err != nil && ctx.Err() == nil {
				e.log.Error("the shared store's replica stopped", "err", err)
			}
		})
	}
	e.runMu.Unlock()
	<-ctx.Done()
	e.runMu.Lock()
	e.spawn = func(*ctxsync.Mirror) *mirrorRun { return nil } // stopping: start nothing more
	e.runMu.Unlock()
	e.runWG.Wait()
	return nil
}

// set returns the server set requests are served from now.
func (e *Engine) set() *serverSet {
	e.setMu.RLock()
	defer e.setMu.RUnlock()
	return e.cur
}

// enter counts a request against the current server set, so that Reload
// waits for it before stopping the mirrors it replaces; call the function
// it returns when the request ends.
func (e *Engine) enter() (leave func()) {
	e.setMu.RLock()
	defer e.setMu.RUnlock()
	e.cur.inflight.Add(1)
	return e.cur.inflight.Done
}

// mirror returns the mirror of a configured server, or of one a reload took
// out while a request that began before it still runs.
func (e *Engine) mirror(name string) (*ctxsync.Mirror, bool) {
	e.setMu.RLock()
	defer e.setMu.RUnlock()
	if m, ok := e.cur.mirrors[name]; ok {
		return m, true
	}
	m, ok := e.retired[name]
	return m, ok
}

// WaitReady blocks until every mirror has finished its first connect attempt
// and, when it synced, its first content pass
// (synced or failed), or ctx ends.
func (e *Engine) WaitReady(ctx context.Context) error {
	for _, m := range e.set().mirrors {
		select {
		case <-m.Ready():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// WaitAnswerable blocks until every mirror can answer the focus query
// (Options.Focus) well: the text of what the query needs is indexed and
// the rest of its first list is at least searchable by words
// (ctxsync.Mirror.Answerable), or its first attempt failed; or until ctx
// ends. Without a focus query it is WaitReady.
func (e *Engine) WaitAnswerable(ctx context.Context) error {
	for _, m := range e.set().mirrors {
		select {
		case <-m.Answerable():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Waiting returns the configured servers whose mirror is not Ready yet
// (see WaitReady), in name order.
func (e *Engine) Waiting() []string {
	var out []string
	s := e.set()
	for _, name := range s.names {
		select {
		case <-s.mirrors[name].Ready():
		default:
			out = append(out, name)
		}
	}
	return out
}

// Synced returns a channel closed once any server has completed a sync:
// from then on the engine has something to answer from. It stays closed.
func (e *Engine) Synced() <-chan struct{} { return e.synced }

// DataDir returns the data directory whose lock the engine holds, where
// what the daemon keeps between runs beside the index may go (see
// mcpserver.Options.StateFile); "" when the index is in memory, in the
// shared store, or data_dir is held by another contextd.
func (e *Engine) DataDir() string { return e.dataDir }

// Close releases the index and data_dir. Call it after Run has returned.
func (e *Engine) Close() error {
	// A probe's read outlives the request that started it; not the
	// engine.
	e.stopProbes()
	e.probes.Wait()
	err := e.ix.Close()
	if e.shared != nil {
		e.shared.store.Close()
	}
	if e.unlock != nil {
		e.unlock()
		e.unlock = nil
	}
	return err
}

// Tokenizer returns the encoding budgets are counted in.
func (e *Engine) Tokenizer() string { return e.tok.Encoding() }

// ServerStatus is a mirror's status plus its configured transport.
type ServerStatus struct {
	ctxsync.Status
	Transport string
	// MCPListing says why contextd's MCP server lists less of the server
	// than is mirrored (mcp.ServedLists.Listing), or is empty.
	MCPListing string
}

// Servers reports every configured server, in name order.
func (e *Engine) Servers() []ServerStatus {
	s := e.set()
	out := make([]ServerStatus, 0, len(s.names))
	for _, srv := range s.cfg.Servers {
		out = append(out, ServerStatus{Status: s.mirrors[srv.Name].Status(), Transport: srv.Transport, MCPListing: e.served.Listing(srv.Name)})
	}
	return out
}

// ServerNames returns the configured servers' names, in the
// configuration's order: what Servers returns without each one's status,
// which counts the server's entries over the whole index.
func (e *Engine) ServerNames() []string {
	return slices.Clone(e.set().names)
}

// ListVersions returns each configured server's mirror ListVersion, by
// server name: cheap enough to poll (see ctxsync.Mirror.ListVersion).
func (e *Engine) ListVersions() map[string]ctxsync.ListVersion {
	s := e.set()
	out := make(map[string]ctxsync.ListVersion, len(s.names))
	for _, srv := range s.cfg.Servers {
		out[srv.Name] = s.mirrors[srv.Name].ListVersion()
	}
	return out
}

// checkServers validates a server filter.
func (e *Engine) checkServers(names []string) error {
	s := e.set()
	for _, n := range names {
		if _, ok := s.mirrors[n]; !ok {
			known := strings.Join(s.names, ", ")
			if known == "" {
				known = "none configured"
			}
			return fmt.Errorf("%w: unknown server %q (configured: %s)", ErrInvalidArgument, n, known)
		}
	}
	return nil
}

// MaxQueryBytes is the longest query (task) Search and Assemble take, in
// bytes: 64 KiB, about 16,000 tokens of prose. A task describes what the
// agent needs; a longer one is refused (ErrInvalidArgument) rather than
// cut, since its end may be what matters. Each request analyses its query
// a bounded number of times, so this bounds what one request's query
// costs.
const MaxQueryBytes = 64 << 10

func checkQuery(q string) error {
	if len(q) > MaxQueryBytes {
		return fmt.Errorf("%w: query is %d bytes, over the %d a query may have (describe the task; put documents in resources)", ErrInvalidArgument, len(q), MaxQueryBytes)
	}
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("%w: query is empty", ErrInvalidArgument)
	}
	return nil
}

// scope returns the configured servers a request covers, sorted.
func (e *Engine) scope(filter []string) []string {
	if len(filter) == 0 {
		return e.set().names
	}
	s := slices.Clone(filter)
	slices.Sort(s)
	return slices.Compact(s)
}
