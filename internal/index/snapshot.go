package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/philippgille/chromem-go"
)

// The snapshot: every document of the index's collections in one file, so
// that Open reads one file instead of decoding one gzip'd gob file per
// document. It is a cache of those files, never the only copy: each record
// names the document file it was taken from and that file's identity
// (inode, size, modification and change times), and Open uses the record
// only while the file is still that one; it reads any other file again and
// drops the records of files gone. A snapshot that is missing, cut short or
// damaged is ignored whole (the files are read), and the next one replaces
// it.
//
// Layout (integers little-endian; docs/indexing.md has the same):
//
//	magic    "CXDSNAP1"
//	record*  u32 length n (< 0xFFFFFFFF), u32 CRC-32C of the body, body (n bytes)
//	end      u32 0xFFFFFFFF, u64 number of records, u32 CRC-32C of those 8 bytes
//
//	body     str file ("<collection dir>/<document file name without .gob.gz>")
//	         u64 inode, i64 size, i64 mtime, i64 ctime (Unix ns)
//	         str ID, uvarint m, m × (str key, str value), str content
//	         uvarint dim, dim × f32 (IEEE 754 bits)
//	str      uvarint length, bytes
//
// It is written to snapshot.tmp, synced, and renamed over the old one, so
// a crash leaves the old snapshot or the new one.
const (
	snapshotName  = "snapshot"
	snapshotMagic = "CXDSNAP1"
	snapEnd       = math.MaxUint32
	// maxSnapRecord bounds a record's length: a larger one is damage.
	maxSnapRecord = 256 << 20
)

// racyWindow: a file modified this close to the snapshot could be modified
// again within the file system's clock tick without its times changing, so
// it is left out (read from its file next time). Tests shorten it.
var racyWindow = newDuration(2 * time.Second)

// duration is a time.Duration tests may change while goroutines read it.
type duration struct{ ns atomic.Int64 }

func newDuration(d time.Duration) *duration {
	var v duration
	v.ns.Store(int64(d))
	return &v
}

func (d *duration) get() time.Duration  { return time.Duration(d.ns.Load()) }
func (d *duration) set(v time.Duration) { d.ns.Store(int64(v)) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readSnapshot returns the records of the snapshot at p by "<collection
// dir>/<file name>", or nil and why it is not used ("" when there is none).
// hint is how many records it probably holds.
func readSnapshot(p string, hint int) (map[string]fileDoc, string) {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ""
	} else if err != nil {
		return nil, err.Error()
	}
	defer f.Close()
	var left int64 // bytes after the record being read
	if fi, err := f.Stat(); err == nil {
		left = fi.Size() - int64(len(snapshotMagic))
	}
	br := bufio.NewReaderSize(f, 1<<20)
	head := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, head); err != nil || string(head) != snapshotMagic {
		return nil, "not a snapshot (bad magic)"
	}
	out := make(map[string]fileDoc, hint)
	var hdr [8]byte
	var body []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return nil, "cut short"
		}
		n, sum := binary.LittleEndian.Uint32(hdr[:4]), binary.LittleEndian.Uint32(hdr[4:])
		if n == snapEnd {
			var tail [8]byte
			copy(tail[:4], hdr[4:])
			if _, err := io.ReadFull(br, tail[4:]); err != nil {
				return nil, "cut short"
			}
			var c [4]byte
			if _, err := io.ReadFull(br, c[:]); err != nil {
				return nil, "cut short"
			}
			if crc32.Checksum(tail[:], castagnoli) != binary.LittleEndian.Uint32(c[:]) || binary.LittleEndian.Uint64(tail[:]) != uint64(len(out)) {
				return nil, "damaged end record"
			}
			return out, ""
		}
		if left -= 8 + int64(n); n > maxSnapRecord || left < 0 {
			return nil, "damaged record length"
		}
		body = slices.Grow(body[:0], int(n))[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return nil, "cut short"
		}
		if crc32.Checksum(body, castagnoli) != sum {
			return nil, "record checksum mismatch"
		}
		key, fd, err := decodeRecord(body)
		if err != nil {
			return nil, "damaged record: " + err.Error()
		}
		if _, dup := out[key]; dup {
			return nil, "duplicate record"
		}
		out[key] = fd
	}
}

