// Package pgstore keeps contextd's shared mirror in PostgreSQL, so several
// replicas serve one index: descriptors with their vectors and the
// identity of the embedder that made them, indexed contents with their
// passage vectors, each server's templates and last sync, learned token
// ratios, and a change log replicas follow. It also holds the leases that
// give each upstream server one owner at a time.
//
// # Ownership and fencing
//
// A lease (table leases) names a server's holder, a fencing token and an
// expiry. Acquire takes a lease that is free or expired, incrementing the
// token; Renew extends it while the holder and token are unchanged, even
// after it expired, as long as no one took it meanwhile (an owner cut off
// from PostgreSQL writes what it mirrored when it comes back, unless
// another replica took over). Every write checks, in its transaction, that
// the lease still carries the writer's token (holding the lease row), so a
// stale owner's late write fails with ErrFenced and changes nothing.
//
// # Change log
//
// Every write appends the keys it changed to table changes, and notifies
// channel [Channel]. Writers serialise on a transaction advisory lock, so
// sequence numbers are in commit order and a replica that read up to N has
// seen every change up to N. The notification is only a hint: replicas read
// the log from where they left off.
package pgstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/resource"
)

// Channel is the LISTEN/NOTIFY channel of the change log.
const Channel = "contextd_changes"

// logLock is the transaction advisory lock key every write takes before it
// appends to the change log.
const logLock = 0x636f6e7478640002

// ErrFenced is returned by writes whose lease token is no longer the
// server's: another replica took the server over.
var ErrFenced = errors.New("pgstore: lease lost to another replica (fenced)")

// A Store is a connection pool to the shared mirror.
type Store struct {
	pool *pgxpool.Pool
	cfg  *pgxpool.Config
}

// Open connects to the database at url (postgres:// or postgresql://, as
// pgx parses it) and migrates its schema. Errors name the URL without its
// password.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse %s: invalid connection URL", Redact(rawURL))
	}
	if config.StorePassword(rawURL) != "" && cfg.ConnConfig.Password == "" {
		// pgx read the password as part of the host, port or database
		// ("42/Answer!x": database "Answer!x@…"), and its errors would
		// quote that part.
		return nil, fmt.Errorf("pgstore: parse %s: the password holds a character the URL parser reads otherwise (such as \"/\"): percent-encode it (%%2F)", Redact(rawURL))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connect %s: %w", Redact(rawURL), err)
	}
	if _, err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: %s: %w", Redact(rawURL), err)
	}
	return &Store{pool: pool, cfg: cfg}, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Redact returns rawURL with its password, if any, replaced by "xxxxx":
