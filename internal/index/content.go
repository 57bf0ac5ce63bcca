package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/philippgille/chromem-go"

	"github.com/contextd/contextd/internal/resource"
)

// The content-level index.
//
// Descriptors say what a resource is for; its text says what it holds. When
// the caller has read a resource (internal/sync reads text resources after
// each sync), SetContents indexes that text beside the descriptor:
//
//   - lexically, as the BM25F Content field (lexical.DefaultWeights gives it
//     a tenth of the description's weight), from the first MaxContentBytes
//     (1 MiB) of the text, so a term deep in a long page is found;
//   - densely, as passages (Passages: runs of lines of at most
//     PassageBytes, ended at headings and paragraph breaks, at most
//     MaxPassages per text), each embedded on its own: the dense score of
//     a resource with content is (1 − w)·cos(query, descriptor) +
//     w·(cos(query, passage₀) + maxᵢ cos(query, passageᵢ))/2, w =
//     Options.ContentWeight, over the passages embedded so far: what the
//     text opens with and its best passage, so a deep passage is found
//     without letting one good passage of a long text outrank what a short
//     text is about. A resource without indexed content keeps
//     cos(query, descriptor).
//
// SetContents embeds each text's first passage; EmbedPassages embeds the
// others later, the shallowest first across all texts (every text's
// second passage, then every third, …), so a big server is searchable by
// its texts' openings soon and deep passages follow.
//
// # Memory
//
// A passage's vector takes 4·d bytes (2 KiB at USE-lite's 512
// dimensions), plus its span and its stored document (metadata): 2,535
// bytes of heap per passage at 512 dimensions (BenchmarkDensePassages).
// Every text has one first passage (internal/sync indexes at most 1,000
// texts per server); the others are capped across all servers by
// Options.ContentPassages (DefaultContentPassages, 32,768: about 80 MiB at
// 512 dimensions), and per text by MaxPassages. The texts themselves are
// capped by Options.ContentBytes. Ranking scans every embedded passage:
// one dot product each.
//
// Both weights were chosen on the dev splits of the shipped eval datasets
// (eval/README.md), where every resource has a body to index. On MetaTool
// (a tool's body is its model-facing description, or its description when
// it has none) nDCG@10 goes from 0.692 to 0.709, and the queries whose
// tool has no second description to index still gain (0.648 → 0.660); on
// the Go standard library docs it goes from 0.588 to 0.743, mostly from the
// Content field. A heavier Content field helps the second kind and costs
// the first; mixing a separate BM25 list of the texts, like the passages,
// was worse on MetaTool (0.706 at best) and on the Go docs (0.740 at best).
//
// Passages replaced a single embedding of each text's first 2 KiB, and the
// whole text replaced its first 64 KiB in the Content field: on the Go
// docs' dev split nDCG@10 went from 0.726 to 0.776 (USE-lite alone 0.475 →
// 0.521, BM25F alone 0.713 → 0.756); on MetaTool's, where 9 of 199 bodies
// pass 2 KiB, from 0.709 to 0.707.
//
// Content belongs to one version of its descriptor (ContentStamp): when a
// sync changes the descriptor's size, lastModified or MIME type, the content
// is dropped, so stale text never ranks, and the caller reads it again.
// Content of a deleted descriptor is deleted with it. With Options.Dir set
// it persists in a second chromem-go collection, named like the descriptors'
// with "contents" for "descriptors": one document per embedded passage, the
// first holding the indexed text. DropContents removes a server's.

// MaxContentBytes is how much of a resource's text is indexed, in bytes
// of UTF-8 (cut at a rune).
const MaxContentBytes = 1 << 20

// DefaultContentWeight is Options.ContentWeight when zero: w in the dense
// score above.
const DefaultContentWeight = 0.5

// DefaultContentBytes is Options.ContentBytes when zero: 256 MiB of text
// across all servers, 256 texts of MaxContentBytes or about 40,000 of the
// Go docs' median size. It bounds what the content index costs in memory:
// the texts themselves (kept in the contents collection), their BM25F
// postings (at most lexical.ContentTerms distinct terms per text) and the
// passage index (PassageLexical), about 2.6 bytes of heap per byte of
// text (BenchmarkPassageWords).
const DefaultContentBytes = 256 << 20

