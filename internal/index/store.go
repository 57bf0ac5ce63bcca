package index

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/philippgille/chromem-go"
)

// The index keeps its documents in chromem-go collections held in memory
// and persists each document itself, in chromem-go's own layout and format
// (see docs/indexing.md): under Dir, one directory per collection (the first
// 4 bytes of the SHA-256 of its name, in hex) holding "00000000.gob.gz" (the
// collection's name and metadata) and one "<docFile(id)>.gob.gz" per
// document, a gzip'd gob chromem.Document. Those files are the data. The
// snapshot file beside them (see snapshot.go) only saves decoding them on
// Open: it holds every document with the identity of the file it came from,
// and a file whose identity changed since is read again.

// docStore is one collection: chromem-go's in-memory collection, and with a
// directory, one file per document. Its writes are serialised by the
// index's wmu; its methods are safe for concurrent use.
type docStore struct {
	c     *chromem.Collection
	embed chromem.EmbeddingFunc // for a document stored without a vector
	db    *diskDB               // nil in memory
	sub   string                // the collection's directory name under db.dir

	mu    sync.Mutex
	files map[string]fileDoc // document file name (docFile) → its document
}

// fileDoc is a stored document and the identity of the file holding it.
type fileDoc struct {
	doc *chromem.Document
	st  fileStat
}

// fileStat identifies one version of a file: a rewrite (a new file renamed
// over it, or a write in place) changes its inode, size, modification or
// change time.
type fileStat struct {
	ino          uint64
	size         int64
	mtime, ctime int64 // Unix nanoseconds
}

// diskDB is the directory of an index's collections.
type diskDB struct {
	dir string
	log *slog.Logger
	// dirty counts the document files written or removed since the last
	// snapshot (or read from their files at Open instead of from it);
	// lastWrite is when the last was, in Unix nanoseconds.
	dirty     atomic.Int64
	lastWrite atomic.Int64
	snapMu    sync.Mutex // one snapshot at a time
}

const (
	docSuffixTmp = docSuffix + ".tmp" // a document being written; never loaded
	// gzipLevel: vectors hardly compress; the fastest level costs the
	// writes least and reads the same.
	gzipLevel = gzip.BestSpeed
)

var gzPool = sync.Pool{New: func() any { w, _ := gzip.NewWriterLevel(nil, gzipLevel); return w }}

// encodeDoc returns the file content chromem-go would write for v: its gob
// encoding, gzip'd.
func encodeDoc(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzPool.Get().(*gzip.Writer)
	defer gzPool.Put(zw)
	zw.Reset(&buf)
	if err := gob.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeFile writes data to p through a temporary file renamed over p, so
// that a crash leaves either the old file or the new one, and returns the
// new file's identity.
func writeFile(p string, data []byte) (fileStat, error) {
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fileStat{}, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		crashPoint(tmp)
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fileStat{}, err
	}
	crashPoint("")
	fi, err := os.Lstat(p)
	if err != nil {
		return fileStat{}, err
	}
	st, _ := statOf(fi)
	return st, nil
}

func (db *diskDB) noteWrite() {
	db.dirty.Add(1)
	db.lastWrite.Store(time.Now().UnixNano())
}

// AddDocument stores doc, replacing the document with its ID: in its file
// first, then in memory, so a failed write changes nothing.
func (s *docStore) AddDocument(ctx context.Context, doc chromem.Document) error {
	if s.db != nil {
		if doc.ID == "" {
			return errors.New("document ID is empty")
		}
		// What chromem-go's AddDocument does before it stores a document.
		switch {
		case len(doc.Embedding) == 0 && doc.Content == "":
			return errors.New("either document embedding or content must be filled")
		case len(doc.Embedding) == 0:
			vec, err := s.embed(ctx, doc.Content)
			if err != nil {
				return fmt.Errorf("couldn't create embedding of document: %w", err)
			}
			doc.Embedding = vec
		case !isNormalized(doc.Embedding):
			doc.Embedding = normalizeVector(doc.Embedding)
		}
		data, err := encodeDoc(doc)
		if err != nil {
			return fmt.Errorf("couldn't encode document: %w", err)
		}
		name := docFile(doc.ID)
		st, err := writeFile(filepath.Join(s.db.dir, s.sub, name+docSuffix), data)
		s.db.noteWrite()
		if err != nil {
			return fmt.Errorf("couldn't persist document %s: %w", name, err)
		}
		kept := doc
		s.mu.Lock()
		s.files[name] = fileDoc{doc: &kept, st: st}
		s.mu.Unlock()
	}
	return s.c.AddDocument(ctx, doc)
}