// the user info's (as written, see config.StorePassword: Go's parser reads
// "postgres://app:2024#Winter!@db/x" as a host and a fragment), and the
// value of any parameter whose name says password (password=,
// sslpassword=).
func Redact(rawURL string) string {
	if p := config.StorePassword(rawURL); p != "" {
		rawURL = strings.Replace(rawURL, ":"+p+"@", ":xxxxx@", 1)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if strings.Contains(strings.ToLower(k), "password") {
				q[k] = []string{"xxxxx"}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Ping checks the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Acquire takes server's lease for holder for ttl when it is free or
// expired (a new token), or when holder holds it already (the same token,
// extended). ok is false when another holder's lease is live.
func (s *Store) Acquire(ctx context.Context, server, holder string, ttl time.Duration) (token int64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `
INSERT INTO leases AS l (server, holder, token, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
ON CONFLICT (server) DO UPDATE
	SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at,
	    token = CASE WHEN l.holder = EXCLUDED.holder AND l.expires_at >= now() THEN l.token ELSE l.token + 1 END
	WHERE l.expires_at < now() OR l.holder = EXCLUDED.holder
RETURNING token`, server, holder, ttl.Milliseconds()).Scan(&token)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return token, true, nil
}

// Renew extends holder's lease on server with token by ttl. It reports
// false when the lease is no longer holder's with that token.
func (s *Store) Renew(ctx context.Context, server, holder string, token int64, ttl time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE leases SET expires_at = now() + $4 * interval '1 millisecond'
WHERE server = $1 AND holder = $2 AND token = $3`, server, holder, token, ttl.Milliseconds())
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// RenewAll extends by ttl every lease of tokens (server → token) that holder
// still holds with that token, in one statement, and returns the servers
// it renewed.
func (s *Store) RenewAll(ctx context.Context, holder string, tokens map[string]int64, ttl time.Duration) (map[string]bool, error) {
	servers, toks := make([]string, 0, len(tokens)), make([]int64, 0, len(tokens))
	for srv, t := range tokens {
		servers, toks = append(servers, srv), append(toks, t)
	}
	rows, err := s.pool.Query(ctx, `UPDATE leases SET expires_at = now() + $3 * interval '1 millisecond'
FROM unnest($1::text[], $2::bigint[]) AS m(server, token)
WHERE leases.server = m.server AND leases.token = m.token AND leases.holder = $4
RETURNING leases.server`, servers, toks, ttl.Milliseconds(), holder)
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(got))
	for _, srv := range got {
		out[srv] = true
	}
	return out, nil
}

// Release expires holder's lease on server at once (a clean shutdown), so
// another replica takes over without waiting out the lease.
func (s *Store) Release(ctx context.Context, server, holder string, token int64) error {
	_, err := s.pool.Exec(ctx, `UPDATE leases SET expires_at = now() - interval '1 second'
WHERE server = $1 AND holder = $2 AND token = $3`, server, holder, token)
	return err
}

// Heartbeat records that holder is live for ttl, and returns how many
// replicas are live (holder included).
func (s *Store) Heartbeat(ctx context.Context, holder string, ttl time.Duration) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO replicas (holder, expires_at) VALUES ($1, now() + $2 * interval '1 millisecond')
ON CONFLICT (holder) DO UPDATE SET expires_at = EXCLUDED.expires_at`, holder, ttl.Milliseconds()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM replicas WHERE expires_at < now() - interval '1 hour'"); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT count(*) FROM replicas WHERE expires_at >= now()").Scan(&n)
	})
	return n, err
}

// Leave removes holder's heartbeat (a clean shutdown).
func (s *Store) Leave(ctx context.Context, holder string) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM replicas WHERE holder = $1", holder)
	return err
}

// A Lease is who holds a server.
type Lease struct {
	Server, Holder string
	Token          int64
	Expires        time.Time
	Live           bool // not expired, by the database's clock
}

// Leases returns every lease.
func (s *Store) Leases(ctx context.Context) ([]Lease, error) {
	rows, err := s.pool.Query(ctx, "SELECT server, holder, token, expires_at, expires_at >= now() FROM leases ORDER BY server")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Lease, error) {
		var l Lease
		err := r.Scan(&l.Server, &l.Holder, &l.Token, &l.Expires, &l.Live)
		return l, err
	})
}

// A Write is what an owner publishes for one server in one transaction.
type Write struct {
	Server string
	Holder string
	Token  int64
	// Embedder identifies the embedder that made the vectors (EmbedderID).
	Embedder string
	// Put are records to store; Deleted are URIs to remove.
	Put     []index.Record
	Deleted []string
	// Templates, when not nil, replace the server's templates; LastSync,
	// when not zero, its last sync time.
	Templates []resource.Template
	LastSync  time.Time
}

// EmbedderID is how the store names an embedder: name and dimensions.
func EmbedderID(name string, dim int) string { return fmt.Sprintf("%s/%d", name, dim) }

