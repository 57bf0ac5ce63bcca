package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
)

// What Run keeps on disk between runs of each server's pace (see pace), so
// that a restart of contextd is no first list: without it, all a server's
// mirror held came whole at each start, what the pace and the copy checks
// had kept off included, and a loop of bridges passing contextd's list
// back doubled at every restart.
//
// The file (Options.StateFile) is JSON, written whole through a temporary
// file renamed over it, at most each stateSaveEvery, when Run ends and on
// SaveState; a crash loses what changed since the last write. Entries are
// kept by a fixed-size hash of their URI (see offKey), so the file's size
// depends on how many entries there were, not on what their servers named
// them. A file that cannot be read or decoded is logged and ignored: the
// servers then start as on a first run.
//
// stateVersion 1 (kept by URI) is not read: its file's size followed its
// servers' URIs (a few thousand 4 KiB URIs made it hundreds of MiB).
// Version 2 kept what was off the list and not what was on it, so an
// entry the mirror lacked at the write (a bridge that had dropped what it
// passed back while contextd was down) counted as listed at the next
// start, and a loop doubled; it is read as it was meant, once.

// StateFileIn returns the Options.StateFile for data directory dir, "" for
// "" (no data directory: paces are kept in memory).
func StateFileIn(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "mcp-list-paces.json")
}

// stateVersion is the version of the file's format; version 2 is read too.
const stateVersion = 3

// stateSaveEvery is how often Run writes what changed; it writes at
// once when a server is found passing back copies (mcp.ServedLists'
// withheld generation moved: a crash soon after would lose it), and
// every stateRefreshEvery whatever changed, so that a crash after a
// still spell is not read as as long a downtime (each server's allowance
// grows by it).
const (
	stateSaveEvery    = 15 * time.Second
	stateRefreshEvery = 5 * time.Minute
)

// restoredWithheldFor is how long a restart keeps a server that was
// withheld so in the state it writes, while the copy checks, which start
// again with no record of what contextd served, have had no time to
// tell: restarted again meanwhile, it gets no room either.
const restoredWithheldFor = time.Hour

// maxStateBytes bounds the file read at start: 100,000 entries
// (mcp.DefaultMaxResources) for each of a hundred servers, at about 40
// bytes each. stateBytesPerServer bounds it by the servers configured:
// a server's listed and kept-off entries take at most about 5.5 MB (a
// file of 530 MB decoded to 3.2 GB at the start, for a server or two).
const (
	maxStateBytes       = 512 << 20
	stateBytesPerServer = 8 << 20
)

// stateBytesFor returns the bound of the file read at start for servers
// configured servers.
func stateBytesFor(servers int) int64 {
	return min(maxStateBytes, int64(servers+1)*stateBytesPerServer)
}

// offKey returns the key an entry is saved under: the first 8 bytes of its
// URI's SHA-256, in hexadecimal.
func offKey(uri string) string {
	h := sha256.Sum256([]byte(uri))
	return hex.EncodeToString(h[:8])
}

// savedState is the file's content.
type savedState struct {
	Version int                   `json:"version"`
	Servers map[string]*savedPace `json:"servers"` // by configured server name
}

// savedPace is one server's listPace, and what of its mirror was kept off
// the resource list when written.
type savedPace struct {
	Most   int     `json:"most"`   // the most entries listed at once
	Tokens float64 `json:"tokens"` // its allowance at At
	At     int64   `json:"at"`     // Unix milliseconds
	// Listed holds its entries on the list, by offKey of their upstream
	// URI; Off its mirrored entries that were not, each with since when
	// (Unix milliseconds). At the next start only those listed come at
	// once; the others are growth, those of Off with their old times.
	Listed []string         `json:"listed"` // null: not said (see listed)
	Off    map[string]int64 `json:"off,omitempty"`
	// While its first list had not settled: until when (Unix
	// milliseconds; zero once settled), and the most entries other
	// filters had let through (see listPace.settle).
	SettleUntil int64 `json:"settle_until,omitempty"`
	Size        int   `json:"size,omitempty"`
	// Withheld: the server was found passing back what contextd served
	// (mcp.ServedLists.Withheld) when written, or within
	// restoredWithheldFor of a restart that said so: a restart withholds
	// it again for that long, and it gets no room and no allowance of its
	// own (see restore).
	Withheld bool `json:"withheld,omitempty"`
	// Endpoint is what the name stood for (config.Server.Endpoint): a
	// name pointed at another server since starts afresh. Empty in
	// files written before it was kept: taken as the same.
	Endpoint string `json:"endpoint,omitempty"`

	// listed is Listed as a set; nil when the file did not say (version
	// 2, or Listed null): everything mirrored but Off counts as listed.
	listed map[string]bool
}

