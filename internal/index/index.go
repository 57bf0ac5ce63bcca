// Package index is contextd's mirror of every upstream server's resource
// descriptors: a persistent chromem-go collection for dense (embedding)
// retrieval and an in-memory BM25F index for lexical retrieval, both keyed by
// (server, URI).
//
// # Persistence
//
// With Options.Dir set, descriptors and their embeddings persist in
// chromem-go's on-disk layout and format: one gzip'd gob file per document,
// which the index writes itself (through a temporary file renamed over the
// old one) while chromem-go holds the collections in memory. Those files
// are the data: on Open every document is loaded back from them, so the
// lexical index and the descriptor table are rebuilt from the same data the
// vectors live in. A snapshot file beside them (snapshot.go, written by
// Close and in the background) saves decoding them one by one: Open takes
// a document from it only while its file is unchanged since, and reads the
// other files in parallel. Each document carries a SHA-256 of its embedded
// text and the embedder's name; Upsert skips a descriptor whose hash is
// unchanged, so a restart with the same directory re-embeds nothing that
// did not change. A collection is named after its embedder, so changing the
// embedder starts a new one.
//
// A document file that does not decode (cut short by a crash in an older
// version's in-place write, or damaged) is removed on its own: one torn
// write costs one document, not the index, and the next sync refills it. A
// damaged or cut-short snapshot is ignored. If a collection's own metadata
// file cannot be decoded, Open moves the directory aside to
// DIR.corrupt-UNIXTIME and starts empty: the index is a mirror and the next
// sync refills it. Only the newest few moved-aside directories are kept.
// Errors that are not about the data (permissions, file-descriptor limits,
// I/O) are returned instead.
//
// # Concurrency
//
// All methods are safe for concurrent use.
package index

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/philippgille/chromem-go"
	"golang.org/x/sync/errgroup"

	"github.com/contextd/contextd/internal/embed"
	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/resource"
)

// ErrClosed is returned by methods called after Close.
var ErrClosed = errors.New("index: closed")

// Options configures Open.
type Options struct {
	// Dir is the directory of the persistent DB. Empty means in memory only.
	Dir string
	// Embedder embeds descriptor text and queries; its vectors must be unit
	// length (chromem-go divides by the norm without a zero check). Required.
	Embedder embed.Embedder
	// Logger receives warnings (a corrupt directory moved aside). Nil discards.
	Logger *slog.Logger
	// Lexical configures the BM25F index; nil uses its defaults. A zero
	// GroupBytes is ServerLexicalBytes: the bound on each server's terms.
	Lexical *lexical.Options
	// QueryCache is how many query vectors Dense remembers. Zero means
	// DefaultQueryCache; negative remembers none (the eval measures
	// latency with it off).
	QueryCache int
	// ContentWeight is w in the dense score of a resource with indexed
	// content (see SetContents), in [0, 1]. Zero means
	// DefaultContentWeight; negative leaves content out of the dense score
	// (it is still searched lexically).
	ContentWeight float64
	// ContentBytes caps the text the content-level index holds across all
	// servers, in bytes (each text counted up to MaxContentBytes): past it,
	// SetContents leaves new texts out (ErrContentFull). Zero means
	// DefaultContentBytes; negative, no cap.
	ContentBytes int64
	// ContentPassages caps how many passages after texts' first
	// EmbedPassages embeds across all servers (each vector costs 4 bytes
	// per dimension). Zero means DefaultContentPassages; negative, no cap.
	ContentPassages int
	// OnChange, when set, is called with the key of each descriptor whose
	// stored state (descriptor, vector or content) a write changed, once
	// Export sees the change. It is called with the index's locks held and
	// must not block or call into the index. A shared store uses it to
	// publish what this replica mirrors (see Export).
	OnChange func(resource.Key)
}

