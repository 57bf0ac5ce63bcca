package index

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/philippgille/chromem-go"

	"github.com/contextd/contextd/internal/resource"
)

// The content-level index.
//
// Descriptors say what a resource is for; its text says what it holds. When
// the caller has read a resource (internal/sync reads small text resources
// after each sync), SetContents indexes that text beside the descriptor:
//
//   - lexically, as the BM25F Content field (lexical.DefaultWeights gives it
//     a tenth of the description's weight), from the first MaxContentBytes
//     of the text;
//   - densely, as the embedding of its first passage (the first
//     PassageBytes, cut at a word): the dense score of a resource with
//     content becomes (1 − w)·cos(query, descriptor) + w·cos(query, passage),
//     w = Options.ContentWeight. A resource without indexed content keeps
//     cos(query, descriptor).
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
// Content belongs to one version of its descriptor (ContentStamp): when a
// sync changes the descriptor's size, lastModified or MIME type, the content
// is dropped, so stale text never ranks, and the caller reads it again.
// Content of a deleted descriptor is deleted with it. With Options.Dir set
// it persists in a second chromem-go collection, named like the descriptors'
// with "contents" for "descriptors". DropContents removes a server's.

// Content limits.
const (
	// MaxContentBytes is how much of a resource's text is indexed
	// lexically, in bytes of UTF-8 (cut at a rune).
	MaxContentBytes = 64 << 10
	// PassageBytes is how much of the text's start is embedded, in bytes
	// (cut at a word): USE-lite reads 128 tokens, and an embedder with a
	// longer window should still embed what the resource is about rather
	// than all of it.
	PassageBytes = 2 << 10
)

// DefaultContentWeight is Options.ContentWeight when zero: w in the dense
// score above.
const DefaultContentWeight = 0.5

// DefaultContentBytes is Options.ContentBytes when zero: 256 MiB of text
// across all servers, 4,096 texts of MaxContentBytes or about 40,000 of the
// Go docs' median size. It bounds what the content index costs in memory:
// the texts themselves (kept in the contents collection) and their BM25F
// postings (at most lexical.MaxContentTerms distinct terms per text).
const DefaultContentBytes = 256 << 20

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
	// passage is the passage's unit vector, shared with the contents
	// collection (never modified); nil when the text had no words.
	passage []float32
	hash    string // textHash of the indexed text
	size    int    // bytes of the indexed text, counted against ContentBytes
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

