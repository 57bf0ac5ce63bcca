package mcp

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/contextd/contextd/internal/resource"
)

// InstanceMetaKey is the _meta key under which contextd's own MCP server
// names its process in every initialize (and server/discover) result:
// Instance's value. A contextd whose configuration lists its own
// mcp_listen (a host file read as is, a bridge such as mcp-remote to it)
// would otherwise mirror itself, one level deeper at each list_changed it
// sends itself, every read going round through its own endpoint.
const InstanceMetaKey = "contextd/instance"

var instance = rand.Text()

// Instance returns this process's instance name: 26 random base32
// characters, drawn at start.
func Instance() string { return instance }

// ErrSelf is the error of a connect to a server that is this contextd
// itself.
var ErrSelf = errors.New("the server is this contextd itself (its own mcp_listen, directly or through a bridge): not mirrored; remove that entry from the configuration")

// isSelf reports whether meta, an initialize or discover result's _meta,
// names this process.
func isSelf(meta map[string]any) bool {
	v, ok := meta[InstanceMetaKey].(string)
	return ok && v == instance
}

// ServedLists is what one process's MCP server tells its mirrors of what
// it served: when it last listed a page of resources (NoteListed), and
// the reads it answered (NoteRead). A bridge in front of contextd, that
// contextd also mirrors, passes back what it took from contextd: renamed
// (hub://up/<hash>), rewritten, mixed with its own entries; mirrored and
// listed again, it would come back one level deeper at each list. Its
// reads of what it took go through contextd (ServedBack tells copies of
// them), and its list grows with what contextd lists (Hold, Freeze). The
// engine holds one, shared by its mirrors and its MCP server. A nil
// *ServedLists remembers nothing. Safe for concurrent use.
type ServedLists struct {
	mu    sync.Mutex
	reads []servedRead // oldest first, at most maxServedReads
	// sets keeps the shingle sets of texts ServedBack compared.
	sets shingleMemo
	// withheld are the servers the MCP server lists nothing of (see
	// Withhold), until when (zero: for the run; see Repointed); gen
	// counts its changes.
	withheld map[string]time.Time
	gen      int
	// copies holds the resources last found copies (see NoteCopy), by
	// server; own those of withheld servers last read and found their
	// own (see NoteOwn).
	copies map[string]map[string]bool
	own    map[string]map[string]bool
	// restoredCopies holds, by server, the copies Restore brought back
	// that this run has not told since, under uriKey of their URIs (the
	// record keeps no URI: a server's URIs may each be kilobytes), each
	// with whether it was passed back.
	restoredCopies map[string]map[uint64]bool
	// besideCopies holds, by server, resources first listed with or
	// after a copy passed back, and when they were noted (see
	// NoteBesideCopies).
	besideCopies map[string]map[string]time.Time
	// lastPage is when the MCP server last listed a page (NoteListed).
	lastPage time.Time
	// grown is when the MCP server's list gained entries, and how many
	// (NoteAdded), oldest first, at most maxListGrowths.
	grown []ListGrowth
	// held (until when) and frozen are the servers whose resources the
	// MCP server lists no more of than it did (see Hold, Freeze).
	held   map[string]time.Time
	frozen map[string]time.Time
	// checked are the servers whose new resources the MCP server lists
	// once read, until when (see Check).
	checked map[string]time.Time
	// paced holds, by server, how many of its new resources wait for
	// their pace to be listed (see NotePaced).
	paced map[string]int
	// journal holds the entries noted since the last MarshalBinary or
	// Journal, once journaling (see servedstate.go); journalLost says
	// some were not kept.
	journaling, journalLost bool
	// written counts the reads written (MarshalBinary, Journal) in this
	// run: where each stands (see maxRepeatLag).
	written uint64
	journal []byte
}

// A servedRead is a resources/read the MCP server answered.
type servedRead struct {
	key    resource.Key // the resource read: its server and URI there
	digest [32]byte     // of its contents (contentsDigest)
	sketch []uint64     // of its shingles (see nearcopy.go); nil if too few
	short  bool         // its contents are under MinDigestBytes
	// private: its contents were for the requesting user only (see
	// NotePrivateRead).
	private bool
	// origin is set when no read of another resource with its text was
	// remembered when it was first answered: it may be the text's
	// origin (see copyOf). A bridge's copy, answered while what it
	// copies is remembered, never is.
	origin bool
	// first and at are when it was first and last answered (a read of
	// the same text again moves it last, see NoteRead); prev when it was
	// answered before at, in this run (zero if not).
	first, at, prev time.Time
	// written is where it was last written (ServedLists.written then),
	// in this run; 0 if not yet.
	written uint64
}