// DefaultContentPassages is Options.ContentPassages when zero: how many
// passages after texts' first are embedded across all servers, about 80
// MiB of heap at 512 dimensions (64 MiB of it the vectors), and with
// USE-lite about 100 ms of one core each to embed.
const DefaultContentPassages = 32 << 10

// ErrContentFull is wrapped by SetContents' error when it left texts out
// because the index holds Options.ContentBytes of text; the error is a
// *ContentFullError, which says which.
var ErrContentFull = errors.New("content index full")

// A ContentFullError lists the texts SetContents left out for want of room.
type ContentFullError struct {
	// Left maps each left-out resource to its text's size, in the bytes
	// that would count against Options.ContentBytes.
	Left map[resource.Key]int
	// Cap is Options.ContentBytes, resolved.
	Cap int64
}

func (e *ContentFullError) Error() string {
	return fmt.Sprintf("index: %v: %d texts left out (the cap is %d bytes of text across all servers)", ErrContentFull, len(e.Left), e.Cap)
}

// Unwrap returns ErrContentFull.
func (e *ContentFullError) Unwrap() error { return ErrContentFull }

// A Content is the text of one resource, as read, for SetContents.
type Content struct {
	Key resource.Key
	// Stamp is ContentStamp of the descriptor the caller saw before
	// reading. SetContents ignores a Content whose descriptor has changed
	// since, so a read that raced a sync cannot attach old text to a new
	// version.
	Stamp string
	// Text is the resource's text (its text items, joined). Empty records
	// that the resource was read and had nothing to index: HasContent
	// reports true, so it is not read again until its descriptor changes.
	Text string
}

// contentInfo is what an entry knows of its indexed content.
type contentInfo struct {
	stamp string
	at    time.Time
	hash  string // textHash of the indexed text
	size  int    // bytes of the indexed text, counted against ContentBytes
	// spans are the text's passages (Passages); none when it has no words.
	spans []Span
	// vecs, parallel to spans, are the passages' unit vectors, shared with
	// the contents collection (never modified); nil until embedded. The
	// first is embedded with the text. Elements are set under ix.mu.
	vecs [][]float32
}

// hasWords reports whether c is indexed text with a passage.
func (c *contentInfo) hasWords() bool { return c != nil && len(c.spans) > 0 }

// passageID is the document ID k's i-th passage is stored under when its
// file is free (see passageDocID): the key's own for the first (as when a
// text had one passage), then "KEY\x00#i".
func passageID(k resource.Key, i int) string {
	if i == 0 {
		return k.String()
	}
	return k.String() + "\x00#" + strconv.Itoa(i)
}

// isPassageID reports whether id is one passageDocID may give k's i-th
// passage: passageID(k, i), or that with "\x00N" appended.
func isPassageID(id string, k resource.Key, i int) bool {
	base := passageID(k, i)
	if id == base {
		return true
	}
	n, ok := strings.CutPrefix(id, base+"\x00")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// A passageRef names a stored passage: key k's i-th.
type passageRef struct {
	k resource.Key
	i int
}

// passageDocID returns the document ID of k's i-th passage in the contents
// collection: the one it is stored under, else passageID(k, i) when that
// ID's file (docFile) is free, else the first of passageID(k, i)+"\x00"+N
// (N = 1, 2, …) whose file is; the ID is then k's i-th until
// releasePassages. chromem-go names a document's file by 32 bits of its
// ID's hash and writes (and deletes) that file whatever it holds, so two
// passages sharing a file would lose one at the next load. The caller
// holds wmu.
func (ix *Index) passageDocID(k resource.Key, i int) string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ids := ix.cids[k]
	if i < len(ids) && ids[i] != "" {
		return ids[i]
	}
	base := passageID(k, i)
	if e, ok := ix.docs[k]; ok && e.id == base {
		base = e.id // the same string, kept once
	}
	id := base
	for n := 1; ; n++ {
		f := docFile(id)
		if _, taken := ix.cfiles[f]; !taken && f != metadataName {
			break
		}
		id = base + "\x00" + strconv.Itoa(n)
	}
	ix.keepPassageID(k, i, id)
	return id
}

// keepPassageID records id as the document ID of k's i-th passage. The
// caller holds mu.
func (ix *Index) keepPassageID(k resource.Key, i int, id string) {
	ids := ix.cids[k]
	if i >= len(ids) {
		ids = append(ids, make([]string, i+1-len(ids))...)
	}
	ids[i] = id
	ix.cids[k] = ids
	ix.cfiles[docFile(id)] = passageRef{k: k, i: i}
}

