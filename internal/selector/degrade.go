package selector

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/section"
)

// packQuery packs a read resource for a request with a query: whole if it
// fits, else degraded to its best sections, an outline or a pointer.
// est is the estimated whole cost, or -1 if unknown.
func (s *selection) packQuery(rank int, c Candidate, v Value, contents []Content, fp fingerprint, est int) {
	left := s.remaining
	var (
		kept    []ItemContent
		keptIdx []int // content index of each kept content
		dropped []DroppedContent
		over    []int // indexes of texts that do not fit whole
		used    int
	)
	for i, ct := range contents {
		drop := func(r OmitReason, detail string) {
			dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: r, Detail: detail})
		}
		mt := cmp.Or(ct.MIMEType, c.MIMEType)
		switch r, detail := s.unusable(ct); {
		case r != "":
			drop(r, detail)
		case ct.IsBlob:
			n := s.blobCost(c.Server, ct.Blob, left-used)
			if n > left-used {
				drop(OmitBinaryTooLarge, fmt.Sprintf("blob of %d bytes costs more than the %s left", len(ct.Blob), tokens(left-used)))
				continue
			}
			kept = append(kept, ItemContent{Content: ct, Tokens: n})
			keptIdx = append(keptIdx, i)
			used += n
		default:
			if !budget.Fits(s.count, len(ct.Text), left-used) {
				over = append(over, i)
				continue
			}
			n := s.count.Count(ct.Text)
			s.observe(c.Server, mt, len(ct.Text), n)
			if n > left-used {
				over = append(over, i)
				continue
			}
			kept = append(kept, ItemContent{Content: ct, Tokens: n})
			keptIdx = append(keptIdx, i)
			used += n
		}
	}
	if len(over) == 0 {
		if len(kept) == 0 {
			reason, detail := emptyReason(contents, dropped, firstBudgetDrop(dropped))
			s.omit(rank, c, v, reason, detail, true)
			return
		}
		truncated := firstBudgetDrop(dropped) != ""
		s.add(Item{
			Candidate: c, Rank: rank, Form: FormWhole, Value: v.Total(), Contents: kept, Dropped: dropped,
			Tokens: used, Truncated: truncated,
			Reason: fmt.Sprintf("%s, %s; %s", why(rank, c.Pinned), v, wholeNote(used, truncated, dropped)),
		}, fp)
		return
	}
	s.degrade(rank, c, v, contents, wholeParts{whole: kept, wholeIdx: keptIdx, tokens: used}, dropped, over, fp, est)
}

