package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// A Filter narrows what Search and Assemble rank. Zero fields match all.
type Filter struct {
	Servers []string // configured server names
	// MIMETypes are media types ("text/markdown") or wildcards ("text/*",
	// "*/*"); parameters and case are ignored, and a descriptor without a
	// MIME type matches none.
	MIMETypes []string
	// URIPrefixes keep the URIs that start with one of them, byte for byte.
	URIPrefixes []string
}

// match reports whether d passes the MIME and URI filters.
func (f Filter) match(d resource.Descriptor) bool {
	if len(f.URIPrefixes) > 0 && !slices.ContainsFunc(f.URIPrefixes, func(p string) bool { return strings.HasPrefix(d.URI, p) }) {
		return false
	}
	if len(f.MIMETypes) == 0 {
		return true
	}
	mt := baseMIME(d.MIMEType)
	return mt != "" && slices.ContainsFunc(f.MIMETypes, func(want string) bool {
		want = baseMIME(want)
		switch typ, sub, _ := strings.Cut(want, "/"); {
		case want == "*/*":
			return true
		case sub == "*":
			return strings.HasPrefix(mt, typ+"/")
		}
		return mt == want
	})
}

// baseMIME returns a media type without parameters, lowercased, or "".
func baseMIME(s string) string {
	base, _, _ := strings.Cut(s, ";")
	return strings.ToLower(strings.TrimSpace(base))
}

func (f Filter) narrows() bool { return len(f.MIMETypes) > 0 || len(f.URIPrefixes) > 0 }

// MaxFilterValues bounds the MIME types and the URI prefixes of one
// Filter: a narrowing filter is checked against every descriptor in scope
// for every query text ranked (500 descriptors and 200,000 MIME types took
// 21 s).
const MaxFilterValues = 64

// Check validates the MIME and URI filters (not the server names, which
// need the engine's configuration).
//
// Errors: ErrInvalidArgument.
func (f Filter) Check() error {
	if len(f.MIMETypes) > MaxFilterValues || len(f.URIPrefixes) > MaxFilterValues {
		return fmt.Errorf("%w: %d MIME types and %d URI prefixes to filter by; at most %d of each", ErrInvalidArgument, len(f.MIMETypes), len(f.URIPrefixes), MaxFilterValues)
	}
	for _, m := range f.MIMETypes {
		typ, sub, ok := strings.Cut(baseMIME(m), "/")
		wild := typ+"/"+sub == "*/*" || sub == "*"
		if !ok || typ == "" || sub == "" || strings.ContainsAny(typ+sub, " /") || (typ == "*" && sub != "*") ||
			(!wild && strings.Contains(typ+sub, "*")) || (wild && strings.Contains(strings.TrimSuffix(typ, "*"), "*")) {
			return fmt.Errorf("%w: MIME type filter %q is not a media type like text/markdown, text/* or */*", ErrInvalidArgument, m)
		}
	}
	for _, p := range f.URIPrefixes {
		if p == "" {
			return fmt.Errorf("%w: empty URI prefix", ErrInvalidArgument)
		}
	}
	return nil
}

// unavailable returns ErrUnavailable, with each server's state, when no
// server in scope has synced; nil when one has (it simply has no resources).
func (e *Engine) unavailable(servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("%w: no servers configured", ErrUnavailable)
	}
	var states []string
	for _, name := range servers {
		m, ok := e.mirror(name)
		if !ok {
			continue
		}
		st := m.Status()
		if st.Syncs > 0 {
			return nil
		}
		s := name + ": " + st.State.String()
		if st.LastError != "" {
			s += " (" + firstLine(st.LastError) + ")"
		}
		states = append(states, s)
	}
	return fmt.Errorf("%w: no server in scope has synced yet: %s", ErrUnavailable, strings.Join(states, "; "))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// SearchRequest asks for ranked descriptors without reading anything.
type SearchRequest struct {
	Query string
	Limit int // 0 means 10
	Filter
	// Ranking overrides the engine's ranking (the eval compares strategies);
	// nil uses it.
	Ranking *Ranking
}

// Search ranks descriptors for the query.
//
// Errors: ErrInvalidArgument (empty query or one over MaxQueryBytes, unknown server, bad filter,
// negative limit), ErrUnavailable (no server in scope has synced).
func (e *Engine) Search(ctx context.Context, req SearchRequest) (out []Ranked, err error) {
	defer e.enter()()
	if e.observer != nil {
		defer func(begun time.Time) { e.observer.Searched(time.Since(begun), err) }(time.Now())
	}
	if err := checkQuery(req.Query); err != nil {
		return nil, err
	}
	if err := e.checkFilter(req.Filter); err != nil {
		return nil, err
	}
	if req.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", ErrInvalidArgument, req.Limit)
	}
	if req.Limit == 0 {
		req.Limit = 10
	}
	how := e.ranking
	if req.Ranking != nil {
		if !req.Ranking.valid() {
			return nil, fmt.Errorf("%w: ranking %+v: weights must be >= 0 and not both 0", ErrInvalidArgument, *req.Ranking)
		}
		how = *req.Ranking
	}
	ranked, err := e.rank(ctx, req.Query, req.Filter, req.Limit, how)
	e.noteHits(ranked)
	return ranked, err
}

// noteHits tells the index which resources a query ranked among its
// candidates, so content passes that cannot read everything read those
// first (index.NoteHits).
func (e *Engine) noteHits(ranked []Ranked) {
	keys := make([]resource.Key, len(ranked))
	for i, r := range ranked {
		keys[i] = r.Key()
	}
	e.ix.NoteHits(keys...)
}

// AssembleRequest asks for the contents that best serve a task within a budget.
type AssembleRequest struct {
	Query       string
	TokenBudget int // tokens, >= 1
	// Filter narrows the ranked candidates; it does not apply to Pinned.
	Filter
	IncludeBinary bool
	MaxItems      int // 0 = no limit
	// Pinned resources (an IDE's open file) come first, in this order, and
	// count against the budget like any item; they need not be listed by
	// their server, only readable.
	Pinned []resource.Key
	// IncludeUserAudience also returns resources annotated for the user
	// only (selector.Request.IncludeUserAudience).
	IncludeUserAudience bool
	// ValueFloor overrides DefaultValueFloor (the eval compares floors);
	// nil uses it.
	ValueFloor *float64
}