// firstPassageID returns the document ID of k's stored first passage
// (which holds the indexed text), if any.
func (ix *Index) firstPassageID(k resource.Key) (string, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ids := ix.cids[k]; len(ids) > 0 && ids[0] != "" {
		return ids[0], true
	}
	return "", false
}

// releasePassages forgets the document IDs of k's passages from the
// from-th on and returns them, for the caller to delete. The caller holds
// wmu.
func (ix *Index) releasePassages(k resource.Key, from int) []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.releasePassagesLocked(k, from)
}

// releasePassagesLocked is releasePassages for a caller holding mu too.
func (ix *Index) releasePassagesLocked(k resource.Key, from int) []string {
	ids := ix.cids[k]
	if from >= len(ids) {
		return nil
	}
	var out []string
	for i, id := range ids[from:] {
		if id == "" {
			continue
		}
		out = append(out, id)
		if f := docFile(id); ix.cfiles[f] == (passageRef{k: k, i: from + i}) {
			delete(ix.cfiles, f)
		}
	}
	if from == 0 {
		delete(ix.cids, k)
	} else {
		ix.cids[k] = ids[:from:from]
	}
	return out
}

// ContentStamp identifies the version of a descriptor that content read now
// belongs to: its size, lastModified and MIME type, the fields that change
// when a resource's bytes do.
func ContentStamp(d resource.Descriptor) string {
	return strconv.FormatInt(d.Size, 10) + "|" + d.LastModified + "|" + d.MIMEType
}

// HasContent reports whether content is indexed for the current version of
// the descriptor stored under k (possibly empty text), and when it was set.
func (ix *Index) HasContent(k resource.Key) (bool, time.Time) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e, ok := ix.docs[k]
	if !ok || e.content == nil {
		return false, time.Time{}
	}
	return true, e.content.at
}

// FirstIndexed returns when the index first held k's descriptor: in this
// run or, kept on disk, an earlier one. ok is false when k is not indexed,
// or the time is not known (stored by an older version, or taken from a
// shared store).
func (ix *Index) FirstIndexed(k resource.Key) (time.Time, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	e, ok := ix.docs[k]
	return e.since, ok && !e.since.IsZero()
}

// ContentLen returns how many of server's descriptors (all servers when "")
// have text indexed. A resource read with no words to index (or whose
// result was private) does not count, though HasContent reports it.
func (ix *Index) ContentLen(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for k, e := range ix.docs {
		if e.content.hasWords() && (server == "" || k.Server == server) {
			n++
		}
	}
	return n
}

// ContentRoom returns how many more bytes of text the content index takes
// before it is full (Options.ContentBytes less the text it holds), at
// least 0; math.MaxInt64 when there is no cap.
func (ix *Index) ContentRoom() int64 {
	if ix.cbytes == 0 {
		return math.MaxInt64
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return max(ix.cbytes-ix.contentBytes(), 0)
}

// ContentBytes returns the text the content index holds, in bytes, all
// servers.
func (ix *Index) ContentBytes() int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.contentBytes()
}

// ServerContentBytes returns the bytes of server's text the content index
// holds (every server's when ""), as counted against Options.ContentBytes.
func (ix *Index) ServerContentBytes(server string) int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var n int64
	for k, e := range ix.docs {
		if e.content != nil && (server == "" || k.Server == server) {
			n += int64(e.content.size)
		}
	}
	return n
}

// ContentSize returns the bytes of k's indexed text, 0 when it has none.
func (ix *Index) ContentSize(k resource.Key) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if e, ok := ix.docs[k]; ok && e.content != nil {
		return e.content.size
	}
	return 0
}

// contentBytes is the text the index holds, in bytes. ix.mu must be held.
func (ix *Index) contentBytes() int64 {
	var n int64
	for _, e := range ix.docs {
		if e.content != nil {
			n += int64(e.content.size)
		}
	}
	return n
}