// degrade returns the best sections of the texts of contents that did not
// fit whole (over) together with the contents that did (done), or, when no
// section matches, their outline, or else only the contents that fit, or a
// pointer; or it omits c.
func (s *selection) degrade(rank int, c Candidate, v Value, contents []Content, done wholeParts, dropped []DroppedContent, over []int, fp fingerprint, est int) {
	left := s.remaining - done.tokens
	whole := "it does not fit whole"
	if est >= 0 {
		whole = fmt.Sprintf("about %s whole", tokens(est))
	}
	var (
		secs     []section.Section
		from     []int // content index of each section
		intact   string
		cuttable = map[int]bool{}
	)
	for _, i := range over {
		ct := contents[i]
		mt := cmp.Or(ct.MIMEType, c.MIMEType)
		if !cuttableMIME(mt) {
			intact = fmt.Sprintf("MIME type %q is kept intact, and it does not fit in the %s left", mt, tokens(left))
			dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: OmitUnsupported, Detail: intact})
			continue
		}
		cuttable[i] = true
		ss, _ := section.Split(ct.Text, mt)
		for range ss {
			from = append(from, i)
		}
		secs = append(secs, ss...)
	}
	dropCut := func(why string) {
		for _, i := range over {
			if cuttable[i] {
				ct := contents[i]
				dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: OmitBudgetExhausted, Detail: why})
			}
		}
		slices.SortStableFunc(dropped, func(x, y DroppedContent) int { return cmp.Compare(x.Index, y.Index) })
	}
	var (
		picks   []section.Pick
		cutFrom map[int]section.Section
	)
	if len(contents) != 1 {
		// The index's passage lines are those of the text items joined:
		// they line up with one content's lines only when it is the only one.
		c.Passages = nil
	}
	limit := s.sectionCap(c, left) // sections and their leads
	if len(secs) > 0 {
		picks, cutFrom = s.bestSections(c, secs, from, limit)
	}
	if len(picks) > 0 {
		st := &sectioned{rank: rank, c: c, secs: secs, from: from, contents: contents, picked: map[int]int{}, done: done, cutFrom: cutFrom}
		charged := done.tokens
		for _, p := range picks {
			st.picked[p.Index] = p.Tokens
			charged += p.Tokens
			s.observe(c.Server, cmp.Or(contents[from[p.Index]].MIMEType, c.MIMEType), len(p.Text), p.Tokens)
		}
		for _, p := range picks {
			charged += st.addLeads(s.count, p.Index, limit-(charged-done.tokens))
		}
		out, n, ranges := st.build(s.count)
		st.item, st.charged = len(s.res.Items), charged
		s.sectioned = append(s.sectioned, st)
		for _, i := range over {
			if cuttable[i] && !slices.ContainsFunc(picks, func(p section.Pick) bool { return from[p.Index] == i }) {
				ct := contents[i]
				dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: OmitBudgetExhausted,
					Detail: "no section of it matches the query or fits beside the others"})
			}
		}
		slices.SortStableFunc(dropped, func(x, y DroppedContent) int { return cmp.Compare(x.Index, y.Index) })
		s.add(Item{
			Candidate: c, Rank: rank, Form: FormSections, Value: v.Total(), Contents: out, Dropped: dropped,
			Tokens: n, Truncated: true,
			Reason: fmt.Sprintf("%s, %s; best %d of %d sections for the query (lines %s), %s: %s",
				why(rank, c.Pinned), v, len(picks), len(secs), ranges, tokens(n), whole),
		}, fp)
		// Merged sections may cost less than their parts; the budget is
		// charged the parts, so no later merge can take it over.
		s.remaining -= charged - n
		return
	}
	var outline strings.Builder
	first := -1
	for lo := 0; lo < len(secs); { // secs are grouped by content, in order
		hi := lo + 1
		for hi < len(secs) && from[hi] == from[lo] {
			hi++
		}
		if o := section.Outline(secs[lo:hi]); o != "" {
			if first < 0 {
				first = from[lo]
			}
			outline.WriteString(o)
		}
		lo = hi
	}
	if first >= 0 && left > 0 {
		if text, n := budget.TrimToBudget(s.count, outline.String(), left); text != "" {
			ct := contents[first]
			ct.Text, ct.MIMEType = text, "text/plain"
			dropCut("its outline is returned instead: no section matches the query or fits")
			s.add(Item{
				Candidate: c, Rank: rank, Form: FormOutline, Value: v.Total(),
				Contents: withOutline(done, first, ItemContent{Content: ct, Tokens: n, Truncated: text != outline.String()}),
				Dropped:  dropped, Tokens: done.tokens + n, Truncated: true,
				Reason: fmt.Sprintf("%s, %s; outline of its sections (%s): no section matches the query, or none fits in the %s left; %s",
					why(rank, c.Pinned), v, tokens(n), tokens(left), whole),
			}, fp)
			return
		}
	}
	if len(done.whole) > 0 {
		dropCut(fmt.Sprintf("no section of it matches the query or fits in the %s left", tokens(left)))
		s.add(Item{
			Candidate: c, Rank: rank, Form: FormWhole, Value: v.Total(), Contents: done.whole, Dropped: dropped,
			Tokens: done.tokens, Truncated: true,
			Reason: fmt.Sprintf("%s, %s; the contents that fit, whole (%s); %d dropped", why(rank, c.Pinned), v, tokens(done.tokens), len(over)),
		}, fp)
		return
	}
	because := fmt.Sprintf("no section matches the query or fits in the %s left, and it has no outline that fits; %s", tokens(left), whole)
	reason := OmitBudgetExhausted
	if len(secs) == 0 {
		because, reason = fmt.Sprintf("%s, and it cannot be cut (%s)", whole, intact), OmitUnsupported
	}
	s.pointerOr(rank, c, v, because, true, reason)
}

