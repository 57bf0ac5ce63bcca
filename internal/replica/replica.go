// Package replica runs one contextd replica against a shared mirror in
// PostgreSQL (internal/store/pgstore): it keeps one owner per upstream
// server through leases, publishes what the owned servers' mirrors write to
// the local index, and installs into the local index what the other
// replicas publish, following the store's change log.
//
// # Ownership
//
// Every RenewEvery (default LeaseTTL/3) a replica renews the leases it
// holds and tries to take those of the configured servers it does not
// hold, up to its fair share (the servers divided by the live replicas,
// rounded up; a replica is live while its own heartbeat lease is). A lease
// not renewed for LeaseTTL (default 15s) is free, so a replica that dies or
// loses PostgreSQL loses its servers within LeaseTTL, and another takes each
// within LeaseTTL + RenewEvery (20s by default) of the owner's last renewal,
// plus the new owner's first sync. Writes carry the lease's fencing token:
// a stale owner's late writes are rejected (pgstore.ErrFenced), and that
// replica reloads the server from the store and stops mirroring it.
//
// # Faults
//
// While PostgreSQL is unreachable, every replica answers from its index and
// reports the store stale (Status); owners keep mirroring and keep the keys
// they changed, and write their current state when the store returns
// (unless another replica took the server over meanwhile, which then lists
// it anew). A key is written as its latest state, so nothing is written
// twice in a way that matters, and a change log entry names a key, not a
// diff, so replaying one twice is harmless.
package replica

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/store/pgstore"
)

// Defaults of Options.
const (
	DefaultLeaseTTL  = 15 * time.Second
	DefaultPollEvery = time.Second
	// writeChunk is how many records one transaction writes.
	writeChunk = 500
	// followChunk is how many change log entries one read takes.
	followChunk = 2000
)

// Options configures a Replica.
type Options struct {
	// Store is the shared mirror. Required.
	Store *pgstore.Store
	// Embedder names the embedder (pgstore.EmbedderID): only records made
	// with it are loaded. Required.
	Embedder string
	// Servers are the configured upstream servers this replica may own.
	Servers []string
	// Holder names this replica in leases; empty means host-pid-random.
	Holder string
	// LeaseTTL is how long a lease lives without renewal. Zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// RenewEvery is how often leases are renewed and free ones taken. Zero
	// means LeaseTTL/3.
	RenewEvery time.Duration
	// PollEvery is how often the change log is read without a
	// notification (notifications are only a hint). Zero means
	// DefaultPollEvery.
	PollEvery time.Duration
	// OnOwner is called (from the replica's goroutines) when this replica
	// gains or loses a server, after the local index holds the store's
	// state of it.
	OnOwner func(server string, owner bool)
	// OnShared is called with a server's templates and last sync as the
	// owner stored them, for servers this replica does not own.
	OnShared func(server string, templates []resource.Template, lastSync time.Time)
	// Logger; nil discards.
	Logger *slog.Logger
	// Estimator, when set, shares learned token ratios: every ShareEvery
	// the replica stores what it learned and gives it what the others
	// learned (within DefaultEvidenceAge).
	Estimator Estimator
	// ShareEvery is how often token ratios are shared. Zero means
	// DefaultShareEvery.
	ShareEvery time.Duration
	// LeaveLeases makes Run, on its way out, neither write what is pending
	// nor release its leases, which then expire: what a crash does (tests).
	LeaveLeases bool
}

// An Estimator learns bytes per token (budget.Estimator).
type Estimator interface {
	Learned() []budget.Evidence
	SetShared([]budget.Evidence)
}

// LogRetention is how long change log entries are kept: a replica away
// longer reloads.
const LogRetention = 24 * time.Hour

// pruneRounds is how many lease rounds pass between prunings of the change
// log (every replica prunes; deleting what another deleted costs little).
const pruneRounds = 120