// DefaultValueFloor is the selector.Request.ValueFloor of Assemble: a
// candidate worth less than this share of the first unpinned item returned
// (the best that can be returned) is not read. It is
// the floor the budget benchmark measured best on eval/datasets/godoc's dev
// split (see eval/README.md).
const DefaultValueFloor = 0.9

// AssembleResult is the selection and the tokenizer it was counted with.
// Item and Omitted ranks are the candidates' 1-based positions: pinned
// resources first, then the ranked ones in fused order.
type AssembleResult struct {
	selector.Result
	// Fetched says, for each item read, when and how its contents were
	// fetched (items without an entry were not read by this request).
	Fetched   map[resource.Key]ctxsync.Fetch
	Tokenizer string
}

// Assemble ranks, reads only what may be returned, and packs it so the total
// never exceeds req.TokenBudget.
//
// Errors: ErrInvalidArgument (empty query or one over MaxQueryBytes, budget < 1, unknown server, bad
// filter or pin, negative max_items), ErrUnavailable (no server in scope has
// synced, and nothing is pinned), or ctx's error.
func (e *Engine) Assemble(ctx context.Context, req AssembleRequest) (out *AssembleResult, err error) {
	defer e.enter()()
	if e.observer != nil {
		defer func(begun time.Time) {
			tokens := 0
			if out != nil {
				tokens = out.TotalTokens
			}
			e.observer.Assembled(time.Since(begun), tokens, err)
		}(time.Now())
	}
	if err := checkQuery(req.Query); err != nil {
		return nil, err
	}
	if req.TokenBudget < 1 {
		return nil, fmt.Errorf("%w: token budget %d is below 1", ErrInvalidArgument, req.TokenBudget)
	}
	if req.MaxItems < 0 {
		return nil, fmt.Errorf("%w: max items %d is negative", ErrInvalidArgument, req.MaxItems)
	}
	if err := e.checkFilter(req.Filter); err != nil {
		return nil, err
	}
	fetched := &fetchLog{m: map[resource.Key]ctxsync.Fetch{}}
	if err := e.checkPins(req.Pinned); err != nil {
		return nil, err
	}
	pinned := make(map[resource.Key]bool, len(req.Pinned))
	depth := e.candidates
	if depth == 0 {
		depth = CandidatesFor(req.TokenBudget)
	}
	cands := make([]selector.Candidate, 0, len(req.Pinned)+depth)
	for _, k := range req.Pinned {
		if err := e.checkServers([]string{k.Server}); err != nil {
			return nil, fmt.Errorf("pinned %q: %w", k.URI, err)
		}
		if k.URI == "" {
			return nil, fmt.Errorf("%w: pinned resource on %q has an empty URI", ErrInvalidArgument, k.Server)
		}
		if pinned[k] {
			continue
		}
		pinned[k] = true
		d, ok := e.ix.Get(k)
		if !ok {
			d = resource.Descriptor{Server: k.Server, URI: k.URI, Name: k.URI}
		}
		c := candidate(d, 0)
		c.Pinned = true
		cands = append(cands, c)
	}
	// Ranked deeper than the candidates taken: the next ones replace
	// candidates whose reads fail or bring nothing (see refill).
	ranked, err := e.rank(ctx, req.Query, req.Filter, refillDepth*depth+len(pinned), e.ranking)
	if err != nil && (len(pinned) == 0 || !errors.Is(err, ErrUnavailable)) {
		return nil, err
	}
	e.noteHits(ranked[:min(len(ranked), depth+len(pinned))]) // what a request takes, not its spares
	// With pins, no synced server to rank is not an error: the pinned
	// resources are still read (from servers that are up).
	for _, r := range ranked {
		if !pinned[r.Key()] && len(cands) < len(pinned)+depth {
			cands = append(cands, candidate(r.Descriptor, r.Score))
		}
	}
	for i := range cands {
		if cands[i].Size <= 0 {
			cands[i].IndexedSize = int64(e.ix.ContentSize(cands[i].Key()))
		}
	}
	e.attachPassages(ctx, req.Query, cands)
	floor := DefaultValueFloor
	if req.ValueFloor != nil {
		floor = *req.ValueFloor
		if !(floor >= 0 && floor <= 1) {
			return nil, fmt.Errorf("%w: value floor %v is outside [0, 1]", ErrInvalidArgument, floor)
		}
	}
	budget := e.newReadBudget(ctx)
	budget.dropBlobs = !req.IncludeBinary
	sreq := selector.Request{
		TokenBudget: req.TokenBudget, IncludeBinary: req.IncludeBinary, MaxItems: req.MaxItems,
		IncludeUserAudience: req.IncludeUserAudience,
		Query:               req.Query, ValueFloor: floor, Now: time.Now(), Estimator: e.est,
	}
	passes := newPassOvers(budget.lim.MaxReads)
	memo := &readMemo{read: e.reader(fetched, budget, passes), m: map[resource.Key]memoRead{}, passed: map[resource.Key]bool{}, forgiven: map[resource.Key]bool{}}
	res, err := selector.Select(ctx, sreq, cands, memo.get, e.tok)
	if err != nil {
		return nil, err
	}
	// A candidate whose read failed or brought nothing is replaced by the
	// next ranked one, and the selection made again (reads already made
	// are not made again): otherwise a server whose resources rank first
	// and whose reads fail, or answer empty, takes every place of a
	// request and its caller gets nothing while other servers hold what
	// the task needs.
	var dropped []selector.Omitted
	excluded := map[resource.Key]bool{}
	pointed := map[resource.Key]bool{}       // pointers replaced, kept as they are
	cameToNothing := map[resource.Key]bool{} // left out whatever the budget, in any round
	scale := newScoreScale(ranked)
	owed := 0                                     // places to fill
	alone := map[string][]Ranked{}                // a failing server's own ranking, for the last resort
	var without, withoutCondemned map[string]bool // the failing and condemned servers when ranked was made
	// What a server passed over brought ranks after the others, and does
	// not set the value floor: one text of a server whose other reads
	// came to nothing, its descriptor ranked first, had every honest
	// candidate fall below the floor. (A server whose candidates come to
	// nothing unread, images say, is not passed over: its texts keep
	// their place.) It reports whether a score changed.
	demote := func(cands []selector.Candidate, failing map[string]bool) bool {
		changed := false
		for i := range cands {
			if k := cands[i].Key(); failing[k.Server] && !cands[i].Pinned && cands[i].Score > scale.lowest && memo.made(k) && !memo.failed(k) {
				cands[i].Score = scale.lowest
				changed = true
			}
		}
		return changed
	}
	// A server passed over, taken back or not, is on probation: its texts
	// set the value floor only if they bear out their descriptors. It
	// reports whether a candidate's mark changed.
	probation := func(cands []selector.Candidate) bool {
		changed := false
		for i := range cands {
			if p := !cands[i].Pinned && passes.onProbation(cands[i].Server); p != cands[i].Probation {
				cands[i].Probation = p
				changed = true
			}
		}
		return changed
	}
	// A server taken back gets its candidates' scores back (read as a
	// last resort, they ranked after every other). It reports whether
	// one changed.
	restore := func(cands []selector.Candidate, server string) bool {
		changed := false
		for i := range cands {
			if k := cands[i].Key(); k.Server == server && !cands[i].Pinned {
				if sc, ok := scale.m[k]; ok && sc != cands[i].Score {
					cands[i].Score = sc
					changed = true
				}
			}
		}
		return changed
	}
	for round := 0; round < refillRounds && ctx.Err() == nil; round++ {
		// Came to nothing: a read that failed or brought nothing, or a
		// candidate left out whatever the budget (binary, for the user
		// only, a duplicate's text): a server whose descriptors rank
		// first and all come to nothing would otherwise take every place.
		nothing := map[resource.Key]bool{}
		for _, o := range res.Omitted {
			switch o.Reason {
			case selector.OmitUserAudience, selector.OmitBinaryExcluded, selector.OmitDuplicateContent, selector.OmitEmpty, selector.OmitInvalid:
				nothing[o.Key()] = true
				cameToNothing[o.Key()] = true
			}
		}
		// A probe that brought something takes its server back: what its
		// reads came to before is forgiven, and its candidates passed
		// over come back in the ranking's order.
		readd := 0
		for _, s := range passes.takeRecovered() {
			// Its passed-over candidates come back, and the places its
			// reads that came to nothing gave the others are its again
			// (the probe skipped its next best, and the weaker server's
			// candidates that took them may all be under the floor).
			readd += max(1, memo.forgive(s, cameToNothing)) + passes.failuresOf(s)
			restore(cands, s)
		}
		var failed []resource.Key
		for _, c := range cands {
			if k := c.Key(); !pinned[k] && !excluded[k] && (memo.failed(k) || nothing[k]) {
				failed = append(failed, k)
			}
		}
		// A pointer (nothing of it fits: too large, of a type never cut)
		// stays in the answer, but while the budget has room it takes no
		// place: a server whose large descriptors rank first would
		// otherwise fill every place with pointers.
		pointers := 0
		if req.TokenBudget-res.TotalTokens >= selector.MinUsefulTokens {
			for _, it := range res.Items {
				if k := it.Key(); it.Form == selector.FormPointer && !pinned[k] && !pointed[k] {
					pointed[k] = true
					pointers++
					passes.cameToNothing(k)
				}
			}
		}
		// The places to fill: those of the candidates that came to nothing
		// or were passed over, of the pointers, and of a server taken
		// back, with those no candidate could fill before (a round that
		// only probes leaves the rest for the next).
		for _, k := range failed {
			if nothing[k] {
				passes.cameToNothing(k)
			}
		}
		owed += len(failed) + pointers + readd
		if owed == 0 {
			break
		}
		isFailed := make(map[resource.Key]bool, len(failed))
		for _, k := range failed {
			isFailed[k] = true
		}
		kept := cands[:0:0]
		for _, c := range cands {
			if !isFailed[c.Key()] {
				kept = append(kept, c)
			}
		}
		// A server most of whose candidates in this request came to
		// nothing (two or more) gets replacements last: first come those
		// of the other servers, ranked again without it (and without any
		// other such server) whenever one more turns up, so that several
		// servers whose descriptors rank first cannot take the places one
		// after another. Its own next candidates come only once no other
		// is left: a server alone, or that alone holds what matches, is
		// still read as deep as it goes.
		// What came to nothing in earlier rounds counts too: a candidate
		// replaced then is in no later selection, and would count as
		// having brought something, so the failing servers flipped
		// between groups instead of adding up.
		for k := range pointed {
			cameToNothing[k] = true
		}
		failing := memo.failingServers(cameToNothing)
		for s := range passes.passedOver() {
			failing[s] = true
		}
		// A failing server is a suspect: it gets one candidate a round, a
		// probe, where that ranks among the places to fill; one that
		// brings something takes it back (see passOvers). Condemned (its
		// probes brought nothing), it gets none until no other candidate
		// is left. The candidates come from a ranking without the
		// condemned servers, made again whenever a server turns failing,
		// condemned or back; ranked deeper by what the suspects may hold
		// before the others' candidates.
		condemned := map[string]bool{}
		for s := range failing {
			if passes.condemned(s) {
				condemned[s] = true
			}
		}
		inKept := make(map[resource.Key]bool, len(kept))
		for _, c := range kept {
			inKept[c.Key()] = true
		}
		if !sameSet(failing, without) || !sameSet(condemned, withoutCondemned) {
			without, withoutCondemned = failing, condemned
			passes.setLastResort(false)
			ranked = nil
			n := refillDepth*depth + len(pinned)
			var servers []string
			for _, s := range e.scope(req.Filter.Servers) {
				if !condemned[s] {
					servers = append(servers, s)
					if failing[s] {
						n += min(e.ix.Len(s), refillDepth*depth)
					}
				}
			}
			if len(servers) > 0 {
				f := req.Filter
				f.Servers = servers
				if more, rerr := e.rank(ctx, req.Query, f, n, e.ranking); rerr == nil {
					ranked = scale.onScale(more)
				}
			}
		}
		quota := owed
		added := 0
		probed, skipped := map[string]bool{}, map[string]int{}
		fill := func(from []Ranked, lastResort bool, most int) {
			for _, r := range from {
				if added >= quota || most == 0 {
					return
				}
				k := r.Key()
				if pinned[k] || excluded[k] || inKept[k] || isFailed[k] && !memo.passedOver(k) {
					continue
				}
				score := r.Score
				switch {
				case !failing[k.Server]:
				case lastResort:
					// What it brings, or not, counts as a probe's; it is
					// read after every other candidate, and left out by
					// the value floor when any of them is returned.
					passes.probe(k)
					score = r.Score * scale.lowest / 2
				case !condemned[k.Server] && !probed[k.Server] && !memo.made(k):
					// A server's best pages tend to fail together (a
					// section behind a permission): the probe skips as
					// many of its next candidates as its reads came to
					// nothing, two at most.
					if skipped[k.Server] < passes.probeSkip(k.Server) {
						skipped[k.Server]++
						continue
					}
					probed[k.Server] = true
					passes.probe(k)
				default:
					continue
				}
				c := candidate(r.Descriptor, score)
				if c.Size <= 0 {
					c.IndexedSize = int64(e.ix.ContentSize(c.Key()))
				}
				kept = append(kept, c)
				inKept[k] = true
				added++
				most--
			}
		}
		fill(ranked, passes.isLastResort(), -1)
		if added < quota && len(probed) == 0 && len(failing) > 0 {
			// No other candidate left: the failing servers' are read
			// after all, passed over or not, one a server a round, those
			// whose probes and reads missed least first, each from its
			// own ranking: from one ranking of them all, servers whose
			// every read fails, ranked first, took every read, and an
			// honest one whose two best pages answer 403 never got to
			// its others.
			passes.setLastResort(true)
			order := make([]string, 0, len(failing))
			for s := range failing {
				if !passes.isStalled(s) {
					order = append(order, s)
				}
			}
			passes.lastResortOrder(order)
			for _, s := range order {
				own, ok := alone[s]
				if !ok {
					f := req.Filter
					f.Servers = []string{s}
					if more, rerr := e.rank(ctx, req.Query, f, refillDepth*depth, e.ranking); rerr == nil {
						own = scale.onScale(more)
					}
					alone[s] = own
				}
				fill(own, true, 1)
			}
		}
		if added == 0 {
			break
		}
		owed -= added
		// The failed ones stay in the answer's omitted list, with why.
		for _, o := range res.Omitted {
			if isFailed[o.Key()] {
				dropped = append(dropped, o)
			}
		}
		for k := range isFailed {
			if !memo.passedOver(k) {
				excluded[k] = true // passed over: may come back as a last resort
			}
		}
		demote(kept, passes.passedOver())
		probation(kept)
		e.attachPassages(ctx, req.Query, kept[len(kept)-added:])
		cands = kept
		if res, err = selector.Select(ctx, sreq, cands, memo.get, e.tok); err != nil {
			return nil, err
		}
	}
	changed := false
	for _, s := range passes.takeRecovered() {
		memo.forgive(s, cameToNothing)
		changed = restore(cands, s) || changed
	}
	changed = demote(cands, passes.passedOver()) || changed
	if changed = probation(cands) || changed; changed && ctx.Err() == nil {
		if res, err = selector.Select(ctx, sreq, cands, memo.get, e.tok); err != nil {
			return nil, err
		}
	}
	// A candidate passed over, then read as a last resort, is in the
	// answer already.
	final := make(map[resource.Key]bool, len(res.Items)+len(res.Omitted))
	for _, it := range res.Items {
		final[it.Key()] = true
	}
	for _, o := range res.Omitted {
		final[o.Key()] = true
	}
	for _, o := range dropped {
		if !final[o.Key()] {
			res.Omitted = append(res.Omitted, o)
			final[o.Key()] = true
		}
	}
	res.Reads = budget.made() // a candidate refused a read (max_reads, skipped) was called but cost none
	return &AssembleResult{Result: res, Tokenizer: e.tok.Encoding(), Fetched: fetched.m}, nil
}