// maxServedReads bounds the reads remembered (a quarter more at times):
// a key, 32 bytes and a sketch of 256 bytes each.
const maxServedReads = 4096

// maxPerText bounds the reads of one text remembered (of different
// resources, the first answered and the latest): a text served under many URIs (a template's,
// pins) would push every other out of the bound.
const maxPerText = 4

// maxRepeatLag is how many reads may be written after a read before the
// same text read again is written again: a restore keeps the latest
// maxServedReads and a quarter in the order written, and a text read
// again is written at most twice the lag behind, so it stays among them;
// one polled while nothing else is read is written once, and so are up
// to that many polled in turn.
const maxRepeatLag = maxServedReads / 2

// addRead appends r to reads as the latest: the same text read again is
// one read, moved last (a host polling one resource would push every
// other out of the bound), taking the first time of the one it replaces;
// and of a text read under more than maxPerText resources the oldest
// read is dropped, save the one first answered: that resource is the
// text's origin (see copyOf), and a bridge passing the text back under
// new URIs must not push it out. repeat says it replaced a read of the same text of the
// same resource written fewer than maxRepeatLag reads before written, the
// count of reads written so far (r then keeps where that one stands).
func addRead(reads []servedRead, r servedRead, written uint64) (_ []servedRead, repeat bool) {
	same, origin := -1, -1
	others := 0
	for i := len(reads) - 1; i >= 0; i-- {
		switch {
		case reads[i].digest != r.digest:
		case reads[i].key == r.key:
			same = i
		default:
			others++
			if origin < 0 || !reads[origin].first.Before(reads[i].first) {
				origin = i
			}
		}
	}
	if same >= 0 && origin >= 0 && reads[same].first.Before(reads[origin].first) {
		origin = -1 // r's resource is the origin, kept as the one it replaces
	}
	r.origin = others == 0
	drop := []int{}
	if same >= 0 {
		if w := reads[same].written; w != 0 && written-w < maxRepeatLag {
			repeat, r.written = true, w
		}
		r.first = minTime(r.first, reads[same].first)
		r.origin = reads[same].origin
		r.prev = reads[same].at
		r.private = r.private || reads[same].private
		drop = append(drop, same)
	}
	if others >= maxPerText {
		for i := range reads {
			if i != origin && i != same && reads[i].digest == r.digest {
				drop = append(drop, i) // the oldest read
				break
			}
		}
	}
	slices.Sort(drop)
	for i := len(drop) - 1; i >= 0; i-- {
		reads = slices.Delete(reads, drop[i], drop[i]+1)
	}
	return append(reads, r), repeat
}

// MinDigestBytes is the least contents a read must hold to be told by
// them: two empty or one-word resources are alike anywhere. Reads of
// fewer (not none) are told apart from those only, and a copy of one is
// a Short copy.
const MinDigestBytes = 64

// NoteListed records that the MCP server listed a page of resources.
func (s *ServedLists) NoteListed() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastPage = time.Now()
}

// A ListGrowth is a time the MCP server's resource list gained entries.
type ListGrowth struct {
	At    time.Time
	Added int // entries new or changed then
}

// maxListGrowths bounds the growths remembered (see NoteAdded): an
// hour and more of a list growing every 5 s, 24 bytes each.
const maxListGrowths = 1024

// NoteAdded records that the MCP server's list gained added entries (new
// or changed) now. A bridge passing back what contextd lists grows a lag
// after each time it did, and pauses as long as it was still (see
// Stillness).
func (s *ServedLists) NoteAdded(added int) {
	if s == nil || added <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.grown) >= maxListGrowths+maxListGrowths/4 {
		s.grown = slices.Delete(s.grown, 0, len(s.grown)-maxListGrowths)
	}
	s.grown = append(s.grown, ListGrowth{At: time.Now(), Added: added})
}

// Stillness returns the stillness of the MCP server's list up to t: the
// last time it gained entries before t (last) and the first at or after
// t (next; a hold's end is when what it kept off is listed). ok is false
// if either is not known: none recorded at or after t yet, or none
// before t still remembered (maxListGrowths).
func (s *ServedLists) Stillness(t time.Time) (last, next ListGrowth, ok bool) {
	if s == nil {
		return last, next, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := slices.BinarySearchFunc(s.grown, t, func(g ListGrowth, t time.Time) int {
		if g.At.Before(t) {
			return -1
		}
		return 1
	})
	if i == 0 || i == len(s.grown) {
		return last, next, false
	}
	return s.grown[i-1], s.grown[i], true
}

// GrewSince reports whether the MCP server's list gained entries at or
// after t (NoteAdded).
func (s *ServedLists) GrewSince(t time.Time) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.grown) > 0 && !s.grown[len(s.grown)-1].At.Before(t)
}