// wasListed reports whether the entry of upstream URI uri was on the list
// when the file was written.
func (p *savedPace) wasListed(uri string) bool {
	k := offKey(uri)
	if p.listed == nil {
		_, off := p.Off[k]
		return !off
	}
	return p.listed[k]
}

// loadState reads the state file at path, of at most maxBytes; nil, with
// no error, when there is none. Values out of range are brought in range.
func loadState(path string, burst float64, maxBytes int64) (map[string]*savedPace, error) {
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxBytes)
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	if st.Version != stateVersion && st.Version != 2 {
		return nil, fmt.Errorf("format version %d, want %d", st.Version, stateVersion)
	}
	for name, p := range st.Servers {
		if p == nil {
			delete(st.Servers, name)
			continue
		}
		p.Most = min(max(p.Most, 0), mcp.DefaultMaxResources)
		p.Size = min(max(p.Size, 0), mcp.DefaultMaxResources)
		if math.IsNaN(p.Tokens) || p.Tokens < 0 {
			p.Tokens = 0
		}
		p.Tokens = min(p.Tokens, burst)
		if len(p.Off) > mcp.DefaultMaxResources {
			return nil, fmt.Errorf("server %q: %d entries kept off, more than a server may list (%d)", name, len(p.Off), mcp.DefaultMaxResources)
		}
		if p.Listed != nil { // null (or version 2): what was listed is unknown
			if len(p.Listed) > mcp.DefaultMaxResources {
				return nil, fmt.Errorf("server %q: %d entries listed, more than a server may list (%d)", name, len(p.Listed), mcp.DefaultMaxResources)
			}
			p.listed = make(map[string]bool, len(p.Listed))
			for _, k := range p.Listed {
				p.listed[k] = true
			}
		}
		p.Listed = nil
	}
	return st.Servers, nil
}

// writeState writes servers to path (see the file's description above).
func writeState(path string, servers map[string]*savedPace) error {
	data, err := json.Marshal(savedState{Version: stateVersion, Servers: servers})
	if err != nil {
		return err
	}
	return replaceFile(path, data)
}