// refillDepth is how many times the candidates a request takes are
// ranked (replacements for failed reads come from the rest), and
// refillRounds how many times they are replaced (each round may find
// another server whose candidates come to nothing).
const (
	refillDepth  = 3
	refillRounds = 16
)

// blank reports whether contents bring nothing: no text but spaces, no
// blob.
func blank(contents []selector.Content) bool {
	for _, c := range contents {
		if len(c.Blob) > 0 || strings.TrimSpace(c.Text) != "" {
			return false
		}
	}
	return true
}

// scoreScale puts the scores of the rankings one request makes on one
// scale. A ranking's scores are relative to its best: those of a ranking
// made without the servers that ranked first are higher than the same
// descriptors' in the first ranking, and candidates from several, taken in
// one selection, would have a weaker server's outrank a stronger one's
// (and the value floor drop the stronger). Each descriptor keeps the first
// score it was given; a new ranking is scaled as the first descriptor it
// shares with those scored before, or, sharing none, placed with its best
// at the lowest score given so far (it ranked below all of them).
type scoreScale struct {
	m      map[resource.Key]float64
	lowest float64
}

func newScoreScale(first []Ranked) *scoreScale {
	s := &scoreScale{m: make(map[resource.Key]float64, len(first)), lowest: 1}
	s.onScale(first)
	return s
}