// contentsDigest returns a digest of cs's texts and blobs, in order, and
// their bytes; the URIs and MIME types, which a bridge may replace, are
// left out. Callers pass texts as they read (see readable).
func contentsDigest(cs []resource.Content) ([32]byte, int) {
	h := sha256.New()
	n := 0
	for _, c := range cs {
		if c.IsBlob {
			h.Write([]byte{1})
			h.Write(c.Blob)
			n += len(c.Blob)
		} else {
			h.Write([]byte{0})
			h.Write([]byte(c.Text))
			n += len(c.Text)
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	return d, n
}

// NoteRead records a resources/read the MCP server answered: contents, of
// the resource k.
func (s *ServedLists) NoteRead(k resource.Key, contents []resource.Content) {
	s.noteRead(k, contents, false, false)
}

// NotePrivateRead is NoteRead for contents their server marked for the
// requesting user only: remembered as any, but never written
// (MarshalBinary, Journal).
func (s *ServedLists) NotePrivateRead(k resource.Key, contents []resource.Content) {
	s.noteRead(k, contents, true, false)
}

// NotePart is NoteRead (NotePrivateRead if private) for a part of k's
// text handed out (a section, a head cut to fit): remembered by its
// digest alone, with no sketch. A bridge passes a part back as it got it,
// an exact copy; but a page holding it nearly whole among lines of its
// own (a licence's paragraph in a README) is no near copy of it.
func (s *ServedLists) NotePart(k resource.Key, contents []resource.Content, private bool) {
	s.noteRead(k, contents, private, true)
}

func (s *ServedLists) noteRead(k resource.Key, contents []resource.Content, private, part bool) {
	if s == nil {
		return
	}
	contents = readable(contents)
	d, n := contentsDigest(contents)
	if n == 0 {
		return
	}
	var sketch []uint64
	if n >= MinDigestBytes && !part {
		sketch = sketchOf(contents)
	}
	now := time.Now()
	r := servedRead{key: k, digest: d, sketch: sketch, short: n < MinDigestBytes, private: private, first: now, at: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	var repeat bool
	s.reads, repeat = addRead(s.reads, r, s.written)
	if !repeat {
		// A text polled is written again once others were (a rule in
		// time, once a minute, let a page re-read each 59 s among 45
		// texts a second fall behind 5,120 others where it was written).
		last := &s.reads[len(s.reads)-1]
		if !last.private {
			s.written++
			last.written = s.written
		}
		s.journalRead(last)
	}
	// Cut back a quarter past the bound, not at each read: a cut moves
	// them all.
	if n := len(s.reads); n > maxServedReads+maxServedReads/4 {
		s.reads = append(s.reads[:0:0], s.reads[n-maxServedReads:]...)
	}
}

// A Copy is what ServedBack found a read to be.
type Copy struct {
	// Of are resources the MCP server answered a read of with what the
	// read holds (at most maxCopyOf: other servers' first, then at least
	// one of k's own server's if any); none if it is no copy.
	Of []resource.Key
	// Near is set when it holds that text rewritten (see nearcopy.go),
	// not as it was, give or take three lines at either end.
	Near bool
	// Short is set when it is a text under MinDigestBytes, as it was:
	// two honest notes may well say the same few words.
	Short bool
	// Own is set when a read of another resource of k's own server
	// matched (whether or not Of, cut at maxCopyOf, still holds it).
	Own bool
	// Equal is set when a read matched as a whole: not with lines added
	// or cut, nor rewritten. Short copies are always equal.
	Equal bool
	// First and Last are, for each of Of, when the first and the last
	// of its remembered reads that matched were answered (the first
	// since it entered Of; reads are remembered up to maxServedReads).
	First, Last []time.Time
	// Prev are, for each of Of, when the matching read before the last
	// was answered, in this run (zero if none was).
	Prev []time.Time
}

// Other reports whether c is a copy of another server's resource than
// server's.
func (c Copy) Other(server string) bool {
	return len(c.Of) > 0 && c.Of[0].Server != server
}

const maxCopyOf = 8

// minCopyWords is the least words with a letter a text must hold to be
// taken for a copy of another (see wordy).
const minCopyWords = 3

// wordy reports whether contents' texts hold minCopyWords words with a
// letter in them, or contents hold a blob of MinDigestBytes or more.
// Texts of fewer words are alike by chance, not by copying: an empty JSON
// object, a blank file, "null", "TODO", a version number, a page of
// markup that folds to nothing; a repository has many, and two servers'
// were taken for short copies of each other. So are blobs of a few bytes
// (a 1×1 image).
func wordy(contents []resource.Content) bool {
	n := 0
	for _, c := range contents {
		if c.IsBlob {
			if len(c.Blob) >= MinDigestBytes {
				return true
			}
			continue
		}
		in, letter := false, false
		for _, r := range c.Text {
			if wordRune(r) {
				in = true
				letter = letter || unicode.IsLetter(r)
				continue
			}
			if in && letter {
				if n++; n >= minCopyWords {
					return true
				}
			}
			in, letter = false, false
		}
		if in && letter {
			if n++; n >= minCopyWords {
				return true
			}
		}
	}
	return false
}

// ServedBack reports what contents, what k's server answered a read of k
// with, are a copy of: the resources the MCP server answered a read of
// with them (one of the last maxServedReads; a text with up to three
// lines added at its start or end matches), or, failing that, with a
// text they hold nearly whole, rewritten (Near; see nearcopy.go); of
// contents under MinDigestBytes, a read of as few bytes answered with
// them (Short). Such a k is a resource contextd serves passed back by a
// bridge that read it from contextd (when contextd read k, or ahead of
// time), or an honest copy of a text a host read from contextd (a
// server's boilerplate, another server's page, another version of it).
// It is none if the MCP server answered k with them before any of
// those: they copy k.
func (s *ServedLists) ServedBack(k resource.Key, contents []resource.Content) Copy {
	if s == nil {
		return Copy{}
	}
	s.mu.Lock()
	none := len(s.reads) == 0
	s.mu.Unlock()
	if none {
		return Copy{} // nothing to compare: nothing was answered
	}
	contents = readable(contents)
	if !wordy(contents) {
		return Copy{} // no evidence: see wordy
	}
	if d, n := contentsDigest(contents); n > 0 && n < MinDigestBytes {
		s.mu.Lock()
		defer s.mu.Unlock()
		c := s.copyOf(k, func(r *servedRead) bool { return r.short && r.digest == d })
		c.Short = len(c.Of) > 0
		c.Equal = c.Short
		return c
	}
	ds := trimmedDigests(contents)
	if len(ds) == 0 {
		return Copy{}
	}
	whole, _ := contentsDigest(contents)
	equal := false
	s.mu.Lock()
	c := s.copyOf(k, func(r *servedRead) bool {
		equal = equal || r.key != k && r.digest == whole
		return ds[r.digest]
	})
	s.mu.Unlock()
	if len(c.Of) > 0 {
		c.Equal = equal
		return c
	}
	set := s.sets.get(whole, contents)
	s.mu.Lock()
	defer s.mu.Unlock()
	c = s.copyOf(k, func(r *servedRead) bool { return holdsSketch(set, r.sketch) })
	c.Near = len(c.Of) > 0
	return c
}

// copyOf returns the remembered reads of other resources than k that
// match, other servers' first, and the server's own after, at least one
// of them if any matched. s.mu is held.
func (s *ServedLists) copyOf(k resource.Key, match func(*servedRead) bool) Copy {
	var others, own []resource.Key
	type span struct{ first, last, prev time.Time }
	spans := map[resource.Key]*span{}
	var ownFirst, othersFirst time.Time // k's and the others' first matching reads
	ownOrigin := false                  // k's first matching read may be the origin
	for i := range s.reads {
		r := &s.reads[i]
		if r.key == k {
			if match(r) && (ownFirst.IsZero() || r.first.Before(ownFirst)) {
				ownFirst, ownOrigin = r.first, r.origin
			}
			continue
		}
		if len(spans) > 0 {
			if sp := spans[r.key]; sp != nil {
				if match(r) {
					sp.first, sp.last, sp.prev = minTime(sp.first, r.first), r.at, maxTime(sp.last, r.prev)
					othersFirst = minTime(othersFirst, r.first)
				}
				continue
			}
		}
		if !match(r) {
			continue
		}
		if othersFirst.IsZero() || r.first.Before(othersFirst) {
			othersFirst = r.first
		}
		if r.key.Server != k.Server {
			others = append(others, r.key)
			if len(others) > maxCopyOf {
				delete(spans, others[0])
				others = others[1:] // the latest kept
			}
		} else if len(own) < maxCopyOf {
			own = append(own, r.key)
		} else {
			continue
		}
		spans[r.key] = &span{r.first, r.at, r.prev}
	}
	c := Copy{Own: len(own) > 0}
	if len(others)+len(own) == 0 {
		return c
	}
	if ownOrigin && ownFirst.Before(othersFirst) {
		// k was answered with it before any other, and none was
		// remembered then: they copy k (a host reading a bridge's
		// copies must not make the page they copy one of them). Not if
		// k's first read came after another's, since forgotten (pushed
		// out of the bound, private across a restart, of a server
		// removed): a bridge's copy would be its text's origin then.
		return Copy{}
	}
	slices.Reverse(others) // the latest read first
	c.Of = append(others[:min(len(others), maxCopyOf-min(len(own), 1))], own...)
	c.Of = c.Of[:min(len(c.Of), maxCopyOf)]
	for _, o := range c.Of {
		c.First = append(c.First, spans[o].first)
		c.Last = append(c.Last, spans[o].last)
		c.Prev = append(c.Prev, spans[o].prev)
	}
	return c
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// NoteCopy records whether k is (still) a copy of a resource contextd
// served, of any kind (see ServedBack): a withheld server's copies are not
// listed, save those listed before it was withheld that were not passed
// back (see NotePassedBack).
func (s *ServedLists) NoteCopy(k resource.Key, copied bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if copied {
		delete(s.own[k.Server], k.URI)
	}
	m := s.copies[k.Server]
	_, was := m[k.URI]
	restored, back := s.restoredCopy(k)
	if restored {
		delete(s.restoredCopies[k.Server], uriKey(k.URI)) // told again now
	}
	switch {
	case !copied:
		if was || restored {
			delete(m, k.URI)
			s.journalEntry(entryCopy, copyPayload(nil, k.Server, uriKey(k.URI), copyNone))
		}
	case was:
	case len(m) < maxCopies:
		if m == nil {
			m = map[string]bool{}
			if s.copies == nil {
				s.copies = map[string]map[string]bool{}
			}
			s.copies[k.Server] = m
		}
		m[k.URI] = back // passed back before a restart, it still was
		if !restored {
			s.journalEntry(entryCopy, copyPayload(nil, k.Server, uriKey(k.URI), copyFound))
		}
	}
}

// restoredCopy reports whether k is among the copies Restore brought back
// and this run has not told since, and whether it was passed back. s.mu
// is held.
func (s *ServedLists) restoredCopy(k resource.Key) (copied, back bool) {
	r := s.restoredCopies[k.Server]
	if len(r) == 0 {
		return false, false
	}
	back, copied = r[uriKey(k.URI)]
	return copied, back
}

// NotePassedBack records that k, a copy (NoteCopy) that counts towards
// withholding its server, was first listed after contextd's MCP server
// answered a read of what it copies: passed back, as a bridge does, not
// a page two servers shared before a host read it. Such a copy leaves
// the MCP server's list once its server is withheld, even if listed
// before (a bridge answering reads of its copies slowly had a burst of
// them listed before two were read).
func (s *ServedLists) NotePassedBack(k resource.Key) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.copies[k.Server]; m != nil {
		if back, ok := m[k.URI]; ok && !back {
			m[k.URI] = true
			s.journalEntry(entryCopy, copyPayload(nil, k.Server, uriKey(k.URI), copyPassedBack))
		}
	}
}

// NoteBesideCopies records that server's resources under uris were first
// listed in the list that brought a copy passed back (NotePassedBack), or
// a later one: a bridge lists what it passes back in bursts, and reads of
// its copies may each take a while. Of a withheld server, the MCP server
// lists such a resource once the content pass read it and found it no
// copy, or after a while unread (see BesideCopies). At most maxCopies are
// kept a server; one noted before keeps its time.
func (s *ServedLists) NoteBesideCopies(server string, uris []string) {
	if s == nil || len(uris) == 0 {
		return
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.besideCopies[server]
	if m == nil {
		m = map[string]time.Time{}
		if s.besideCopies == nil {
			s.besideCopies = map[string]map[string]time.Time{}
		}
		s.besideCopies[server] = m
	}
	for _, uri := range uris {
		if _, ok := m[uri]; !ok && len(m) < maxCopies {
			m[uri] = now
		}
	}
}

// BesideCopies reports whether k was noted by NoteBesideCopies, and when.
func (s *ServedLists) BesideCopies(k resource.Key) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.besideCopies[k.Server][k.URI]
	return at, ok
}

// IsPassedBack reports whether k is a copy passed back (see
// NotePassedBack).
func (s *ServedLists) IsPassedBack(k resource.Key) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if back, ok := s.copies[k.Server][k.URI]; ok {
		return back
	}
	_, back := s.restoredCopy(k)
	return back
}

// NoteOwn records that a read of k, a resource of a withheld server
// (Withhold), answered a text of MinDigestBytes or more that is no copy
// (NoteCopy): the MCP server lists it, though its server's texts are not
// indexed. Of servers not withheld it records nothing.
func (s *ServedLists) NoteOwn(k resource.Key) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, copied := s.copies[k.Server][k.URI]
	if restored, _ := s.restoredCopy(k); !s.isWithheld(k.Server) || copied || restored {
		return
	}
	m := s.own[k.Server]
	if m == nil {
		m = map[string]bool{}
		if s.own == nil {
			s.own = map[string]map[string]bool{}
		}
		s.own[k.Server] = m
	}
	if len(m) < maxCopies {
		m[k.URI] = true
	}
}

// IsOwn reports whether k was last read and found its server's own
// (NoteOwn).
func (s *ServedLists) IsOwn(k resource.Key) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.own[k.Server][k.URI]
}

