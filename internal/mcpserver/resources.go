package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
)

// Keys of the _meta contextd puts on resources and content it re-exposes.
const (
	MetaServer = "contextd/server" // the configured upstream server name
	MetaURI    = "contextd/uri"    // the upstream's URI, byte for byte
)

// refresh brings the resource list up to date with the mirrors that changed
// since the last call (a sync ran, or the count moved), in one batch, so the
// go-sdk sends connected sessions one notifications/resources/list_changed.
//
// One refresh runs at a time, and one that began after a call arrived
// serves it: calls that wait together share the next refresh instead of
// each running its own, so lists sent faster than a refresh (a caller's
// loop, or a 2025-03-26 batch) cannot queue without bound, each holding
// its goroutine.
func (s *Server) refresh() {
	arrived := s.refreshStarts.Load()
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	if s.refreshedFrom > arrived {
		return // a refresh that began after this call arrived has run
	}
	s.refreshedFrom = s.refreshStarts.Add(1)
	var changed, gone []string
	versions := s.eng.ListVersions()
	withheld := s.eng.ServedLists().WithheldGen()
	// Of a withheld or checked server, what the content pass read since is
	// listed too (of a withheld one whose texts are not indexed, what was
	// read and found its own), less what it found copies (see apply).
	contents := map[string][3]int{}
	held := map[string]bool{}    // a hold ends with time: re-applied then
	checked := map[string]bool{} // so does a check
	quiet := s.eng.ServedLists().Quiet()
	for server := range versions {
		checked[server] = s.eng.ServedLists().Checked(server)
		if s.eng.ServedLists().Withheld(server) || checked[server] {
			contents[server] = [3]int{s.eng.ContentCount(server), s.eng.ServedLists().CopyCount(server), s.eng.ServedLists().OwnCount(server)}
		}
		held[server] = quiet || s.eng.ServedLists().Held(server)
	}
	s.mu.Lock()
	again := withheld != s.withheldGen // a server withheld since: all listed again
	s.withheldGen = withheld
	now := time.Now()
	for server, v := range versions {
		waited := false // an entry kept off has waited long enough since the last apply
		for _, since := range s.waiting[server] {
			if waited = now.Sub(since) >= maxQuietWait; waited {
				break
			}
		}
		for _, since := range s.unread[server] {
			if waited = waited || now.Sub(since) >= maxUnreadWait; waited {
				break
			}
		}
		if p := s.paces[server]; p != nil && len(p.since) > 0 && !held[server] && (p.restored || p.allowance(now) >= 1 || !p.settleUntil.IsZero() && p.settled(now)) {
			waited = true // entries kept off for want of pace may come now
		}
		if old, ok := s.seen[server]; !ok || old != v || again || waited || contents[server] != s.seenContents[server] || held[server] != (s.holding[server] != nil) || checked[server] != (s.checked[server] != nil) {
			s.seenContents[server] = contents[server]
			s.seen[server] = v
			changed = append(changed, server)
		}
	}
	for server := range s.seen {
		if _, ok := versions[server]; !ok {
			delete(s.paces, server)
			delete(s.prior, server)
			delete(s.seen, server) // a reload removed it
			gone = append(gone, server)
		}
	}
	s.mu.Unlock()
	for _, server := range gone {
		s.apply(server, nil)
	}
	slices.Sort(changed)
	added := 0
	for _, server := range changed {
		descs, err := s.eng.Descriptors(server)
		if err != nil {
			s.log.Warn("listing a mirror failed", "server", server, "err", err)
			continue
		}
		added += s.apply(server, descs)
	}
	// Remembered: a bridge passing back what contextd lists grows a lag
	// after each time the list did (see mcp.ServedLists.Stillness).
	s.eng.ServedLists().NoteAdded(added)
}

