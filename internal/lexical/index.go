package lexical

import (
	"math"
	"net/url"
	"slices"
	"sync"
)

// A Doc is a resource descriptor as the index sees it. ID is the caller's
// key (for contextd, derived from the (server, URI) pair); it is opaque,
// and any string, including "", is a valid ID. The other fields are the
// MCP descriptor fields that are searched.
type Doc struct {
	ID          string
	Name        string
	Title       string
	Description string
	URI         string
	MIMEType    string
	// Content is the text of the resource itself, when the caller has it
	// (contextd indexes the contents of small text resources).
	Content string
	// Group names the budget the document's terms count against
	// ([Options.GroupBytes]); contextd uses the server's name, so one
	// server's resources never take another's room. Any string is valid.
	Group string
}

// A Hit is one search result.
type Hit struct {
	ID    string
	Score float64
}

// An Index is an in-memory BM25F index of [Doc]s.
//
// All methods are safe for concurrent use. Searches run in parallel with
// each other; Upsert and Delete take an exclusive lock only to apply
// already-tokenised documents, so the expensive analysis does not block
// searches.
type Index struct {
	p params // immutable after New

	// mu guards the fields that follow.
	mu       sync.RWMutex
	ids      map[string]int32     // doc ID → slot
	slots    []slot               // indexed by slot; dead slots are on free
	lens     [][numFields]uint32  // field lengths in terms, indexed by slot
	free     []int32              // dead slots available for reuse
	postings map[string][]posting // term → the documents that contain it, unordered
	totalLen [numFields]int64     // Σ field lengths over live docs, for avglen
	groups   map[string]int64     // Doc.Group → Σ slot.cost of its documents
}

// slot is one stored document.
type slot struct {
	id    string
	terms []string // distinct terms of the document
	pos   []int32  // pos[i] is the index of this document in postings[terms[i]]
	group string   // Doc.Group
	cost  int64    // the heap its terms were charged to group (termCost)
}

// A posting records that a document contains a term. Posting lists are
// plain slices, fast to scan; a deletion swaps the last entry into the
// hole and fixes that entry's slot.pos through ti, so it costs O(1) per
// term instead of a scan of the list.
type posting struct {
	slot int32
	ti   uint32 // index of the term in slots[slot].terms
	fr   freq
}

// MaxContentTerms is how many distinct terms the Content field may add to
// one document per ContentTermBytes of its text, at least MaxContentTerms
// ([ContentTerms]), in text order; later new terms are not indexed (their
// occurrences still count in the field's length). Natural text is mostly
// below it: the Go standard library's docs, cut at 64 KiB, have a median
// of 186 distinct terms, and one of 177 goes over (2,228). It bounds what a text of
// unique tokens (logs, identifiers, hashes) costs: a thousand 64 KiB texts
// of 8-hex-digit tokens took 317 MiB of heap, against 1,011 MiB uncapped.
// Scaled by length, the bound per byte of text is the same for a long
// text as for a 64 KiB one, so a cap on the bytes of text indexed bounds
// the postings too.
const MaxContentTerms = 2048

// ContentTermBytes is the bytes of Content text per distinct term allowed
// beyond MaxContentTerms: 32, so a 64 KiB text may add 2,048 terms and a
// 1 MiB one 32,768.
const ContentTermBytes = 32

// MaxDescriptorTerms is how many distinct terms the descriptor fields (all
// but Content) may add to one document, in field order (Name first); later
// new terms are not indexed (their occurrences still count in the fields'
// lengths). A descriptor of the shipped eval corpora has at most 39; a
// descriptor at the MCP client's field caps (about 10 KB of text) made of
// distinct words would otherwise add about 1,500.
const MaxDescriptorTerms = 256

// MinGroupTerms is how many of its descriptor terms (all but Content's) a
// document keeps however full its group is ([Options.GroupBytes]): a short
// descriptor's name and the first words after it, so a resource stays
// findable by its name. Content terms get no such floor.
const MinGroupTerms = 4