// bestSections scores secs for the query and returns the best that fit in
// left (or, if none fits whole, the best cut to fit), then each text's
// opening section (its overview) if there is room left after them; nil
// when no section matches the query. Picks are in section order.
//
// When the best section had to be cut, cutFrom maps its index to the
// section as it was, so that its heading can be returned as a lead.
func (s *selection) bestSections(c Candidate, secs []section.Section, from []int, left int) (picks []section.Pick, cutFrom map[int]section.Section) {
	if left <= 0 {
		return nil, nil
	}
	scores := withDense(section.Score(secs, s.query), denseOf(c, secs, from))
	best := -1
	for j, x := range scores {
		if x > 0 && section.Informative(secs[j]) && (best < 0 || x > scores[best]) {
			best = j
		}
	}
	if best < 0 {
		return nil, nil
	}
	picks = section.Best(secs, scores, s.count, left)
	if s.oneSection(c) && len(picks) > 0 {
		// Its best section alone, if it fits the share; else the lines of
		// it around its match (below).
		top := slices.IndexFunc(picks, func(p section.Pick) bool { return p.Index == best })
		if top < 0 {
			picks = nil
		} else {
			picks = picks[top : top+1]
		}
	}
	if len(picks) == 0 {
		// No matching section fits whole: the lines of the best one around
		// its match, or else its head, cut to fit (at a line, or within
		// the first line if not even that fits). Its heading line comes
		// as a lead (sectioned.origin).
		cut, n, ok := section.Focus(secs[best], s.query, s.count, left)
		if !ok {
			var out string
			if out, n = budget.TrimToBudget(s.count, secs[best].Text, left); out == "" {
				return nil, nil
			}
			cut = secs[best]
			cut.End = cut.Start + strings.Count(strings.TrimSuffix(out, "\n"), "\n")
			cut.Text = out
		}
		cutFrom = map[int]section.Section{best: secs[best]}
		secs[best] = cut
		picks = []section.Pick{{Section: cut, Index: best, Tokens: n}}
	}
	if s.oneSection(c) {
		// A share of one section has no room for an overview: what it
		// does not spend goes to the next candidates.
		return picks, cutFrom
	}
	used := 0
	picked := map[int]bool{}
	for _, p := range picks {
		used += p.Tokens
		picked[p.Index] = true
	}
	for j := range secs {
		opening := j == 0 || from[j] != from[j-1]
		if !opening || picked[j] || !section.Informative(secs[j]) || !budget.Fits(s.count, len(secs[j].Text), left-used) {
			continue
		}
		if n := s.count.Count(secs[j].Text); n <= left-used {
			picks = append(picks, section.Pick{Section: secs[j], Index: j, Tokens: n})
			used += n
		}
	}
	slices.SortFunc(picks, func(x, y section.Pick) int { return cmp.Compare(x.Index, y.Index) })
	return picks, cutFrom
}

// A pendingPointer is a candidate of which nothing but its descriptor can
// be returned: it becomes a pointer, or is omitted with reason, once the
// budget left after the top-up is known.
type pendingPointer struct {
	rank    int
	c       Candidate
	v       Value
	because string
	read    bool
	reason  OmitReason
}

// pointerOr makes c a pointer if there is room once the other candidates
// and the top-up are served, else omits it with reason; without a query it
// omits it now. Pointers come last because content that matches beats a
// reference to more of it.
func (s *selection) pointerOr(rank int, c Candidate, v Value, because string, read bool, reason OmitReason) {
	if s.req.Query == "" {
		s.omit(rank, c, v, reason, because, read)
		return
	}
	if !c.Pinned && s.anchor == 0 {
		// The best candidate that can still be returned, if only as a
		// pointer: the floor is a share of it from now on.
		s.anchor, s.anchorSpread = v.Relevance, v.Spread
	}
	s.pending = append(s.pending, pendingPointer{rank: rank, c: c, v: v, because: because, read: read, reason: reason})
}

// placePointers turns pending candidates, in value order, into pointer
// items while they fit in what is left and in the pointers' share of the
// budget ([MaxPointerShare]); the rest are omitted.
func (s *selection) placePointers() {
	for _, p := range s.pending {
		if s.req.MaxItems > 0 && len(s.res.Items) >= s.req.MaxItems {
			// It was deferred because nothing of it fit: that is why, not
			// the cap reached since.
			s.omit(p.rank, p.c, p.v, p.reason, p.because, p.read)
			continue
		}
		text := PointerText(p.c)
		limit := min(s.remaining, int(MaxPointerShare*float64(s.req.TokenBudget))-s.pointers)
		n := limit + 1
		if limit > 0 && budget.Fits(s.count, len(text), limit) {
			n = s.count.Count(text)
		}
		if n > limit {
			s.omit(p.rank, p.c, p.v, p.reason, p.because, p.read)
			continue
		}
		s.pointers += n
		s.add(Item{
			Candidate: p.c, Rank: p.rank, Form: FormPointer, Value: p.v.Total(), Tokens: n, Truncated: true, Unread: !p.read,
			Reason: fmt.Sprintf("%s, %s; pointer only (%s): %s", why(p.rank, p.c.Pinned), p.v, tokens(n), p.because),
		}, fingerprint{none: true})
	}
}