// apply replaces server's part of the resource list with descs. Of a
// server that passed back what contextd serves (mcp.ServedLists.Withhold)
// what was listed when it was first withheld stays listed; what came
// since is listed once the content pass read it and found it no copy of
// a resource contextd served, and of that only texts long enough to tell
// (mcp.MinDigestBytes): what it lists next may be what contextd listed,
// one level down. It returns how many entries are new to the list.
func (s *Server) apply(server string, descs []resource.Descriptor) (added int) {
	lists := s.eng.ServedLists()
	all := descs
	s.repoint(server)
	// Held or frozen (mcp.ServedLists.Hold, Freeze): no more than is
	// listed now. Kept still by another server's hold (Quiet): no more
	// than is listed now, save what has waited maxQuietWait.
	held := lists.Held(server)
	quiet := !held && lists.Quiet()
	if now := s.listedSince(s.holding, server, held || quiet); now != nil {
		at := time.Now()
		s.mu.Lock()
		was := s.waiting[server]
		var waiting map[resource.Key]time.Time // nil: held itself, nothing waits
		if quiet {
			waiting = map[resource.Key]time.Time{}
		}
		descs = slices.DeleteFunc(slices.Clone(descs), func(d resource.Descriptor) bool {
			k := d.Key()
			if now[k] {
				return false
			}
			if waiting == nil {
				return true
			}
			since, ok := was[k]
			if !ok {
				since = at
			}
			if at.Sub(since) >= maxQuietWait {
				now[k] = true // listed from now on
				return false
			}
			waiting[k] = since
			return true
		})
		s.waiting[server] = waiting
		s.mu.Unlock()
	} else {
		s.mu.Lock()
		delete(s.waiting, server)
		s.mu.Unlock()
	}
	// Checked (mcp.ServedLists.Check): of what came since, not what the
	// content pass found empty or answered with an error, nor for a while
	// what it has not read yet (copies are withholding's to tell); what it
	// does not read (images, texts for the user alone) as ever.
	if checked := s.listedSince(s.checked, server, lists.Checked(server)); checked != nil {
		at := time.Now()
		s.mu.Lock()
		was, unread := s.unread[server], map[resource.Key]time.Time{}
		s.mu.Unlock()
		var waited []resource.Key
		descs = slices.DeleteFunc(slices.Clone(descs), func(d resource.Descriptor) bool {
			k := d.Key()
			switch {
			case checked[k]:
				return false
			case s.eng.ContentRefused(k):
				return true
			case !s.eng.ContentWanted(d) || s.eng.ContentRead(k):
				return false
			}
			since, ok := was[k]
			if !ok {
				since = at
			}
			if at.Sub(since) >= maxUnreadWait {
				waited = append(waited, k) // left out by a bound, or slow to read
				return false
			}
			unread[k] = since
			return true
		})
		s.mu.Lock()
		s.unread[server] = unread
		for _, k := range waited {
			checked[k] = true // listed from now on
		}
		s.mu.Unlock()
	} else {
		s.mu.Lock()
		delete(s.unread, server)
		s.mu.Unlock()
	}
	// Withheld: what was listed before stays, save copies passed back
	// after the read of what they copy (a bridge answering reads of its
	// copies slowly had a burst of them listed before two were read; a
	// page two servers shared before a host read it stays); of what came
	// since, what the content pass read and found no copy.
	if kept := s.listedSince(s.kept, server, lists.Withheld(server)); kept != nil {
		s.keepPriorListed(kept, server, all)
		at := time.Now()
		descs = slices.DeleteFunc(slices.Clone(descs), func(d resource.Descriptor) bool {
			k := d.Key()
			return lists.IsPassedBack(k) || s.besideCopies(d, at) || !kept[k] && (lists.IsCopy(k) || s.eng.ContentBytes(k) < mcp.MinDigestBytes && !lists.IsOwn(k))
		})
	}
	descs = s.pace(server, descs, all, held || quiet)
	want := make(map[resource.Key]*mcpsdk.Resource, len(descs))
	for _, d := range descs {
		want[d.Key()] = descriptor(d)
	}
	var gone []string
	var put []*mcpsdk.Resource
	s.mu.Lock()
	for k, r := range s.listed {
		if k.Server == server && want[k] == nil {
			gone = append(gone, r.URI)
			delete(s.listed, k)
		}
	}
	for k, r := range want {
		old := s.listed[k]
		if old == nil {
			added++
		}
		if old == nil || !reflect.DeepEqual(old, r) {
			s.listed[k] = r
			put = append(put, r)
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	for _, r := range put {
		s.mcp.AddResource(r, s.readResource)
	}
	if len(gone)+len(put) > 0 {
		s.log.Debug("resource list updated", "server", server, "added_or_changed", len(put), "removed", len(gone))
	}
	return added
}

// pace returns descs less the entries new to the resource list that
// server may not list yet. Its first list comes whole: all its mirror
// holds once its first sync ends (since the server was added: a reload
// that replaces its mirror keeps its pace, and so does a restart with
// Options.StateFile, see savedPace.restore), and all it
// lists in the Options.PaceSettle after (what waits of that comes then, see
// listPace.settle). So does what takes the place of entries gone (a
// rename, a list that emptied and came back, a log dropping its oldest
// record for each new one) up to the most it ever had listed. Growth past
// that comes Options.PaceBurst at once, then one each paceEvery, those
// kept off longest first. descs is what the other filters let through,
// all the server's mirrored entries; still says the list is kept still
// (the server or another is held): an entry's wait counts through it.
//
// A bridge rewriting what it passes back past every copy test, or
// growing between lists that grew nothing so as never to be held, grows
// with contextd's list of it, and its backlog is contextd's list: paced,
// the loop grows by one entry each paceEvery in the long run, and a
// bridge passing back faster drains its backlog and echoes contextd's
// list again, which its holds tell (see the sync package's growthWatch).
// One that drops an entry of its own for each it passes back does not
// grow: it costs what any server turning its list over at that rate
// costs, bounded by the most it listed. The burst is the same whether or
// not the server was held: every server adding entries steadily is held
// once, so a smaller burst for those would cost honest commits hours, and
// would not bound the loop more than once. What waits answers Assemble as
// soon as mirrored; an honest server is listed as ever unless it adds
// more than one entry each paceEvery for long, or more than the burst at
// once.
func (s *Server) pace(server string, descs, all []resource.Descriptor, still bool) []resource.Descriptor {
	ep := s.endpoint(server)
	s.mu.Lock()
	defer s.mu.Unlock()
	burst := float64(s.opts.PaceBurst)
	now := time.Now()
	p := s.paces[server]
	if p == nil {
		// Its first list comes whole: while its first sync stores what it
		// listed, what the mirror holds so far is part of it; once
		// stored, all of it counts as listed (another filter may keep some
		// off for now: a hold). A reload that gives it a new mirror keeps
		// its pace: all the mirror holds then is no first list (what the
		// copy checks and the pace kept off came whole at each reload).
		// Nor does a restart of contextd (Options.StateFile): only what
		// was listed before is listed at once; what was kept off waits
		// as it did, and what is new is growth.
		s.stateGen++
		prior, kept := s.prior[server], 0
		if prior != nil {
			n := len(descs)
			descs = slices.DeleteFunc(slices.Clone(descs), func(d resource.Descriptor) bool {
				return !prior.wasListed(d.URI)
			})
			kept = n - len(descs)
		}
		if len(all) > 0 && s.seen[server].Syncs > 0 {
			if prior != nil {
				s.paces[server] = prior.restore(now, burst, all)
				delete(s.prior, server)
			} else {
				s.paces[server] = &listPace{tokens: burst, burst: burst, at: now, since: map[resource.Key]time.Time{}, most: len(all), size: len(all), settleUntil: now.Add(s.opts.PaceSettle)}
			}
			s.paces[server].endpoint = ep
		}
		s.eng.ServedLists().NotePaced(server, kept)
		return descs
	}
	s.stateGen++
	p.tokens, p.at = p.allowance(now), now
	p.restored = false
	type entry struct {
		i  int       // in descs
		at time.Time // since when it waits
	}
	var fresh []entry // new to the list
	for i, d := range descs {
		k := d.Key()
		if s.listed[k] != nil {
			continue
		}
		at, ok := p.since[k]
		if !ok {
			at = now
			p.since[k] = at
		}
		fresh = append(fresh, entry{i, at})
	}
	p.settle(now, len(descs))
	// Up to the most it ever had listed, an entry takes the place of one
	// gone (a rename, a list that emptied and came back, a log dropping
	// its oldest record for each new one): only growth past that is
	// paced.
	free := max(0, p.most-(len(descs)-len(fresh)))
	room := min(len(fresh), free+int(p.tokens))
	if room < len(fresh) {
		slices.SortFunc(fresh, func(a, b entry) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return strings.Compare(descs[a.i].URI, descs[b.i].URI)
		})
	}
	p.tokens -= float64(max(0, room-free))
	p.most = max(p.most, len(descs)-len(fresh)+room)
	for _, e := range fresh[:room] {
		delete(p.since, descs[e.i].Key())
	}
	if !still && len(p.since) > len(fresh)-room {
		// Some that waited are no longer new to the list here: gone from
		// the mirror, or kept off by another filter for good (found a
		// copy); kept, they would wake the server for nothing. Through a
		// hold (still) they keep their time.
		here := make(map[resource.Key]bool, len(descs))
		for _, d := range descs {
			here[d.Key()] = true
		}
		for k := range p.since {
			if !here[k] {
				delete(p.since, k)
			}
		}
	}
	s.eng.ServedLists().NotePaced(server, len(p.since))
	if room == len(fresh) {
		return descs
	}
	if !p.logged && p.settleUntil.IsZero() {
		p.logged = true
		s.log.Info("a server lists more new entries than its pace: contextd's MCP server lists the rest as the pace allows (they answer Assemble already)", "server", server, "waiting", len(fresh)-room, "pace", paceEvery, "burst", burst)
	}
	off := make(map[int]bool, len(fresh)-room)
	for _, e := range fresh[room:] {
		off[e.i] = true
	}
	kept := make([]resource.Descriptor, 0, len(descs)-len(off))
	for i, d := range descs {
		if !off[i] {
			kept = append(kept, d)
		}
	}
	return kept
}

// A listPace is a server's allowance of entries new to the resource
// list (see pace): a token bucket.
type listPace struct {
	tokens float64   // entries it may list now, at most burst
	burst  float64   // Options.PaceBurst
	at     time.Time // when tokens was last brought up to date
	// since holds the entries kept off for want of it, and since when
	// (those other filters hide now too).
	since  map[resource.Key]time.Time
	most   int  // the most entries of the server the list held
	logged bool // its first wait was logged
	// restored: brought back from Options.StateFile and not applied
	// since; what waits may take the room up to most at once.
	restored bool
	// withheldUntil: restored from a state that said the server was
	// withheld, it is written so until then (restoredWithheldFor).
	withheldUntil time.Time
	// While its first list settles (see settle): until when (zero once
	// settled), and the most entries other filters let through meanwhile.
	settleUntil time.Time
	size        int
	// endpoint is the server's config.Server.Endpoint when it was made.
	endpoint string
}

// repoint starts server's list afresh if its name now stands for another
// server (a reload or a restart pointed it elsewhere; see
// config.Server.Endpoint): what the old one listed or kept off says
// nothing of it, and its first list comes whole (see pace); but one found
// passing back may be the same server reached another way, so it stays
// withheld a while (see mcp.ServedLists.Repointed), from before its
// other filters apply.
func (s *Server) repoint(server string) {
	ep := s.endpoint(server)
	s.mu.Lock()
	p, prior := s.paces[server], s.prior[server]
	moved := p != nil && p.endpoint != ep || p == nil && prior != nil && prior.Endpoint != "" && prior.Endpoint != ep
	now := time.Now()
	withheld := moved && (p != nil && now.Before(p.withheldUntil) || p == nil && prior.Withheld)
	if moved {
		delete(s.paces, server)
		delete(s.prior, server)
	}
	s.mu.Unlock()
	if moved {
		s.log.Info("the server now points at another endpoint: its resource list starts afresh", "server", server)
		s.eng.ServedLists().Repointed(server, withheld, now.Add(restoredWithheldFor))
		// The texts indexed under its name, and the copies found among
		// them, are the earlier server's: each is read again, and what
		// the new one answers decides.
		s.eng.Reread(server)
	}
}

// endpoint returns what tells the server configured as name from another
// (config.Server.Endpoint); "" if none is configured so.
func (s *Server) endpoint(name string) string {
	srv, ok := s.eng.Config().Server(name)
	if !ok {
		return ""
	}
	return srv.Endpoint()
}

// settle brings p's first list up to now, the other filters letting
// size of the server's entries through (not those that found copies or
// empty, which stay off for good). Its first list settles
// Options.PaceSettle after it came (a server may list a few entries while
// it starts, then all): the most they let through before then counts as
// listed (most) and may take the place of entries gone, so what waits of
// it comes, and the burst it spent is whole again; what it adds later is
// growth. Until then it is paced as ever, so a bridge passing its own
// entries back grows by no more than the pace meanwhile.
func (p *listPace) settle(now time.Time, size int) {
	switch {
	case p.settleUntil.IsZero():
	case p.settled(now):
		p.settleUntil = time.Time{}
		p.most = max(p.most, p.size)
		if now.After(p.withheldUntil) {
			p.tokens = p.burst // what it spent was its first list
		}
	case now.After(p.withheldUntil):
		p.size = max(p.size, size)
	default:
		// Restarted withheld: what other filters let through now may
		// be what it passes back, which the copy checks, starting
		// again, have not told yet.
	}
}

// settled reports whether p's first list has settled by now (see settle).
func (p *listPace) settled(now time.Time) bool {
	return p.settleUntil.IsZero() || !now.Before(p.settleUntil)
}

// allowance returns p's tokens brought up to now.
func (p *listPace) allowance(now time.Time) float64 {
	return min(p.burst, p.tokens+float64(now.Sub(p.at))/float64(paceEvery))
}

// paceEvery is how often a server's entries new to the resource list
// past its burst may come (see pace): 8,640 a day, so a log adding a page
// each 10 s keeps up.
const paceEvery = 10 * time.Second

// maxQuietWait is the longest another server's hold keeps a server's new
// entries off the resource list: holds of several servers in a row (many
// logs growing at each list) would keep it still for good. It is longer
// than one hold (at most 120 s), so a bridge held alone has nothing new
// to pass back.
const maxQuietWait = 3 * time.Minute

// maxUnreadWait is the longest a checked server's new entry waits for the
// content pass to read it: one left out by a bound, or whose reads outlast
// the pass's wait, is listed then.
const maxUnreadWait = 2 * time.Minute

// listedSince returns, while on, what the resource list held of server
// when on first held (in since, by server); nil, and forgotten, once off.
func (s *Server) listedSince(since map[string]map[resource.Key]bool, server string, on bool) map[resource.Key]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(since, server)
		return nil
	}
	held := since[server]
	if held == nil {
		held = map[resource.Key]bool{}
		for k := range s.listed {
			if k.Server == server {
				held[k] = true
			}
		}
		since[server] = held
	}
	return held
}