// Delete removes the documents with the given IDs (where and whereDocument
// must be nil: the index deletes by ID only).
func (s *docStore) Delete(ctx context.Context, where, whereDocument map[string]string, ids ...string) error {
	if where != nil || whereDocument != nil {
		return errors.New("index: delete by filter is not supported")
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.c.Delete(ctx, nil, nil, ids...); err != nil {
		return err
	}
	if s.db == nil {
		return nil
	}
	for _, id := range ids {
		name := docFile(id)
		s.mu.Lock()
		fd, ok := s.files[name]
		if ok && fd.doc.ID == id {
			delete(s.files, name)
		}
		s.mu.Unlock()
		if !ok || fd.doc.ID != id {
			continue // another document's file, or none
		}
		err := os.Remove(filepath.Join(s.db.dir, s.sub, name+docSuffix))
		s.db.noteWrite()
		crashPoint("")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("couldn't remove document %s: %w", name, err)
		}
	}
	return nil
}

// GetByID returns a copy of the document with ID id.
func (s *docStore) GetByID(ctx context.Context, id string) (chromem.Document, error) {
	return s.c.GetByID(ctx, id)
}

// Count returns the number of documents.
func (s *docStore) Count() int { return s.c.Count() }

// QueryEmbedding is chromem-go's exhaustive query.
func (s *docStore) QueryEmbedding(ctx context.Context, q []float32, n int, where, whereDocument map[string]string) ([]chromem.Result, error) {
	return s.c.QueryEmbedding(ctx, q, n, where, whereDocument)
}

// collMeta is chromem-go's collection metadata file.
type collMeta struct {
	Name     string
	Metadata map[string]string
}

// errData marks an error about the directory's data (as opposed to I/O or
// permissions): the caller may move the directory aside.
type errData struct{ err error }

func (e errData) Error() string { return e.err.Error() }
func (e errData) Unwrap() error { return e.err }

// loadedColl is a collection read from disk.
type loadedColl struct {
	meta  collMeta
	sub   string
	files map[string]fileDoc
}

// loadStats says where Open got the documents from.
type loadStats struct {
	fromSnapshot, fromFiles, torn int
	unused                        int    // the snapshot's records of files gone or rewritten
	snapshot                      string // why the snapshot was not used, "" when it was (or none existed)
}