// OwnCount returns how many of server's resources were read and found
// its own (NoteOwn).
func (s *ServedLists) OwnCount(server string) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.own[server])
}

// IsCopy reports whether k was last found a copy (NoteCopy).
func (s *ServedLists) IsCopy(k resource.Key) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.copies[k.Server][k.URI]
	restored, _ := s.restoredCopy(k)
	return ok || restored
}

// CopyCount returns how many of server's resources are copies
// (NoteCopy).
func (s *ServedLists) CopyCount(server string) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.copies[server]) + len(s.restoredCopies[server])
}

// Prune forgets what NoteCopy, NoteOwn and NoteBesideCopies recorded of
// server's resources whose URIs listed does not hold (the server's last
// complete list): a server turning its list over would fill them to
// maxCopies, and past that its new copies would go unrecorded.
func (s *ServedLists) Prune(server string, listed map[string]bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for uri := range s.copies[server] {
		if !listed[uri] {
			delete(s.copies[server], uri)
			s.journalEntry(entryCopy, copyPayload(nil, server, uriKey(uri), copyNone))
		}
	}
	if r := s.restoredCopies[server]; len(r) > 0 {
		keys := make(map[uint64]bool, len(listed))
		for uri := range listed {
			keys[uriKey(uri)] = true
		}
		for key := range r {
			if !keys[key] {
				delete(r, key)
				s.journalEntry(entryCopy, copyPayload(nil, server, key, copyNone))
			}
		}
	}
	for uri := range s.own[server] {
		if !listed[uri] {
			delete(s.own[server], uri)
		}
	}
	for uri := range s.besideCopies[server] {
		if !listed[uri] {
			delete(s.besideCopies[server], uri)
		}
	}
}