// besideCopies reports whether d, of a withheld server, first listed with
// or after a copy passed back (mcp.ServedLists.NoteBesideCopies), is left
// out: found a copy, or not read yet for less than maxBesideWait (a burst
// of copies read slowly, listed before two were read, left the list one
// read at a time).
func (s *Server) besideCopies(d resource.Descriptor, at time.Time) bool {
	lists, k := s.eng.ServedLists(), d.Key()
	since, ok := lists.BesideCopies(k)
	return ok && (lists.IsCopy(k) || s.eng.ContentWanted(d) && !s.eng.ContentRead(k) && at.Sub(since) < maxBesideWait)
}

// maxBesideWait is the longest an entry first listed with a copy passed
// back waits, unread, off a withheld server's list: a bridge answering
// reads of its copies in 9.5 s, just inside the content pass's read
// timeout, had a burst of them listed past a 2-minute wait.
const maxBesideWait = time.Hour

// keepPriorListed adds to kept, what was listed of server when it was
// withheld, what the list held of it before a restart (Options.StateFile)
// while its first list since has not come: withheld again by the content
// pass before that, an honest server sharing pages with another (a
// mirror site a host read both of) lost every one of them.
func (s *Server) keepPriorListed(kept map[resource.Key]bool, server string, all []resource.Descriptor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prior := s.prior[server]
	if prior == nil || prior.listed == nil {
		return // not said (an older file): its copies are not vouched for
	}
	for _, d := range all {
		if prior.wasListed(d.URI) {
			kept[d.Key()] = true
		}
	}
}