// decodeRecord decodes a record's body. Its strings share one allocation.
func decodeRecord(b []byte) (string, fileDoc, error) {
	var fd fileDoc
	// Everything but the vector becomes one string, sliced below.
	r := recReader{b: b}
	key := r.str()
	if len(r.b) < 32 {
		return "", fd, errors.New("short")
	}
	fd.st = fileStat{ino: binary.LittleEndian.Uint64(r.b), size: int64(binary.LittleEndian.Uint64(r.b[8:])),
		mtime: int64(binary.LittleEndian.Uint64(r.b[16:])), ctime: int64(binary.LittleEndian.Uint64(r.b[24:]))}
	r.b = r.b[32:]
	start := len(b) - len(r.b)
	// Find where the strings end, then read them again from one string.
	scan := r
	scan.str()
	m := scan.uvarint()
	if m > uint64(len(scan.b)) {
		return "", fd, errors.New("bad metadata count")
	}
	for i := uint64(0); i < 2*m+1 && scan.err == nil; i++ {
		scan.str()
	}
	if scan.err != nil {
		return "", fd, scan.err
	}
	end := len(b) - len(scan.b)
	s := recReader{s: string(b[start:end])}
	d := &chromem.Document{ID: s.sstr()}
	d.Metadata = make(map[string]string, s.suvarint())
	for range m {
		k := s.sstr()
		d.Metadata[k] = s.sstr()
	}
	d.Content = s.sstr()
	dim := scan.uvarint()
	if scan.err != nil || dim > uint64(len(scan.b))/4 || uint64(len(scan.b)) != 4*dim {
		return "", fd, errors.New("bad vector length")
	}
	d.Embedding = make([]float32, dim)
	for i := range d.Embedding {
		d.Embedding[i] = math.Float32frombits(binary.LittleEndian.Uint32(scan.b[4*i:]))
	}
	if d.ID == "" {
		return "", fd, errors.New("no ID")
	}
	fd.doc = d
	return key, fd, nil
}

// recReader reads a record's fields from b, or from s (the same layout
// as a string, so that what it returns shares s's memory).
type recReader struct {
	b   []byte
	s   string
	err error
}

func (r *recReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errors.New("bad varint"), nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err, r.b = errors.New("bad string length"), nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *recReader) suvarint() uint64 {
	var v uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.s = r.s[i+1:]
			return v
		}
	}
	r.s = ""
	return 0
}

func (r *recReader) sstr() string {
	n := r.suvarint()
	if n > uint64(len(r.s)) {
		r.s = ""
		return ""
	}
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendRecord appends the body of the record of fd, the document in file
// key.
func appendRecord(b []byte, key string, fd fileDoc) []byte {
	b = appendStr(b, key)
	b = binary.LittleEndian.AppendUint64(b, fd.st.ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(fd.st.size))
	b = binary.LittleEndian.AppendUint64(b, uint64(fd.st.mtime))
	b = binary.LittleEndian.AppendUint64(b, uint64(fd.st.ctime))
	d := fd.doc
	b = appendStr(b, d.ID)
	b = binary.AppendUvarint(b, uint64(len(d.Metadata)))
	keys := make([]string, 0, len(d.Metadata))
	for k := range d.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = appendStr(b, k)
		b = appendStr(b, d.Metadata[k])
	}
	b = appendStr(b, d.Content)
	b = binary.AppendUvarint(b, uint64(len(d.Embedding)))
	for _, x := range d.Embedding {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// snapshot writes the snapshot of stores' documents and returns how many
// it holds. Writes may go on meanwhile: a document written after its
// record was taken has a new file, which the next Open reads.
func (db *diskDB) snapshot(stores ...*docStore) (int, error) {
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	dirty := db.dirty.Load()
	cutoff := time.Now().Add(-racyWindow.get()).UnixNano()
	type rec struct {
		key string
		fd  fileDoc
	}
	var recs []rec
	for _, s := range stores {
		s.mu.Lock()
		for name, fd := range s.files {
			if fd.st.mtime < cutoff && fd.st.ctime < cutoff {
				recs = append(recs, rec{s.sub + "/" + name, fd})
			}
		}
		s.mu.Unlock()
	}
	p := filepath.Join(db.dir, snapshotName)
	tmp := p + ".tmp"
	err := func() error {
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w := bufio.NewWriterSize(f, 1<<20)
		w.WriteString(snapshotMagic)
		var body []byte
		var hdr [8]byte
		for _, r := range recs {
			body = appendRecord(body[:0], r.key, r.fd)
			binary.LittleEndian.PutUint32(hdr[:4], uint32(len(body)))
			binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(body, castagnoli))
			w.Write(hdr[:])
			w.Write(body)
		}
		var end [16]byte
		binary.LittleEndian.PutUint32(end[:4], snapEnd)
		binary.LittleEndian.PutUint64(end[4:12], uint64(len(recs)))
		binary.LittleEndian.PutUint32(end[12:], crc32.Checksum(end[4:12], castagnoli))
		w.Write(end[:])
		if err := w.Flush(); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		crashPoint(tmp)
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
		if d, err := os.Open(db.dir); err == nil {
			d.Sync()
			d.Close()
		}
		crashPoint("")
		return nil
	}()
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("index: write snapshot: %w", err)
	}
	db.dirty.Add(-dirty)
	return len(recs), nil
}