// Estimated heap, in bytes, charged to a document's group per term
// (termCost): a posting, the document's own copy of the term and its
// position cost postingBytes plus the term's length; the term's map entry
// and posting list, termBytes, are charged to the document of the list's
// first posting (the one that brought the term, then whichever takes its
// place).
// BenchmarkHostileServer (internal/index) checks the estimate against the
// measured heap.
const (
	postingBytes = 56
	termBytes    = 88
)

// termCost is the heap a document's term t is charged: fresh reports that
// no document holds t yet.
func termCost(t string, fresh bool) int64 {
	c := int64(postingBytes + len(t))
	if fresh {
		c += termBytes
	}
	return c
}

// ContentTerms returns how many distinct terms a Content text of n bytes
// may add to its document: max(MaxContentTerms, n / ContentTermBytes).
func ContentTerms(n int) int {
	return max(MaxContentTerms, n/ContentTermBytes)
}

// freq counts a term's occurrences per field, saturating at 65535 (far
// beyond the point where BM25's saturation makes more occurrences matter).
type freq [numFields]uint16

// New returns an empty index. opts may be nil; see [Options] for the
// defaults. New panics if opts holds an invalid parameter (NaN, b > 1,
// negative weight).
func New(opts *Options) *Index {
	return &Index{
		p:        newParams(opts),
		ids:      make(map[string]int32),
		postings: make(map[string][]posting),
		groups:   make(map[string]int64),
	}
}

// GroupBytes reports the heap, in bytes, the documents of group are
// charged for their terms ([Options.GroupBytes] bounds it; the estimate
// is per term: a posting, the term's bytes, and a map entry for a term no
// other document holds).
func (x *Index) GroupBytes(group string) int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.groups[group]
}

// Len reports the number of documents in the index.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// analyzed is a tokenised [Doc], ready to be applied under the lock.
type analyzed struct {
	id    string
	group string
	lens  [numFields]uint32
	floor int      // how many of terms a full group still takes: min(descriptor terms, MinGroupTerms)
	terms []string // distinct
	freqs []freq   // parallel to terms
}

func (x *Index) analyze(d Doc) analyzed {
	a := analyzed{id: d.ID, group: d.Group}
	texts := [numFields]string{
		fieldName:        d.Name,
		fieldTitle:       d.Title,
		fieldDescription: d.Description,
		fieldURI:         uriText(d.URI),
		fieldMIMEType:    d.MIMEType,
		fieldContent:     d.Content,
	}
	pos := make(map[string]int)
	maxContent := ContentTerms(len(d.Content))
	described := 0 // distinct terms the descriptor fields brought
	for f, text := range texts {
		if x.p.weights[f] == 0 || text == "" {
			continue
		}
		toks := Tokenize(text)
		a.lens[f] = uint32(len(toks))
		added := 0 // distinct terms this field brought
		for _, t := range toks {
			i, ok := pos[t]
			if !ok {
				if field(f) == fieldContent && added >= maxContent ||
					field(f) != fieldContent && described >= MaxDescriptorTerms {
					continue
				}
				added++
				if field(f) != fieldContent {
					described++
					a.floor = min(described, MinGroupTerms)
				}
				i = len(a.terms)
				pos[t] = i
				a.terms = append(a.terms, t)
				a.freqs = append(a.freqs, freq{})
			}
			if a.freqs[i][f] < math.MaxUint16 {
				a.freqs[i][f]++
			}
		}
	}
	return a
}

// uriText returns the URI with percent-escapes decoded, so that
// "my%20notes.md" yields the words "my notes md" and not "20notes". The URI
// is only tokenised, never interpreted.
func uriText(uri string) string {
	if s, err := url.PathUnescape(uri); err == nil {
		return s
	}
	return uri
}