// Apply writes w in one transaction, fenced by its token, and appends its
// keys to the change log. Errors: ErrFenced, or the database's.
func (s *Store) Apply(ctx context.Context, w Write) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(logLock)); err != nil {
			return err
		}
		var one int
		err := tx.QueryRow(ctx, "SELECT 1 FROM leases WHERE server = $1 AND holder = $2 AND token = $3 FOR SHARE",
			w.Server, w.Holder, w.Token).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrFenced
		}
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		var changed []string
		for _, r := range w.Put {
			if r.Desc.Server != w.Server {
				return fmt.Errorf("pgstore: record of server %q in a write of %q", r.Desc.Server, w.Server)
			}
			if strings.ContainsRune(r.Desc.URI, 0) {
				// PostgreSQL's text cannot hold it, and the key is the
				// URI: not shared (the mirror lists no such URI).
				continue
			}
			desc, err := json.Marshal(r.Desc)
			if err != nil {
				return err
			}
			desc = withoutNUL(desc)
			var cStamp, cHash, cText *string
			var cAt *time.Time
			var cVecs []byte
			if c := r.Content; c != nil {
				// The stamp holds the descriptor's MIME type and
				// lastModified: as the descriptor's JSON, NULs become
				// U+FFFD, so a replica's stamp of the stored descriptor
				// matches.
				text, stamp := strings.ReplaceAll(c.Text, "\x00", "\uFFFD"), strings.ReplaceAll(c.Stamp, "\x00", "\uFFFD")
				cStamp, cHash, cText, cAt = &stamp, &c.Hash, &text, &c.At
				cVecs = encodeVecs(c.Vecs)
			}
			b.Queue(`INSERT INTO descriptors (server, uri, embedder, descriptor, hash, vec, content_stamp, content_hash, content_at, content_text, content_vecs, token)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (server, uri) DO UPDATE SET embedder = EXCLUDED.embedder, descriptor = EXCLUDED.descriptor, hash = EXCLUDED.hash, vec = EXCLUDED.vec,
	content_stamp = EXCLUDED.content_stamp, content_hash = EXCLUDED.content_hash, content_at = EXCLUDED.content_at,
	content_text = EXCLUDED.content_text, content_vecs = EXCLUDED.content_vecs, token = EXCLUDED.token`,
				r.Desc.Server, r.Desc.URI, w.Embedder, desc, r.Hash, encodeVec(r.Vec), cStamp, cHash, cAt, cText, cVecs, w.Token)
			changed = append(changed, r.Desc.URI)
		}
		deleted := slices.DeleteFunc(slices.Clone(w.Deleted), func(u string) bool { return strings.ContainsRune(u, 0) }) // never stored
		if len(deleted) > 0 {
			b.Queue("DELETE FROM descriptors WHERE server = $1 AND uri = ANY($2)", w.Server, deleted)
			changed = append(changed, deleted...)
		}
		if w.Templates != nil || !w.LastSync.IsZero() {
			var tpl []byte
			if w.Templates != nil {
				if tpl, err = json.Marshal(w.Templates); err != nil {
					return err
				}
				tpl = withoutNUL(tpl)
			}
			var last *time.Time
			if !w.LastSync.IsZero() {
				last = &w.LastSync
			}
			b.Queue(`INSERT INTO servers (server, templates, last_sync) VALUES ($1, coalesce($2::jsonb, '[]'), $3)
ON CONFLICT (server) DO UPDATE SET templates = coalesce($2::jsonb, servers.templates),
	last_sync = coalesce($3, servers.last_sync), updated_at = now()`, w.Server, tpl, last)
			changed = append(changed, "")
		}
		if len(changed) == 0 {
			return nil
		}
		b.Queue("INSERT INTO changes (server, uri) SELECT $1, unnest($2::text[])", w.Server, changed)
		b.Queue("SELECT pg_notify($1, '')", Channel)
		return tx.SendBatch(ctx, b).Close()
	})
}

// withoutNUL returns the JSON b with each escaped U+0000 ("\u0000", which
// jsonb refuses) written as U+FFFD, the replacement character; an escaped
// backslash followed by "u0000" is left as it is.
func withoutNUL(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if bytes.HasPrefix(b[i:], []byte(`\u0000`)) {
			out = append(out, `\ufffd`...)
			i += len(`\u0000`) - 1
			continue
		}
		out = append(out, b[i], b[i+1]) // an escape: its character is not one
		i++
	}
	return out
}

// A Change is one entry of the change log: URI "" is the server's own row
// (templates, last sync).
type Change struct {
	Seq    int64
	Server string
	URI    string
}

// ErrBehind is returned by Changes when entries after the asked sequence
// number were pruned: the caller must reload (Load).
var ErrBehind = errors.New("pgstore: change log pruned past this replica's position; reload")