// observe feeds an exact count to the estimator, if any.
func (s *selection) observe(server, mimeType string, bytes, n int) {
	if s.req.Estimator != nil {
		s.req.Estimator.Observe(server, mimeType, bytes, n)
	}
}

// why names how a candidate came to be considered: "rank 3" or "pinned".
func why(rank int, pinned bool) string {
	if pinned {
		return "pinned"
	}
	return fmt.Sprintf("rank %d", rank)
}

// wholeNote describes a whole item: "whole (312 tokens)", with what was
// dropped.
func wholeNote(n int, truncated bool, dropped []DroppedContent) string {
	r := itemReason(0, false, n, truncated, "", dropped)
	_, after, _ := strings.Cut(r, ", ")
	if !truncated {
		after = strings.Replace(after, "fits whole", "whole", 1)
	}
	return after
}

// firstBudgetDrop returns the detail of the first content dropped for lack
// of budget, or "".
func firstBudgetDrop(dropped []DroppedContent) string {
	for _, d := range dropped {
		if d.Reason == OmitBinaryTooLarge || d.Reason == OmitTooLarge || d.Reason == OmitBudgetExhausted {
			return d.Detail
		}
	}
	return ""
}

// withOutline returns the whole contents and the outline of content first,
// in read order.
func withOutline(done wholeParts, first int, outline ItemContent) []ItemContent {
	out := make([]ItemContent, 0, len(done.whole)+1)
	placed := false
	for k, ic := range done.whole {
		if !placed && done.wholeIdx[k] > first {
			out, placed = append(out, outline), true
		}
		out = append(out, ic)
	}
	if !placed {
		out = append(out, outline)
	}
	return out
}

// wholeParts holds the contents of a resource that fit whole while its other
// texts are degraded.
type wholeParts struct {
	whole    []ItemContent
	wholeIdx []int // content index of each
	tokens   int
}

// A sectioned remembers the sections of an item returned as
// [FormSections], so that budget left at the end can take more of them
// without another read.
type sectioned struct {
	item     int // index in Result.Items while selecting
	rank     int
	c        Candidate
	secs     []section.Section
	from     []int // content index of each section, non-decreasing
	contents []Content
	picked   map[int]int // section index → tokens
	leads    []lead      // lines returned to place picked sections
	// cutFrom holds, by index, the sections as they were before they were
	// cut to fit (secs holds the cut).
	cutFrom map[int]section.Section
	done    wholeParts // contents returned whole alongside
	// charged is what the budget was charged for the item: the sum of its
	// parts' tokens, never less than Item.Tokens.
	charged int
}

// build returns the item's contents in read order (whole contents, and
// picked sections in text order), their tokens, and the sections' line
// ranges for a reason. A run of adjacent picked sections, each ending with
// a line break, is one content when its count is no more than the sum of
// its parts (each run is counted once).
func (st *sectioned) build(count budget.Counter) ([]ItemContent, int, string) {
	var (
		out    []ItemContent
		ranges []string
		total  int
	)
	j := 0
	for i := range st.contents {
		if k := slices.Index(st.done.wholeIdx, i); k >= 0 {
			out = append(out, st.done.whole[k])
			total += st.done.whole[k].Tokens
		}
		var run []int
		flush := func() {
			if len(run) == 0 {
				return
			}
			ct := st.contents[i]
			first, last := st.secs[run[0]], st.secs[run[len(run)-1]]
			if len(run) > 1 {
				var b strings.Builder
				parts := 0
				for _, k := range run {
					b.WriteString(st.secs[k].Text)
					parts += st.picked[k]
				}
				if m := count.Count(b.String()); m <= parts {
					ct.Text = b.String()
					out = append(out, ItemContent{Content: ct, Tokens: m, Truncated: true, StartLine: first.Start, EndLine: last.End})
					total += m
					ranges = append(ranges, fmt.Sprintf("%d-%d", first.Start, last.End))
					run = run[:0]
					return
				}
			}
			for _, k := range run {
				ct.Text = st.secs[k].Text
				out = append(out, ItemContent{Content: ct, Tokens: st.picked[k], Truncated: true, StartLine: st.secs[k].Start, EndLine: st.secs[k].End})
				total += st.picked[k]
				ranges = append(ranges, fmt.Sprintf("%d-%d", st.secs[k].Start, st.secs[k].End))
			}
			run = run[:0]
		}
		leads := st.leadsFor(i)
		for ; j < len(st.secs) && st.from[j] == i; j++ {
			if _, ok := st.picked[j]; !ok {
				flush()
				continue
			}
			if len(run) == 0 {
				for len(leads) > 0 && leads[0].line < st.secs[j].Start {
					l := leads[0]
					leads = leads[1:]
					ct := st.contents[i]
					ct.Text = l.text
					out = append(out, ItemContent{Content: ct, Tokens: l.tokens, Truncated: true, StartLine: l.line, EndLine: l.line})
					total += l.tokens
					ranges = append(ranges, fmt.Sprintf("%d", l.line))
				}
			}
			if len(run) > 0 {
				prev := st.secs[run[len(run)-1]]
				if prev.End+1 != st.secs[j].Start || !strings.HasSuffix(prev.Text, "\n") {
					flush()
				}
			}
			run = append(run, j)
		}
		flush()
	}
	return out, total, strings.Join(ranges, ", ")
}