// readDB reads the collections named in want from dir, each document from
// the snapshot when its file is the one the snapshot recorded, else from
// the file (in parallel). Documents that do not decode are removed (torn
// by a crash, or damaged): the next sync adds them again. Collections whose
// name starts like one of want's but is not in want (built with another
// embedder) are deleted. It returns an errData when a collection's own
// metadata file is missing or does not decode.
func readDB(dir string, want []string, log *slog.Logger) (map[string]*loadedColl, loadStats, error) {
	var ls loadStats
	os.Remove(filepath.Join(dir, snapshotName+".tmp"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, ls, err
	}
	out := map[string]*loadedColl{}
	type job struct {
		lc   *loadedColl
		name string
		ent  os.DirEntry
		st   fileStat
		gone bool
	}
	var jobs []job
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cdir := filepath.Join(dir, e.Name())
		files, err := os.ReadDir(cdir)
		if err != nil {
			return nil, ls, err
		}
		var meta *collMeta
		var docs []os.DirEntry
		for _, f := range files {
			switch {
			case f.IsDir():
			case f.Name() == metadataFile:
				var m collMeta
				if err := readGob(filepath.Join(cdir, f.Name()), &m); err != nil {
					if isDataErr(err) {
						return nil, ls, errData{fmt.Errorf("couldn't read collection metadata %s: %w", filepath.Join(e.Name(), f.Name()), err)}
					}
					return nil, ls, err
				}
				meta = &m
			case strings.HasSuffix(f.Name(), docSuffixTmp):
				os.Remove(filepath.Join(cdir, f.Name())) // a write a crash cut short
			case strings.HasSuffix(f.Name(), docSuffix):
				docs = append(docs, f)
			}
		}
		if meta == nil {
			if len(docs) == 0 {
				continue // not a collection
			}
			return nil, ls, errData{fmt.Errorf("collection metadata file not found: %s", cdir)}
		}
		if !slices.Contains(want, meta.Name) {
			for _, w := range want {
				if kind, _, _ := strings.Cut(w, "-"); strings.HasPrefix(meta.Name, kind) {
					log.Info("dropping index built with another embedder", "collection", meta.Name)
					if err := os.RemoveAll(cdir); err != nil {
						return nil, ls, fmt.Errorf("drop stale collection %q: %v", meta.Name, err)
					}
					break
				}
			}
			continue
		}
		lc := &loadedColl{meta: *meta, sub: e.Name(), files: make(map[string]fileDoc, len(docs))}
		out[meta.Name] = lc
		for _, f := range docs {
			jobs = append(jobs, job{lc: lc, name: strings.TrimSuffix(f.Name(), docSuffix), ent: f})
		}
	}
	// One lstat per file, on every core.
	var statErr error
	var statMu sync.Mutex
	parallel(len(jobs), func(i int) {
		fi, err := jobs[i].ent.Info()
		if err != nil {
			jobs[i].gone = true
			if !errors.Is(err, fs.ErrNotExist) {
				statMu.Lock()
				statErr = cmp.Or(statErr, err)
				statMu.Unlock()
			}
			return
		}
		jobs[i].st, _ = statOf(fi)
	})
	if statErr != nil {
		return nil, ls, statErr
	}
	jobs = slices.DeleteFunc(jobs, func(j job) bool { return j.gone })
	if len(jobs) == 0 {
		return out, ls, nil
	}
	snap, why := readSnapshot(filepath.Join(dir, snapshotName), len(jobs))
	ls.snapshot = why
	ls.unused = len(snap)
	var disk []job
	// A file without an identity (statOf reports none) is always read.
	for _, j := range jobs {
		if r, ok := snap[j.lc.sub+"/"+j.name]; ok && j.st != (fileStat{}) && r.st == j.st {
			j.lc.files[j.name] = r
			ls.fromSnapshot++
			ls.unused--
			continue
		}
		disk = append(disk, j)
	}
	snap = nil
	// Read the others on every core, each worker with its own gzip reader.
	var (
		mu     sync.Mutex
		next   atomic.Int64
		wg     sync.WaitGroup
		ioErr  error
		broken []string
	)
	for range min(runtime.GOMAXPROCS(0), len(disk)) {
		wg.Go(func() {
			var zr *gzip.Reader
			br := bufio.NewReaderSize(nil, 16<<10)
			for {
				i := int(next.Add(1)) - 1
				if i >= len(disk) {
					return
				}
				j := disk[i]
				p := filepath.Join(dir, j.lc.sub, j.name+docSuffix)
				d, err := readDoc(p, &zr, br)
				mu.Lock()
				switch {
				case err == nil && docFile(d.ID) == j.name:
					j.lc.files[j.name] = fileDoc{doc: d, st: j.st}
				case err == nil || isDataErr(err):
					broken = append(broken, p)
				case errors.Is(err, fs.ErrNotExist):
				default:
					ioErr = cmp.Or(ioErr, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ioErr != nil {
		return nil, ls, ioErr
	}
	ls.fromFiles = len(disk) - len(broken)
	for _, p := range broken {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, ls, err
		}
	}
	ls.torn = len(broken)
	return out, ls, nil
}

// errNotRegular is readDoc's error for a document path that is no
// regular file: broken, like a torn document.
var errNotRegular = errors.New("not a regular file")

// isDataErr reports whether err is about the data read rather than the
// reading (I/O, permissions, file-descriptor limits).
func isDataErr(err error) bool {
	var pe *fs.PathError
	return !errors.As(err, &pe) && !errors.Is(err, syscall.EIO)
}

// maxMetaFileBytes bounds what a collection's metadata file may hold,
// read and inflated: its name and a few settings, well under a kilobyte
// when written here. A variable for tests.
var maxMetaFileBytes int64 = 1 << 20

// errMetaTooBig is readGob's error for a file past maxMetaFileBytes.
var errMetaTooBig = fmt.Errorf("larger than %d bytes: not written here", maxMetaFileBytes)

// readGob decodes the gzip'd (or plain) gob file at p into v. A file that
// holds, or inflates to, more than maxMetaFileBytes fails with
// errMetaTooBig, unread past it: 875 KB of gzip decoded to a 900 MB
// value, 3.8 GB resident at the start.
func readGob(p string, v any) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMetaFileBytes+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > maxMetaFileBytes {
		return errMetaTooBig
	}
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return err
		}
		r = zr
	}
	lr := &io.LimitedReader{R: r, N: maxMetaFileBytes + 1}
	if err := gob.NewDecoder(lr).Decode(v); err != nil {
		if lr.N <= 0 {
			return errMetaTooBig
		}
		return err
	}
	return nil
}

// readDoc decodes the document file at p, reusing *zr and br. The gzip
// trailer (CRC-32 and length) is checked: a file cut short is an error.
// maxDocFileBytes bounds what one document file may inflate to (see
// readDoc); a variable for tests.
var maxDocFileBytes int64 = 16 << 20

func readDoc(p string, zr **gzip.Reader, br *bufio.Reader) (*chromem.Document, error) {
	// A named pipe or a device in a document's place would block the
	// open, and the load with it, for good.
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br.Reset(f)
	var r io.Reader = br
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		if *zr == nil {
			*zr, err = gzip.NewReader(br)
		} else {
			err = (*zr).Reset(br)
		}
		if err != nil {
			return nil, err
		}
		r = *zr
	}
	// A document is at most MaxContentBytes of text, a vector and a
	// descriptor's fields: a file that inflates to more was not written
	// here (190 KB of gzip held an 800 MB vector of zeros: 5.6 GB at
	// load for four of them). Read so far, it fails like a torn one.
	r = io.LimitReader(r, maxDocFileBytes)
	d := &chromem.Document{}
	if err := gob.NewDecoder(r).Decode(d); err != nil {
		return nil, err
	}
	if d.ID == "" {
		return nil, errors.New("document without an ID")
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return nil, err
	}
	return d, nil
}

// openStore returns the store of collection name: loaded when lc is not
// nil, else created (its metadata file written when db is not nil).
func openStore(ctx context.Context, mem *chromem.DB, db *diskDB, name string, meta map[string]string, lc *loadedColl, embed chromem.EmbeddingFunc) (*docStore, error) {
	if lc != nil {
		meta = lc.meta.Metadata
	}
	c, err := mem.CreateCollection(name, meta, embed)
	if err != nil {
		return nil, err
	}
	s := &docStore{c: c, embed: embed, db: db, sub: hashName(name), files: map[string]fileDoc{}}
	if lc != nil {
		s.sub = lc.sub // where its files are, whatever the directory's name
	}
	if db == nil {
		return s, nil
	}
	if lc == nil {
		if err := os.MkdirAll(filepath.Join(db.dir, s.sub), 0o700); err != nil {
			return nil, err
		}
		data, err := encodeDoc(collMeta{Name: name, Metadata: meta})
		if err != nil {
			return nil, err
		}
		if _, err := writeFile(filepath.Join(db.dir, s.sub, metadataFile), data); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.files = lc.files
	docs := make([]*chromem.Document, 0, len(s.files))
	for _, fd := range s.files {
		docs = append(docs, fd.doc)
	}
	var mu sync.Mutex
	var addErr error
	parallel(len(docs), func(i int) {
		if err := c.AddDocument(ctx, *docs[i]); err != nil {
			mu.Lock()
			addErr = cmp.Or(addErr, err)
			mu.Unlock()
		}
	})
	if addErr != nil {
		return nil, addErr
	}
	return s, nil
}

// hashName is chromem-go's directory name for a collection.
func hashName(name string) string { return docFile(name) }

// loaded returns the documents the store was opened with (and holds now),
// in ID order.
func (s *docStore) loaded() []*chromem.Document {
	s.mu.Lock()
	docs := make([]*chromem.Document, 0, len(s.files))
	for _, fd := range s.files {
		docs = append(docs, fd.doc)
	}
	s.mu.Unlock()
	slices.SortFunc(docs, func(a, b *chromem.Document) int { return strings.Compare(a.ID, b.ID) })
	return docs
}

// isNormalized and normalizeVector are chromem-go's (unexported there).
func isNormalized(v []float32) bool {
	var sq float64
	for _, x := range v {
		sq += float64(x) * float64(x)
	}
	return math.Abs(math.Sqrt(sq)-1) < 1e-6
}

func normalizeVector(v []float32) []float32 {
	var norm float32
	for _, x := range v {
		norm += x * x
	}
	norm = float32(math.Sqrt(float64(norm)))
	res := make([]float32, len(v))
	for i, x := range v {
		res[i] = x / norm
	}
	return res
}

// parallel calls f(i) for every i in [0, n) on every core and returns when
// all calls have.
func parallel(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// crashHook, when set (tests only), is called at every point of a write
// where a crash would leave a distinct state on disk: with the temporary
// file written and not renamed yet (its path), and after a rename or a
// removal ("").
var crashHook atomic.Pointer[func(tmp string)]

func crashPoint(tmp string) {
	if h := crashHook.Load(); h != nil {
		(*h)(tmp)
	}
}