// Token ratio sharing defaults.
const (
	DefaultShareEvery  = 30 * time.Second
	DefaultEvidenceAge = 7 * 24 * time.Hour
)

// A Replica coordinates one process's index with the shared mirror.
type Replica struct {
	opts Options
	log  *slog.Logger
	ix   *index.Index
	kick chan struct{} // capacity 1: something to publish
	wake chan struct{} // capacity 1: the change log may have grown

	// followMu serialises catching up with the change log.
	followMu sync.Mutex

	mu        sync.Mutex
	servers   []string         // Options.Servers, then SetServers'
	owned     map[string]int64 // server → lease token: leases held (renewed)
	active    map[string]bool  // servers mirrored: held and caught up
	dirty     map[resource.Key]bool
	dirtySrv  map[string]serverState
	seq       int64 // change log position applied
	lastOK    time.Time
	lastErr   string
	published int64 // records written
	applied   int64 // records installed from the store
	writing   int   // keys taken from dirty by the flush under way
}

type serverState struct {
	templates []resource.Template
	at        time.Time
}

// New returns a replica; call Attach, then Load, then Run.
func New(opts Options) *Replica {
	if opts.Store == nil || opts.Embedder == "" {
		panic("replica: Options.Store and Embedder are required")
	}
	opts.LeaseTTL = cmp.Or(opts.LeaseTTL, DefaultLeaseTTL)
	opts.RenewEvery = cmp.Or(opts.RenewEvery, opts.LeaseTTL/3)
	opts.PollEvery = cmp.Or(opts.PollEvery, DefaultPollEvery)
	opts.ShareEvery = cmp.Or(opts.ShareEvery, DefaultShareEvery)
	if opts.Holder == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		opts.Holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Replica{opts: opts, log: log.With("replica", opts.Holder), kick: make(chan struct{}, 1), wake: make(chan struct{}, 1),
		servers: slices.Clone(opts.Servers), owned: map[string]int64{}, active: map[string]bool{}, dirty: map[resource.Key]bool{}, dirtySrv: map[string]serverState{}}
}

// Attach gives the replica its index. Call it once, before Load.
func (r *Replica) Attach(ix *index.Index) { r.ix = ix }

// Holder returns the name this replica holds leases under.
func (r *Replica) Holder() string { return r.opts.Holder }

// Owns reports whether this replica mirrors server now.
func (r *Replica) Owns(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active[server]
}

// SetServers replaces the configured servers this replica may own (a
// reload): at its next lease round it hands over those it owns and no
// longer configures, and may take new ones up to its share.
func (r *Replica) SetServers(servers []string) {
	r.mu.Lock()
	r.servers = slices.Clone(servers)
	r.mu.Unlock()
}

// Owned returns the servers this replica mirrors, sorted.
func (r *Replica) Owned() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.active))
}

// Changed is the index's OnChange: a key of an owned server is published.
// It never blocks.
func (r *Replica) Changed(k resource.Key) {
	r.mu.Lock()
	owned := r.active[k.Server]
	if owned {
		r.dirty[k] = true
	}
	r.mu.Unlock()
	if owned {
		r.poke(r.kick)
	}
}

// Synced is the mirror's OnSync: an owned server's templates and sync time
// are published. It never blocks.
func (r *Replica) Synced(server string, templates []resource.Template, at time.Time) {
	r.mu.Lock()
	owned := r.active[server]
	if owned {
		if templates == nil {
			templates = []resource.Template{}
		}
		r.dirtySrv[server] = serverState{templates: templates, at: at}
	}
	r.mu.Unlock()
	if owned {
		r.poke(r.kick)
	}
}

func (r *Replica) poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Status is a replica's view of the shared mirror.
type Status struct {
	Holder string
	Owned  []string
	// Stale is true when the store has not answered for 3·PollEvery or
	// longer: answers come from what the index held then.
	Stale     bool
	LastOK    time.Time // the store's last answer
	LastError string
	Seq       int64 // change log position applied
	Pending   int   // changed keys of owned servers not written yet (waiting or being written)
	Published int64 // records written since start
	Applied   int64 // records installed from the store since start
}