// Changes returns up to limit entries after seq, in order.
func (s *Store) Changes(ctx context.Context, after int64, limit int) ([]Change, error) {
	var pruned int64
	if err := s.pool.QueryRow(ctx, "SELECT pruned_upto FROM log_state").Scan(&pruned); err != nil {
		return nil, err
	}
	if after < pruned {
		return nil, ErrBehind
	}
	rows, err := s.pool.Query(ctx, "SELECT seq, server, uri FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2", after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Change, error) {
		var c Change
		err := r.Scan(&c.Seq, &c.Server, &c.URI)
		return c, err
	})
}

// Prune deletes change log entries older than age; replicas further behind
// reload. It returns how many it deleted.
func (s *Store) Prune(ctx context.Context, age time.Duration) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var upto *int64
		if err := tx.QueryRow(ctx, "SELECT max(seq) FROM changes WHERE at < now() - $1 * interval '1 millisecond'", age.Milliseconds()).Scan(&upto); err != nil || upto == nil {
			return err
		}
		tag, err := tx.Exec(ctx, "DELETE FROM changes WHERE seq <= $1", *upto)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, "UPDATE log_state SET pruned_upto = greatest(pruned_upto, $1)", *upto)
		return err
	})
	return n, err
}

const recordColumns = "descriptor, hash, vec, content_stamp, content_hash, content_at, content_text, content_vecs"

func scanRecord(row pgx.Row) (index.Record, error) {
	var r index.Record
	var desc, vec, cVecs []byte
	var cStamp, cHash, cText *string
	var cAt *time.Time
	if err := row.Scan(&desc, &r.Hash, &vec, &cStamp, &cHash, &cAt, &cText, &cVecs); err != nil {
		return r, err
	}
	if err := json.Unmarshal(desc, &r.Desc); err != nil {
		return r, fmt.Errorf("pgstore: decode descriptor: %w", err)
	}
	r.Vec = decodeVec(vec)
	if cStamp != nil && cHash != nil && cAt != nil && cText != nil {
		// Malformed passage vectors keep the text and lose the vectors:
		// Index.Apply then skips the content, as it does content whose
		// vectors do not match its text; the descriptor still ranks, and
		// the text comes back with the row's next write, or is read and
		// embedded again once this replica owns the server.
		vecs, _ := decodeVecs(cVecs, index.MaxPassages)
		r.Content = &index.RecordContent{Stamp: *cStamp, Hash: *cHash, At: *cAt, Text: *cText, Vecs: vecs}
	}
	return r, nil
}

// Get returns the stored records of keys made with embedder; a key absent
// from the result has none (deleted, or made with another embedder).
func (s *Store) Get(ctx context.Context, embedder string, keys []resource.Key) ([]index.Record, error) {
	servers, uris := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		servers[i], uris[i] = k.Server, k.URI
	}
	rows, err := s.pool.Query(ctx, "SELECT "+recordColumns+` FROM descriptors
WHERE embedder = $1 AND (server, uri) IN (SELECT * FROM unnest($2::text[], $3::text[]))`, embedder, servers, uris)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (index.Record, error) { return scanRecord(r) })
}

// A ServerRow is a server's own shared state.
type ServerRow struct {
	Server    string
	Templates []resource.Template
	LastSync  time.Time
}

// Servers returns the shared state of every server that has one.
func (s *Store) Servers(ctx context.Context) ([]ServerRow, error) {
	rows, err := s.pool.Query(ctx, "SELECT server, templates, last_sync FROM servers ORDER BY server")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ServerRow, error) {
		var sr ServerRow
		var tpl []byte
		var last *time.Time
		if err := r.Scan(&sr.Server, &tpl, &last); err != nil {
			return sr, err
		}
		if last != nil {
			sr.LastSync = *last
		}
		return sr, json.Unmarshal(tpl, &sr.Templates)
	})
}