// Upsert adds docs to the index, replacing any document with the same ID.
// If docs holds the same ID more than once, the last one wins. Collection
// statistics (document count, field lengths, document frequencies) are
// updated exactly.
func (x *Index) Upsert(docs ...Doc) {
	if len(docs) == 0 {
		return
	}
	as := make([]analyzed, len(docs))
	for i, d := range docs {
		as[i] = x.analyze(d)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, a := range as {
		x.remove(a.id)
		x.insert(a)
	}
}

// Delete removes the documents with the given IDs. Unknown IDs are ignored.
func (x *Index) Delete(ids ...string) {
	if len(ids) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, id := range ids {
		x.remove(id)
	}
}

// insert adds a; the caller holds x.mu and has removed a.id.
func (x *Index) insert(a analyzed) {
	var s int32
	if n := len(x.free); n > 0 {
		s = x.free[n-1]
		x.free = x.free[:n-1]
	} else {
		if len(x.slots) == math.MaxInt32 {
			panic("lexical: too many documents")
		}
		s = int32(len(x.slots))
		x.slots = append(x.slots, slot{})
		x.lens = append(x.lens, [numFields]uint32{})
	}
	// Terms are in field order, Name first: past the group's room the
	// document keeps its first descriptor terms (a.floor) and leaves the
	// rest out.
	budget, used, cost := x.p.groupBytes, x.groups[a.group], int64(0)
	pos := make([]int32, len(a.terms))
	for i, t := range a.terms {
		l, ok := x.postings[t]
		if budget > 0 {
			c := termCost(t, !ok)
			if i >= a.floor && used+cost+c > budget {
				// Copies: the full arrays would keep every term reachable.
				a.terms, pos = slices.Clone(a.terms[:i]), slices.Clone(pos[:i])
				break
			}
			cost += c
		}
		pos[i] = int32(len(l))
		x.postings[t] = append(l, posting{slot: s, ti: uint32(i), fr: a.freqs[i]})
	}
	if cost > 0 {
		x.groups[a.group] = used + cost
	}
	x.slots[s] = slot{id: a.id, terms: a.terms, pos: pos, group: a.group, cost: cost}
	x.lens[s] = a.lens
	x.ids[a.id] = s
	for f, n := range a.lens {
		x.totalLen[f] += int64(n)
	}
}

// remove deletes the document id if present; the caller holds x.mu.
func (x *Index) remove(id string) {
	s, ok := x.ids[id]
	if !ok {
		return
	}
	sl := &x.slots[s]
	for i, t := range sl.terms {
		l := x.postings[t]
		p, last := sl.pos[i], int32(len(l)-1)
		if p != last {
			l[p] = l[last]
			x.slots[l[p].slot].pos[l[p].ti] = p
		}
		l = l[:last]
		if p == 0 && len(l) > 0 && x.p.groupBytes > 0 {
			// The first posting of a list is the one charged for the
			// term's map entry (termCost): the document moved into its
			// place takes the charge over, so a group cannot hold
			// entries it is not charged for by listing a term first
			// elsewhere and then removing that document.
			o := &x.slots[l[0].slot]
			o.cost += termBytes
			x.groups[o.group] += termBytes
		}
		switch {
		case len(l) == 0:
			delete(x.postings, t)
		case cap(l) > 4 && len(l) < cap(l)/4:
			// Give memory back after deletes: a group is charged for the
			// postings its documents hold, not for the capacity that
			// others left, so a list may not stay much larger than it is.
			x.postings[t] = slices.Clone(l)
		default:
			x.postings[t] = l
		}
	}
	for f, n := range x.lens[s] {
		x.totalLen[f] -= int64(n)
	}
	if sl.cost > 0 {
		if x.groups[sl.group] -= sl.cost; x.groups[sl.group] <= 0 {
			delete(x.groups, sl.group)
		}
	}
	*sl = slot{}
	x.lens[s] = [numFields]uint32{}
	delete(x.ids, id)
	x.free = append(x.free, s)
}