// maxCopies bounds the copies remembered of one server.
const maxCopies = 100_000

// trimmedDigests returns the digests (contentsDigest) of contents and,
// when they hold one text, of that text less up to three lines at its
// start, its end, or one at each; none under MinDigestBytes.
func trimmedDigests(contents []resource.Content) map[[32]byte]bool {
	out := map[[32]byte]bool{}
	if d, n := contentsDigest(contents); n >= MinDigestBytes {
		out[d] = true
	}
	if len(contents) != 1 || contents[0].IsBlob {
		return out
	}
	lines := strings.SplitAfter(contents[0].Text, "\n")
	for _, cut := range [][2]int{{1, 0}, {2, 0}, {3, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 1}} {
		if cut[0]+cut[1] >= len(lines) {
			continue
		}
		text := strings.Join(lines[cut[0]:len(lines)-cut[1]], "")
		if d, n := contentsDigest([]resource.Content{{Text: text}}); n >= MinDigestBytes {
			out[d] = true
		}
		// A line added at the end may have left the text's own last
		// line without its line break.
		if cut[1] > 0 && strings.HasSuffix(text, "\n") {
			if d, n := contentsDigest([]resource.Content{{Text: strings.TrimSuffix(text, "\n")}}); n >= MinDigestBytes {
				out[d] = true
			}
		}
	}
	return out
}