// onScale returns more with its scores on the request's scale, and
// remembers those of descriptors scored for the first time.
func (s *scoreScale) onScale(more []Ranked) []Ranked {
	factor := 1.0
	if len(s.m) > 0 && len(more) > 0 && more[0].Score > 0 {
		factor = s.lowest / more[0].Score
	}
	for _, r := range more {
		if known, ok := s.m[r.Key()]; ok && r.Score > 0 {
			factor = known / r.Score
			break
		}
	}
	out := make([]Ranked, len(more))
	for i, r := range more {
		out[i] = r
		if known, ok := s.m[r.Key()]; ok {
			out[i].Score = known
			continue
		}
		out[i].Score = r.Score * factor
		s.m[r.Key()] = out[i].Score
		s.lowest = min(s.lowest, out[i].Score)
	}
	return out
}

// sameSet reports whether a and b hold the same servers.
func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for s := range a {
		if !b[s] {
			return false
		}
	}
	return true
}

// readMemo makes each of a request's reads once: a selection made again
// after replacing candidates reuses what was read.
type readMemo struct {
	read     selector.ReadFunc
	mu       sync.Mutex
	m        map[resource.Key]memoRead
	passed   map[resource.Key]bool // asked for, not read (errPassedOver)
	forgiven map[resource.Key]bool // came to nothing before a probe of its server brought something
}

