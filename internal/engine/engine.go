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
	"path/filepath"
	"slices"
	"strings"
	"time"

	gosync "sync"

	"golang.org/x/sync/errgroup"

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
	// Embedder embeds descriptors and queries. Nil means the built-in GloVe embedder.
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
	// Ranking is how Search and Assemble rank descriptors. The zero value
	// means DefaultRanking.
	Ranking Ranking
	// ReadTimeout bounds one resources/read; a read that takes longer is
	// omitted as read_failed and selection goes on. Zero means DefaultReadTimeout.
	ReadTimeout time.Duration
	// SlowReadTimeout bounds reads from a server that let a read time out
	// within the last SlowFor, so one slow server delays later answers by
	// at most this much. A read that succeeds ends the spell. Zero means
	// DefaultSlowReadTimeout and DefaultSlowFor.
	SlowReadTimeout, SlowFor time.Duration
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

// CandidatesFor returns how many ranked descriptors Assemble considers for
// a token budget.
func CandidatesFor(tokenBudget int) int {
	return min(max(tokenBudget/tokensPerCandidate, DefaultCandidates), MaxCandidates)
}

// An Engine answers Assemble, Search and ListServers.
type Engine struct {
	cfg        *config.Config
	log        *slog.Logger
	ix         *index.Index
	tok        *budget.Tokenizer
	mirrors    map[string]*ctxsync.Mirror
	names      []string // configured order (sorted)
	candidates int
	est        *budget.Estimator // learns each server's bytes per token across requests
	ranking    Ranking
	readTO     time.Duration
	slowTO     time.Duration
	slowFor    time.Duration
	slowMu     gosync.Mutex
	slowUntil  map[string]time.Time // server → end of its slow spell
	unlock     func()               // releases data_dir; nil for an in-memory index
	limits     config.Limits        // with defaults
	tooLarge   tooLargeReads
	shared     *shared // nil for an embedded index
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
	var secrets []string
	for _, srv := range opts.Config.Servers {
		secrets = append(secrets, srv.Secrets()...)
	}
	secrets = append(secrets, opts.Config.StoreSecrets()...)
	red := redact.New(secrets...)
	log = slog.New(redact.Handler(log.Handler(), red))
	tok, err := budget.NewTokenizer(opts.Config.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	emb := opts.Embedder
	if emb == nil {
		if emb, err = NewEmbedder(opts.Config.Embedder); err != nil {
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
	e = &Engine{cfg: opts.Config, log: log, ix: ix, tok: tok, mirrors: map[string]*ctxsync.Mirror{}, candidates: opts.Candidates, est: est, unlock: unlock, shared: sh}
	if e.candidates < 0 {
		e.candidates = 0
	}
	e.readTO = cmp.Or(opts.ReadTimeout, DefaultReadTimeout)
	e.ranking = cmp.Or(opts.Ranking, DefaultRanking)
	e.slowTO = min(cmp.Or(opts.SlowReadTimeout, DefaultSlowReadTimeout), e.readTO)
	e.slowFor = cmp.Or(opts.SlowFor, DefaultSlowFor)
	e.slowUntil = map[string]time.Time{}
	e.limits = opts.Config.Limits.WithDefaults()
	for _, srv := range opts.Config.Servers {
		dial := dialer(srv, opts.Config.MaxMessageBytes)
		if opts.Dial != nil {
			dial = opts.Dial(srv)
		}
		mo := ctxsync.Options{Server: srv.Name, Dial: dial, Index: ix, Logger: log.With("component", "sync"), PollInterval: opts.Config.PollInterval, Redact: red}
		if srv.NoContentIndex {
			mo.ContentMaxResources = -1
		}
		if sh != nil {
			sh.mirrorOptions(&mo)
		}
		if opts.Mirror != nil {
			opts.Mirror(&mo)
		}
		e.mirrors[srv.Name] = ctxsync.New(mo)
		e.names = append(e.names, srv.Name)
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
			if _, ok := e.mirrors[d.Server]; !ok {
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

func dialer(srv config.Server, maxMessage int) ctxsync.DialFunc {
	return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		o.MaxMessageBytes = maxMessage
		return mcp.Connect(ctx, srv, o)
	}
}

// Run mirrors every server until ctx ends. A server that fails does not stop
// the others.
func (e *Engine) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range e.names {
		m := e.mirrors[name]
		g.Go(func() error { return m.Run(ctx) })
	}
	if e.shared != nil {
		g.Go(func() error { return e.shared.rep.Run(ctx) })
	}
	return g.Wait()
}

// WaitReady blocks until every mirror has finished its first connect attempt
// and, when it synced, its first content pass
// (synced or failed), or ctx ends.
func (e *Engine) WaitReady(ctx context.Context) error {
	for _, name := range e.names {
		select {
		case <-e.mirrors[name].Ready():
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
	for _, name := range e.names {
		select {
		case <-e.mirrors[name].Ready():
		default:
			out = append(out, name)
		}
	}
	return out
}

// Close releases the index and data_dir. Call it after Run has returned.
func (e *Engine) Close() error {
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
}

// Servers reports every configured server, in name order.
func (e *Engine) Servers() []ServerStatus {
	out := make([]ServerStatus, 0, len(e.names))
	for _, srv := range e.cfg.Servers {
		out = append(out, ServerStatus{Status: e.mirrors[srv.Name].Status(), Transport: srv.Transport})
	}
	return out
}

// checkServers validates a server filter.
func (e *Engine) checkServers(names []string) error {
	for _, n := range names {
		if _, ok := e.mirrors[n]; !ok {
			known := strings.Join(e.names, ", ")
			if known == "" {
				known = "none configured"
			}
			return fmt.Errorf("%w: unknown server %q (configured: %s)", ErrInvalidArgument, n, known)
		}
	}
	return nil
}

func checkQuery(q string) error {
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("%w: query is empty", ErrInvalidArgument)
	}
	return nil
}

// scope returns the configured servers a request covers, sorted.
func (e *Engine) scope(filter []string) []string {
	if len(filter) == 0 {
		return e.names
	}
	s := slices.Clone(filter)
	slices.Sort(s)
	return slices.Compact(s)
}