// An Index holds the mirrored descriptors.
type Index struct {
	emb    embed.Embedder
	qvecs  queryCache
	texts  queryCache // vectors of descriptors scored by Score, never indexed
	log    *slog.Logger
	coll   *docStore          // descriptors
	ccoll  *docStore          // passages of indexed contents
	cw     float64            // Options.ContentWeight, resolved
	cbytes int64              // Options.ContentBytes, resolved; 0: no cap
	cpass  int                // Options.ContentPassages, resolved; 0: no cap
	onChg  func(resource.Key) // Options.OnChange; nil: none
	lex    *lexical.Index
	words  *passageWords    // every passage of every indexed text
	lexOpt *lexical.Options // Options.Lexical
	full   sync.Map         // server → true once lexUpsert warned its terms fill its share
	closed chan struct{}

	// db is the directory the stores persist in (nil in memory);
	// loadStats says where Open found the documents. snapStop ends the
	// goroutine that writes snapshots (snapshotLoop), which closes
	// snapDone; both nil in memory.
	db                 *diskDB
	loadStats          loadStats
	snapStop, snapDone chan struct{}
	closeOnce          sync.Once

	// rowsMu guards scan, the rows Dense last scanned (see rows). Lock
	// order: rowsMu, then mu.
	rowsMu sync.Mutex
	scan   *scanRows

	// slocks serialise the writes of one server (Upsert, Replace, Delete):
	// each decides what changed and embeds it holding only its server's
	// lock, so a server with thousands of descriptors to embed does not
	// hold up another's first sync. smu guards the map. Lock order: a
	// server's lock (several in name order), then wmu.
	smu    sync.Mutex
	slocks map[string]*sync.Mutex

	// wmu serialises the stores (chromem-go writes, descriptor table and
	// lexical index changing together) and the content writes; it also keeps
	// chromem-go's Delete, which reads its document map without a lock, from
	// racing another write. It is never held while embedding descriptors.
	// Lock order: wmu, then mu.
	wmu sync.Mutex

	// umu guards unstored: vectors embedded but not stored (a full disk),
	// kept so that the retry stores them without embedding again.
	umu      sync.Mutex
	unstored map[resource.Key]unstoredVec

	// mu guards the fields that follow. Lock order: mu, then lex's own lock.
	mu   sync.RWMutex
	docs map[resource.Key]entry
	// gen counts the writes to docs (and to the passage vectors their
	// contents hold): every holder of mu's write lock adds one.
	gen   atomic.Uint64
	count map[string]int // server → documents
	// files maps each stored descriptor's file name (docFile of its
	// document ID) to its key, so no two keys share a file.
	files map[string]resource.Key
	// cids holds, for each key with stored passages, their document IDs in
	// the contents collection by passage number ("" where none is stored);
	// cfiles maps those IDs' file names to their passages, so no two
	// passages share a file either (see passageDocID).
	cids   map[resource.Key][]string
	cfiles map[string]passageRef
	// pending holds descriptors an Upsert or Replace in progress has
	// listed but not stored yet (no vector): they are in the lexical index,
	// and Get and Len see them, so a big server is searchable by BM25F as
	// soon as it is listed. pcount counts them per server. They exist only
	// while their server's write lock is held by that call.
	pending map[resource.Key]resource.Descriptor
	pcount  map[string]int
	// focus is the query SetFocus set; hits counts how often each
	// resource was among a query's candidates (NoteHits).
	focus string
	hits  map[resource.Key]int
}

type unstoredVec struct {
	hash string
	vec  []float32
}

// maxUnstored bounds the vectors kept for a retry (at 512 dimensions, 2 KiB
// each).
const maxUnstored = 1 << 14

type entry struct {
	desc resource.Descriptor
	// id is the descriptor's document ID in the collection: Key.String(),
	// or that with "\x00N" appended when its file name was taken (see
	// docID). Its key is in its metadata, not parsed from it.
	id   string
	hash string
	// vec is the descriptor's unit vector, shared with the collection
	// (never modified): Dense scores from it when it must score everything.
	vec     []float32
	content *contentInfo // nil until SetContents
	// since is when the index first held the resource (zero if not known:
	// stored before the time was, or taken from a shared store).
	since time.Time
}

// Open opens (or creates) the index.
func Open(ctx context.Context, opts Options) (*Index, error) {
	ix, err := open(ctx, opts)
	if err == nil || opts.Dir == "" || ctx.Err() != nil {
		return ix, err
	}
	// A document that decodes but holds a vector of another length makes
	// chromem-go fail every query, so the load: drop such documents, as
	// torn ones are, and load again (the next sync embeds them anew).
	if n, serr := salvageVectors(opts.Dir, opts.Embedder.Dim()); serr == nil && n > 0 {
		if opts.Logger != nil {
			opts.Logger.Warn("removed stored documents with unusable vectors", "dir", opts.Dir, "removed", n, "err", err)
		}
		return open(ctx, opts)
	}
	return nil, err
}