// Status returns a snapshot.
func (r *Replica) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Status{Holder: r.opts.Holder, LastOK: r.lastOK, LastError: r.lastErr, Seq: r.seq,
		Pending: len(r.dirty) + r.writing, Published: r.published, Applied: r.applied}
	st.Owned = slices.Sorted(maps.Keys(r.active))
	st.Stale = time.Since(r.lastOK) >= 3*r.opts.PollEvery
	return st
}

func (r *Replica) ok() {
	r.mu.Lock()
	r.lastOK, r.lastErr = time.Now(), ""
	r.mu.Unlock()
}

func (r *Replica) fail(what string, err error) {
	r.mu.Lock()
	again := r.lastErr != ""
	// Callers read lastErr: the kind of failure only (pgstore.Failure);
	// the log has the database's words.
	r.lastErr = what + ": " + pgstore.Failure(err)
	r.mu.Unlock()
	if again {
		r.log.Debug("shared store", "op", what, "err", err)
	} else {
		r.log.Warn("shared store unreachable; answering from memory", "op", what, "err", err)
	}
}

// failed reports whether err is not nil, recording it with fail unless
// ctx ended (an error then is the shutdown's, not the store's).
func (r *Replica) failed(ctx context.Context, what string, err error) bool {
	if err == nil {
		return false
	}
	if ctx.Err() == nil {
		r.fail(what, err)
	}
	return true
}

// Load fills the index from the store, streaming, without embedding, and
// hands each server's templates to OnShared. It returns how many records
// it installed.
func (r *Replica) Load(ctx context.Context) (int, error) {
	// Decoding rows and indexing them overlap: the index takes batches
	// from a goroutine of its own while the next ones stream in.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []index.Record, 4)
	n := 0
	var applyErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for recs := range batches {
			if applyErr != nil {
				continue
			}
			got, err := r.ix.Apply(ctx, recs...)
			n += got
			if err != nil {
				applyErr = err
				cancel()
			}
		}
	})
	seq, err := r.opts.Store.Load(ctx, r.opts.Embedder, "", 1000, func(recs []index.Record) error {
		select {
		case batches <- slices.Clone(recs):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(batches)
	wg.Wait()
	if applyErr != nil {
		err = applyErr
	}
	if err != nil {
		return n, fmt.Errorf("replica: load the shared mirror: %w", err)
	}
	if err := r.shareServers(ctx, nil); err != nil {
		return n, err
	}
	r.mu.Lock()
	r.seq, r.applied = seq, r.applied+int64(n)
	r.lastOK = time.Now()
	r.mu.Unlock()
	return n, nil
}

// shareServers hands the stored templates of the servers in only (all when
// nil) that this replica does not own to OnShared.
func (r *Replica) shareServers(ctx context.Context, only map[string]bool) error {
	rows, err := r.opts.Store.Servers(ctx)
	if err != nil {
		return fmt.Errorf("replica: load servers: %w", err)
	}
	for _, row := range rows {
		if (only == nil || only[row.Server]) && !r.Owns(row.Server) && r.opts.OnShared != nil {
			r.opts.OnShared(row.Server, row.Templates, row.LastSync)
		}
	}
	return nil
}

// Run keeps leases, publishes and follows until ctx ends; then it writes
// what is pending (within a few seconds) and releases its leases, so
// another replica takes over at once. It returns nil.
func (r *Replica) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.opts.Store.Listen(ctx, func() { r.poke(r.wake) }) })
	wg.Go(func() { r.follow(ctx) })
	wg.Go(func() { r.renewals(ctx) })
	wg.Go(func() { r.leases(ctx) })
	if r.opts.Estimator != nil {
		wg.Go(func() { r.shareRatios(ctx) })
	}
	r.publish(ctx)
	wg.Wait()
	if r.opts.LeaveLeases {
		return nil
	}
	// Shutting down: write what is pending, then hand the servers over.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.flush(fctx)
	if r.opts.Estimator != nil {
		_ = r.opts.Store.PutEvidence(fctx, r.opts.Holder, r.opts.Estimator.Learned())
	}
	r.mu.Lock()
	owned := r.owned
	r.owned, r.active = map[string]int64{}, map[string]bool{}
	r.mu.Unlock()
	for s, tok := range owned {
		if err := r.opts.Store.Release(fctx, s, r.opts.Holder, tok); err != nil {
			r.log.Warn("releasing a lease failed; another replica takes over when it expires", "server", s, "err", err)
		}
	}
	if err := r.opts.Store.Leave(fctx, r.opts.Holder); err != nil {
		r.log.Debug("removing the heartbeat failed", "err", err)
	}
	return nil
}