// descriptor returns the namespaced MCP descriptor of d.
func descriptor(d resource.Descriptor) *mcpsdk.Resource {
	r := &mcpsdk.Resource{
		URI: ResourceURI(d.Key()), Name: d.Name, Title: d.Title, Description: d.Description,
		MIMEType: d.MIMEType, Size: d.Size,
		// The instance name lets a contextd that reaches this one through
		// a bridge rewriting URIs know it is itself.
		Meta: mcpsdk.Meta{MetaServer: d.Server, MetaURI: d.URI, mcp.InstanceMetaKey: mcp.Instance()},
	}
	if r.Name == "" {
		r.Name = d.URI // required by the protocol
	}
	if len(d.Audience) > 0 || d.Priority != 0 || d.LastModified != "" {
		a := &mcpsdk.Annotations{Priority: d.Priority, LastModified: d.LastModified}
		for _, role := range d.Audience {
			a.Audience = append(a.Audience, mcpsdk.Role(role))
		}
		r.Annotations = a
	}
	return r
}

// readResource serves resources/read of a namespaced URI through the
// engine's mirror of its server.
func (s *Server) readResource(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	k, err := ParseResourceURI(uri)
	if err != nil {
		return nil, rpcError(ctx, err, uri)
	}
	cs, fetch, err := s.eng.Read(ctx, k) // its server is ready (see readyScope)
	if err != nil {
		return nil, rpcError(ctx, err, uri)
	}
	// Remembered, so that a bridge passing it back to this contextd is
	// known by it; one for its caller alone, not past this run.
	if fetch.Private {
		s.eng.ServedLists().NotePrivateRead(k, cs)
	} else {
		s.eng.ServedLists().NoteRead(k, cs)
	}
	s.saveServed(true) // a crash right after must not lose it
	out := &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{}}
	var bad []string
	for _, c := range cs {
		if c.Error != "" {
			bad = append(bad, c.Error)
			continue
		}
		out.Contents = append(out.Contents, contents(k, c))
	}
	if len(out.Contents) == 0 && len(bad) > 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("server %q: read %q: no usable content item: %s", k.Server, k.URI, strings.Join(bad, "; "))}
	}
	return out, nil
}