// restore returns the listPace saved as p, brought up to now, for a server
// whose mirror holds all now. Its first list is not whole: what it had
// listed comes at once (up to the most it had); the rest is growth — what
// was kept off waiting as it did (since its time), what it lists anew
// (added while contextd was down, or dropped from its list at the write
// and back) since now — and its allowance is what it had, grown by the
// time contextd was down. A first list that had not settled
// settles when it would have (at once if that time passed), counting all
// the server lists then, what waited included: its backlog comes then, as
// without the restart. A settled one opens no window: what the server
// lists past its most and the allowance is growth, however it came (a
// window after each restart let a loop restarted twice in it list all it
// had kept off at its end).
func (p *savedPace) restore(now time.Time, burst float64, all []resource.Descriptor) *listPace {
	// What was kept off spends the allowance it had (it is growth now):
	// kept off by the copy checks or a hold, it never reached the pace,
	// whose allowance stayed whole, and a loop spent it at each restart.
	// The downtime's share comes on top.
	tokens := max(0, p.Tokens-float64(len(p.Off)))
	if p.Withheld {
		tokens = 0 // the copy checks held what it added: its allowance is not its own
	}
	lp := &listPace{tokens: tokens, burst: burst, at: time.UnixMilli(p.At), since: map[resource.Key]time.Time{}}
	if lp.at.After(now) {
		lp.at = now
	}
	lp.tokens = lp.allowance(now)
	lp.at = now
	for _, d := range all {
		if p.wasListed(d.URI) {
			continue
		}
		at, ok := p.Off[offKey(d.URI)]
		if !ok {
			at = now.UnixMilli()
		}
		lp.since[d.Key()] = time.UnixMilli(min(at, now.UnixMilli()))
	}
	// Up to the most it had listed, entries taking the place of others
	// come at once; but not while entries were kept off when it was
	// written: with room left, only another filter (the copy checks, a
	// hold) kept those off, and what those had found is not kept across
	// the restart (in a loop of two, each restart let what they held back
	// fill the room; a bridge that shrank got its copies back, even when
	// it dropped them while contextd stopped).
	if p.Withheld {
		lp.withheldUntil = now.Add(restoredWithheldFor)
	}
	lp.most = max(len(p.listed), len(all)-len(lp.since))
	if len(p.Off) == 0 && !p.Withheld {
		lp.most = max(lp.most, p.Most)
	}
	lp.restored = true
	if p.SettleUntil != 0 {
		lp.settleUntil = time.UnixMilli(p.SettleUntil)
		if lp.settleUntil.Before(now) {
			lp.settleUntil = now
		}
		switch {
		case p.Withheld:
			// What it listed: the most other filters had let through
			// may hold what it passed back before the copy checks told.
			lp.size = len(all) - len(lp.since)
		case len(p.Off) > 0:
			// Not what the copy checks or a hold kept off: the most
			// other filters had let through, and what is listed now.
			lp.size = max(p.Size, len(all)-len(lp.since))
		default:
			lp.size = max(p.Size, len(all))
		}
	}
	return lp
}

// loadPaces loads Options.StateFile, if set, into s.prior, and
// servedFile into the engine's ServedLists.
func (s *Server) loadPaces() {
	if s.opts.StateFile == "" {
		return
	}
	s.loadServed()
	prior, err := loadState(s.opts.StateFile, float64(s.opts.PaceBurst), stateBytesFor(len(s.eng.Config().Servers)))
	if err != nil {
		s.log.Warn("the saved resource list paces cannot be read: every server's first list comes whole", "file", s.opts.StateFile, "fs_err", err)
		return
	}
	s.prior = prior
	if s.prior == nil {
		s.prior = map[string]*savedPace{}
	}
	// Found passing back before, with copies of it known from the record:
	// they are not read again (their texts are indexed) to tell it again.
	// Not a server whose copies are gone: each start would withhold it
	// anew, and the state it writes would say so again.
	until := time.Now().Add(restoredWithheldFor)
	lists := s.eng.ServedLists()
	for name, p := range s.prior {
		if p.Withheld && lists.CopyCount(name) > 0 {
			lists.WithholdUntil(name, until)
		}
	}
}

// SaveState writes each server's pace and what of its mirror is kept off
// the resource list to Options.StateFile (if set), whatever changed: call
// it once the engine's mirrors stopped, so what they stored after Run
// ended counts as kept off, not as new at the next start. Failures are
// logged.
func (s *Server) SaveState() {
	s.savePaces(true)
	s.servedMu.Lock()
	s.servedFailed = time.Time{} // the last chance: a write that failed within servedRetry is tried again
	s.servedMu.Unlock()
	s.saveServed(false)
}

