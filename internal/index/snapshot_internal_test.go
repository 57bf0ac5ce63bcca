package index

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/philippgille/chromem-go"

	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
)

// noRacyWindow lets a snapshot take files written just before it; the
// tests wait a clock tick before changing a file the snapshot took.
func noRacyWindow(t *testing.T) {
	old := racyWindow.get()
	racyWindow.set(0)
	t.Cleanup(func() { racyWindow.set(old) })
}

func tick() { time.Sleep(30 * time.Millisecond) }

// state is what a test compares across reopenings: every descriptor, and
// every dense and passage score for a query, to the bit.
type state struct {
	Descs    []resource.Descriptor
	Dense    map[resource.Key]float64
	Passages map[resource.Key][]PassageHit
	Stored   int
}

func stateOf(t *testing.T, ix *Index) state {
	t.Helper()
	st := state{Descs: ix.Descriptors(""), Dense: map[resource.Key]float64{}, Stored: ix.ccoll.Count()}
	hs, err := ix.Dense(t.Context(), "alpha words doc", 0, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []resource.Key
	for _, h := range hs {
		st.Dense[h.Key] = h.Score
		keys = append(keys, h.Key)
	}
	if st.Passages, err = ix.PassageHits(t.Context(), "alpha words", keys); err != nil {
		t.Fatal(err)
	}
	return st
}

// buildSnapIndex fills an index in dir with n descriptors, texts with
// passages for the first three, and closes it (writing the snapshot).
func buildSnapIndex(t *testing.T, dir string, emb *indextest.BagEmbedder, n int) (state, []resource.Descriptor) {
	t.Helper()
	ix, err := Open(t.Context(), Options{Dir: dir, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	var ds []resource.Descriptor
	for i := range n {
		ds = append(ds, resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint("doc ", i), Description: "alpha words " + strings.Repeat("x", i)})
	}
	if _, err := ix.Replace(t.Context(), "s", ds); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds[:3] {
		if _, err := ix.SetContents(t.Context(), Content{Key: d.Key(), Stamp: ContentStamp(d), Text: sections(3+i, "alpha words")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ix.EmbedPassages(t.Context(), "", 0); err != nil {
		t.Fatal(err)
	}
	st := stateOf(t, ix)
	ix.Close()
	return st, ds
}

func openSnap(t *testing.T, dir string, emb *indextest.BagEmbedder) *Index {
	t.Helper()
	ix, err := Open(t.Context(), Options{Dir: dir, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// docFiles returns the document files under dir.
func docFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "*"+docSuffix))
	for _, p := range paths {
		if filepath.Base(p) != metadataFile {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no document files")
	}
	return out
}

// A reopened index loads every document from the snapshot, and holds
// exactly what it held, and what reading every file gives.
func TestSnapshotLoadsWhatTheFilesHold(t *testing.T) {
	noRacyWindow(t)
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	want, _ := buildSnapIndex(t, dir, emb, 20)
	files := len(docFiles(t, dir))
	calls := emb.Calls.Load()

	ix := openSnap(t, dir, emb)
	if ls := ix.loadStats; ls.fromSnapshot != files || ls.fromFiles != 0 || ls.snapshot != "" {
		t.Errorf("load %+v, want all %d documents from the snapshot", ls, files)
	}
	if got := stateOf(t, ix); !cmp.Equal(want, got, cmp.AllowUnexported(PassageHit{})) {
		t.Errorf("loaded from the snapshot (-built +loaded):\n%s", cmp.Diff(want, got, cmp.AllowUnexported(PassageHit{})))
	}
	if n := emb.Calls.Load() - calls; n != 2 { // Dense's and PassageHits' queries
		t.Errorf("%d embeddings after reopening, want the two queries' only", n)
	}
	ix.Close()

	if err := os.Remove(filepath.Join(dir, snapshotName)); err != nil {
		t.Fatal(err)
	}
	ix = openSnap(t, dir, emb)
	if ls := ix.loadStats; ls.fromSnapshot != 0 || ls.fromFiles != files {
		t.Errorf("load %+v without a snapshot, want all %d documents from their files", ls, files)
	}
	if got := stateOf(t, ix); !cmp.Equal(want, got, cmp.AllowUnexported(PassageHit{})) {
		t.Errorf("loaded from the files (-built +loaded):\n%s", cmp.Diff(want, got, cmp.AllowUnexported(PassageHit{})))
	}
	ix.Close()
	if _, err := os.Stat(filepath.Join(dir, snapshotName)); err != nil {
		t.Errorf("no snapshot written after a load from the files: %v", err)
	}
}

// Files changed after the snapshot (rewritten, removed, torn, added) are
// read again: the snapshot never hides what the files hold.
func TestSnapshotSeesFilesChangedSinceIt(t *testing.T) {
	noRacyWindow(t)
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	_, ds := buildSnapIndex(t, dir, emb, 8)
	tick()
	// Out of band: one descriptor's file rewritten with another name, one
	// removed, one torn.
	ids := map[string]string{}
	for _, p := range docFiles(t, dir) {
		ids[readDocFile(t, p).ID] = p
	}
	rewriteFile(t, ids[ds[4].Key().String()], func(d *chromem.Document) { d.Metadata[mName] = "renamed out of band" })
	if err := os.Remove(ids[ds[5].Key().String()]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ids[ds[6].Key().String()], []byte{0x1f, 0x8b, 0}, 0o600); err != nil {
		t.Fatal(err)
	}
	ix := openSnap(t, dir, emb)
	if ls := ix.loadStats; ls.fromFiles != 1 || ls.torn != 1 || ls.unused != 3 {
		t.Errorf("load %+v, want 1 document read from its file, 1 torn, 3 snapshot records unused", ls)
	}
	if d, _ := ix.Get(ds[4].Key()); d.Name != "renamed out of band" {
		t.Errorf("rewritten descriptor loaded as %q, want its file's", d.Name)
	}
	for _, d := range ds[5:7] {
		if _, ok := ix.Get(d.Key()); ok {
			t.Errorf("%s loaded, want it gone (removed or torn)", d.URI)
		}
	}
	// Writes after the snapshot, then a crash (no Close, so no new
	// snapshot): the next Open holds them.
	changed := ds[0]
	changed.Description = "changed after the snapshot"
	if _, err := ix.Upsert(t.Context(), changed, resource.Descriptor{Server: "s", URI: "doc://new", Name: "new"}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(t.Context(), ds[1].Key()); err != nil {
		t.Fatal(err)
	}
	want := ix.Descriptors("")
	crash(ix)
	ix = openSnap(t, dir, emb)
	if got := ix.Descriptors(""); !cmp.Equal(want, got) {
		t.Errorf("after writes and a crash (-written +loaded):\n%s", cmp.Diff(want, got))
	}
}

func readDocFile(t *testing.T, p string) *chromem.Document {
	t.Helper()
	var zr *gzip.Reader
	d, err := readDoc(p, &zr, bufio.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// rewriteFile changes the document in the file at p in place.
func rewriteFile(t *testing.T, p string, change func(*chromem.Document)) {
	t.Helper()
	d := readDocFile(t, p)
	change(d)
	data, err := encodeDoc(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// crash stops ix without the snapshot Close writes, as a killed process.
func crash(ix *Index) {
	ix.closeOnce.Do(func() {
		close(ix.closed)
		close(ix.snapStop)
		<-ix.snapDone
	})
}

// A snapshot cut short or damaged anywhere is ignored (the files are read)
// and replaced; a snapshot or document being written when the process
// died (its temporary file) is ignored and removed.
func TestDamagedSnapshotIsIgnored(t *testing.T) {
	noRacyWindow(t)
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	want, _ := buildSnapIndex(t, dir, emb, 6)
	files := len(docFiles(t, dir))
	snap := filepath.Join(dir, snapshotName)
	good, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, wantFromSnap int) {
		t.Helper()
		ix, err := Open(t.Context(), Options{Dir: dir, Embedder: emb})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if ls := ix.loadStats; ls.fromSnapshot != wantFromSnap || ls.fromSnapshot+ls.fromFiles != files || ls.torn != 0 {
			t.Errorf("%s: load %+v, want %d of %d documents from the snapshot", name, ls, wantFromSnap, files)
		}
		if got := stateOf(t, ix); !cmp.Equal(want, got, cmp.AllowUnexported(PassageHit{})) {
			t.Errorf("%s (-built +loaded):\n%s", name, cmp.Diff(want, got, cmp.AllowUnexported(PassageHit{})))
		}
		crash(ix) // keep the damaged snapshot for the next case
	}
	for _, cut := range []int{0, 3, len(snapshotMagic), len(snapshotMagic) + 5, len(good) / 3, len(good) / 2, len(good) - 17, len(good) - 1} {
		if err := os.WriteFile(snap, good[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("cut at %d of %d", cut, len(good)), 0)
	}
	for _, at := range []int{1, len(snapshotMagic) + 2, len(snapshotMagic) + 9, len(good) / 2, len(good) - 20, len(good) - 2} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x40
		if err := os.WriteFile(snap, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("byte %d flipped", at), 0)
	}
	// A crash while writing the next snapshot or a document: the
	// temporaries are partial, the good files in place.
	if err := os.WriteFile(snap, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(snap+".tmp", good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	doc := docFiles(t, dir)[0]
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc+".tmp", data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	check("temporaries left by a crash", files)
	for _, p := range []string{snap + ".tmp", doc + ".tmp"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s left in place", p)
		}
	}
	// Close writes a good snapshot over a damaged one.
	if err := os.WriteFile(snap, good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	ix := openSnap(t, dir, emb)
	ix.Close()
	ix = openSnap(t, dir, emb)
	if ls := ix.loadStats; ls.fromSnapshot != files {
		t.Errorf("after Close replaced a damaged snapshot: load %+v, want all %d from it", ls, files)
	}
}

// A data_dir written by chromem-go's own persistence (the index before it
// wrote its documents itself) loads without embedding anything again,
// and chromem-go still reads a data_dir the index writes now.
func TestChromemWrittenDirLoadsWithoutReembedding(t *testing.T) {
	noRacyWindow(t)
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	db, err := chromem.NewPersistentDB(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	coll, err := db.GetOrCreateCollection(collectionName("descriptors", emb), map[string]string{"embedder": emb.Name()}, emb.Embed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetOrCreateCollection(collectionName("contents", emb), map[string]string{"embedder": emb.Name()}, emb.Embed); err != nil {
		t.Fatal(err)
	}
	var ds []resource.Descriptor
	for i := range 10 {
		d := resource.Descriptor{Server: "s", URI: fmt.Sprintf("doc://%d", i), Name: fmt.Sprint("old doc ", i), Size: int64(i + 1)}
		ds = append(ds, d)
		text := EmbeddingText(d)
		vec, _ := emb.Embed(t.Context(), text)
		if err := coll.AddDocument(t.Context(), chromem.Document{ID: d.Key().String(), Metadata: toMetadata(d, textHash(emb.Name(), text)), Embedding: vec, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	calls := emb.Calls.Load()
	ix := openSnap(t, dir, emb)
	if diff, err := ix.Replace(t.Context(), "s", ds); err != nil || diff.Unchanged != len(ds) || diff.Embedded != 0 {
		t.Errorf("Replace over chromem-go's files = %+v, %v; want all unchanged, none embedded", diff, err)
	}
	if n := emb.Calls.Load() - calls; n != 0 {
		t.Errorf("%d embeddings, want none", n)
	}
	if _, err := ix.Upsert(t.Context(), resource.Descriptor{Server: "s", URI: "doc://added", Name: "added"}); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	ix = openSnap(t, dir, emb)
	if ls := ix.loadStats; ls.fromSnapshot != len(ds)+1 || ix.Len("s") != len(ds)+1 {
		t.Errorf("second open: load %+v, %d descriptors; want all %d from the snapshot", ls, ix.Len("s"), len(ds)+1)
	}
	ix.Close()
	// chromem-go reads what the index wrote (going back to it works).
	db, err = chromem.NewPersistentDB(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if c := db.GetCollection(collectionName("descriptors", emb), nil); c == nil || c.Count() != len(ds)+1 {
		t.Errorf("chromem-go reads the index's directory as %v", c)
	}
}

// Once writes stop, a snapshot is written in the background: a crash
// later costs no file reads.
func TestSnapshotIsWrittenWhenWritesStop(t *testing.T) {
	noRacyWindow(t)
	old := snapshotEvery.get()
	snapshotEvery.set(20 * time.Millisecond)
	t.Cleanup(func() { snapshotEvery.set(old) })
	dir := t.TempDir()
	emb := &indextest.BagEmbedder{}
	ix := openSnap(t, dir, emb)
	if _, err := ix.Upsert(t.Context(), resource.Descriptor{Server: "s", URI: "doc://a", Name: "a"}, resource.Descriptor{Server: "s", URI: "doc://b", Name: "b"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ix.db.dirty.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot written 10 s after the last write")
		}
		time.Sleep(10 * time.Millisecond)
	}
	crash(ix)
	ix = openSnap(t, dir, emb)
	if ls := ix.loadStats; ls.fromSnapshot != 2 || ls.fromFiles != 0 {
		t.Errorf("after a crash: load %+v, want both documents from the background snapshot", ls)
	}
}

// A crash at any point of a run of writes (a descriptor changed, one
// added, one deleted, a text and its passages, and the snapshot Close
// writes) leaves an index that opens, holds each descriptor in its old or
// new version, and loads from the snapshot exactly what it loads from the
// files alone. Each crash point is tried in turn: the writer stops there
// (a temporary file it was writing is cut in half) and the index is
// abandoned without Close.
func TestCrashAtAnyWritePointLeavesALoadableIndex(t *testing.T) {
	noRacyWindow(t)
	emb := &indextest.BagEmbedder{}
	changed := resource.Descriptor{Server: "s", URI: "doc://0", Name: "doc 0", Description: "changed after the snapshot"}
	added := resource.Descriptor{Server: "s", URI: "doc://new", Name: "new"}
	writes := func(ix *Index, ds []resource.Descriptor) {
		if _, err := ix.Upsert(t.Context(), changed, added); err != nil {
			t.Error(err)
		}
		if err := ix.Delete(t.Context(), ds[1].Key()); err != nil {
			t.Error(err)
		}
		if _, err := ix.SetContents(t.Context(), Content{Key: ds[2].Key(), Stamp: ContentStamp(ds[2]), Text: sections(4, "gamma words")}); err != nil {
			t.Error(err)
		}
		if _, err := ix.EmbedPassages(t.Context(), "", 0); err != nil {
			t.Error(err)
		}
		ix.Close()
	}
	// Count the crash points.
	points := 0
	count := func(string) { points++ }
	dir := t.TempDir()
	_, ds := buildSnapIndex(t, dir, emb, 5)
	tick()
	ix := openSnap(t, dir, emb)
	crashHook.Store(&count)
	writes(ix, ds)
	crashHook.Store(nil)
	t.Logf("%d crash points", points)
	if points < 10 {
		t.Fatalf("%d crash points, want the writes' (at least 10)", points)
	}
	old := map[resource.Key]resource.Descriptor{}
	for _, d := range ds {
		old[d.Key()] = d
	}
	for k := range points {
		dir := t.TempDir()
		buildSnapIndex(t, dir, emb, 5)
		tick()
		ix, err := Open(t.Context(), Options{Dir: dir, Embedder: emb})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		stop := func(tmp string) {
			if n++; n <= k {
				return
			}
			if tmp != "" {
				if fi, err := os.Stat(tmp); err == nil {
					os.Truncate(tmp, fi.Size()/2)
				}
			}
			runtime.Goexit()
		}
		crashHook.Store(&stop)
		done := make(chan struct{})
		go func() { defer close(done); writes(ix, ds) }()
		<-done
		crashHook.Store(nil)
		ix.closeOnce.Do(func() { close(ix.closed); close(ix.snapStop); <-ix.snapDone })

		ix, err = Open(t.Context(), Options{Dir: dir, Embedder: emb})
		if err != nil {
			t.Fatalf("crash at point %d: Open: %v", k, err)
		}
		for _, d := range ix.Descriptors("") {
			if o, ok := old[d.Key()]; !(ok && cmp.Equal(d, o)) && !cmp.Equal(d, changed) && !cmp.Equal(d, added) {
				t.Errorf("crash at point %d: loaded %+v, neither its old nor its new version", k, d)
			}
		}
		for _, d := range append([]resource.Descriptor{ds[0]}, ds[2:]...) { // ds[1] may be deleted
			if _, ok := ix.Get(d.Key()); !ok {
				t.Errorf("crash at point %d: %s lost", k, d.URI)
			}
		}
		fromSnap := stateOf(t, ix)
		crash(ix)
		if m, _ := filepath.Glob(filepath.Join(dir, "*", "*.tmp")); len(m) > 0 {
			t.Errorf("crash at point %d: temporaries left after Open: %v", k, m)
		}
		if m, _ := filepath.Glob(dir + ".corrupt-*"); len(m) > 0 {
			t.Errorf("crash at point %d: index moved aside", k)
		}
		os.Remove(filepath.Join(dir, snapshotName))
		ix = openSnap(t, dir, emb)
		if fromFiles := stateOf(t, ix); !cmp.Equal(fromSnap, fromFiles, cmp.AllowUnexported(PassageHit{})) {
			t.Errorf("crash at point %d: the snapshot and the files disagree (-snapshot +files):\n%s", k, cmp.Diff(fromSnap, fromFiles, cmp.AllowUnexported(PassageHit{})))
		}
	}
}

// A damaged record (whose checksum happened to match) is an error, never
// a panic or a huge allocation.
func FuzzDecodeRecord(f *testing.F) {
	fd := fileDoc{doc: &chromem.Document{ID: "s\x00doc://a", Metadata: map[string]string{mServer: "s", mURI: "doc://a"}, Content: "text", Embedding: []float32{0.6, 0.8}},
		st: fileStat{ino: 7, size: 100, mtime: 1, ctime: 2}}
	good := appendRecord(nil, "0a78140b/274c78a1", fd)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		key, got, err := decodeRecord(b)
		if err != nil {
			return
		}
		if again := appendRecord(nil, key, got); len(again) > len(b) {
			t.Errorf("decoded %d bytes into a record of %d", len(b), len(again))
		}
	})
}

func TestRecordRoundTrip(t *testing.T) {
	fd := fileDoc{doc: &chromem.Document{ID: "id", Metadata: map[string]string{"b": "2", "a": "1"}, Content: "c", Embedding: []float32{1, -0.5, 3e-9}},
		st: fileStat{ino: 1 << 40, size: 3, mtime: -1, ctime: 1 << 62}}
	key, got, err := decodeRecord(appendRecord(nil, "dir/file", fd))
	if err != nil || key != "dir/file" || !cmp.Equal(got, fd, cmp.AllowUnexported(fileDoc{}, fileStat{})) {
		t.Errorf("round trip: %q %+v %v, want %+v", key, got, err, fd)
	}
	// A vector length that overflows 4 × dim.
	b := appendRecord(nil, "k", fileDoc{doc: &chromem.Document{ID: "x"}})
	b = binary.AppendUvarint(b[:len(b)-1], 1<<62)
	if _, _, err := decodeRecord(b); err == nil {
		t.Error("a vector length of 2^62 decoded")
	}
}

// A document file that inflates to more than any document written here
// (a vector of millions of zeros compresses to next to nothing) fails to
// read, as a torn one, without being decoded whole.
func TestADocumentFileInflatingPastItsBoundFails(t *testing.T) {
	old := maxDocFileBytes
	maxDocFileBytes = 1 << 20
	t.Cleanup(func() { maxDocFileBytes = old })
	p := filepath.Join(t.TempDir(), "0badc0d1.gob.gz")
	write := func(n int) {
		data, err := encodeDoc(&chromem.Document{ID: "s\x00x://a", Embedding: make([]float32, n)})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(2 << 20) // 2 MiB of gob: one byte a zero
	var zr *gzip.Reader
	if d, err := readDoc(p, &zr, bufio.NewReader(nil)); err == nil {
		t.Fatalf("a document inflating to 2 MiB read (%d floats); want it refused past 1 MiB", len(d.Embedding))
	}
	write(512)
	if d, err := readDoc(p, &zr, bufio.NewReader(nil)); err != nil || len(d.Embedding) != 512 {
		t.Fatalf("a small document: %v; want it read", err)
	}
}

// A collection's metadata file that holds or inflates to more than any
// written here (a map of a few settings) fails to read, unread past the
// bound: an 875 KB gzip bomb decoded to a 900 MB value, 3.8 GB resident.
func TestAMetadataFileInflatingPastItsBoundFails(t *testing.T) {
	old := maxMetaFileBytes
	maxMetaFileBytes = 64 << 10
	t.Cleanup(func() { maxMetaFileBytes = old })
	p := filepath.Join(t.TempDir(), metadataFile)
	write := func(n int, gz bool) {
		m := collMeta{Name: "descriptors", Metadata: map[string]string{"pad": strings.Repeat("0", n)}}
		data, err := encodeDoc(&m)
		if err != nil {
			t.Fatal(err)
		}
		if !gz {
			zr, err := gzip.NewReader(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, gz := range []bool{true, false} {
		write(1<<20, gz) // 1 MiB of zeros: about 1 KB of gzip
		var m collMeta
		if err := readGob(p, &m); err != errMetaTooBig {
			t.Errorf("gzip %v: a metadata file of 1 MiB read: %v (%d bytes of pad); want errMetaTooBig", gz, err, len(m.Metadata["pad"]))
		}
		write(100, gz)
		m = collMeta{}
		if err := readGob(p, &m); err != nil || m.Name != "descriptors" || len(m.Metadata["pad"]) != 100 {
			t.Errorf("gzip %v: a small metadata file: %v %q; want it read", gz, err, m.Name)
		}
	}
}