// errPassedOver is wrapped by the error of a candidate the reader did not
// read because its server's first reads in the request brought nothing:
// it is replaced, and read after all if no other server has candidates
// left.
var errPassedOver = errors.New("passed over")

type memoRead struct {
	contents []selector.Content
	err      error
}

func (r *readMemo) get(ctx context.Context, server, uri string) ([]selector.Content, error) {
	k := resource.Key{Server: server, URI: uri}
	r.mu.Lock()
	got, ok := r.m[k]
	r.mu.Unlock()
	if ok {
		return got.contents, got.err
	}
	contents, err := r.read(ctx, server, uri)
	r.mu.Lock()
	if errors.Is(err, errPassedOver) {
		// Not read: it may be read later in the request (see
		// Assemble's last resort).
		r.passed[k] = true
	} else {
		r.m[k] = memoRead{contents, err}
		delete(r.passed, k)
	}
	r.mu.Unlock()
	return contents, err
}

// failed reports whether k was read and the read failed or brought no
// content, or was passed over (errPassedOver).
func (r *readMemo) failed(k resource.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.m[k]
	return ok && got.empty() || r.passed[k]
}

// made reports whether k was read (or its read failed).
func (r *readMemo) made(k resource.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[k]
	return ok
}

// forgive drops what server's candidates came to before a probe of it
// brought something (reads, and keys in nothing): it is no longer a
// failing server, and its candidates passed over may be read. It returns
// how many places the server lost in the request: candidates passed over,
// reads forgiven.
func (r *readMemo) forgive(server string, nothing map[resource.Key]bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k := range r.passed {
		if k.Server == server {
			delete(r.passed, k)
			n++
		}
	}
	for k, got := range r.m {
		if k.Server == server && got.empty() && !r.forgiven[k] {
			r.forgiven[k] = true
			n++
		}
	}
	for k := range nothing {
		if k.Server == server {
			r.forgiven[k] = true
		}
	}
	return n
}

// passedOver reports whether k's last read was passed over, not made.
func (r *readMemo) passedOver(k resource.Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passed[k]
}

func (got memoRead) empty() bool {
	if got.err != nil {
		return true
	}
	for _, c := range got.contents {
		if strings.TrimSpace(c.Text) != "" || len(c.Blob) > 0 {
			return false
		}
	}
	return true
}

// failingServers returns the servers with two candidates or more in this
// request that came to nothing (a read that failed or brought nothing or
// only spaces, or a key in nothing: left out whatever the budget), and
// fewer than these that brought something: a server answering one read in
// ten with a character would otherwise still get replacements.
func (r *readMemo) failingServers(nothing map[resource.Key]bool) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	fails, ok := map[string]int{}, map[string]int{}
	for k := range nothing {
		if _, read := r.m[k]; !read && !r.forgiven[k] {
			fails[k.Server]++
		}
	}
	for k, got := range r.m {
		if r.forgiven[k] {
			continue
		}
		if got.empty() || nothing[k] {
			fails[k.Server]++
		} else {
			ok[k.Server]++
		}
	}
	out := map[string]bool{}
	for s, n := range fails {
		if n >= 2 && n > ok[s] {
			out[s] = true
		}
	}
	return out
}

// attachPassages gives each candidate the passages of its indexed text
// with their similarity to the query, for choosing its sections. Without
// them (no text indexed, or the index cannot embed the query) sections are
// chosen by their words, so a failure here costs quality, not the answer.
func (e *Engine) attachPassages(ctx context.Context, query string, cands []selector.Candidate) {
	keys := make([]resource.Key, len(cands))
	for i, c := range cands {
		keys[i] = c.Key()
	}
	hits, err := e.ix.PassageHits(ctx, query, keys)
	if err != nil {
		e.log.Debug("passage similarities unavailable; sections are chosen by their words", "err", err)
		return
	}
	for i := range cands {
		for _, h := range hits[cands[i].Key()] {
			cands[i].Passages = append(cands[i].Passages, selector.Passage{StartLine: h.Line, EndLine: h.EndLine, Similarity: h.Score})
		}
	}
}

func candidate(d resource.Descriptor, score float64) selector.Candidate {
	return selector.Candidate{
		Server: d.Server, URI: d.URI, Name: d.Name, Title: d.Title, Description: d.Description,
		MIMEType: d.MIMEType, Size: d.Size, Score: score, Audience: d.Audience,
		Priority: d.Priority, LastModified: d.LastModified,
	}
}

// checkFilter validates a request's filter.
func (e *Engine) checkFilter(f Filter) error {
	if err := e.checkServers(f.Servers); err != nil {
		return err
	}
	return f.Check()
}

// fetchLog collects the Fetch of every read of one request.
type fetchLog struct {
	mu sync.Mutex
	m  map[resource.Key]ctxsync.Fetch
}

// lateReadFraction and lateReadRate: a read answered after more than the
// read timeout over lateReadFraction (7.5 s by default), at under
// lateReadRate bytes a second, starts a slow spell, as a read that times
// out does. A large read that takes long because it is large (megabytes,
// from a slow machine) is not a slow server: an honest server answering
// 1 MB in 10 s is read, by every request that ranks it. What such a
// server can hold is bounded apart: at most slowReadsPerServer requests
// wait on its reads past SlowReadTimeout at once.
const (
	lateReadFraction = 4
	lateReadRate     = 64 << 10
)