// contents returns one upstream content item under its namespaced URI
// (an item whose own URI differs from the one read keeps it, namespaced).
func contents(read resource.Key, c resource.Content) *mcpsdk.ResourceContents {
	k := read
	if c.URI != "" {
		k.URI = c.URI
	}
	rc := &mcpsdk.ResourceContents{URI: ResourceURI(k), MIMEType: c.MIMEType, Meta: mcpsdk.Meta{MetaServer: k.Server, MetaURI: k.URI}}
	if c.IsBlob {
		rc.Blob = c.Blob
		if rc.Blob == nil {
			rc.Blob = []byte{}
		}
	} else {
		rc.Text = c.Text
	}
	return rc
}

// readContext serves resources/read of contextd:context?task=…&budget=….
func (s *Server) readContext(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := url.Parse(uri)
	if err != nil || u.Scheme+":"+u.Opaque != contextPrefix {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%q is not of the form %s", uri, ContextTemplate)}
	}
	q := u.Query()
	budget, err := parseBudget(q.Get("budget"))
	if err != nil {
		return nil, err
	}
	res, err := s.assemble(ctx, req.Session, engine.AssembleRequest{Query: q.Get("task"), TokenBudget: budget})
	if err != nil {
		return nil, rpcError(ctx, err, uri)
	}
	out := &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{}}
	for _, it := range res.Items {
		for _, c := range it.Contents {
			out.Contents = append(out.Contents, contents(it.Key(), c.Content))
		}
	}
	return out, nil
}

