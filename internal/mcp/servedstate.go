package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// What a ServedLists keeps across restarts: the reads the MCP server
// answered, by which the copy checks tell what a bridge passes back, and
// until when servers are checked (Check). Forgotten at each restart, what
// a host had read before it was no copy of anything until read again,
// and a bridge passing it back meanwhile had its copies listed: a burst
// at once, or all, where the room of entries it had dropped or a first
// window let them.
//
// The encoding is a journal: servedMagic, then entries, each a kind byte,
// the payload's length (uvarint), the payload, and the CRC-32 of kind and
// payload. MarshalBinary writes all s holds; Journal the entries noted
// since (appended to what was written, a read costs about 350 bytes, not
// the whole). Restore reads entries up to the first that is cut short or
// damaged (a crash while appending), each checked and bounded before it
// is kept, so the memory it takes is bounded by the data's length.
//
// Not kept: holds and freezes (their "no more than is listed now" would
// empty a restarted process's list, which lists nothing yet), which of a
// server's resources are copies (the next read of each tells), and
// whether a server passes back copies (the mcpserver package's own state
// keeps that, and its next copies tell again).

// servedMagic opens the encoding; its last byte is the format's version.
// Versions 2 to 4 kept, with each sketch hash, its hashes with a word
// masked (2: hashes a word list reversed, see oneWay; 3 and 4: for
// stamped copies, no longer told): their reads are restored without
// their sketches (told by their digests).
const servedMagic = "contextd-served\x05"

// olderMagic reports whether data opens with a version 2 to 4 magic.
func olderMagic(data []byte) bool {
	const prefix = "contextd-served"
	return len(data) >= len(servedMagic) && string(data[:len(prefix)]) == prefix && data[len(prefix)] >= 2 && data[len(prefix)] <= 4
}

// The kinds of entry.
const (
	entryRead  = 1 // a servedRead
	entryCheck = 2 // a server checked until a time
	entryCopy  = 3 // a resource found a copy, passed back, or no more
)

// What an entryCopy says of its resource.
const (
	copyNone       = 0 // no copy (any longer)
	copyFound      = 1 // a copy (NoteCopy)
	copyPassedBack = 2 // a copy passed back (NotePassedBack)
)

// maxRestoredCopies bounds the copies restored, of all servers.
const maxRestoredCopies = 4 * maxCopies

// maxEntryBytes bounds an entry's payload: a read's key and sketch
// (URIs are bounded by what the mirror takes), or a server's name.
const maxEntryBytes = 1 << 20

// maxJournalBytes bounds the entries Journal has not taken yet: past it
// they are dropped, and the next write must be whole (Journal says so).
const maxJournalBytes = 8 << 20

// maxMarkAhead bounds how far past the restart a restored check runs:
// longer than any the sync package sets (a day).
const maxMarkAhead = 48 * time.Hour

// maxRestoredChecks bounds the checks restored (one per server).
const maxRestoredChecks = 10_000