// renewals renews this replica's heartbeat and leases every RenewEvery,
// in one statement each, apart from taking leases (whose catching up may
// take long), so a busy replica does not let its leases lapse.
func (r *Replica) renewals(ctx context.Context) {
	var bg sync.WaitGroup
	defer bg.Wait()
	t := time.NewTicker(r.opts.RenewEvery)
	defer t.Stop()
	for {
		r.renewRound(ctx, &bg)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Replica) renewRound(ctx context.Context, bg *sync.WaitGroup) {
	st := r.opts.Store
	_, err := st.Heartbeat(ctx, r.opts.Holder, r.opts.LeaseTTL)
	if r.failed(ctx, "heartbeat", err) {
		return
	}
	r.mu.Lock()
	owned := maps.Clone(r.owned)
	r.mu.Unlock()
	if len(owned) > 0 {
		renewed, err := st.RenewAll(ctx, r.opts.Holder, owned, r.opts.LeaseTTL)
		if r.failed(ctx, "renew", err) {
			return // keep mirroring; written when the store is back
		}
		for s := range owned {
			if !renewed[s] {
				bg.Go(func() { r.lose(ctx, s, "lease taken by another replica") })
			}
		}
	}
	r.ok()
}

// leases takes and hands over leases every RenewEvery, starting one
// RenewEvery after the first heartbeat, so replicas started together see
// each other before they take their shares.
func (r *Replica) leases(ctx context.Context) {
	t := time.NewTicker(r.opts.RenewEvery)
	defer t.Stop()
	for round := 0; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.leaseRound(ctx)
		if round%pruneRounds == pruneRounds-1 {
			if n, err := r.opts.Store.Prune(ctx, LogRetention); err != nil && ctx.Err() == nil {
				r.fail("prune the change log", err)
			} else if n > 0 {
				r.log.Debug("pruned the change log", "entries", n)
			}
		}
	}
}

func (r *Replica) leaseRound(ctx context.Context) {
	st := r.opts.Store
	ttl := r.opts.LeaseTTL
	// A fresh count: the share must see replicas that started since.
	live, err := st.Heartbeat(ctx, r.opts.Holder, ttl)
	if r.failed(ctx, "heartbeat", err) {
		return
	}
	r.mu.Lock()
	owned := maps.Clone(r.owned)
	r.mu.Unlock()
	ls, err := st.Leases(ctx)
	if r.failed(ctx, "leases", err) {
		return
	}
	held := map[string]bool{}
	for _, l := range ls {
		if l.Live {
			held[l.Server] = true
		}
	}
	r.mu.Lock()
	servers := slices.Clone(r.servers)
	r.mu.Unlock()
	for s, tok := range owned {
		if !slices.Contains(servers, s) {
			// No longer configured here (a reload): another replica that
			// configures it takes it.
			r.handOver(ctx, s, tok)
			delete(owned, s)
		}
	}
	share := (len(servers) + max(live, 1) - 1) / max(live, 1)
	if len(owned) > share {
		// More replicas than when these were taken: hand the excess
		// over (released, so another takes it at its next round).
		mine := slices.Sorted(maps.Keys(owned))
		for _, s := range mine[share:] {
			r.handOver(ctx, s, owned[s])
			delete(owned, s)
		}
	}
	for _, s := range servers {
		if len(owned) >= share {
			break
		}
		if _, mine := owned[s]; mine || held[s] {
			continue
		}
		tok, ok, err := st.Acquire(ctx, s, r.opts.Holder, ttl)
		if r.failed(ctx, "acquire", err) {
			return
		}
		if ok {
			owned[s] = tok
			r.gain(ctx, s, tok)
		}
	}
}

