package mcp

import (
	"bytes"
	"cmp"
	"encoding/gob"
	"fmt"
	"slices"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// What a ServedLists keeps across restarts (MarshalBinary, Restore): the
// reads the MCP server answered, by which the copy checks tell what a
// bridge passes back, and until when servers are checked, held or
// frozen. Forgotten at each restart, what a host had read before it was
// no copy of anything until read again, and a bridge passing it back
// meanwhile had a burst of its copies listed at each restart.
//
// What is not kept is found again: which of a server's resources are
// copies (NoteCopy) the next read of each tells, and a server found
// passing back copies (Withhold) is kept so by the mcpserver package's
// own state, and found so again at its next copies.

// servedVersion is the version of MarshalBinary's format.
const servedVersion = 1

// maxMarkAhead bounds how far past the restart a restored check, hold or
// freeze runs: longer than any the sync package sets (a day's check, a
// 32-hour freeze).
const maxMarkAhead = 48 * time.Hour

// servedFile is MarshalBinary's format, a gob.
type servedFile struct {
	Version int
	Reads   []servedRecord
	// Until when each server is checked, held or frozen (Unix
	// milliseconds).
	Checked, Held, Frozen map[string]int64
}

// servedRecord is one servedRead.
type servedRecord struct {
	Server, URI string
	Digest      [32]byte
	Short       bool
	At          int64 // Unix milliseconds
	Sketch      []shingleRecord
}

// shingleRecord is one sketchShingle.
type shingleRecord struct {
	Hash  uint64
	Words [shingleWords]uint64
	N     uint8
	Line  uint32
}

// Changes returns a number that moves whenever what MarshalBinary
// writes changes (a read answered, a server checked, held or frozen).
func (s *ServedLists) Changes() uint64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changes
}

// MarshalBinary encodes what s keeps across restarts (see Restore): at
// most maxServedReads reads of about 1.5 KB each, and the servers' check,
// hold and freeze times.
func (s *ServedLists) MarshalBinary() ([]byte, error) {
	f := servedFile{Version: servedVersion}
	if s != nil {
		s.mu.Lock()
		reads := s.reads[max(0, len(s.reads)-maxServedReads):]
		f.Reads = make([]servedRecord, len(reads))
		for i, r := range reads {
			rec := servedRecord{Server: r.key.Server, URI: r.key.URI, Digest: r.digest, Short: r.short, At: r.at.UnixMilli()}
			if r.sketch != nil {
				rec.Sketch = make([]shingleRecord, len(r.sketch))
				for j, sh := range r.sketch {
					rec.Sketch[j] = shingleRecord{Hash: sh.hash, N: sh.n, Line: sh.line}
					for w := range sh.words {
						rec.Sketch[j].Words[w] = uint64(sh.words[w])
					}
				}
			}
			f.Reads[i] = rec
		}
		f.Checked, f.Held, f.Frozen = untilMillis(s.checked), untilMillis(s.held), untilMillis(s.frozen)
		s.mu.Unlock()
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func untilMillis(m map[string]time.Time) map[string]int64 {
	now := time.Now()
	out := make(map[string]int64, len(m))
	for server, until := range m {
		if until.After(now) {
			out[server] = until.UnixMilli()
		}
	}
	return out
}

// Restore adds what MarshalBinary encoded in an earlier run to s: its
// reads before those s answered since, the latest maxServedReads kept;
// each server's check, hold or freeze, until the later of its two times
// and at most maxMarkAhead from now. Records that cannot be right (a
// sketch out of order or too long, a read in the future) are dropped. An
// error says data is no such encoding, or of another version; s is then
// unchanged.
func (s *ServedLists) Restore(data []byte) error {
	if s == nil {
		return nil
	}
	var f servedFile
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&f); err != nil {
		return err
	}
	if f.Version != servedVersion {
		return fmt.Errorf("format version %d, want %d", f.Version, servedVersion)
	}
	now := time.Now()
	reads := make([]servedRead, 0, min(len(f.Reads), maxServedReads))
	for _, rec := range f.Reads[max(0, len(f.Reads)-maxServedReads):] {
		at := time.UnixMilli(rec.At)
		if rec.URI == "" || at.After(now) || len(rec.Sketch) > nearSketch ||
			rec.Sketch != nil && len(rec.Sketch) < nearMinSketch ||
			!slices.IsSortedFunc(rec.Sketch, func(a, b shingleRecord) int { return cmp.Compare(a.Hash, b.Hash) }) {
			continue
		}
		r := servedRead{key: resource.Key{Server: rec.Server, URI: rec.URI}, digest: rec.Digest, short: rec.Short, at: at}
		if rec.Sketch != nil {
			r.sketch = make([]sketchShingle, len(rec.Sketch))
			for j, sh := range rec.Sketch {
				r.sketch[j] = sketchShingle{hash: sh.Hash, n: min(sh.N, shingleWords), line: sh.Line}
				for w := range sh.Words {
					r.sketch[j].words[w] = word(sh.Words[w])
				}
			}
		}
		reads = append(reads, r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads = append(reads, s.reads...)
	if n := len(s.reads); n > maxServedReads {
		s.reads = slices.Delete(s.reads, 0, n-maxServedReads)
	}
	s.checked = restoreUntil(s.checked, f.Checked, now)
	s.held = restoreUntil(s.held, f.Held, now)
	s.frozen = restoreUntil(s.frozen, f.Frozen, now)
	s.gen++
	s.changes++
	return nil
}

// restoreUntil merges saved (Unix milliseconds) into m, keeping the later
// time of each server, none past maxMarkAhead from now.
func restoreUntil(m map[string]time.Time, saved map[string]int64, now time.Time) map[string]time.Time {
	if len(saved) == 0 {
		return m
	}
	if m == nil {
		m = make(map[string]time.Time, len(saved))
	}
	for server, ms := range saved {
		until := time.UnixMilli(ms)
		if until.After(now.Add(maxMarkAhead)) {
			until = now.Add(maxMarkAhead)
		}
		if until.After(now) && until.After(m[server]) {
			m[server] = until
		}
	}
	return m
}