func open(ctx context.Context, opts Options) (*Index, error) {
	if opts.Embedder == nil {
		panic("index: Options.Embedder is nil")
	}
	if !(opts.ContentWeight <= 1) {
		panic(fmt.Sprintf("index: Options.ContentWeight %v is above 1", opts.ContentWeight))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lexOpt := lexical.Options{}
	if opts.Lexical != nil {
		lexOpt = *opts.Lexical
	}
	if lexOpt.GroupBytes == 0 {
		lexOpt.GroupBytes = ServerLexicalBytes
	}
	ix := &Index{
		emb:    opts.Embedder,
		qvecs:  queryCache{max: cmp.Or(opts.QueryCache, DefaultQueryCache)},
		texts:  queryCache{max: DefaultTextCache},
		log:    log,
		lex:    lexical.New(&lexOpt),
		words:  newPassageWords(),
		lexOpt: &lexOpt,
		closed: make(chan struct{}),
		cw:     max(cmp.Or(opts.ContentWeight, DefaultContentWeight), 0),
		cbytes: max(cmp.Or(opts.ContentBytes, DefaultContentBytes), 0),
		cpass:  max(cmp.Or(opts.ContentPassages, DefaultContentPassages), 0),
		onChg:  opts.OnChange,
		docs:   map[resource.Key]entry{},
		count:  map[string]int{},
		files:  map[string]resource.Key{},
		cids:   map[resource.Key][]string{},
		cfiles: map[string]passageRef{},
		slocks: map[string]*sync.Mutex{},

		pending: map[resource.Key]resource.Descriptor{},
		pcount:  map[string]int{},
		hits:    map[resource.Key]int{},
	}
	name, cname := collectionName("descriptors", opts.Embedder), collectionName("contents", opts.Embedder)
	loaded, ls, err := openDB(opts.Dir, []string{name, cname}, log)
	if err != nil {
		return nil, err
	}
	mem := chromem.NewDB()
	if opts.Dir != "" {
		ix.db = &diskDB{dir: opts.Dir, log: log}
		ix.loadStats = ls
		// What was not read from the snapshot makes the next one worth writing.
		ix.db.dirty.Store(int64(ls.fromFiles + ls.torn + ls.unused))
		ix.db.lastWrite.Store(time.Now().UnixNano())
	}
	meta := map[string]string{"embedder": opts.Embedder.Name()}
	ix.coll, err = openStore(ctx, mem, ix.db, name, meta, loaded[name], ix.emb.Embed)
	if err != nil {
		return nil, fmt.Errorf("index: open collection: %w", err)
	}
	ix.ccoll, err = openStore(ctx, mem, ix.db, cname, meta, loaded[cname], ix.emb.Embed)
	if err != nil {
		return nil, fmt.Errorf("index: open contents collection: %w", err)
	}
	if err := ix.load(ctx); err != nil {
		return nil, err
	}
	if err := ix.loadContents(ctx); err != nil {
		return nil, err
	}
	if ix.db != nil {
		ix.snapStop, ix.snapDone = make(chan struct{}), make(chan struct{})
		go ix.snapshotLoop(snapshotEvery.get())
	}
	return ix, nil
}

// openDB reads the collections named want from dir (see readDB), creating
// dir if need be. A directory whose data cannot be read (a collection's
// own metadata file damaged) is moved aside to DIR.corrupt-UNIXTIME and
// the index starts empty.
func openDB(dir string, want []string, log *slog.Logger) (map[string]*loadedColl, loadStats, error) {
	if dir == "" {
		return nil, loadStats{}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, loadStats{}, fmt.Errorf("index: %w", err)
	}
	start := time.Now()
	colls, ls, err := readDB(dir, want, log)
	if err == nil {
		if ls.torn > 0 {
			log.Warn("removed documents cut short by an earlier crash or damaged", "dir", dir, "removed", ls.torn)
		}
		if ls.snapshot != "" {
			log.Warn("index snapshot not used; reading every document file", "dir", dir, "reason", ls.snapshot)
		}
		log.Debug("index loaded", "dir", dir, "from_snapshot", ls.fromSnapshot, "from_files", ls.fromFiles, "elapsed", time.Since(start))
		return colls, ls, nil
	}
	if !errors.As(err, new(errData)) {
		// Not damage to the data: moving it aside would throw away a good index.
		return nil, ls, fmt.Errorf("index: load %s: %v", dir, err)
	}
	aside := fmt.Sprintf("%s.corrupt-%s", strings.TrimRight(dir, "/"), time.Now().UTC().Format("20060102T150405.000000000"))
	log.Warn("index directory unreadable; moving it aside and starting empty", "dir", dir, "moved_to", aside, "err", err)
	if rerr := os.Rename(dir, aside); rerr != nil {
		return nil, ls, fmt.Errorf("index: load %s: %v (and moving it aside failed: %v)", dir, err, rerr)
	}
	pruneAside(dir, keepAside, log)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, ls, fmt.Errorf("index: %w", err)
	}
	return nil, loadStats{}, nil
}

// collectionName is the name of the collection of kind built by e: its
// name with characters other than letters, digits, "-" and "." replaced,
// then its dimension. A name that needed replacements ("ollama:nomic-embed-text:d768:l2")
// also gets 8 hex digits of its SHA-256, so that two embedders whose names
// differ only there never share a collection.
func collectionName(kind string, e embed.Embedder) string {
	name := e.Name()
	safe := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '.' {
			return r
		}
		return '_'
	}, name)
	if safe != name {
		h := sha256.Sum256([]byte(name))
		safe += "-" + hex.EncodeToString(h[:4])
	}
	return kind + "-" + safe + "-" + strconv.Itoa(e.Dim())
}