// Withhold records that the MCP server must list no more of server's
// resources than it did, and those the content pass read and found no
// copy: it passed resources contextd serves back (see ServedBack), so it
// may be, or be behind, a bridge in front of contextd, and what contextd
// lists of it would come back one level deeper at each list. Its mirror
// still serves assembling.
func (s *ServedLists) Withhold(server string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.withheld == nil {
		s.withheld = map[string]time.Time{}
	}
	if until, ok := s.withheld[server]; !ok || !until.IsZero() {
		if !s.isWithheld(server) {
			s.gen++
		}
		s.withheld[server] = time.Time{}
	}
}

// isWithheld reports whether server is withheld now: for the run, or
// until a time, past which it is no longer unless copies of it are known
// (see Repointed). s.mu is held.
func (s *ServedLists) isWithheld(server string) bool {
	until, ok := s.withheld[server]
	return ok && (until.IsZero() || time.Now().Before(until) || len(s.copies[server])+len(s.restoredCopies[server]) > 0)
}

// Forget drops what is known of server (withheld, held, frozen, its
// copies): a reload replaced or removed it, and what its name held then
// says nothing of what it holds now.
func (s *ServedLists) Forget(server string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(server)
}

// Removed forgets server (see Forget) and the reads the MCP server
// answered of its resources: it is no longer configured, so contextd
// serves them no more, and another server serving their texts passes
// nothing of contextd's back — the same server renamed in the
// configuration serves them all, and was withheld for it.
func (s *ServedLists) Removed(server string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(server)
	s.dropReads(func(k resource.Key) bool { return k.Server == server })
}