// gain makes this replica the owner of server: the index first catches up
// with the store, so the first sync diffs against the latest shared state.
func (r *Replica) gain(ctx context.Context, server string, tok int64) {
	r.mu.Lock()
	r.owned[server] = tok // renewed from now on, while the index catches up
	r.mu.Unlock()
	r.catchUp(ctx)
	r.mu.Lock()
	_, still := r.owned[server]
	r.active[server] = still
	r.mu.Unlock()
	if !still {
		return
	}
	r.log.Info("mirroring server (lease taken)", "server", server, "token", tok)
	if r.opts.OnOwner != nil {
		r.opts.OnOwner(server, true)
	}
}

// lose stops mirroring server: what it had not written is dropped (the
// new owner lists the server anew), and the index reloads it from the
// store.
func (r *Replica) lose(ctx context.Context, server, why string) {
	r.mu.Lock()
	_, had := r.owned[server]
	delete(r.owned, server)
	delete(r.active, server)
	for k := range r.dirty {
		if k.Server == server {
			delete(r.dirty, k)
		}
	}
	delete(r.dirtySrv, server)
	r.mu.Unlock()
	if !had {
		return
	}
	r.log.Warn("no longer mirroring server", "server", server, "why", why)
	if r.opts.OnOwner != nil {
		r.opts.OnOwner(server, false)
	}
	if err := r.reload(ctx, server); err != nil && ctx.Err() == nil {
		r.fail("reload "+server, err)
	}
}

// handOver stops mirroring server, writes what it had not written yet
// (so the next owner embeds none of it again), releases the lease, and
// aligns the index with the store.
func (r *Replica) handOver(ctx context.Context, server string, tok int64) {
	r.mu.Lock()
	delete(r.owned, server)
	delete(r.active, server)
	var keys []resource.Key
	for k := range r.dirty {
		if k.Server == server {
			keys = append(keys, k)
			delete(r.dirty, k)
		}
	}
	st := r.dirtySrv[server]
	delete(r.dirtySrv, server)
	r.mu.Unlock()
	r.log.Info("handing server over: more replicas share the servers", "server", server)
	if r.opts.OnOwner != nil {
		r.opts.OnOwner(server, false)
	}
	if err := r.write(ctx, server, tok, keys, st); err != nil && ctx.Err() == nil {
		r.fail("write before handing over", err)
	}
	if err := r.opts.Store.Release(ctx, server, r.opts.Holder, tok); err != nil && ctx.Err() == nil {
		r.fail("release", err)
	}
	if err := r.reload(ctx, server); err != nil && ctx.Err() == nil {
		r.fail("reload "+server, err)
	}
}

