package index

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"

	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/resource"
)

// passageDepth is how many passages PassageLexical scores per descriptor it
// returns: a long text can hold many of the best passages, and the list
// should still reach past it.
const passageDepth = 4

// MaxPassageWordsBytes is the most text, across all servers, whose
// passages the passage index holds: 32 MiB. Its heap cost per byte of text
// depends on how many distinct words a passage has: about 2.6 bytes for Go
// source (BenchmarkPassageWords), up to about 17 for text of unique tokens,
// so at most about 550 MiB. A text that would pass the bound is left out
// of the passage list (rank.List.Known: it ranks by its other scores, as a
// short text does) until texts already in it leave.
const MaxPassageWordsBytes = 32 << 20

// ServerPassageWordsBytes bounds the heap one server's passages take in
// the passage index, as lexical.Index.GroupBytes estimates it: 64 MiB.
// Natural text stays below it (Go source takes about 2.6 bytes of heap a
// byte, so about 25 MiB of it); text of unique tokens reaches it after
// about 4 MiB, and its later passages are left out of the passage index.
const ServerPassageWordsBytes = 64 << 20

// ServerLexicalBytes bounds the heap one server's descriptors and texts
// take in the BM25F index, as lexical.Index.GroupBytes estimates it: 128
// MiB, Options.Lexical's default GroupBytes. Real catalogues stay below
// it: the scale benchmarks' synthetic 100,000 descriptors (a two-word
// name, twelve words of description, a URI with a number) take 104 MiB. A
// server listing descriptors, or serving texts, of words no other
// resource has reaches it, and its later documents keep only their first
// lexical.MinGroupTerms descriptor terms (their name's, first) and no
// content terms (BenchmarkHostileServer). Those few terms are charged past
// the share: at most about 60 MiB more at 100,000 descriptors.
const ServerLexicalBytes = 128 << 20

// passageWords is the lexical index of every passage of every indexed text,
// all of them and not only the MaxPassages that get a vector, each a
// document of BM25 over its words alone. It finds the one passage of a long
// text that answers a query, which the text's own BM25F Content field, one
// long field normalised by the whole text's length, cannot: a 288 KB page
// that holds the answer in one paragraph scores like a page that mentions
// the query's words in passing.
type passageWords struct {
	x *lexical.Index

	mu    sync.Mutex
	n     map[resource.Key]int // passages indexed per text
	size  map[resource.Key]int // bytes of text indexed per text
	total int                  // Σ size
	max   int                  // MaxPassageWordsBytes, or a test's bound
	// long holds the keys named by a hash (see prefix), by that name.
	long map[string]resource.Key
}

func newPassageWords() *passageWords {
	return &passageWords{
		x:    lexical.New(&lexical.Options{Weights: lexical.FieldWeights{Content: 1}, GroupBytes: ServerPassageWordsBytes}),
		n:    make(map[resource.Key]int),
		size: make(map[resource.Key]int),
		max:  MaxPassageWordsBytes,
		long: make(map[string]resource.Key),
	}
}

// maxPlainKeyBytes is the longest key (Key.String) whose passages' IDs
// hold it whole. A longer one (a URI may take 4 KiB, and a long text has
// thousands of passages) is named by a hash, so that a passage's ID
// costs tens of bytes, not its key's length: whole, a server's IDs took
// as much heap as its texts.
const maxPlainKeyBytes = 256

// prefix returns what the IDs of k's passages begin with: k.String(),
// or for a key longer than maxPlainKeyBytes "\x01" and its SHA-256 in hex.
// The caller holds mu; a hash name is recorded in long when keep.
func (p *passageWords) prefix(k resource.Key, keep bool) string {
	if len(k.Server)+1+len(k.URI) <= maxPlainKeyBytes {
		return k.String()
	}
	h := sha256.Sum256([]byte(k.String()))
	name := "\x01" + hex.EncodeToString(h[:])
	if keep {
		p.long[name] = k
	}
	return name
}