// reader returns the selector's ReadFunc for one request: it reads through
// the server's mirror, each read bounded by the read timeout, and all of
// them by budget (max_reads, max_response_bytes). Once a server
// lets a read time out, its later candidates in the same request fail at
// once instead of each waiting out the timeout again, and for SlowFor its
// reads in later requests get only SlowReadTimeout; a read it answers
// after more than a quarter of the read timeout, at under 64 KiB a second,
// starts such a spell too. Once the request's reads have taken
// SlowReadTimeout in all, a read still running takes a slow-read place
// (see slowReads); with none free it gets a grace (twice what the server
// usually takes, within a tenth and half of SlowReadTimeout, out of
// SlowReadTimeout more for all such reads of the request), then ends,
// and the request reads that server no more.
func (e *Engine) reader(log *fetchLog, budget *readBudget, passes *passOvers) selector.ReadFunc {
	var mu sync.Mutex
	stalled := map[string]string{} // server → why its later reads are skipped
	type answers struct {
		took    time.Duration // reads the server answered (errors too)
		bytes   int           // contents they brought
		spell   bool          // a read found the server in a slow spell
		nothing int           // answers that brought nothing: errors, empty or blank texts
		some    int           // answers that brought something
	}
	answered := map[string]answers{} // server → its answers in this request
	texts := map[[32]byte]bool{}     // the texts read in this request, as hashes
	// seenText reports whether contents hold only a text read before in
	// this request (any server's): a duplicate brings nothing. Call
	// under mu.
	seenText := func(contents []selector.Content) bool {
		h := sha256.New()
		for _, c := range contents {
			h.Write([]byte(c.Text))
			h.Write([]byte{0})
		}
		var sum [32]byte
		h.Sum(sum[:0])
		if texts[sum] {
			return true
		}
		texts[sum] = true
		return false
	}
	var spent time.Duration  // all of this request's reads
	var wasted time.Duration // those that came to nothing
	var over time.Duration   // reads past spent's slow-read time, without a place
	given := e.set().given
	return func(ctx context.Context, server, uri string) ([]selector.Content, error) {
		m, ok := e.mirror(server)
		if !ok {
			return nil, fmt.Errorf("server %q is not configured", server)
		}
		key := resource.Key{Server: server, URI: uri}
		mu.Lock()
		skip, so := stalled[server], answered[server]
		mu.Unlock()
		if skip != "" {
			passes.stall(server)
			return nil, fmt.Errorf("server %q: skipped: %s", server, skip)
		}
		if passes.skip(key, so.nothing, so.some) {
			// Its later candidates are replaced by other servers' (see
			// Assemble and passOvers) without a read each: five such
			// servers with ten descriptors each ranked first used up
			// max_reads.
			return nil, fmt.Errorf("server %q: skipped: %d of its %d reads in this request brought nothing (%w)", server, so.nothing, so.nothing+so.some, errPassedOver)
		}
		d, listed := e.ix.Get(key)
		ver := version(d, listed)
		if err := e.tooLarge.check(key, ver, time.Now()); err != nil {
			return nil, err
		}
		// What cannot fit is not downloaded to be dropped: a resource
		// whose declared size, or whose last read of this version, is
		// over what this request may still read (each such read of
		// 8 MB was downloaded and decoded again by every request).
		if left := budget.bytesLeft(); listed && int64(d.Size) > int64(left) {
			return nil, fmt.Errorf("not read: its declared size, %d bytes, is over the %d this request has left (max_response_bytes)", d.Size, left)
		} else if n := e.tooLarge.size(key, ver, time.Now()); n > left {
			return nil, fmt.Errorf("not read: its last read was %d bytes, over the %d this request has left (max_response_bytes)", n, left)
		}
		left, err := budget.start(server)
		if err != nil {
			return nil, err
		}
		timeout, slow := e.readTimeout(server)
		cut := left < timeout // the request's read time ends first
		if cut {
			timeout = left
		}
		// A server's reads in one request share the lateness of one read
		// (7.5 s by default), lengthened by what they bring at the rate
		// that fills max_response_bytes in that time: once it has
		// answered, its next read gets what is left, and none is made
		// when nothing is. A server answering each read just under the
		// lateness, with errors, or with bytes nobody can use would
		// otherwise hold the request, and its turn, for many reads. No
		// spell starts from it: an honest server answering in a few
		// seconds, past the spell's 2 s reads, would then fail every
		// caller for the spell's minute.
		if slow {
			e.probe(m, server, uri)
		}
		mu.Lock()
		a := answered[server]
		if slow {
			a.spell = true
			answered[server] = a
		}
		slowLeft := e.slowTO - spent
		graceLeft := e.slowTO - over
		wastedHalf := wasted >= budget.time/2
		mu.Unlock()
		// Once reads that came to nothing took half of the request's read
		// time, a server that has brought nothing in it gets reads of the
		// slow-read timeout, half of it once its reads took longer than
		// that: eight servers answering each read with an error after
		// 3 s, ranked first, took all of it, a share of read time each,
		// and the honest server was never read. (Half the slow-read
		// timeout from the first read cut an honest server answering in
		// 1.5 s that had not been read, or whose one read was a quick
		// 403.)
		if wastedHalf && a.some == 0 {
			short := e.slowTO
			if a.took > e.slowTO {
				short = e.slowTO / 2
			}
			if timeout > short {
				timeout, cut = short, false
			}
		}
		shareCut := false
		if a.took > 0 {
			allow := e.lateness(budget, a.bytes) - a.took
			if allow <= 0 {
				why := fmt.Sprintf("its reads in this request took %v of read time for %d bytes", a.took.Round(time.Millisecond), a.bytes)
				mu.Lock()
				stalled[server] = why
				mu.Unlock()
				if a.some == 0 && !slow {
					// Its share went on answers that brought nothing (errors
					// after a few seconds): the next requests read it with
					// the spell's short timeout, not each its share again.
					e.markSlow(server, true)
				}
				return nil, fmt.Errorf("server %q: skipped: %s", server, why)
			}
			if allow < timeout {
				timeout, shareCut = allow, true
			}
		}
		if a.spell && e.slowTO < timeout {
			// A quick answer may end the spell, but not for the rest of
			// this request: a server answering one read at once and the
			// next after the full timeout would get it every other read.
			timeout, shareCut = e.slowTO, false
		}
		cctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		rctx, cancel := context.WithTimeout(cctx, timeout)
		defer cancel()
		perServer, all := e.slowReadPlaces()
		// Past its slow-read time with no place free, a read gets what
		// the server usually takes (twice its recent answers, from a
		// tenth to half of the slow-read timeout), out of the request's
		// grace (the slow-read timeout again, all such reads together):
		// an honest server answering in a few hundred milliseconds is
		// still read, a slow one is read no more.
		grace := max(min(e.readGrace(server), graceLeft), minReadGrace)
		place := e.slowReads.watch(server, timeout, slowLeft, grace, perServer, all, stop)
		if place == nil {
			quick := time.AfterFunc(grace, func() { stop(errNoSlowReadPlace) })
			defer quick.Stop()
		}
		start := time.Now()
		c, f, err := m.ReadFetch(rctx, uri)
		took := time.Since(start)
		denied := place == nil
		if place != nil {
			denied = place.done()
		}
		mu.Lock()
		spent += took
		if err != nil {
			wasted += took
		}
		if denied {
			over += took - max(0, slowLeft)
		}
		mu.Unlock()
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errNoSlowReadPlace) {
			// Not the server's fault alone, nor the caller's: no spell.
			why := e.slowPlacesTaken()
			mu.Lock()
			stalled[server] = why
			mu.Unlock()
			return nil, fmt.Errorf("server %q: read %q: stopped after %v, this request having read for %v: %s", server, uri, took.Round(time.Millisecond), spent.Round(time.Millisecond), why)
		}
		// Only an answer from the server says how it answers now: a copy
		// from the cache must not end a spell.
		fromServer := err == nil && !f.At.Before(start)
		if fromServer {
			e.noteReadTime(server, took)
		}
		if errors.Is(err, mcp.ErrTooLarge) {
			e.tooLarge.remember(key, ver, err, time.Now())
		}
		if err == nil {
			// Items claiming another URI are dropped before the bytes are
			// counted: theirs count as dropped, not as usable (8 MB
			// claiming another URI used up every other server's bytes).
			n := contentBytes(c)
			_, listed := e.ix.Get(key)
			// A server that was sent a caller's words may quote them
			// in a claim: masked, they would tell which are secrets.
			c = checkItems(uri, c, given[server], listed && !m.CarriedCallerText())
			if spendErr := budget.spend(server, c, max(0, n-contentBytes(c))); spendErr != nil {
				if n > budget.lim.MaxResponseBytes {
					// No request could use it: remembered as a read over
					// max_message_bytes is, not downloaded by each.
					e.tooLarge.remember(key, ver, spendErr, time.Now())
				} else {
					// A request with less read could: its size is
					// checked before the next read of this version.
					e.tooLarge.rememberSize(key, ver, n, time.Now())
				}
				// Answered, but with nothing this request can use: its
				// time counts as an error's does.
				c, err, fromServer = nil, spendErr, false
			}
		}
		// The server answered with an error, or with what did not fit
		// (not our timeout): late, it is as slow as a late answer, and
		// its time counts in its share.
		answeredErr := err != nil && ctx.Err() == nil && rctx.Err() == nil
		if err == nil {
			log.mu.Lock()
			log.m[resource.Key{Server: server, URI: uri}] = f
			log.mu.Unlock()
		}
		switch {
		case err != nil && ctx.Err() == nil && rctx.Err() != nil && shareCut:
			// Late in all: no spell, which would fail every caller of a
			// server answering each read in a few seconds; unless none of
			// its reads brought anything.
			if a.some == 0 && !slow {
				e.markSlow(server, true)
			}
			mu.Lock()
			stalled[server] = fmt.Sprintf("its reads in this request took %v of read time for %d bytes", (a.took + timeout).Round(time.Millisecond), a.bytes)
			mu.Unlock()
			return nil, fmt.Errorf("server %q: read %q: no answer within the %v left of its share of this request's read time (its answers so far came late)", server, uri, timeout.Round(time.Millisecond))
		case err != nil && ctx.Err() == nil && rctx.Err() != nil && cut:
			// The request's deadline, not the server's fault alone; but
			// no answer after longer than a late one takes is as slow as
			// a late answer. Without a spell, the last of several hung
			// servers in each request would be cut every time, and take
			// the next request's read time while the others' spells ran.
			if !slow && timeout > e.readTO/lateReadFraction {
				e.markSlow(server, true)
			}
			return nil, fmt.Errorf("server %q: read %q: no answer within the %v left of this request's %v of reads", server, uri, timeout.Round(time.Millisecond), budget.time.Round(time.Millisecond))
		case err != nil && ctx.Err() == nil && rctx.Err() != nil:
			// Our deadline, not the caller's: this read fails, selection goes on.
			mu.Lock()
			stalled[server] = "an earlier read in this request got no answer in time"
			mu.Unlock()
			if !slow {
				// Only a full timeout starts a spell; a short one inside a
				// spell does not extend it, so the spell ends on time and
				// the next read gets the full timeout as a probe (whose
				// timeout starts a spell twice as long: see markSlow).
				e.markSlow(server, true)
			}
			if slow {
				return nil, fmt.Errorf("server %q: read %q: no answer within %v (the server has been slow: reads get %v until one succeeds or %v pass)", server, uri, timeout, e.slowTO, e.slowFor)
			}
			return nil, fmt.Errorf("server %q: read %q: no answer within %v", server, uri, timeout)
		case fromServer && slow:
			e.markSlow(server, false)
		case (fromServer || answeredErr) && took > e.readTO/lateReadFraction && float64(budget.usable(c)) < lateReadRate*took.Seconds():
			// Answered, but late and little: a server answering every read
			// just inside the timeout would otherwise hold each request
			// that reads it (and its admission turn) as long as a hung
			// one, and never start a spell.
			e.markSlow(server, true)
		}
		if fromServer && !slow && took <= e.readTO/lateReadFraction {
			e.markSlow(server, false) // answered in time: the next spell starts short
		}
		if fromServer || answeredErr || err == nil {
			mu.Lock()
			a := answered[server]
			if fromServer || answeredErr {
				a.took += took
			}
			if err == nil {
				a.bytes += budget.usable(c)
			}
			nothing := err != nil || blank(c) || budget.usable(c) == 0 || seenText(c)
			if nothing && err == nil {
				wasted += took
			}
			if nothing {
				a.nothing++
			} else {
				a.some++
			}
			if passes.answered(key, nothing) {
				a.nothing, a.some = 0, 1 // a probe brought something: what came before is forgiven
			}
			answered[server] = a
			mu.Unlock()
		}
		return c, err
	}
}