// reload makes the index's copy of server (every server when "") exactly
// the store's, for the servers this replica does not own.
func (r *Replica) reload(ctx context.Context, server string) error {
	seen := map[resource.Key]bool{}
	n := 0
	seq, err := r.opts.Store.Load(ctx, r.opts.Embedder, server, 1000, func(recs []index.Record) error {
		recs = slices.DeleteFunc(recs, func(rec index.Record) bool {
			seen[rec.Desc.Key()] = true
			return r.Owns(rec.Desc.Server)
		})
		got, err := r.ix.Apply(ctx, recs...)
		n += got
		return err
	})
	if err != nil {
		return err
	}
	var gone []resource.Key
	for _, d := range r.ix.Descriptors(server) {
		if k := d.Key(); !seen[k] && !r.Owns(k.Server) {
			gone = append(gone, k)
		}
	}
	if err := r.ix.Delete(ctx, gone...); err != nil {
		return err
	}
	var only map[string]bool
	if server != "" {
		only = map[string]bool{server: true}
	}
	if err := r.shareServers(ctx, only); err != nil {
		return err
	}
	r.mu.Lock()
	if server == "" {
		r.seq = seq
	}
	r.applied += int64(n)
	r.mu.Unlock()
	return nil
}

// publish writes the changed state of owned servers until ctx ends.
func (r *Replica) publish(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-retry.C:
		}
		// A moment for the rest of a burst of writes to arrive.
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
		if !r.flush(ctx) {
			retry.Reset(r.opts.PollEvery)
		}
	}
}

// flush writes what is pending and reports whether it all went.
func (r *Replica) flush(ctx context.Context) bool {
	r.mu.Lock()
	keys := r.dirty
	srvs := r.dirtySrv
	r.dirty, r.dirtySrv = map[resource.Key]bool{}, map[string]serverState{}
	r.writing = len(keys)
	defer func() {
		r.mu.Lock()
		r.writing = 0
		r.mu.Unlock()
	}()
	tokens := make(map[string]int64, len(r.owned))
	for s, t := range r.owned {
		tokens[s] = t
	}
	r.mu.Unlock()
	byServer := map[string][]resource.Key{}
	for k := range keys {
		byServer[k.Server] = append(byServer[k.Server], k)
	}
	for s := range srvs {
		if _, ok := byServer[s]; !ok {
			byServer[s] = nil
		}
	}
	failed := false
	for server, ks := range byServer {
		tok, owned := tokens[server]
		if !owned {
			continue // lost meanwhile: the new owner writes it
		}
		slices.SortFunc(ks, func(a, b resource.Key) int { return cmp.Compare(a.URI, b.URI) })
		err := r.write(ctx, server, tok, ks, srvs[server])
		switch {
		case errors.Is(err, pgstore.ErrFenced):
			r.lose(ctx, server, "a write was fenced: another replica took the lease")
		case err != nil:
			failed = true
			if ctx.Err() == nil {
				r.fail("write", err)
			}
			// Kept for the retry, unless a newer change came meanwhile
			// (the same key: Export gives the latest state either way).
			r.mu.Lock()
			if _, still := r.owned[server]; still {
				for _, k := range ks {
					r.dirty[k] = true
				}
				if st, ok := srvs[server]; ok {
					if _, newer := r.dirtySrv[server]; !newer {
						r.dirtySrv[server] = st
					}
				}
			}
			r.mu.Unlock()
		default:
			r.ok()
		}
	}
	return !failed
}

// write writes keys of server (and its templates when st is set) in
// chunks, each fenced by tok.
func (r *Replica) write(ctx context.Context, server string, tok int64, keys []resource.Key, st serverState) error {
	for first := true; first || len(keys) > 0; first = false {
		chunk := keys[:min(writeChunk, len(keys))]
		keys = keys[len(chunk):]
		w := pgstore.Write{Server: server, Holder: r.opts.Holder, Token: tok, Embedder: r.opts.Embedder}
		for _, k := range chunk {
			if rec, ok := r.ix.Export(ctx, k); ok {
				w.Put = append(w.Put, rec)
			} else {
				w.Deleted = append(w.Deleted, k.URI)
			}
		}
		if len(keys) == 0 && st.templates != nil {
			w.Templates, w.LastSync = st.templates, st.at
		}
		if err := r.opts.Store.Apply(ctx, w); err != nil {
			if !errors.Is(err, pgstore.ErrFenced) {
				// What this chunk did not write is retried with the rest.
				r.mu.Lock()
				for _, k := range keys {
					r.dirty[k] = true
				}
				r.mu.Unlock()
			}
			return err
		}
		r.mu.Lock()
		r.published += int64(len(chunk))
		r.mu.Unlock()
	}
	return nil
}