// load indexes every document the descriptors collection was opened with.
func (ix *Index) load(ctx context.Context) error {
	docs := ix.coll.loaded()
	lex := make([]lexical.Doc, 0, len(docs))
	var bad []string
	for _, r := range docs {
		d, hash, ok := fromMetadata(r.Metadata)
		if !ok {
			continue
		}
		if !storedVector(r.Embedding, ix.emb.Dim()) {
			// A NaN would rank the resource by lexical scores alone for
			// good, a vector not of unit length misrank it: drop it like
			// a torn document; the next sync embeds it.
			bad = append(bad, r.ID)
			continue
		}
		since, _ := time.Parse(time.RFC3339Nano, r.Metadata[mListedSince])
		ix.docs[d.Key()] = entry{desc: d, id: r.ID, hash: hash, vec: r.Embedding, since: since}
		ix.files[docFile(r.ID)] = d.Key()
		ix.count[d.Server]++
		lex = append(lex, lexDoc(d, ""))
	}
	// Lexical analysis is most of the load: analyse on every core (Upsert
	// inserts under its lock; hits tie-break by ID, not insertion order).
	const chunk = 4096
	parallel((len(lex)+chunk-1)/chunk, func(i int) {
		ix.lexUpsert(lex[i*chunk : min((i+1)*chunk, len(lex))]...)
	})
	if len(bad) > 0 {
		ix.log.Warn("removed stored descriptors with unusable vectors", "removed", len(bad))
		if err := ix.coll.Delete(ctx, nil, nil, bad...); err != nil {
			return fmt.Errorf("index: load: remove unusable vectors: %v", err)
		}
	}
	return nil
}

// Upsert adds or replaces descriptors. A descriptor whose embedded text is
// unchanged (same SHA-256 with the same embedder) keeps its vector: only its
// stored fields are rewritten when they differ. It returns how many
// descriptors were embedded.
func (ix *Index) Upsert(ctx context.Context, descs ...resource.Descriptor) (embedded int, err error) {
	servers := make([]string, len(descs))
	for i, d := range descs {
		servers[i] = d.Server
	}
	defer ix.lockServers(servers...)()
	return ix.upsert(ctx, descs)
}

type progressKey struct{}

// WithProgress returns a context under which Upsert and Replace call
// progress(done, total) before each chunk of descriptors they store: total
// is how many descriptors the call adds or changes, done how many of those
// are stored so far. It is called from the writing goroutine and must not
// block.
func WithProgress(ctx context.Context, progress func(done, total int)) context.Context {
	return context.WithValue(ctx, progressKey{}, progress)
}

// lockServers locks the write locks of servers, in name order, and returns
// the function that unlocks them.
func (ix *Index) lockServers(servers ...string) (unlock func()) {
	servers = slices.Compact(slices.Sorted(slices.Values(servers)))
	locks := make([]*sync.Mutex, len(servers))
	ix.smu.Lock()
	for i, s := range servers {
		if ix.slocks[s] == nil {
			ix.slocks[s] = &sync.Mutex{}
		}
		locks[i] = ix.slocks[s]
	}
	ix.smu.Unlock()
	for _, l := range locks {
		l.Lock()
	}
	return func() {
		for _, l := range slices.Backward(locks) {
			l.Unlock()
		}
	}
}

// upsertChunk is how many descriptors upsert embeds before storing them, so
// work done before a cancellation or an error is kept (the next sync skips
// what was stored).
const upsertChunk = 256

func (ix *Index) upsert(ctx context.Context, descs []resource.Descriptor) (embedded int, err error) {
	// New descriptors rank lexically while they wait for their vectors;
	// those not stored when this call ends (an error, a cancellation) go.
	defer ix.dropPending(ix.addPending(descs))
	descs = ix.focusFirst(descs)
	start, n := time.Now(), len(descs)
	progress, _ := ctx.Value(progressKey{}).(func(done, total int))
	for len(descs) > 0 {
		if progress != nil {
			progress(n-len(descs), n)
		}
		chunk := descs[:min(upsertChunk, len(descs))]
		descs = descs[len(chunk):]
		e, err := ix.upsertChunk(ctx, chunk)
		embedded += e
		if err != nil {
			return embedded, err
		}
		if len(descs) > 0 && time.Since(start) > 5*time.Second {
			ix.log.Info("indexing descriptors", "done", n-len(descs), "of", n, "embedded", embedded, "elapsed", time.Since(start).Round(time.Second))
		}
	}
	return embedded, nil
}