// savePaces writes the servers' paces to Options.StateFile if they changed
// since the last write, or force.
func (s *Server) savePaces(force bool) {
	if s.opts.StateFile == "" {
		return
	}
	versions := s.eng.ListVersions()
	lists := s.eng.ServedLists()
	withheld := map[string]bool{}
	for name := range versions {
		withheld[name] = lists.Withheld(name)
	}
	s.mu.Lock()
	if !force && s.stateGen == s.savedGen {
		s.mu.Unlock()
		return
	}
	gen := s.stateGen
	now := time.Now()
	servers := make(map[string]*savedPace, len(s.paces)+len(s.prior))
	since := map[string]map[resource.Key]time.Time{}
	listed := map[string]map[string]bool{}
	for name, p := range s.paces {
		servers[name] = &savedPace{Most: p.most, Tokens: p.allowance(now), At: now.UnixMilli(), Withheld: withheld[name] || now.Before(p.withheldUntil), Endpoint: p.endpoint}
		if !p.settled(now) {
			servers[name].SettleUntil, servers[name].Size = p.settleUntil.UnixMilli(), p.size
		}
		since[name] = make(map[resource.Key]time.Time, len(p.since))
		for k, t := range p.since {
			since[name][k] = t
		}
		for k, t := range s.waiting[name] {
			since[name][k] = t
		}
		for k, t := range s.unread[name] {
			since[name][k] = t
		}
		listed[name] = map[string]bool{}
	}
	for k := range s.listed {
		if l := listed[k.Server]; l != nil {
			l[k.URI] = true
		}
	}
	for name, p := range s.prior {
		if _, ok := versions[name]; ok && servers[name] == nil {
			// Its first sync of this run has not ended: written as read
			// (Listed null if the file did not say).
			q := *p
			if p.listed != nil {
				q.Listed = make([]string, 0, len(p.listed))
				for k := range p.listed {
					q.Listed = append(q.Listed, k)
				}
				slices.Sort(q.Listed)
			}
			servers[name] = &q
		}
	}
	s.mu.Unlock()
	for name, l := range listed {
		all, err := s.eng.Descriptors(name)
		if err != nil {
			servers[name] = nil // gone meanwhile
			continue
		}
		off := map[string]int64{}
		for _, d := range all {
			if !l[d.URI] {
				t, ok := since[name][d.Key()]
				if !ok {
					t = now
				}
				off[offKey(d.URI)] = t.UnixMilli()
			}
		}
		servers[name].Off = off
		servers[name].Listed = make([]string, 0, len(l))
		for uri := range l {
			servers[name].Listed = append(servers[name].Listed, offKey(uri))
		}
		slices.Sort(servers[name].Listed)
	}
	for name, p := range servers {
		if p == nil {
			delete(servers, name)
		}
	}
	err := writeState(s.opts.StateFile, servers)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && s.stateErr == "":
		s.log.Warn("saving the resource list paces failed: a restart now reads the last ones saved (what was listed since comes at the pace); retrying", "file", s.opts.StateFile, "fs_err", err)
	case err == nil && s.stateErr != "":
		s.log.Info("saving the resource list paces works again", "file", s.opts.StateFile)
	}
	if err != nil {
		s.stateErr = err.Error()
		return
	}
	s.stateErr = ""
	s.savedGen = max(s.savedGen, gen)
}

// servedFile is the file beside Options.StateFile that keeps what the
// copy checks compare with (mcp.ServedLists.MarshalBinary), "" if none.
func (s *Server) servedFile() string {
	if s.opts.StateFile == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(s.opts.StateFile), "mcp-served-reads")
}

// maxServedBytes bounds servedFile read at start: twice a whole write of
// mcp's 5,120 reads of about 1.5 KB each and a URI of up to 4 KiB (about
// 29 MiB each), servedSlack and servedLate (see saveServed), and room.
const maxServedBytes = 80 << 20

// servedSlack is how much servedFile may grow by appends before it is
// written whole again, besides as much as its last whole write.
const servedSlack = 1 << 20