// passageWordsID is the lexical document ID of the i-th passage of the key
// whose passages' IDs begin with prefix: prefix, "\x00#" and i.
func passageWordsID(prefix string, i int) string {
	return prefix + "\x00#" + strconv.Itoa(i)
}

// key returns the key of a passage's lexical document ID.
func (p *passageWords) key(id string) (resource.Key, bool) {
	i := strings.LastIndex(id, "\x00#")
	if i < 0 {
		return resource.Key{}, false
	}
	if strings.HasPrefix(id, "\x01") {
		p.mu.Lock()
		defer p.mu.Unlock()
		k, ok := p.long[id[:i]]
		return k, ok
	}
	return resource.ParseKey(id[:i])
}

// set replaces k's passages with those of text ("" removes them). A text
// of one passage is not indexed: its passage is the whole text, which the
// descriptor's own BM25F Content field and dense score already weigh, and
// listing it again would only add weight to words where a resource's text
// is as short as its description (as in tool catalogues). Callers
// serialise set and drop for one key.
func (p *passageWords) set(k resource.Key, text string) {
	spans := cutPassages(text)
	if len(spans) < 2 {
		spans = nil
	}
	p.mu.Lock()
	old := p.n[k]
	p.total -= p.size[k]
	if len(spans) > 0 && p.total+len(text) > p.max {
		spans = nil // no room: left out, as a text of one passage is
	}
	prefix := p.prefix(k, len(spans) > 0)
	if len(spans) == 0 {
		delete(p.n, k)
		delete(p.size, k)
		delete(p.long, prefix)
	} else {
		p.n[k] = len(spans)
		p.size[k] = len(text)
		p.total += len(text)
	}
	p.mu.Unlock()
	docs := make([]lexical.Doc, len(spans))
	for i, sp := range spans {
		docs[i] = lexical.Doc{ID: passageWordsID(prefix, i), Content: text[sp.Start:sp.End], Group: k.Server}
	}
	if old > len(spans) {
		ids := make([]string, 0, old-len(spans))
		for i := len(spans); i < old; i++ {
			ids = append(ids, passageWordsID(prefix, i))
		}
		p.x.Delete(ids...)
	}
	if len(docs) > 0 {
		p.x.Upsert(docs...)
	}
}

// drop removes the passages of keys.
func (p *passageWords) drop(keys ...resource.Key) {
	var ids []string
	p.mu.Lock()
	for _, k := range keys {
		prefix := p.prefix(k, false)
		for i := range p.n[k] {
			ids = append(ids, passageWordsID(prefix, i))
		}
		delete(p.long, prefix)
		delete(p.n, k)
		p.total -= p.size[k]
		delete(p.size, k)
	}
	p.mu.Unlock()
	if len(ids) > 0 {
		p.x.Delete(ids...)
	}
}

// HasPassages reports whether k's indexed text is in the passage index
// (PassageLexical): it has two passages or more.
func (ix *Index) HasPassages(k resource.Key) bool {
	ix.words.mu.Lock()
	defer ix.words.mu.Unlock()
	return ix.words.n[k] > 0
}

// PassageLexical returns up to n descriptors whose indexed text holds a
// passage matching query, best first, each scored by its best passage's
// BM25 (over that passage's words only, k1 1.2, b 0.75). n <= 0 means all.
// Descriptors without indexed text, or with no passage sharing a term with
// the query, are not returned.
func (ix *Index) PassageLexical(query string, n int, f Filter) []Hit {
	depth := 0
	if n > 0 {
		depth = n * passageDepth
	}
	ph := ix.words.x.Search(query, depth, ix.lexKeep(f, ix.words.key))
	seen := make(map[resource.Key]bool, len(ph))
	var hits []Hit
	for _, h := range ph { // best first: a key's first passage is its best
		k, ok := ix.words.key(h.ID)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		hits = append(hits, Hit{Key: k, Score: h.Score})
		if n > 0 && len(hits) == n {
			break
		}
	}
	return hits
}