// topUp spends what is left of the budget after every candidate was
// considered on more sections of the items returned as sections: the rest
// of a resource that was worth reading is better than an unused budget,
// and costs no read. The sections of all those items are scored together
// for the query (BM25 with all of them as the collection, so scores
// compare across resources), each weighed by its item's relevance, and
// taken best first while they fit; sections that match nothing come last,
// best item first and each in text order. Sections of white space only are
// skipped. Each added section is charged its own count.
func (s *selection) topUp() {
	if len(s.sectioned) == 0 || s.remaining <= 0 {
		return
	}
	type ref struct{ st, j int }
	var (
		all  []section.Section
		refs []ref
	)
	for si, st := range s.sectioned {
		for j, sec := range st.secs {
			all = append(all, sec)
			refs = append(refs, ref{si, j})
		}
	}
	// Words decide across items (BM25 over all their sections); an item
	// none of whose sections shares a word with the query is scored by
	// its passages instead (withDense), below the best matches.
	lexical := section.Score(all, s.query)
	top := 0.0
	for _, x := range lexical {
		top = max(top, x)
	}
	scores := make([]float64, 0, len(all))
	for g := 0; g < len(all); {
		st := s.sectioned[refs[g].st]
		item := withDense(lexical[g:g+len(st.secs)], denseOf(st.c, st.secs, st.from))
		for j, x := range lexical[g : g+len(st.secs)] {
			if x > 0 {
				item[j] = x / top // comparable across items
			}
		}
		scores = append(scores, item...)
		g += len(st.secs)
	}
	utility := make([]float64, len(all))
	for g, r := range refs {
		utility[g] = scores[g] * s.values[s.sectioned[r.st].rank-1].Relevance
	}
	order := make([]int, len(all))
	for g := range order {
		order[g] = g
	}
	// Stable: equal utilities (every section that matches nothing) keep
	// item order, then text order.
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(utility[y], utility[x]) })
	added := make([]int, len(s.sectioned))
	misses := 0
	for _, g := range order {
		if s.remaining <= 0 || misses == maxTopUpMisses {
			break
		}
		r := refs[g]
		st := s.sectioned[r.st]
		sec := st.secs[r.j]
		if _, ok := st.picked[r.j]; ok || !section.Informative(sec) {
			continue
		}
		if !budget.Fits(s.count, len(sec.Text), s.remaining) {
			continue // proven without counting
		}
		n := s.count.Count(sec.Text)
		if n > s.remaining {
			misses++
			continue
		}
		st.picked[r.j] = n
		st.charged += n
		s.remaining -= n
		added[r.st]++
		extra := st.addLeads(s.count, r.j, s.remaining)
		st.charged += extra
		s.remaining -= extra
	}
	for si, st := range s.sectioned {
		if added[si] == 0 {
			continue
		}
		it := &s.res.Items[st.item]
		out, n, ranges := st.build(s.count)
		s.res.TotalTokens += n - it.Tokens
		it.Contents, it.Tokens = out, n
		// A text dropped for want of a matching section may now be
		// returned in part.
		it.Dropped = slices.DeleteFunc(slices.Clone(it.Dropped), func(d DroppedContent) bool {
			if d.Reason != OmitBudgetExhausted {
				return false
			}
			for j := range st.picked {
				if st.from[j] == d.Index {
					return true
				}
			}
			return false
		})
		it.Reason += fmt.Sprintf("; then %d more, the best left for the query among all items' sections, to use the budget left at the end, so it now holds lines %s, %s in all", added[si], ranges, tokens(it.Tokens))
	}
}

// maxTopUpMisses bounds the counted sections that do not fit, per item,
// after which topUp stops: each section that fits takes at least one token,
// so the work is bounded by the budget plus this.
const maxTopUpMisses = 64