// upsertChunk decides what changed and embeds it holding only the
// servers' write locks (the caller's), then stores it under wmu.
func (ix *Index) upsertChunk(ctx context.Context, descs []resource.Descriptor) (embedded int, err error) {
	// Decide what changed, embed that in parallel, then store in order.
	type job struct {
		d       resource.Descriptor
		text    string
		hash    string
		vec     []float32
		content *contentInfo // kept from the old version
		dropC   bool         // the old version's passages must go
	}
	var jobs []job
	var todo []int // jobs that need a new vector
	for _, d := range descs {
		text := EmbeddingText(d)
		hash := textHash(ix.emb.Name(), text)
		key := d.Key()
		ix.mu.RLock()
		old, existed := ix.docs[key]
		ix.mu.RUnlock()
		if existed && old.hash == hash && equalDescriptor(old.desc, d) {
			continue
		}
		j := job{d: d, text: text, hash: hash}
		if existed && old.hash == hash {
			if prev, err := ix.coll.GetByID(ctx, old.id); err == nil {
				j.vec = prev.Embedding
			}
		}
		if j.vec == nil {
			ix.umu.Lock()
			if u, ok := ix.unstored[key]; ok && u.hash == hash {
				j.vec = u.vec
			}
			ix.umu.Unlock()
		}
		if j.vec == nil {
			todo = append(todo, len(jobs))
		}
		jobs = append(jobs, j)
	}
	if err := ix.embedAll(ctx, len(todo), func(i int) (*[]float32, string, resource.Descriptor) {
		j := &jobs[todo[i]]
		return &j.vec, j.text, j.d
	}); err != nil {
		return 0, err
	}
	embedded = len(todo)
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	stored := 0
	defer func() {
		// What could not be stored (a full disk, a write error) keeps its
		// vector for the retry; what was stored needs it no more.
		ix.umu.Lock()
		defer ix.umu.Unlock()
		for _, j := range jobs[:stored] {
			delete(ix.unstored, j.d.Key())
		}
		for _, j := range jobs[stored:] {
			if j.vec == nil {
				continue
			}
			if ix.unstored == nil || len(ix.unstored) >= maxUnstored {
				ix.unstored = map[resource.Key]unstoredVec{}
			}
			ix.unstored[j.d.Key()] = unstoredVec{hash: j.hash, vec: j.vec}
		}
	}()
	for _, j := range jobs {
		if ix.isClosed() {
			return embedded, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return embedded, err
		}
		key := j.d.Key()
		// The content is decided now, under wmu: SetContents may have
		// changed it while this chunk was embedding.
		ix.mu.RLock()
		old, existed := ix.docs[key]
		ix.mu.RUnlock()
		if existed && old.content != nil {
			if old.content.stamp == ContentStamp(j.d) {
				j.content = old.content
			} else {
				j.dropC = true
			}
		}
		id := old.id
		if !existed {
			id = ix.docID(key)
		}
		since := old.since
		if !existed {
			since = time.Now()
		}
		doc := chromem.Document{ID: id, Metadata: toMetadata(j.d, j.hash), Embedding: j.vec}
		if !since.IsZero() {
			doc.Metadata[mListedSince] = since.UTC().Format(time.RFC3339Nano)
		}
		if err := ix.coll.AddDocument(ctx, doc); err != nil {
			return embedded, fmt.Errorf("index: store %s %q: %v", j.d.Server, j.d.URI, err)
		}
		var ctext string
		if j.content != nil {
			ctext = ix.contentText(ctx, key)
		} else if j.dropC {
			if ids := ix.releasePassages(key, 0); len(ids) > 0 {
				if err := ix.ccoll.Delete(ctx, nil, nil, ids...); err != nil {
					return embedded, fmt.Errorf("index: delete content of %s %q: %v", j.d.Server, j.d.URI, err)
				}
			}
		}
		ix.mu.Lock()
		ix.gen.Add(1)
		if _, ok := ix.docs[key]; !ok {
			ix.count[j.d.Server]++
		}
		if _, ok := ix.pending[key]; ok {
			delete(ix.pending, key)
			ix.pcount[key.Server]--
		}
		ix.files[docFile(id)] = key
		ix.docs[key] = entry{desc: j.d, id: id, hash: j.hash, vec: j.vec, content: j.content, since: since}
		ix.mu.Unlock()
		ix.lexUpsert(lexDoc(j.d, ctext))
		if j.content == nil {
			ix.words.drop(key)
		}
		ix.changed(key)
		stored++
	}
	return embedded, nil
}

