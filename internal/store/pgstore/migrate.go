package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are the schema's versions, applied in order, each once, in
// its own transaction. Append; never edit one that has shipped.
var migrations = []string{
	// 1: the shared mirror.
	`
CREATE TABLE servers (
	server     text PRIMARY KEY,
	templates  jsonb NOT NULL DEFAULT '[]',
	last_sync  timestamptz,
	updated_at timestamptz NOT NULL DEFAULT now()
);
-- One owner per upstream server: a lease with a fencing token. Taking over
-- an expired lease increments token; every write checks it.
CREATE TABLE leases (
	server     text PRIMARY KEY,
	holder     text NOT NULL,
	token      bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
-- Live replicas (a heartbeat each), so each takes a fair share of servers.
CREATE TABLE replicas (
	holder     text PRIMARY KEY,
	expires_at timestamptz NOT NULL
);
CREATE TABLE descriptors (
	server        text NOT NULL,
	uri           text NOT NULL,
	embedder      text NOT NULL,  -- name/dimensions of the embedder that made vec
	descriptor    jsonb NOT NULL,
	hash          text NOT NULL,  -- SHA-256 of the embedder name and embedded text
	vec           bytea NOT NULL, -- float32 little-endian
	content_stamp text,           -- NULL: no content read for this version
	content_hash  text,
	content_at    timestamptz,
	content_text  text,
	content_vecs  bytea,          -- per passage: 1 byte present, then the vector
	token         bigint NOT NULL, -- fencing token of the write
	PRIMARY KEY (server, uri)
);
-- The change log replicas follow: one row per changed key (uri '' for the
-- server's own row), in commit order (writers serialise on an advisory
-- transaction lock, so seq order is commit order).
CREATE TABLE changes (
	seq    bigserial PRIMARY KEY,
	server text NOT NULL,
	uri    text NOT NULL,
	at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX changes_at ON changes (at);
-- What each replica learned of each server's bytes per token (budget
-- estimates), per content class; every replica weighs the others'.
CREATE TABLE token_ratios (
	holder     text NOT NULL,
	server     text NOT NULL,
	class      int NOT NULL,
	bytes      double precision NOT NULL,
	tokens     double precision NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (holder, server, class)
);
-- pruned_upto: the highest seq pruned from changes; a replica behind it
-- reloads.
CREATE TABLE log_state (
	id          int PRIMARY KEY CHECK (id = 1),
	pruned_upto bigint NOT NULL
);
INSERT INTO log_state VALUES (1, 0);
`,
}

// migrateLock is the session advisory lock key held while migrating, so
// replicas starting together migrate once.
const migrateLock = 0x636f6e7478640001 // "contxd" 1

// migrate applies the migrations the database lacks. It returns the
// schema version. A database newer than this binary is an error.
func migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrateLock)); err != nil {
		return 0, fmt.Errorf("lock for migration: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrateLock)) //nolint:errcheck // the session ends with the connection otherwise
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    int PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
		return 0, err
	}
	if have > len(migrations) {
		return have, fmt.Errorf("the database's schema is version %d, newer than this contextd's %d: upgrade contextd", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version) VALUES ($1)", v)
			return err
		})
		if err != nil {
			return have, fmt.Errorf("migration %d: %w", v, err)
		}
		have = v
	}
	return have, nil
}
