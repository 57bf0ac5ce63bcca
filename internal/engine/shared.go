package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/store/pgstore"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// shared is what an engine whose config names a PostgreSQL store adds: the
// store, and the replica that keeps the in-memory index in step with it
// (see internal/replica).
type shared struct {
	store *pgstore.Store
	rep   *replica.Replica
}

// openShared connects to the store and prepares the replica; the engine's
// mirrors are wired to it by wireShared, and the index filled by
// loadShared.
func openShared(ctx context.Context, opts Options, emb embed.Embedder, est *budget.Estimator, log *slog.Logger, e **Engine) (*shared, error) {
	st, err := pgstore.Open(ctx, opts.Config.Store)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var servers []string
	for _, srv := range opts.Config.Servers {
		servers = append(servers, srv.Name)
	}
	ro := replica.Options{
		Store:     st,
		Embedder:  pgstore.EmbedderID(emb.Name(), emb.Dim()),
		Servers:   servers,
		Estimator: est,
		Logger:    log.With("component", "replica"),
		OnOwner: func(server string, _ bool) {
			if m, ok := (*e).mirror(server); ok {
				m.OwnerChanged()
			}
		},
		OnShared: func(server string, templates []resource.Template, lastSync time.Time) {
			if m, ok := (*e).mirror(server); ok {
				m.SetShared(templates, lastSync)
			}
		},
	}
	if opts.Replica != nil {
		opts.Replica(&ro)
	}
	return &shared{store: st, rep: replica.New(ro)}, nil
}

// mirrorOptions makes a mirror mirror its server only while this replica
// owns it, and publish its templates. Other replicas send the server
// callers' words too, unseen here: what it says (errors, server info,
// claims) is withheld from the start, as once a caller's words were sent.
func (s *shared) mirrorOptions(mo *ctxsync.Options) {
	if mo.CallerText != nil {
		mo.CallerText.Store(true)
	}
	server := mo.Server
	mo.Owner = func() bool { return s.rep.Owns(server) }
	mo.OnSync = func(templates []resource.Template, at time.Time) { s.rep.Synced(server, templates, at) }
}

// Replica reports the engine's view of the shared store; ok is false for
// an embedded index.
func (e *Engine) Replica() (st replica.Status, ok bool) {
	if e.shared == nil {
		return replica.Status{}, false
	}
	return e.shared.rep.Status(), true
}