// embedAll embeds n texts: in one EmbedBatch call when the embedder is an
// embed.Batcher, else one Embed call per text on every core (embedders are
// safe for concurrent use). job(i) returns where the i-th vector goes, its
// text and its descriptor (for errors). It returns when every started
// embedding is done.
func (ix *Index) embedAll(ctx context.Context, n int, job func(i int) (*[]float32, string, resource.Descriptor)) error {
	if n == 0 {
		return nil
	}
	if b, ok := ix.emb.(embed.Batcher); ok {
		return ix.embedBatch(ctx, b, n, job)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range n {
		if ix.isClosed() {
			break
		}
		dst, text, d := job(i)
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			vec, err := ix.emb.Embed(gctx, text)
			if err != nil {
				return fmt.Errorf("index: embed %s %q: %w", d.Server, d.URI, err)
			}
			*dst = vec
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if ix.isClosed() {
		return ErrClosed
	}
	return nil
}

// embedBatch is embedAll through b.EmbedBatch. A vector of another length
// than Dim, or not finite, fails the call: stored, it would break every
// query (chromem-go) or rank its resource by lexical scores alone.
func (ix *Index) embedBatch(ctx context.Context, b embed.Batcher, n int, job func(i int) (*[]float32, string, resource.Descriptor)) error {
	texts := make([]string, n)
	dsts := make([]*[]float32, n)
	var first resource.Descriptor
	for i := range n {
		var d resource.Descriptor
		dsts[i], texts[i], d = job(i)
		if i == 0 {
			first = d
		}
	}
	if ix.isClosed() {
		return ErrClosed
	}
	vecs, err := b.EmbedBatch(ctx, texts)
	if err == nil && len(vecs) != n {
		err = fmt.Errorf("%d vectors for %d texts", len(vecs), n)
	}
	for i := 0; err == nil && i < len(vecs); i++ {
		if !validVector(vecs[i], ix.emb.Dim()) {
			err = fmt.Errorf("text %d: a vector of %d dimensions (want %d) or not finite", i, len(vecs[i]), ix.emb.Dim())
		}
	}
	if err != nil {
		return fmt.Errorf("index: embed %d texts (the first %s %q): %w", n, first.Server, first.URI, err)
	}
	for i, v := range vecs {
		*dsts[i] = v
	}
	if ix.isClosed() {
		return ErrClosed
	}
	return nil
}

// Delete removes descriptors by key. Unknown keys are ignored.
func (ix *Index) Delete(ctx context.Context, keys ...resource.Key) error {
	servers := make([]string, len(keys))
	for i, k := range keys {
		servers[i] = k.Server
	}
	defer ix.lockServers(servers...)()
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return ix.delete(ctx, keys)
}

// delete removes keys; the caller holds wmu.
func (ix *Index) delete(ctx context.Context, keys []resource.Key) error {
	if ix.isClosed() {
		return ErrClosed
	}
	var ids, lexIDs, cids []string
	ix.mu.Lock()
	ix.gen.Add(1)
	for _, k := range keys {
		e, ok := ix.docs[k]
		if !ok {
			continue
		}
		cids = append(cids, ix.releasePassagesLocked(k, 0)...)
		delete(ix.docs, k)
		ix.count[k.Server]--
		if ix.count[k.Server] == 0 {
			delete(ix.count, k.Server)
		}
		ids = append(ids, e.id)
		lexIDs = append(lexIDs, k.String())
		delete(ix.files, docFile(e.id))
		ix.changed(k)
	}
	ix.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	ix.lex.Delete(lexIDs...)
	ix.words.drop(keys...)
	if err := ix.coll.Delete(ctx, nil, nil, ids...); err != nil {
		return fmt.Errorf("index: delete: %v", err)
	}
	if len(cids) > 0 {
		if err := ix.ccoll.Delete(ctx, nil, nil, cids...); err != nil {
			return fmt.Errorf("index: delete contents: %v", err)
		}
	}
	return nil
}

// A Diff counts what Replace changed.
type Diff struct {
	Added, Updated, Removed, Unchanged int
	Embedded                           int // descriptors whose text was (re-)embedded
}

// Replace makes server's descriptors exactly descs: new ones are added,
// changed ones updated, missing ones deleted. Descriptors of other servers
// are untouched. Every desc must have Server == server.
func (ix *Index) Replace(ctx context.Context, server string, descs []resource.Descriptor) (Diff, error) {
	defer ix.lockServers(server)()
	var diff Diff
	want := make(map[resource.Key]bool, len(descs))
	var changed []resource.Descriptor
	ix.mu.RLock()
	for _, d := range descs {
		if d.Server != server {
			ix.mu.RUnlock()
			return diff, fmt.Errorf("index: replace %q: descriptor %q belongs to server %q", server, d.URI, d.Server)
		}
		want[d.Key()] = true
		old, ok := ix.docs[d.Key()]
		switch {
		case !ok:
			diff.Added++
			changed = append(changed, d)
		case equalDescriptor(old.desc, d):
			diff.Unchanged++
		default:
			diff.Updated++
			changed = append(changed, d)
		}
	}
	var gone []resource.Key
	for k := range ix.docs {
		if k.Server == server && !want[k] {
			gone = append(gone, k)
		}
	}
	ix.mu.RUnlock()
	diff.Removed = len(gone)
	n, err := ix.upsert(ctx, changed)
	diff.Embedded = n
	if err != nil {
		return diff, err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	return diff, ix.delete(ctx, gone)
}

// Get returns the descriptor stored under k, or listed by an Upsert or
// Replace in progress and waiting for its vector.
func (ix *Index) Get(k resource.Key) (resource.Descriptor, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e, ok := ix.docs[k]
	if !ok {
		d, ok := ix.pending[k]
		return d, ok
	}
	return e.desc, ok
}

// Len returns the number of descriptors of server, or of all servers when
// server is "", counting those waiting for their vector (Pending).
func (ix *Index) Len(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if server == "" {
		return len(ix.docs) + len(ix.pending)
	}
	return ix.count[server] + ix.pcount[server]
}

// TextBytes returns the bytes of text (resource.Descriptor.TextBytes) of
// server's descriptors, counting those waiting for their vector. It walks
// every descriptor: for an occasional check, not a hot path.
func (ix *Index) TextBytes(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for k, e := range ix.docs {
		if k.Server == server {
			n += e.desc.TextBytes()
		}
	}
	for k, d := range ix.pending {
		if k.Server == server {
			n += d.TextBytes()
		}
	}
	return n
}

// Pending returns how many of server's descriptors (all servers' when "")
// an Upsert or Replace in progress has listed but not embedded yet: they
// rank by BM25F alone (Lexical) until their vectors are stored.
func (ix *Index) Pending(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if server == "" {
		return len(ix.pending)
	}
	return ix.pcount[server]
}

// stored returns the number of stored (embedded) descriptors of server, or
// of all servers when server is "".
func (ix *Index) stored(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if server == "" {
		return len(ix.docs)
	}
	return ix.count[server]
}

// addPending lists the descriptors of descs the index does not hold yet
// as pending (see Index.pending) and returns their keys. The caller holds
// their servers' write locks.
func (ix *Index) addPending(descs []resource.Descriptor) []resource.Key {
	var (
		keys []resource.Key
		add  []resource.Descriptor
		lex  []lexical.Doc
	)
	ix.mu.RLock()
	for _, d := range descs {
		if _, ok := ix.docs[d.Key()]; ok {
			continue // it ranks by its old version until the new one is stored
		}
		add = append(add, d)
		lex = append(lex, lexDoc(d, ""))
	}
	ix.mu.RUnlock()
	// Words first, then the count: whoever sees a descriptor pending can
	// find it by its words. No other writer stores these servers' descriptors
	// meanwhile (the caller holds their locks).
	ix.lexUpsert(lex...)
	ix.mu.Lock()
	for _, d := range add {
		k := d.Key()
		if _, ok := ix.pending[k]; !ok {
			ix.pcount[k.Server]++
		}
		ix.pending[k] = d
		keys = append(keys, k)
	}
	ix.mu.Unlock()
	return keys
}

// dropPending removes those of keys still pending: their Upsert ended
// before storing them.
func (ix *Index) dropPending(keys []resource.Key) {
	var gone []string
	ix.mu.Lock()
	for _, k := range keys {
		if _, ok := ix.pending[k]; ok {
			delete(ix.pending, k)
			if ix.pcount[k.Server]--; ix.pcount[k.Server] == 0 {
				delete(ix.pcount, k.Server)
			}
			gone = append(gone, k.String())
		}
	}
	ix.mu.Unlock()
	ix.lex.Delete(gone...)
}

// lexUpsert adds docs to the BM25F index and warns, once per server, when
// a server's terms fill its share (lexical.Options.GroupBytes): its later
// resources are then indexed by their names' first words only.
func (ix *Index) lexUpsert(docs ...lexical.Doc) {
	// A document's ID is its key's string, which its descriptor's stored
	// document ID mostly is too: kept once, a 4 KiB URI costs 4 KiB less.
	ix.mu.RLock()
	for i := range docs {
		if k, ok := resource.ParseKey(docs[i].ID); ok {
			if e, ok := ix.docs[k]; ok && e.id == docs[i].ID {
				docs[i].ID = e.id
			}
		}
	}
	ix.mu.RUnlock()
	ix.lex.Upsert(docs...)
	bound := ix.lexOpt.GroupBytes
	for i, d := range docs {
		if bound <= 0 || i > 0 && d.Group == docs[i-1].Group {
			continue
		}
		if ix.lex.GroupBytes(d.Group) < bound-fullMargin {
			continue
		}
		if _, warned := ix.full.LoadOrStore(d.Group, true); !warned {
			ix.log.Warn("a server's words fill its share of the lexical index: its later resources are indexed by their names' first words only",
				"server", d.Group, "bytes", bound)
		}
	}
}

// fullMargin is how close to its share a server's terms are when lexUpsert
// calls it full: about what one document at the descriptor caps adds.
const fullMargin = 64 << 10

// SetFocus names the query a one-shot command is about to answer ("" for
// none): Upsert and Replace then embed first the descriptors it matches
// by BM25F, and Focus tells internal/sync's content pass to read first
// what it ranks high, so the answer does not wait for the whole server.
func (ix *Index) SetFocus(query string) {
	ix.mu.Lock()
	ix.focus = query
	ix.mu.Unlock()
}

// Focus returns the query SetFocus set, or "".
func (ix *Index) Focus() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.focus
}

// FocusCandidates returns up to n of descs that the focus query (SetFocus)
// matches best by BM25F, scored among descs alone (as if they were all the
// index held), best first; nil without a focus query or a match. A mirror
// embeds and reads these before the rest of a big list.
func (ix *Index) FocusCandidates(descs []resource.Descriptor, n int) []resource.Descriptor {
	q := ix.Focus()
	if q == "" || n <= 0 {
		return nil
	}
	lex := lexical.New(ix.lexOpt)
	at := make(map[string]int, len(descs))
	docs := make([]lexical.Doc, len(descs))
	for i, d := range descs {
		docs[i] = lexDoc(d, "")
		at[docs[i].ID] = i
	}
	lex.Upsert(docs...)
	var out []resource.Descriptor
	for _, h := range lex.Search(q, n, func(string) bool { return true }) {
		out = append(out, descs[at[h.ID]])
	}
	return out
}

// maxHits bounds the resources NoteHits remembers: past it the counts
// start over.
const maxHits = 1 << 16

// NoteHits records that keys were among a query's candidates (the engine
// calls it for what it considered); Hits returns the count. The content
// pass reads the most hit first when it cannot read everything.
func (ix *Index) NoteHits(keys ...resource.Key) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.hits)+len(keys) > maxHits {
		clear(ix.hits)
	}
	for _, k := range keys {
		ix.hits[k]++
	}
}