// slowPlacesTaken says why a read past its request's slow-read time was
// stopped, or not made.
func (e *Engine) slowPlacesTaken() string {
	perServer, all := e.slowReadPlaces()
	return fmt.Sprintf("other requests were waiting on reads past %v (at most %d at once, %d on one server)", e.slowTO, all, perServer)
}

// lateness is the read time that answers bringing n usable bytes are
// allowed before they are late: the lateness of one read, plus n at
// fillRate. One server's reads in one request share it, and one read
// answered after more starts a slow spell.
func (e *Engine) lateness(budget *readBudget, n int) time.Duration {
	return e.readTO/lateReadFraction + time.Duration(float64(n)/fillRate(budget.lim, e.readTO)*float64(time.Second))
}

// fillRate is the rate, in bytes a second, at which a server's answers in
// one request earn it read time past the lateness of one read: the rate
// that fills max_response_bytes in that lateness (1.1 MB/s by default),
// at least lateReadRate. A server that keeps it up ends the request by
// filling its bytes instead.
func fillRate(l config.Limits, readTO time.Duration) float64 {
	return max(lateReadRate, float64(l.MaxResponseBytes)/(readTO/lateReadFraction).Seconds())
}

// readTimeout returns the timeout for a read from server, and whether the
// server is in a slow spell.
func (e *Engine) readTimeout(server string) (time.Duration, bool) {
	e.slowMu.Lock()
	defer e.slowMu.Unlock()
	if time.Now().Before(e.slowUntil[server]) {
		return e.slowTO, true
	}
	return e.readTO, false
}