// listenEra is the first protocol version whose subscriptions are
// subscriptions/listen streams rather than resources/subscribe.
const listenEra = "2026-07-28"

// subscribe accepts resources/subscribe for a namespaced URI whose server
// offers subscriptions, and reads the resource once through the mirror,
// which subscribes upstream before it reads.
func (s *Server) subscribe(ctx context.Context, req *mcpsdk.SubscribeRequest) error {
	uri := req.Params.URI
	k, err := ParseResourceURI(uri)
	if err != nil {
		return rpcError(ctx, err, uri)
	}
	s.waitReady(ctx, []string{k.Server})
	found := false
	for _, st := range s.eng.Servers() {
		if st.Server != k.Server {
			continue
		}
		found = true
		switch {
		case st.Syncs > 0 && !st.Capabilities.Subscribe:
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("server %q does not offer resource subscriptions: its resources' updates cannot be relayed (its list changes still are, as notifications/resources/list_changed)", k.Server)}
		case st.Protocol >= listenEra:
			// The mirrors subscribe with resources/subscribe only.
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("server %q speaks MCP %s, whose subscriptions (subscriptions/listen) contextd does not hold upstream: its resources' updates cannot be relayed", k.Server, st.Protocol)}
		}
	}
	if !found {
		return rpcError(ctx, fmt.Errorf("%w: unknown server %q", engine.ErrInvalidArgument, k.Server), uri)
	}
	// Counted before the read, so an update that arrives while it is in
	// flight is relayed.
	if err := s.hold(req.Session, uri, k); err != nil {
		return err
	}
	release := func() {}
	if s.opts.Admit != nil {
		r, err := s.opts.Admit(ctx)
		if err != nil {
			s.let(req.Session, uri)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		release = r
	}
	_, _, err = s.eng.Read(ctx, k)
	release()
	if err != nil {
		s.let(req.Session, uri)
		return rpcError(ctx, err, uri)
	}
	return nil
}