// dropReads drops the reads of the resources drop reports true for.
// s.mu is held.
func (s *ServedLists) dropReads(drop func(resource.Key) bool) {
	n := len(s.reads)
	s.reads = slices.DeleteFunc(s.reads, func(r servedRead) bool { return drop(r.key) })
	if len(s.reads) != n && s.journaling {
		s.journal, s.journalLost = nil, true // a whole write next
	}
}

// forget is Forget with s.mu held.
func (s *ServedLists) forget(server string) {
	delete(s.withheld, server)
	delete(s.held, server)
	delete(s.frozen, server)
	delete(s.checked, server)
	delete(s.paced, server)
	delete(s.copies, server)
	delete(s.restoredCopies, server)
	delete(s.own, server)
	delete(s.besideCopies, server)
	s.gen++
	if s.journaling {
		s.journal, s.journalLost = nil, true // its check is gone: a whole write next
	}
}

// ForgetUnconfigured forgets the copies Restore brought back of servers
// for which keep reports false (no longer configured), and the reads of
// their resources (see Removed): nothing prunes them otherwise, and each
// whole write kept them.
func (s *ServedLists) ForgetUnconfigured(keep func(server string) bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for server := range s.restoredCopies {
		if !keep(server) {
			delete(s.restoredCopies, server)
			s.journalLost = s.journaling // a whole write next
		}
	}
	s.dropReads(func(k resource.Key) bool { return !keep(k.Server) })
}

// Repointed records that server's name now stands for another server
// (its configured endpoint changed). What was known of the old one is
// forgotten (see Forget) unless it was withheld, or withheld is set (the
// old one was found passing back in an earlier run): the new one may be
// the same bridge reached another way (an argument added, a version
// bumped, a URL written otherwise), so it stays withheld, and is checked
// until then — what it lists that the content pass read and found its own
// comes, copies and what is not read do not. Withheld in this run, it
// stays so for the run; withheld in an earlier one, until then, and past
// then for as long as copies of it are known (its mirror drops those it
// no longer lists, see Prune; the content pass's copies withhold it for
// the run). An honest server so waits for one content pass, and what is
// too short to tell from a copy for the hour after a restart, or the run
// after a reload. The reads the MCP server answered under the name are
// forgotten either way: they were of the old server's texts.
func (s *ServedLists) Repointed(server string, withheld bool, until time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	// The texts contextd served under the name were the old server's:
	// contextd serves them no more (see Removed). Two names swapped, or
	// another name given the old server, serve them now.
	s.dropReads(func(k resource.Key) bool { return k.Server == server })
	withheld = withheld || s.isWithheld(server)
	if withheld {
		s.withholdUntil(server, until)
	}
	s.mu.Unlock()
	if !withheld {
		s.Forget(server)
		return
	}
	s.Check(server, until)
}

// WithholdUntil withholds server until then, and past it while copies of
// it are known (see Withheld), as a restart does a server found passing
// back before it; one withheld for the run, or longer, stays so.
func (s *ServedLists) WithholdUntil(server string, until time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withholdUntil(server, until)
}

// withholdUntil is WithholdUntil. s.mu is held.
func (s *ServedLists) withholdUntil(server string, until time.Time) {
	if s.withheld == nil {
		s.withheld = map[string]time.Time{}
	}
	// Withheld for the run (found passing back in this run) it stays
	// so: a bridge dropping its copies at a repoint came back
	// unwithheld after the hour.
	if was, ok := s.withheld[server]; !ok || !was.IsZero() && was.Before(until) {
		s.withheld[server] = until
	}
	s.gen++
}