// DropContents removes the indexed text of every resource of server, so
// its descriptors rank alone (a server switched to index_content: false
// over a data_dir that indexed it before). It returns how many resources
// had content. Errors: ErrClosed, or the store's.
func (ix *Index) DropContents(ctx context.Context, server string) (int, error) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.isClosed() {
		return 0, ErrClosed
	}
	var descs []resource.Descriptor
	var ids []string
	ix.mu.Lock()
	ix.gen.Add(1)
	for k, e := range ix.docs {
		if k.Server != server || e.content == nil {
			continue
		}
		ids = append(ids, ix.releasePassagesLocked(k, 0)...)
		e.content = nil
		ix.docs[k] = e
		descs = append(descs, e.desc)
		ix.changed(k)
	}
	ix.mu.Unlock()
	for _, d := range descs {
		ix.lexUpsert(lexDoc(d, ""))
		ix.words.drop(d.Key())
	}
	if len(ids) > 0 {
		if err := ix.ccoll.Delete(ctx, nil, nil, ids...); err != nil {
			return len(descs), fmt.Errorf("index: drop contents of %s: %v", server, err)
		}
	}
	return len(descs), nil
}

// SetContents indexes the text of resources whose descriptors are in the
// index: its first MaxContentBytes lexically, and the vector of its first
// passage (Passages); its other passages wait for EmbedPassages. Contents
// of unknown keys, or whose Stamp no longer matches the descriptor, are
// skipped; a text the same as the one indexed (by SHA-256) only renews the
// time HasContent reports, keeping its vectors. A text that would take the
// index past Options.ContentBytes is left out, in the order given; a
// resource whose new text is left out loses the old one too, since the
// caller read it because it changed (stale text never ranks). It returns
// how many passages were embedded (one per new text with words). Errors:
// ErrClosed; an embedding error (wrapped), before anything of this call is
// stored; a store error, with the contents before the failing one stored;
// a *ContentFullError (ErrContentFull) after everything else is stored,
// when texts were left out.
func (ix *Index) SetContents(ctx context.Context, cs ...Content) (embedded int, err error) {
	// Decide and embed holding only the servers' write locks, so that one
	// server's texts do not hold up another's writes; store under wmu.
	servers := make([]string, len(cs))
	for i, c := range cs {
		servers[i] = c.Key.Server
	}
	defer ix.lockServers(servers...)()
	if ix.isClosed() {
		return 0, ErrClosed
	}
	type job struct {
		c     Content
		d     resource.Descriptor
		text  string // indexed
		hash  string // of text
		spans []Span
		vec   []float32 // of the first passage
	}
	var jobs []job
	var todo []int
	var renew []job               // the same text again
	var left map[resource.Key]int // texts left out for ContentBytes
	var drop []job                // their resources' old texts
	ix.mu.RLock()
	used := ix.contentBytes()
	for _, c := range cs {
		e, ok := ix.docs[c.Key]
		if !ok || ContentStamp(e.desc) != c.Stamp {
			continue
		}
		// A copy: the indexed text is kept (in the contents collection), and a
		// prefix of a big read would keep all of it alive.
		j := job{c: c, d: e.desc, text: strings.Clone(cutBytes(c.Text, MaxContentBytes))}
		j.hash = textHash(ix.emb.Name(), j.text)
		if e.content != nil && e.content.stamp == c.Stamp && e.content.hash == j.hash {
			renew = append(renew, j)
			continue
		}
		grow := int64(len(j.text))
		if e.content != nil {
			grow -= int64(e.content.size)
		}
		if ix.cbytes > 0 && grow > 0 && used+grow > ix.cbytes {
			if left == nil {
				left = map[resource.Key]int{}
			}
			left[c.Key] = len(j.text)
			if e.content != nil {
				used -= int64(e.content.size)
				drop = append(drop, job{c: c, d: e.desc})
			}
			continue
		}
		used += grow
		j.spans = Passages(j.text)
		if len(j.spans) > 0 {
			todo = append(todo, len(jobs))
		}
		jobs = append(jobs, j)
	}
	ix.mu.RUnlock()
	if err := ix.embedAll(ctx, len(todo), func(i int) (*[]float32, string, resource.Descriptor) {
		j := &jobs[todo[i]]
		return &j.vec, passageText(j.text, j.spans[0]), j.d
	}); err != nil {
		return 0, err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.cbytes > 0 {
		// Other servers may have stored text while these were embedded:
		// what no longer fits is left out now, as it would have been then.
		ix.mu.RLock()
		used := ix.contentBytes()
		kept := jobs[:0]
		for _, j := range jobs {
			grow := int64(len(j.text))
			e, ok := ix.docs[j.c.Key]
			if ok && e.content != nil {
				grow -= int64(e.content.size)
			}
			if grow > 0 && used+grow > ix.cbytes {
				if left == nil {
					left = map[resource.Key]int{}
				}
				left[j.c.Key] = len(j.text)
				if ok && e.content != nil {
					used -= int64(e.content.size)
					drop = append(drop, job{c: j.c, d: e.desc})
				}
				continue
			}
			used += grow
			kept = append(kept, j)
		}
		jobs = kept
		ix.mu.RUnlock()
	}
	now := time.Now()
	for _, j := range renew {
		ix.mu.RLock()
		e, ok := ix.docs[j.c.Key]
		var c contentInfo
		if ok && e.content != nil {
			c = *e.content
			c.vecs = slices.Clone(c.vecs)
		}
		ix.mu.RUnlock()
		if !ok || e.content == nil {
			continue
		}
		c.at = now
		if c.hasWords() && c.vecs[0] != nil { // the time is stored with the first passage
			if err := ix.ccoll.AddDocument(ctx, contentDoc(ix.passageDocID(j.c.Key, 0), j.c, j.text, j.hash, c.vecs[0], now)); err != nil {
				return len(todo), fmt.Errorf("index: store content of %s %q: %v", j.c.Key.Server, j.c.Key.URI, err)
			}
		}
		ix.mu.Lock()
		ix.gen.Add(1)
		if e, ok := ix.docs[j.c.Key]; ok {
			e.content = &c
			ix.docs[j.c.Key] = e
		}
		ix.mu.Unlock()
		ix.changed(j.c.Key)
	}
	for _, j := range jobs {
		if ix.isClosed() {
			return len(todo), ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return len(todo), err
		}
		info := &contentInfo{stamp: j.c.Stamp, at: now, hash: j.hash, size: len(j.text), spans: j.spans}
		if len(j.spans) > 0 {
			info.vecs = make([][]float32, len(j.spans))
			info.vecs[0] = j.vec
		}
		// The old text's passages go (all of them when there are no words).
		if err := ix.dropContentVectors(ctx, j.c.Key, min(len(j.spans), 1)); err != nil {
			return len(todo), err
		}
		if j.vec != nil {
			if err := ix.ccoll.AddDocument(ctx, contentDoc(ix.passageDocID(j.c.Key, 0), j.c, j.text, j.hash, j.vec, now)); err != nil {
				return len(todo), fmt.Errorf("index: store content of %s %q: %v", j.c.Key.Server, j.c.Key.URI, err)
			}
		}
		ix.attach(j.c.Key, info, j.text)
	}
	for _, j := range drop {
		if err := ix.dropContentVectors(ctx, j.c.Key, 0); err != nil {
			return len(todo), err
		}
		ix.attach(j.c.Key, nil, "")
	}
	if left != nil {
		return len(todo), &ContentFullError{Left: left, Cap: ix.cbytes}
	}
	return len(todo), nil
}

// passageRound is how many passages EmbedPassages embeds between checks
// that the texts they belong to are still indexed: a few seconds of work.
const passageRound = 32

// EmbedPassages embeds up to n (all when n <= 0) passages of server's
// indexed texts ("" for every server) that have no vector yet, the
// shallowest first: every text's second passage, then every third, and so
// on (ties by key), within Options.ContentPassages across all servers. It
// embeds without blocking other writes, a few dozen passages at a time,
// and stores each round; a passage whose text changed meanwhile is thrown
// away. It returns how many passages it stored; fewer than n means none is
// left that fits. Errors: ErrClosed; ctx's; an embedding error (wrapped);
// a store error. Work stored before an error is kept.
func (ix *Index) EmbedPassages(ctx context.Context, server string, n int) (embedded int, err error) {
	for n <= 0 || embedded < n {
		if ix.isClosed() {
			return embedded, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return embedded, err
		}
		want := passageRound
		if n > 0 {
			want = min(want, n-embedded)
		}
		got, err := ix.embedRound(ctx, server, want)
		embedded += got
		if err != nil || got == 0 {
			return embedded, err
		}
	}
	return embedded, nil
}

// PendingPassages returns how many passages of server's texts ("" for
// every server) EmbedPassages would embed now: those without a vector,
// within the room Options.ContentPassages leaves.
func (ix *Index) PendingPassages(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	pending, deep := 0, 0
	for k, e := range ix.docs {
		if !e.content.hasWords() {
			continue
		}
		for _, v := range e.content.vecs[1:] {
			switch {
			case v != nil:
				deep++
			case server == "" || k.Server == server:
				pending++
			}
		}
	}
	if ix.cpass > 0 {
		pending = min(pending, max(ix.cpass-deep, 0))
	}
	return pending
}

// passageJob is one passage EmbedPassages embeds.
type passageJob struct {
	k     resource.Key
	i     int
	span  Span
	stamp string
	hash  string
	text  string
	vec   []float32
}

// embedRound embeds and stores up to n pending passages, the shallowest
// first, and returns how many it stored.
func (ix *Index) embedRound(ctx context.Context, server string, n int) (int, error) {
	var jobs []passageJob
	deep := 0
	ix.mu.RLock()
	for k, e := range ix.docs {
		c := e.content
		if !c.hasWords() {
			continue
		}
		for i, v := range c.vecs {
			switch {
			case i == 0:
			case v != nil:
				deep++
			case server == "" || k.Server == server:
				jobs = append(jobs, passageJob{k: k, i: i, span: c.spans[i], stamp: c.stamp, hash: c.hash})
			}
		}
	}
	ix.mu.RUnlock()
	if ix.cpass > 0 {
		n = min(n, ix.cpass-deep)
	}
	if n <= 0 || len(jobs) == 0 {
		return 0, nil
	}
	slices.SortFunc(jobs, func(a, b passageJob) int {
		return cmp.Or(cmp.Compare(a.i, b.i), strings.Compare(a.k.Server, b.k.Server), strings.Compare(a.k.URI, b.k.URI))
	})
	jobs = jobs[:min(n, len(jobs))]
	texts := map[resource.Key]string{}
	for j := range jobs {
		job := &jobs[j]
		text, ok := texts[job.k]
		if !ok {
			if id, ok := ix.firstPassageID(job.k); ok {
				if doc, err := ix.ccoll.GetByID(ctx, id); err == nil && doc.Metadata[mHash] == job.hash {
					text = doc.Content
				}
			}
			texts[job.k] = text
		}
		if job.span.End <= len(text) {
			job.text = passageText(text, job.span)
		}
	}
	jobs = slices.DeleteFunc(jobs, func(j passageJob) bool { return j.text == "" })
	if err := ix.embedAll(ctx, len(jobs), func(i int) (*[]float32, string, resource.Descriptor) {
		j := &jobs[i]
		return &j.vec, j.text, resource.Descriptor{Server: j.k.Server, URI: j.k.URI}
	}); err != nil {
		return 0, err
	}
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	stored := 0
	for _, j := range jobs {
		if ix.isClosed() {
			return stored, ErrClosed
		}
		ix.mu.RLock()
		e, ok := ix.docs[j.k]
		c := e.content
		ok = ok && c.hasWords() && c.hash == j.hash && c.stamp == j.stamp && j.i < len(c.spans) && c.spans[j.i] == j.span && c.vecs[j.i] == nil
		ix.mu.RUnlock()
		if !ok {
			continue // the text changed or went meanwhile
		}
		if err := ix.ccoll.AddDocument(ctx, passageDoc(ix.passageDocID(j.k, j.i), j)); err != nil {
			return stored, fmt.Errorf("index: store passage %d of %s %q: %v", j.i, j.k.Server, j.k.URI, err)
		}
		ix.mu.Lock()
		ix.gen.Add(1)
		c.vecs[j.i] = j.vec
		ix.mu.Unlock()
		ix.changed(j.k)
		stored++
	}
	return stored, nil
}

// attach sets the content of the descriptor stored under k (nil clears
// it) and its lexical Content field to text; a key no longer indexed is
// left alone. The caller holds wmu.
func (ix *Index) attach(k resource.Key, info *contentInfo, text string) {
	ix.mu.Lock()
	ix.gen.Add(1)
	e, ok := ix.docs[k]
	if ok {
		e.content = info
		ix.docs[k] = e
	}
	ix.mu.Unlock()
	if ok {
		ix.lexUpsert(lexDoc(e.desc, text))
		ix.words.set(k, text)
		ix.changed(k)
	}
}

// contentDoc is how a text's first passage is stored: its vector, the
// indexed text, and what loadContents needs to attach it again.
func contentDoc(id string, c Content, text, hash string, vec []float32, at time.Time) chromem.Document {
	return chromem.Document{ID: id, Embedding: vec, Content: text, Metadata: map[string]string{
		mServer: c.Key.Server, mURI: c.Key.URI, mStamp: c.Stamp, mHash: hash,
		mAt: at.UTC().Format(time.RFC3339Nano),
	}}
}

// passageDoc is how a later passage is stored: its vector, and what ties it
// to its text (the text's hash, the passage's number and span).
func passageDoc(id string, j passageJob) chromem.Document {
	return chromem.Document{ID: id, Embedding: j.vec, Metadata: map[string]string{
		mServer: j.k.Server, mURI: j.k.URI, mStamp: j.stamp, mHash: j.hash,
		mPassage: strconv.Itoa(j.i), mSpan: spanString(j.span),
	}}
}

func spanString(sp Span) string {
	return strconv.Itoa(sp.Start) + "-" + strconv.Itoa(sp.End)
}

// dropContentVectors deletes k's stored passages from the from-th on. The
// caller holds wmu.
func (ix *Index) dropContentVectors(ctx context.Context, k resource.Key, from int) error {
	ids := ix.releasePassages(k, from)
	if len(ids) == 0 {
		return nil
	}
	if err := ix.ccoll.Delete(ctx, nil, nil, ids...); err != nil {
		return fmt.Errorf("index: delete content of %s %q: %v", k.Server, k.URI, err)
	}
	return nil
}

// contentText returns the indexed text of k ("" when none). The caller
// holds wmu.
func (ix *Index) contentText(ctx context.Context, k resource.Key) string {
	id, ok := ix.firstPassageID(k)
	if !ok {
		return ""
	}
	doc, err := ix.ccoll.GetByID(ctx, id)
	if err != nil {
		return ""
	}
	return doc.Content
}

// loadContents attaches the persisted contents to the loaded descriptors and
// deletes those whose descriptor is gone or changed, and passages that no
// longer match their text. A first passage stored without a number (a
// text indexed as one passage) is the text's first. It runs from Open.
func (ix *Index) loadContents(ctx context.Context) error {
	res := ix.ccoll.loaded()
	var stale []string
	var later []*chromem.Document
	for _, r := range res {
		if p := r.Metadata[mPassage]; p != "" && p != "0" {
			later = append(later, r)
			continue
		}
		k := resource.Key{Server: r.Metadata[mServer], URI: r.Metadata[mURI]}
		e, ok := ix.docs[k]
		// A passage vector with a NaN (or an infinity) would score NaN: it
		// goes like a stale one, and the next content pass reads it again.
		if !ok || e.content != nil || ContentStamp(e.desc) != r.Metadata[mStamp] || !isPassageID(r.ID, k, 0) || (len(r.Embedding) > 0 && !storedVector(r.Embedding, ix.emb.Dim())) {
			stale = append(stale, r.ID)
			continue
		}
		spans := Passages(r.Content)
		if len(spans) == 0 {
			stale = append(stale, r.ID)
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, r.Metadata[mAt])
		c := &contentInfo{stamp: r.Metadata[mStamp], at: at, hash: r.Metadata[mHash], size: len(r.Content),
			spans: spans, vecs: make([][]float32, len(spans))}
		c.vecs[0] = r.Embedding
		e.content = c
		ix.docs[k] = e
		ix.keepPassageID(k, 0, r.ID)
		ix.lexUpsert(lexDoc(e.desc, r.Content))
		ix.words.set(k, r.Content)
	}
	for _, r := range later {
		k := resource.Key{Server: r.Metadata[mServer], URI: r.Metadata[mURI]}
		i, _ := strconv.Atoi(r.Metadata[mPassage])
		c := ix.docs[k].content
		if !c.hasWords() || c.hash != r.Metadata[mHash] || c.stamp != r.Metadata[mStamp] || i <= 0 || i >= len(c.spans) ||
			spanString(c.spans[i]) != r.Metadata[mSpan] || !isPassageID(r.ID, k, i) || c.vecs[i] != nil {
			stale = append(stale, r.ID)
			continue
		}
		c.vecs[i] = r.Embedding
		ix.keepPassageID(k, i, r.ID)
	}
	if len(stale) > 0 {
		ix.log.Info("dropping contents of changed or removed descriptors", "count", len(stale))
		if err := ix.ccoll.Delete(ctx, nil, nil, stale...); err != nil {
			return fmt.Errorf("index: drop stale contents: %v", err)
		}
	}
	return nil
}

// cutBytes returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