// MaxSubscriptionBytes bounds the URIs one session's subscriptions hold
// together (bytes). A subscription keeps its URI here, in the go-sdk and in
// the mirror; listed and template URIs are short, but a server with
// allow_unlisted_pins may serve any URI a request can carry (up to 1 MiB),
// and MaxSessions × Options.MaxSubscriptions of those would hold
// gigabytes.
const MaxSubscriptionBytes = 256 << 10

// hold records sess's subscription to uri (resource k), at most
// Options.MaxSubscriptions and MaxSubscriptionBytes per session; the first one of a session starts
// the wait that takes them all back when the session ends.
func (s *Server) hold(sess *mcpsdk.ServerSession, uri string, k resource.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	held, known := s.sessSubs[sess]
	if _, ok := held[uri]; ok {
		return nil // counted once per session and URI, as the go-sdk keeps it
	}
	if len(held) >= s.opts.MaxSubscriptions {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("this session holds %d subscriptions, the most it may: unsubscribe from some first", len(held))}
	}
	n := len(uri)
	for u := range held {
		n += len(u)
	}
	if n > MaxSubscriptionBytes {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("this session's subscriptions would hold %d KiB of URIs, over the %d KiB it may: unsubscribe from some first", n>>10, MaxSubscriptionBytes>>10)}
	}
	if !known {
		held = map[string]resource.Key{}
		s.sessSubs[sess] = held
		if sess != nil {
			go func() {
				_ = sess.Wait()
				s.ended(sess)
			}()
		}
	}
	held[uri] = k
	s.subs[k]++
	return nil
}