// Hits returns how often k was noted by NoteHits.
func (ix *Index) Hits(k resource.Key) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.hits[k]
}

// focusFirst moves to the front the descriptors of descs that the focus
// query (SetFocus) matches best by BM25F, up to one chunk's worth, so their
// vectors are stored first; the others keep their order.
func (ix *Index) focusFirst(descs []resource.Descriptor) []resource.Descriptor {
	q := ix.Focus()
	if q == "" || len(descs) <= upsertChunk {
		return descs
	}
	at := make(map[string]int, len(descs))
	for i, d := range descs {
		at[d.Key().String()] = i
	}
	hits := ix.lex.Search(q, upsertChunk, func(id string) bool { _, ok := at[id]; return ok })
	if len(hits) == 0 {
		return descs
	}
	first := make([]bool, len(descs))
	out := make([]resource.Descriptor, 0, len(descs))
	for _, h := range hits {
		i := at[h.ID]
		first[i] = true
		out = append(out, descs[i])
	}
	for i, d := range descs {
		if !first[i] {
			out = append(out, d)
		}
	}
	return out
}

// Descriptors returns server's stored descriptors (all servers when ""),
// sorted by (server, URI); descriptors waiting for their vector (Pending)
// are not among them.
func (ix *Index) Descriptors(server string) []resource.Descriptor {
	ix.mu.RLock()
	var out []resource.Descriptor
	for k, e := range ix.docs {
		if server == "" || k.Server == server {
			out = append(out, e.desc)
		}
	}
	ix.mu.RUnlock()
	slices.SortFunc(out, func(a, b resource.Descriptor) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.URI, b.URI))
	})
	return out
}