// openRegular opens the file at path for reading, if it is a regular
// file (through symbolic links): a FIFO put there would block the start
// for good, a device read without end.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlocking, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// loadServed restores servedFile into the engine's ServedLists. A file
// that cannot be read is logged and ignored: the copy checks then start
// with no record of what contextd served before.
func (s *Server) loadServed() {
	path := s.servedFile()
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	dropped := 0
	if err == nil {
		defer f.Close()
		// Past the bound (which a file written as it is written does
		// not reach), what comes first is read: the entries are in the
		// order they were written, and the cut ends them.
		var data []byte
		if data, err = io.ReadAll(io.LimitReader(f, maxServedBytes)); err == nil {
			dropped, err = s.eng.ServedLists().Restore(data)
		}
	}
	if err != nil {
		s.log.Warn("what contextd served before cannot be read: copies of it a server passes back now are told only once a host reads it again", "file", path, "fs_err", err)
		return
	}
	if dropped > 0 {
		s.log.Warn("some of what contextd served before could not be read (a crash while it was written, or damage): copies of those are told only once a host reads them again", "file", path, "entries", dropped)
	}
	cfg := s.eng.Config()
	s.eng.ServedLists().ForgetUnconfigured(func(server string) bool {
		_, ok := cfg.Server(server)
		return ok
	})
}

// servedRetry is how long after a failed write of servedFile the next is
// tried (a full disk, a directory in its place).
const servedRetry = time.Minute

// servedLate is how far appends may grow servedFile past its slack
// while Run is busy before a read writes it whole itself.
const servedLate = 4 << 20

// saveServed brings servedFile up to date with the engine's ServedLists:
// it appends what was noted since (a few KB for a read), or, when the
// journal cannot be appended to (the first write of a run, a failed
// write, a reload) or the file grew by appends past its last whole write
// and servedSlack, writes it whole (a few ms to a few hundred). With
// inRead (a read's answer waits) it never writes whole but where Run
// lags servedLate behind: it appends what it can and has Run do the
// rest (see servedDue); a read is on disk once answered unless a write
// failed (Run tries again each servedRetry) or the journal was cut (a
// server forgotten: until Run's whole write, at its next turn). Failures
// are logged once until a write works.
func (s *Server) saveServed(inRead bool) {
	path := s.servedFile()
	if path == "" {
		return
	}
	lists := s.eng.ServedLists()
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	if s.servedErr != "" && time.Since(s.servedFailed) < servedRetry {
		return
	}
	if inRead && !s.servedWhole {
		return
	}
	due := s.servedAppended > s.servedSize+servedSlack
	whole := !s.servedWhole || due && (!inRead || s.servedAppended > s.servedSize+servedSlack+servedLate)
	var entries []byte
	if !whole {
		var ok bool
		if entries, ok = lists.Journal(); !ok {
			// Entries are gone from the journal (a server forgotten,
			// the journal past its bound): only a whole write is right.
			s.servedWhole = false
			if inRead {
				s.wantServedWrite()
				return
			}
			whole = true
		}
	}
	var err error
	switch {
	case whole:
		s.servedWholeWrites++
		var data []byte
		if data, err = lists.MarshalBinary(); err == nil {
			err = replaceFile(path, data)
		}
		if err == nil {
			s.servedWhole, s.servedSize, s.servedAppended = true, len(data), 0
		}
	case len(entries) > 0:
		err = appendFile(path, entries)
		s.servedAppended += len(entries)
		if err == nil && due {
			s.wantServedWrite()
		}
	}
	switch {
	case err != nil && s.servedErr == "":
		s.log.Warn("saving what contextd served failed: after a restart, copies of what was served since are told only once a host reads it again; retrying", "file", path, "fs_err", err)
	case err == nil && s.servedErr != "":
		s.log.Info("saving what contextd served works again", "file", path)
	}
	if err != nil {
		s.servedErr, s.servedFailed = err.Error(), time.Now()
		s.servedWhole = false // written whole next: an append may have been cut
		return
	}
	s.servedErr = ""
}

// wantServedWrite has Run write servedFile whole as soon as it can.
func (s *Server) wantServedWrite() {
	select {
	case s.servedDue <- struct{}{}:
	default:
	}
}

// appendFile appends data to the file at path, a regular file: anything
// else put there since it was written (a FIFO would block every read's
// answer until someone read it; a symbolic link would be followed) is an
// error, and the next whole write replaces it.
func appendFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|appendFlags, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