// appendEntry appends the entry of kind with payload p to b.
func appendEntry(b []byte, kind byte, p []byte) []byte {
	b = append(b, kind)
	b = binary.AppendUvarint(b, uint64(len(p)))
	b = append(b, p...)
	c := crc32.NewIEEE()
	c.Write([]byte{kind})
	c.Write(p)
	return binary.BigEndian.AppendUint32(b, c.Sum32())
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// readPayload encodes r.
func readPayload(b []byte, r *servedRead) []byte {
	b = appendString(b, r.key.Server)
	b = appendString(b, r.key.URI)
	b = append(b, r.digest[:]...)
	flags := byte(0) // 1: short; 2: origin
	if r.short {
		flags |= 1
	}
	if r.origin {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, r.first.UnixMilli())
	b = binary.AppendVarint(b, r.at.UnixMilli())
	b = append(b, byte(len(r.sketch)))
	for _, h := range r.sketch {
		b = binary.BigEndian.AppendUint64(b, h)
	}
	return b
}

// checkPayload encodes server's check until then.
func checkPayload(b []byte, server string, until time.Time) []byte {
	b = appendString(b, server)
	return binary.AppendVarint(b, until.UnixMilli())
}

// copyPayload encodes what server's resource of uriKey key is: copyNone,
// copyFound or copyPassedBack.
func copyPayload(b []byte, server string, key uint64, state byte) []byte {
	b = appendString(b, server)
	b = binary.BigEndian.AppendUint64(b, key)
	return append(b, state)
}

// uriKey is what the record keeps of a copy's URI: 64 bits of its
// SHA-256.
func uriKey(uri string) uint64 {
	h := sha256.Sum256([]byte(uri))
	return binary.BigEndian.Uint64(h[:8])
}

// journalRead records r for Journal. s.mu is held.
func (s *ServedLists) journalRead(r *servedRead) {
	if s.journaling && !s.journalLost && !r.private {
		s.journalEntry(entryRead, readPayload(nil, r))
	}
}

// journalEntry records an entry for Journal. s.mu is held.
func (s *ServedLists) journalEntry(kind byte, p []byte) {
	if !s.journaling || s.journalLost {
		return
	}
	if len(s.journal)+len(p)+16 > maxJournalBytes {
		s.journal, s.journalLost = nil, true
		return
	}
	s.journal = appendEntry(s.journal, kind, p)
}

// MarshalBinary encodes all s keeps across restarts (see Restore): its
// reads (at most maxServedReads and a quarter, about 350 bytes each), its
// checks, and the copies it knows (NoteCopy, NotePassedBack). From then on s records what changes for Journal.
func (s *ServedLists) MarshalBinary() ([]byte, error) {
	b := []byte(servedMagic)
	if s == nil {
		return b, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var p []byte
	now := time.Now()
	for i := range s.reads {
		if s.reads[i].private {
			continue
		}
		s.written++
		s.reads[i].written = s.written
		p = readPayload(p[:0], &s.reads[i])
		b = appendEntry(b, entryRead, p)
	}
	for server, until := range s.checked {
		if until.After(now) {
			b = appendEntry(b, entryCheck, checkPayload(nil, server, until))
		}
	}
	copyState := func(back bool) byte {
		if back {
			return copyPassedBack
		}
		return copyFound
	}
	for server, m := range s.copies {
		for uri, back := range m {
			b = appendEntry(b, entryCopy, copyPayload(p[:0], server, uriKey(uri), copyState(back)))
		}
	}
	for server, m := range s.restoredCopies {
		for key, back := range m {
			b = appendEntry(b, entryCopy, copyPayload(p[:0], server, key, copyState(back)))
		}
	}
	s.journaling, s.journal, s.journalLost = true, nil, false
	return b, nil
}

// Journal returns the entries noted since the last MarshalBinary or
// Journal, to append to what those returned. ok is false when the next
// write must be MarshalBinary's: some were dropped (more than
// maxJournalBytes waited, or a Forget), or s was restored (what it was
// restored from may end in a damaged entry).
func (s *ServedLists) Journal() (entries []byte, ok bool) {
	if s == nil {
		return nil, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journalLost {
		return nil, false
	}
	entries = s.journal
	s.journal = nil
	return entries, true
}

// errServedFormat is the error of data that is no encoding of a
// ServedLists.
var errServedFormat = errors.New("not a record of what contextd served (or of another version)")

// Restore adds what MarshalBinary and Journal encoded in an earlier run to
// s: its reads before those s answered since (a read of a text s answered
// again counts once), the latest maxServedReads and a quarter kept; each
// server's check until the later of its two times, at most maxMarkAhead
// from now; the copies known then (at most maxRestoredCopies), but for
// those s found copies since (it is called at the start). It stops at an
// entry cut short or damaged, keeping those before; entries that cannot
// be right (a sketch out of order) are dropped, and reads dated after now
// (the clock set back) taken as of now. An error says data is no such
// encoding; s is then unchanged. From then on s records what changes for
// Journal.
func (s *ServedLists) Restore(data []byte) (dropped int, err error) {
	if s == nil {
		return 0, nil
	}
	older := olderMagic(data)
	if !older && !bytes.HasPrefix(data, []byte(servedMagic)) {
		return 0, errServedFormat
	}
	data = data[len(servedMagic):] // every version's magic is as long
	now := time.Now()
	var reads []servedRead
	checks := map[string]time.Time{}
	type copyKey struct {
		server string
		key    uint64
	}
	copies := map[copyKey]byte{}
	for len(data) > 0 {
		kind := data[0]
		n, w := binary.Uvarint(data[1:])
		if w <= 0 || n > maxEntryBytes || uint64(len(data)-1-w) < n+4 {
			dropped++ // cut short: a crash while appending
			break
		}
		p := data[1+w : 1+w+int(n)]
		c := crc32.NewIEEE()
		c.Write([]byte{kind})
		c.Write(p)
		if binary.BigEndian.Uint32(data[1+w+int(n):]) != c.Sum32() {
			dropped++
			break
		}
		data = data[1+w+int(n)+4:]
		switch kind {
		case entryRead:
			r, ok := decodeRead(p, now, older)
			if !ok {
				dropped++
				continue
			}
			reads = append(reads, r)
			if len(reads) >= 4*maxServedReads {
				reads = compactReads(reads, maxServedReads+maxServedReads/4)
			}
		case entryCheck:
			server, rest, ok := decodeString(p)
			until, w := binary.Varint(rest)
			if !ok || w <= 0 || (len(checks) >= maxRestoredChecks && checks[server].IsZero()) {
				dropped++
				continue
			}
			t := time.UnixMilli(until)
			if t.After(now.Add(maxMarkAhead)) {
				t = now.Add(maxMarkAhead)
			}
			checks[server] = t
		case entryCopy:
			server, key, state, ok := decodeCopy(p)
			k := copyKey{server, key}
			if _, known := copies[k]; !ok || !known && state != copyNone && len(copies) >= maxRestoredCopies {
				dropped++
				continue
			}
			if state == copyNone {
				delete(copies, k) // not a copy any more: no room taken
			} else {
				copies[k] = state
			}
		default:
			dropped++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// What s answered since the start goes after what was restored.
	s.reads = compactReads(append(reads, s.reads...), maxServedReads+maxServedReads/4)
	for server, until := range checks {
		if until.After(now) && until.After(s.checked[server]) {
			if s.checked == nil {
				s.checked = map[string]time.Time{}
			}
			s.checked[server] = until
		}
	}
	told := map[copyKey]bool{} // what this run found since stands
	for server, m := range s.copies {
		for uri := range m {
			told[copyKey{server, uriKey(uri)}] = true
		}
	}
	for k, state := range copies {
		m := s.restoredCopies[k.server]
		if told[k] || len(m) >= maxCopies {
			continue
		}
		if m == nil {
			m = map[uint64]bool{}
			if s.restoredCopies == nil {
				s.restoredCopies = map[string]map[uint64]bool{}
			}
			s.restoredCopies[k.server] = m
		}
		m[k.key] = state == copyPassedBack
	}
	s.journaling, s.journal, s.journalLost = true, nil, true // a whole write next
	s.gen++
	return dropped, nil
}

// decodeCopy decodes an entry encoded by copyPayload; ok is false for one
// that cannot be right.
func decodeCopy(p []byte) (server string, key uint64, state byte, ok bool) {
	if server, p, ok = decodeString(p); !ok || len(p) != 8+1 || p[8] > copyPassedBack {
		return "", 0, 0, false
	}
	return server, binary.BigEndian.Uint64(p), p[8], true
}

// decodeString decodes a string encoded by appendString from p, and what
// follows it.
func decodeString(p []byte) (string, []byte, bool) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return "", nil, false
	}
	return string(p[w : w+int(n)]), p[w+int(n):], true
}

// decodeRead decodes a read encoded by readPayload; ok is false for one
// that cannot be right.
func decodeRead(p []byte, now time.Time, older bool) (r servedRead, ok bool) {
	var server, uri string
	if server, p, ok = decodeString(p); !ok {
		return r, false
	}
	if uri, p, ok = decodeString(p); !ok || uri == "" || len(p) < 32+1 {
		return r, false
	}
	r.key = resource.Key{Server: server, URI: uri}
	copy(r.digest[:], p)
	r.short, r.origin = p[32]&1 != 0, p[32]&2 != 0
	p = p[33:]
	first, w := binary.Varint(p)
	if w <= 0 {
		return r, false
	}
	p = p[w:]
	at, w := binary.Varint(p)
	if w <= 0 || len(p) < w+1 {
		return r, false
	}
	r.first, r.at = time.UnixMilli(first), time.UnixMilli(at)
	if r.first.After(r.at) {
		return r, false
	}
	// Read later than now: the clock was set back since (a virtual
	// machine's snapshot, a clock kept in local time). Dropped, they
	// would be lost for good at the next whole write; taken as of now,
	// the file's order keeps theirs.
	if r.at.After(now) {
		r.at = now
		r.first = minTime(r.first, now)
	}
	p = p[w:]
	if older {
		return r, true // its sketch, the rest, is of another form
	}
	k := int(p[0])
	p = p[1:]
	if k > nearSketch || k > 0 && k < nearMinSketch || len(p) != 8*k {
		return r, false
	}
	if k > 0 {
		r.sketch = make([]uint64, k)
	}
	for i := range k {
		r.sketch[i] = binary.BigEndian.Uint64(p[8*i:])
		if i > 0 && r.sketch[i] < r.sketch[i-1] {
			return r, false
		}
	}
	return r, true
}

// readID names a read's text: a read of the same text again replaces it.
type readID struct {
	key    resource.Key
	digest [32]byte
}

// compactReads returns the latest at most max of reads (oldest first, as
// they came), less those addRead drops: a read of the same text of the
// same resource as a later one (which takes its first time), and reads
// of a text maxPerText later reads of other resources hold, save the
// read of the resource first answered with it (its origin, see addRead).
func compactReads(reads []servedRead, max int) []servedRead {
	kept := make([]servedRead, 0, min(len(reads), max))
	at := map[readID]int{}
	origin := map[[32]byte]servedRead{}
	for _, r := range reads {
		if o, ok := origin[r.digest]; !ok || r.first.Before(o.first) {
			origin[r.digest] = r
		}
	}
	texts := map[[32]byte]int{} // the reads of each text kept, less its origin's
	for i := len(reads) - 1; i >= 0; i-- {
		r := reads[i]
		id := readID{r.key, r.digest}
		if j, ok := at[id]; ok {
			if r.first.Before(kept[j].first) {
				kept[j].origin = r.origin
			}
			kept[j].first = minTime(kept[j].first, r.first)
			kept[j].private = kept[j].private || r.private
			continue
		}
		isOrigin := origin[r.digest].key == r.key
		if len(kept) == max || !isOrigin && texts[r.digest] == maxPerText-1 {
			continue
		}
		at[id] = len(kept)
		if !isOrigin {
			texts[r.digest]++
		}
		kept = append(kept, r)
	}
	slices.Reverse(kept)
	return kept
}