// probe reads uri from server in the background, with the full read
// timeout, at most once a SlowFor while the server is in a slow spell: a
// read it answers in time ends the spell. A request reads such a server
// with the spell's short timeout; a server that recovered but answers in
// more than that (an honest one taking 3 s) would otherwise be read again
// only when its spell, doubled after each timed-out probe, ran out: up
// to 16 minutes after it was back.
func (e *Engine) probe(m *ctxsync.Mirror, server, uri string) {
	// A probe lives as long as its mirror: stopping the mirror (a reload
	// taking the server out, or the daemon stopping) waits for its
	// session's calls, and a probe of a hung server would hold that for
	// a whole read timeout. One of a mirror not running is not made, nor
	// counted as made.
	e.runMu.Lock()
	run := e.runs[m]
	e.runMu.Unlock()
	if run == nil {
		return // not running, or stopping
	}
	e.slowMu.Lock()
	due := time.Since(e.probeAt[server]) >= e.slowFor
	if due {
		e.probeAt[server] = time.Now()
	}
	e.slowMu.Unlock()
	if !due {
		return
	}
	e.probes.Go(func() {
		ctx, cancel := context.WithTimeout(run.ctx, e.readTO)
		defer cancel()
		defer context.AfterFunc(e.probeCtx, cancel)()
		start := time.Now()
		_, f, err := m.ReadFetch(ctx, uri)
		if e.probeCtx.Err() != nil || run.ctx.Err() != nil {
			return // the engine closed, or the mirror stopped
		}
		if err != nil && ctx.Err() != nil {
			// No answer in the full timeout: the spell goes on, as long
			// again as a timed-out probe's would, so that a hung server
			// never costs a request a full read timeout once more (five
			// of them took every request's read time between them).
			e.markSlowAgain(server)
			return
		}
		if err != nil || f.At.Before(start) {
			return
		}
		if took := time.Since(start); took <= e.readTO/lateReadFraction {
			e.noteReadTime(server, took)
			e.markSlow(server, false)
		}
	})
}

// markSlowAgain starts server's next spell now, unless a read was
// answered in time since its last (see markSlow): the spells do not run
// out while probes time out.
func (e *Engine) markSlowAgain(server string) {
	e.slowMu.Lock()
	defer e.slowMu.Unlock()
	n, ok := e.slowStreak[server]
	if !ok {
		return // a read answered in time meanwhile
	}
	e.slowUntil[server] = time.Now().Add(e.slowFor << min(n, maxSlowDoublings))
	e.slowStreak[server] = n + 1
}

// maxSlowDoublings bounds how long a slow spell gets: SlowFor doubled at
// most this many times (16 minutes by default).
const maxSlowDoublings = 4

// markSlow starts or ends server's slow spell. A spell started when the
// last one ended with no read answered in time is twice as long as that
// one: a server whose reads hang gets a read of the full timeout once a
// spell, and several such servers, each probed once a minute, took every
// request's read time between them.
func (e *Engine) markSlow(server string, slow bool) {
	e.slowMu.Lock()
	defer e.slowMu.Unlock()
	if slow {
		if time.Now().Before(e.slowUntil[server]) {
			// Another read, of a request that started before the spell,
			// timed out too: one spell, not two.
			return
		}
		n := e.slowStreak[server]
		e.slowUntil[server] = time.Now().Add(e.slowFor << min(n, maxSlowDoublings))
		e.slowStreak[server] = n + 1
	} else {
		delete(e.slowUntil, server)
		delete(e.slowStreak, server)
	}
}