// Load streams every record made with embedder (of server only, unless
// server is "") to fn, from one snapshot, in batches of up to batch
// records, and returns the change log position the snapshot includes:
// follow the log after it.
func (s *Store) Load(ctx context.Context, embedder, server string, batch int, fn func([]index.Record) error) (seq int64, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM changes").Scan(&seq); err != nil {
			return err
		}
		var pruned int64
		if err := tx.QueryRow(ctx, "SELECT pruned_upto FROM log_state").Scan(&pruned); err != nil {
			return err
		}
		seq = max(seq, pruned)
		rows, err := tx.Query(ctx, "SELECT "+recordColumns+" FROM descriptors WHERE embedder = $1 AND ($2 = '' OR server = $2)", embedder, server)
		if err != nil {
			return err
		}
		defer rows.Close()
		buf := make([]index.Record, 0, batch)
		for rows.Next() {
			r, err := scanRecord(rows)
			if err != nil {
				return err
			}
			if buf = append(buf, r); len(buf) == batch {
				if err := fn(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(buf) > 0 {
			return fn(buf)
		}
		return nil
	})
	return seq, err
}

// PutEvidence stores what holder learned of servers' bytes per token
// (budget.Estimator.Learned), replacing what it stored before.
func (s *Store) PutEvidence(ctx context.Context, holder string, ev []budget.Evidence) error {
	if len(ev) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, x := range ev {
		b.Queue(`INSERT INTO token_ratios (holder, server, class, bytes, tokens) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (holder, server, class) DO UPDATE SET bytes = EXCLUDED.bytes, tokens = EXCLUDED.tokens, updated_at = now()`,
			holder, x.Server, int(x.Class), x.Bytes, x.Tokens)
	}
	return s.pool.SendBatch(ctx, b).Close()
}

// SharedEvidence returns what replicas other than holder learned within
// maxAge, summed per server and class, and deletes what is older.
func (s *Store) SharedEvidence(ctx context.Context, holder string, maxAge time.Duration) ([]budget.Evidence, error) {
	if _, err := s.pool.Exec(ctx, "DELETE FROM token_ratios WHERE updated_at < now() - $1 * interval '1 millisecond'", maxAge.Milliseconds()); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT server, class, sum(bytes), sum(tokens) FROM token_ratios
WHERE holder <> $1 GROUP BY server, class`, holder)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (budget.Evidence, error) {
		var x budget.Evidence
		var class int
		err := r.Scan(&x.Server, &class, &x.Bytes, &x.Tokens)
		x.Class = budget.ContentClass(class)
		return x, err
	})
}

// Listen calls wake (which must not block) after each notification on
// Channel, until ctx ends, on a connection of its own; it reconnects after
// errors, calling wake after each reconnect too (notifications may have
// been missed). It returns ctx's error.
func (s *Store) Listen(ctx context.Context, wake func()) error {
	for ctx.Err() == nil {
		err := s.listen(ctx, wake)
		if ctx.Err() != nil {
			break
		}
		_ = err
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return ctx.Err()
}

func (s *Store) listen(ctx context.Context, wake func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.cfg.ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return err
	}
	wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVec(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// encodeVecs encodes passage vectors: per passage a byte (1: a vector
// follows), then the vector's length as a uint32 and its components.
func encodeVecs(vs [][]float32) []byte {
	var b []byte
	for _, v := range vs {
		if v == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, encodeVec(v)...)
	}
	return b
}

// errBadVecs is decodeVecs's error for a blob that is not encodeVecs's
// encoding of at most the vectors asked for.
var errBadVecs = errors.New("pgstore: malformed passage vectors")

// decodeVecs decodes encodeVecs's encoding of at most max vectors (a text
// has at most index.MaxPassages passages). A blob that is cut short,
// claims a vector longer than what follows, or holds more than max
// entries fails with errBadVecs, having allocated at most max slice
// headers and the blob's size in vectors: another replica's bad write of
// 40 MB of zero bytes (40 million "no vector" entries) must not cost a
// reader gigabytes.
func decodeVecs(b []byte, max int) ([][]float32, error) {
	var out [][]float32
	for len(b) > 0 {
		if len(out) == max {
			return nil, fmt.Errorf("%w: more than %d", errBadVecs, max)
		}
		if b[0] == 0 {
			out = append(out, nil)
			b = b[1:]
			continue
		}
		if b[0] != 1 || len(b) < 5 {
			return nil, errBadVecs
		}
		n := int(binary.LittleEndian.Uint32(b[1:]))
		b = b[5:]
		if n < 0 || n > len(b)/4 {
			return nil, errBadVecs
		}
		out = append(out, decodeVec(b[:4*n]))
		b = b[4*n:]
	}
	return out, nil
}