// ContentLen returns how many of server's descriptors (all servers when "")
// have text indexed. A resource read with no words to index (or whose
// result was private) does not count, though HasContent reports it.
func (ix *Index) ContentLen(server string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for k, e := range ix.docs {
		if e.content != nil && e.content.passage != nil && (server == "" || k.Server == server) {
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
	for k, e := range ix.docs {
		if k.Server != server || e.content == nil {
			continue
		}
		if e.content.passage != nil {
			ids = append(ids, k.String())
		}
		e.content = nil
		ix.docs[k] = e
		descs = append(descs, e.desc)
	}
	ix.mu.Unlock()
	for _, d := range descs {
		ix.lex.Upsert(lexDoc(d, ""))
	}
	if len(ids) > 0 {
		if err := ix.ccoll.Delete(ctx, nil, nil, ids...); err != nil {
			return len(descs), fmt.Errorf("index: drop contents of %s: %v", server, err)
		}
	}
	return len(descs), nil
}

// SetContents indexes the text of resources whose descriptors are in the
// index. Contents of unknown keys, or whose Stamp no longer matches the
// descriptor, are skipped; a text the same as the one indexed (by SHA-256)
// only renews the time HasContent reports, without embedding. A text that
// would take the index past Options.ContentBytes is left out, in the order
// given; a resource whose new text is left out loses the old one too, since
// the caller read it because it changed (stale text never ranks). It returns how many
// passages were embedded. Errors: ErrClosed; an embedding error (wrapped),
// before anything of this call is stored; a store error, with the contents
// before the failing one stored; a *ContentFullError (ErrContentFull)
// after everything else is stored, when texts were left out.
func (ix *Index) SetContents(ctx context.Context, cs ...Content) (embedded int, err error) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.isClosed() {
		return 0, ErrClosed
	}
	type job struct {
		c       Content
		d       resource.Descriptor
		text    string // indexed lexically
		passage string // embedded
		hash    string // of text
		vec     []float32
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
		j.passage = Passage(j.text)
		if j.passage != "" {
			todo = append(todo, len(jobs))
		}
		jobs = append(jobs, j)
	}
	ix.mu.RUnlock()
	if err := ix.embedAll(ctx, len(todo), func(i int) (*[]float32, string, resource.Descriptor) {
		j := &jobs[todo[i]]
		return &j.vec, j.passage, j.d
	}); err != nil {
		return 0, err
	}
	now := time.Now()
	for _, j := range renew {
		ix.mu.RLock()
		e, ok := ix.docs[j.c.Key]
		ix.mu.RUnlock()
		if !ok || e.content == nil {
			continue
		}
		c := *e.content
		c.at = now
		if c.passage != nil { // the time is stored with the passage
			if err := ix.ccoll.AddDocument(ctx, contentDoc(j.c, j.text, j.hash, c.passage, now)); err != nil {
				return len(todo), fmt.Errorf("index: store content of %s %q: %v", j.c.Key.Server, j.c.Key.URI, err)
			}
		}
		ix.mu.Lock()
		if e, ok := ix.docs[j.c.Key]; ok {
			e.content = &c
			ix.docs[j.c.Key] = e
		}
		ix.mu.Unlock()
	}
	for _, j := range jobs {
		if ix.isClosed() {
			return len(todo), ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return len(todo), err
		}
		info := &contentInfo{stamp: j.c.Stamp, at: now, passage: j.vec, hash: j.hash, size: len(j.text)}
		if j.vec != nil {
			if err := ix.ccoll.AddDocument(ctx, contentDoc(j.c, j.text, j.hash, j.vec, now)); err != nil {
				return len(todo), fmt.Errorf("index: store content of %s %q: %v", j.c.Key.Server, j.c.Key.URI, err)
			}
		} else if err := ix.dropContentVector(ctx, j.c.Key); err != nil {
			return len(todo), err
		}
		ix.attach(j.c.Key, info, j.text)
	}
	for _, j := range drop {
		if err := ix.dropContentVector(ctx, j.c.Key); err != nil {
			return len(todo), err
		}
		ix.attach(j.c.Key, nil, "")
	}
	if left != nil {
		return len(todo), &ContentFullError{Left: left, Cap: ix.cbytes}
	}
	return len(todo), nil
}

// attach sets the content of the descriptor stored under k (nil clears
// it) and its lexical Content field to text; a key no longer indexed is
// left alone. The caller holds wmu.
func (ix *Index) attach(k resource.Key, info *contentInfo, text string) {
	ix.mu.Lock()
	e, ok := ix.docs[k]
	if ok {
		e.content = info
		ix.docs[k] = e
	}
	ix.mu.Unlock()
	if ok {
		ix.lex.Upsert(lexDoc(e.desc, text))
	}
}

// contentDoc is how a passage is stored: its vector, the indexed text, and
// what loadContents needs to attach it again.
func contentDoc(c Content, text, hash string, vec []float32, at time.Time) chromem.Document {
	return chromem.Document{ID: c.Key.String(), Embedding: vec, Content: text, Metadata: map[string]string{
		mServer: c.Key.Server, mURI: c.Key.URI, mStamp: c.Stamp, mHash: hash,
		mAt: at.UTC().Format(time.RFC3339Nano),
	}}
}

// dropContentVector deletes k's stored passage, if any. The caller holds wmu.
func (ix *Index) dropContentVector(ctx context.Context, k resource.Key) error {
	id := k.String()
	if _, err := ix.ccoll.GetByID(ctx, id); err != nil {
		return nil // none stored
	}
	if err := ix.ccoll.Delete(ctx, nil, nil, id); err != nil {
		return fmt.Errorf("index: delete content of %s %q: %v", k.Server, k.URI, err)
	}
	return nil
}

// contentText returns the indexed text of k ("" when none). The caller
// holds wmu.
func (ix *Index) contentText(ctx context.Context, k resource.Key) string {
	doc, err := ix.ccoll.GetByID(ctx, k.String())
	if err != nil {
		return ""
	}
	return doc.Content
}

// loadContents attaches the persisted contents to the loaded descriptors and
// deletes those whose descriptor is gone or changed. It runs from Open.
func (ix *Index) loadContents(ctx context.Context) error {
	n := ix.ccoll.Count()
	if n == 0 {
		return nil
	}
	probe := make([]float32, ix.emb.Dim())
	probe[0] = 1
	res, err := ix.ccoll.QueryEmbedding(ctx, probe, n, nil, nil)
	if err != nil {
		return fmt.Errorf("index: load contents: %v", err)
	}
	var stale []string
	for _, r := range res {
		k := resource.Key{Server: r.Metadata[mServer], URI: r.Metadata[mURI]}
		e, ok := ix.docs[k]
		// A passage vector with a NaN (or an infinity) would score NaN: it
		// goes like a stale one, and the next content pass reads it again.
		if !ok || ContentStamp(e.desc) != r.Metadata[mStamp] || k.String() != r.ID || (len(r.Embedding) > 0 && !validVector(r.Embedding, ix.emb.Dim())) {
			stale = append(stale, r.ID)
			continue
		}
		at, _ := time.Parse(time.RFC3339Nano, r.Metadata[mAt])
		e.content = &contentInfo{stamp: r.Metadata[mStamp], at: at, passage: r.Embedding, hash: r.Metadata[mHash], size: len(r.Content)}
		ix.docs[k] = e
		ix.lex.Upsert(lexDoc(e.desc, r.Content))
	}
	if len(stale) > 0 {
		ix.log.Info("dropping contents of changed or removed descriptors", "count", len(stale))
		if err := ix.ccoll.Delete(ctx, nil, nil, stale...); err != nil {
			return fmt.Errorf("index: drop stale contents: %v", err)
		}
	}
	return nil
}

// Passage returns the start of text that is embedded for it: at most
// PassageBytes, cut at the last white space before that (at a rune when
// there is none), with runs of white space collapsed to one space. Leading
// white space is skipped first, however long: a text has a passage exactly
// when it has a word, so a content with words always has its text stored
// with a passage (Upsert and Open take it back from there).
func Passage(text string) string {
	text = cutBytes(strings.TrimLeftFunc(text, unicode.IsSpace), PassageBytes*2)
	text = strings.Join(strings.Fields(text), " ")
	if len(text) <= PassageBytes {
		return text
	}
	cut := cutBytes(text, PassageBytes)
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return cut
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