// follow installs what other replicas publish: after each wake-up and at
// least every PollEvery.
func (r *Replica) follow(ctx context.Context) {
	t := time.NewTicker(r.opts.PollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-t.C:
		}
		r.catchUp(ctx)
	}
}

// catchUp reads the change log from where the index is and installs the
// changed keys of servers this replica does not own.
func (r *Replica) catchUp(ctx context.Context) {
	r.followMu.Lock()
	defer r.followMu.Unlock()
	for ctx.Err() == nil {
		r.mu.Lock()
		after := r.seq
		r.mu.Unlock()
		ch, err := r.opts.Store.Changes(ctx, after, followChunk)
		if errors.Is(err, pgstore.ErrBehind) {
			r.log.Warn("change log pruned past this replica's position; reloading")
			if err := r.reload(ctx, ""); err != nil && ctx.Err() == nil {
				r.fail("reload", err)
			}
			continue
		}
		if r.failed(ctx, "follow", err) {
			return
		}
		r.ok()
		if len(ch) == 0 {
			return
		}
		if err := r.applyChanges(ctx, ch); err != nil {
			if ctx.Err() == nil {
				r.fail("follow", err)
			}
			return
		}
		r.mu.Lock()
		r.seq = ch[len(ch)-1].Seq
		r.mu.Unlock()
		if len(ch) < followChunk {
			return
		}
	}
}

func (r *Replica) applyChanges(ctx context.Context, ch []pgstore.Change) error {
	var keys []resource.Key
	seen := map[resource.Key]bool{}
	servers := map[string]bool{}
	for _, c := range ch {
		if r.Owns(c.Server) {
			continue
		}
		if c.URI == "" {
			servers[c.Server] = true
			continue
		}
		k := resource.Key{Server: c.Server, URI: c.URI}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for len(keys) > 0 {
		chunk := keys[:min(1000, len(keys))]
		keys = keys[len(chunk):]
		recs, err := r.opts.Store.Get(ctx, r.opts.Embedder, chunk)
		if err != nil {
			return err
		}
		present := map[resource.Key]bool{}
		for _, rec := range recs {
			present[rec.Desc.Key()] = true
		}
		var gone []resource.Key
		for _, k := range chunk {
			if !present[k] {
				gone = append(gone, k)
			}
		}
		// Ownership may have come meanwhile: the owner's own state wins.
		recs = slices.DeleteFunc(recs, func(rec index.Record) bool { return r.Owns(rec.Desc.Server) })
		gone = slices.DeleteFunc(gone, func(k resource.Key) bool { return r.Owns(k.Server) })
		n, err := r.ix.Apply(ctx, recs...)
		r.mu.Lock()
		r.applied += int64(n)
		r.mu.Unlock()
		if err != nil {
			return err
		}
		if err := r.ix.Delete(ctx, gone...); err != nil {
			return err
		}
	}
	if len(servers) > 0 {
		return r.shareServers(ctx, servers)
	}
	return nil
}

// shareRatios stores this replica's learned token ratios and takes the
// others' every ShareEvery, and once at start.
func (r *Replica) shareRatios(ctx context.Context) {
	t := time.NewTicker(r.opts.ShareEvery)
	defer t.Stop()
	for {
		if err := r.opts.Store.PutEvidence(ctx, r.opts.Holder, r.opts.Estimator.Learned()); err != nil && ctx.Err() == nil {
			r.fail("share token ratios", err)
		} else if ev, err := r.opts.Store.SharedEvidence(ctx, r.opts.Holder, DefaultEvidenceAge); err == nil {
			r.opts.Estimator.SetShared(ev)
		} else if ctx.Err() == nil {
			r.fail("share token ratios", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