// Close releases the index and makes later calls fail with ErrClosed.
// Every write was persisted when it returned; with a directory, Close also
// writes the snapshot the next Open loads from when documents changed
// since the last one (at 100,000 descriptors, a 250 MB file written and
// synced: seconds on a loaded machine). A snapshot
// that fails is logged: the next Open reads the document files instead.
func (ix *Index) Close() error {
	ix.closeOnce.Do(func() {
		close(ix.closed)
		if ix.snapStop == nil {
			return
		}
		close(ix.snapStop)
		<-ix.snapDone
		if ix.db.dirty.Load() > 0 {
			if _, err := ix.db.snapshot(ix.coll, ix.ccoll); err != nil {
				ix.log.Warn("writing the index snapshot failed; the next start reads every document file", "err", err)
			}
		}
	})
	return nil
}

// snapshotEvery is how often snapshotLoop checks whether to write a
// snapshot. Tests shorten it.
var snapshotEvery = newDuration(10 * time.Second)

// snapshotLoop writes a snapshot when enough document files changed since
// the last one that reading them at Open would cost more than a fraction
// of the load (a quarter of the documents, at least 4,096), or when any
// changed and no write came for 30 seconds, until snapStop closes.
func (ix *Index) snapshotLoop(every time.Duration) {
	defer close(ix.snapDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ix.snapStop:
			return
		case <-t.C:
		}
		d := ix.db.dirty.Load()
		if d == 0 {
			continue
		}
		total := int64(ix.coll.Count() + ix.ccoll.Count())
		idle := time.Since(time.Unix(0, ix.db.lastWrite.Load())) >= 3*every
		if d < max(4096, total/4) && !idle {
			continue
		}
		if _, err := ix.db.snapshot(ix.coll, ix.ccoll); err != nil {
			ix.log.Warn("writing the index snapshot failed; a restart reads the changed document files", "err", err)
		}
	}
}

func (ix *Index) isClosed() bool {
	select {
	case <-ix.closed:
		return true
	default:
		return false
	}
}

// docFile is the name chromem-go gives the file of the document with ID
// id: the first 4 bytes of its SHA-256, in hex. 32 bits collide (2 in
// 100,000 real keys), and a collision made one key's file overwrite
// another's; docID and passageDocID pick IDs whose files are free. One
// name is never free: metadataName, the collection's own file, which a
// document written over would keep the whole directory from loading.
func docFile(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:4])
}

// docID returns the document ID for a new key: Key.String() when its file
// is free, else the first of Key.String()+"\x00"+N (N = 1, 2, …) whose
// file is (see docFile). Data directories written before keep their IDs (Key.String()):
// each loads as it is, and a key that lost its file to a collision gets a
// free one at the next sync. The caller holds wmu (and not mu).
func (ix *Index) docID(k resource.Key) string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id := k.String()
	for n := 1; ; n++ {
		f := docFile(id)
		if owner, taken := ix.files[f]; (!taken || owner == k) && f != metadataName {
			return id
		}
		id = k.String() + "\x00" + strconv.Itoa(n)
	}
}

// docKey returns the key of a document of the descriptors collection, from
// its metadata.
func docKey(r chromem.Result) (resource.Key, bool) {
	s, u := r.Metadata[mServer], r.Metadata[mURI]
	return resource.Key{Server: s, URI: u}, s != "" && u != ""
}