// let drops sess's subscription to uri, if it holds one.
func (s *Server) let(sess *mcpsdk.ServerSession, uri string) {
	s.mu.Lock()
	k, ok := s.sessSubs[sess][uri]
	if ok {
		delete(s.sessSubs[sess], uri)
	}
	s.mu.Unlock()
	if ok {
		s.drop(k)
	}
}

// ended takes back the subscriptions of a session that ended, here and in
// the go-sdk (which otherwise keeps every URI ever subscribed).
func (s *Server) ended(sess *mcpsdk.ServerSession) {
	s.mu.Lock()
	held := s.sessSubs[sess]
	delete(s.sessSubs, sess)
	s.mu.Unlock()
	for uri, k := range held {
		s.drop(k)
		_, _ = s.dispatch(context.Background(), "resources/unsubscribe", &mcpsdk.UnsubscribeRequest{Session: sess, Params: &mcpsdk.UnsubscribeParams{URI: uri}})
	}
}

// drop forgets one downstream subscription to k.
func (s *Server) drop(k resource.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[k] > 1 {
		s.subs[k]--
	} else {
		delete(s.subs, k)
	}
}

func (s *Server) unsubscribe(ctx context.Context, req *mcpsdk.UnsubscribeRequest) error {
	if _, err := ParseResourceURI(req.Params.URI); err != nil {
		return rpcError(ctx, err, req.Params.URI)
	}
	s.let(req.Session, req.Params.URI)
	return nil
}

// updated relays an upstream notifications/resources/updated (called from
// the SDK's reader goroutine: it must not block) and, when a downstream
// session subscribed to the resource, reads it again in the background, so
// the mirror keeps its upstream subscription (and the next read is cached).
//
// One relay per resource is in flight at a time; updates that arrive
// meanwhile are sent as one more when it ends (an update says only that the
// resource changed). The go-sdk writes a notification to each subscribed
// session in turn, holding a session's stream while it writes, so a
// subscriber that stops reading holds a relay for up to the write stall;
// a relay per update let an upstream sending updates as fast as it could
// pile up goroutines without bound meanwhile (440,000 and 4.8 GB in a
// minute).
func (s *Server) updated(k resource.Key) {
	s.mu.Lock()
	subscribed := s.subs[k] > 0 && !s.stopped
	if _, busy := s.relaying[k]; busy && subscribed {
		s.relaying[k] = true
		s.mu.Unlock()
		return
	}
	again := subscribed && !s.rereads[k]
	if again {
		s.rereads[k] = true
	}
	if subscribed {
		s.relaying[k] = false
	}
	s.mu.Unlock()
	if !subscribed {
		return
	}
	s.relays.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		for more := true; more; {
			if err := s.mcp.ResourceUpdated(ctx, &mcpsdk.ResourceUpdatedNotificationParams{URI: ResourceURI(k)}); err != nil {
				s.log.Debug("relaying resources/updated failed", "uri", k.URI, "err", err)
			}
			s.mu.Lock()
			more = s.relaying[k] && !s.stopped && ctx.Err() == nil
			if more {
				s.relaying[k] = false
			} else {
				delete(s.relaying, k)
			}
			s.mu.Unlock()
		}
		if !again {
			return
		}
		defer func() {
			s.mu.Lock()
			delete(s.rereads, k)
			s.mu.Unlock()
		}()
		if _, _, err := s.eng.Read(ctx, k); err != nil {
			s.log.Debug("re-reading an updated resource failed", "server", k.Server, "uri", k.URI, "err", err)
		}
	})
}