// ListedSince reports whether the MCP server listed a page of resources
// since t.
func (s *ServedLists) ListedSince(t time.Time) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastPage.After(t)
}

// Hold records that the MCP server must list no more of any server's
// resources than it does now, until then (see Quiet): a server whose list
// grew at each list, each time after the MCP server listed a page, may be
// a bridge passing contextd's list back, however it rewrites it; while
// contextd lists nothing new, such a bridge stops growing, where an
// honest server growing on its own goes on.
func (s *ServedLists) Hold(server string, until time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[string]time.Time{}
	}
	s.held[server] = until
	s.gen++
}

// Check records that the MCP server must list server's resources listed
// from now on only once the content pass read them and found them not
// empty (copies are Withhold's): a server held once (Hold) may be a bridge
// whose reads of what it passes back fail or answer nothing, however late
// it passes it back; listed, those would come back a level deeper at each
// list. What an honest server lists (texts it serves) is listed as ever,
// once read, and what is new comes at a stricter pace (see the mcpserver
// package and NotePaced). It lasts until then (each hold renews it).
func (s *ServedLists) Check(server string, until time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checked == nil {
		s.checked = map[string]time.Time{}
	}
	if !time.Now().Before(s.checked[server]) {
		s.gen++
	}
	s.checked[server] = until
	s.journalEntry(entryCheck, checkPayload(nil, server, until))
}

// Checked reports whether server's new resources are listed once read
// (Check).
func (s *ServedLists) Checked(server string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.checked[server])
}

// Freeze records that the MCP server must list no more of server's
// resources than it does now, until then (a long while, unlike Hold; and
// other servers are listed as ever): a server that stopped growing while
// held and grew again at once when released, time after time, grows with
// what contextd lists.
func (s *ServedLists) Freeze(server string, until time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen == nil {
		s.frozen = map[string]time.Time{}
	}
	s.frozen[server] = until
	s.gen++
}

// Held reports whether server is held (until its time) or frozen (Hold,
// Freeze).
func (s *ServedLists) Held(server string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	return now.Before(s.frozen[server]) || now.Before(s.held[server])
}

// Quiet reports whether some server is held (Hold; not Freeze): while
// one is, the MCP server lists no more of any server than it did when the
// hold began. A held bridge would otherwise pass back what contextd lists
// of other servers meanwhile (a log's new pages), and seem to grow on its
// own.
func (s *ServedLists) Quiet() bool {
	return time.Now().Before(s.QuietUntil())
}

// QuietUntil returns when the last hold now running ends (see Quiet); the
// zero time if none runs.
func (s *ServedLists) QuietUntil() time.Time {
	var last time.Time
	if s == nil {
		return last
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for _, until := range s.held {
		if until.After(now) && until.After(last) {
			last = until
		}
	}
	return last
}

// Listing says why the MCP server lists less of server than is mirrored:
// "withheld", "checked", "held", "frozen" (Withhold, Check, Hold, Freeze),
// "paced" while new resources of it wait for their pace (NotePaced), or
// "still" when another server's hold keeps it so (Quiet), comma-separated;
// "" when none applies.
func (s *ServedLists) Listing(server string) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var why []string
	if s.isWithheld(server) {
		why = append(why, "withheld")
	}
	now := time.Now()
	if now.Before(s.checked[server]) {
		why = append(why, "checked")
	}
	if s.paced[server] > 0 {
		why = append(why, "paced")
	}
	switch {
	case now.Before(s.frozen[server]):
		why = append(why, "frozen")
	case now.Before(s.held[server]):
		why = append(why, "held")
	default:
		for _, until := range s.held {
			if now.Before(until) {
				why = append(why, "still")
				break
			}
		}
	}
	return strings.Join(why, ",")
}

// NotePaced records that waiting of server's new resources wait for
// their pace to be listed by the MCP server (see Listing), none if
// waiting is 0.
func (s *ServedLists) NotePaced(server string, waiting int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if waiting <= 0 {
		delete(s.paced, server)
		return
	}
	if s.paced == nil {
		s.paced = map[string]int{}
	}
	s.paced[server] = waiting
}

// Frozen reports whether server is frozen (Freeze).
func (s *ServedLists) Frozen(server string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Now().Before(s.frozen[server])
}

// Withheld reports whether the MCP server lists none of server's
// resources.
func (s *ServedLists) Withheld(server string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isWithheld(server)
}

// WithheldGen returns a number that changes whenever a server is
// withheld, held or frozen (not when a hold ends: see Held).
func (s *ServedLists) WithheldGen() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}
