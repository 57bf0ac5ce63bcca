package selector

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/section"
)

// introShare is the score a text's first section gets, as a share of the
// best section score, when it matches the query less: the opening of a
// document (its overview) is worth returning when the budget has room left
// after the sections that match.
const introShare = 0.1

// packQuery packs a read resource for a request with a query: whole if it
// fits, else degraded to its best sections, an outline or a pointer
// (issue 5, rule 3). est is the estimated whole cost, or -1 if unknown.
func (s *selection) packQuery(rank int, c Candidate, v Value, contents []Content, fp fingerprint, est int) {
	left := s.remaining
	var (
		kept    []ItemContent
		dropped []DroppedContent
		over    []int // indexes of texts that do not fit whole
		used    int
	)
	for i, ct := range contents {
		drop := func(r OmitReason, detail string) {
			dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: r, Detail: detail})
		}
		mt := cmp.Or(ct.MIMEType, c.MIMEType)
		switch {
		case ct.Error != "":
			drop(OmitInvalid, ct.Error)
		case ct.IsBlob && len(ct.Blob) == 0, !ct.IsBlob && ct.Text == "":
			drop(OmitEmpty, "")
		case ct.IsBlob && !s.req.IncludeBinary:
			drop(OmitBinaryExcluded, "")
		case ct.IsBlob:
			b64 := base64.StdEncoding.EncodedLen(len(ct.Blob))
			n := left - used + 1
			if budget.Fits(s.count, b64, left-used) {
				n = s.count.Count(base64.StdEncoding.EncodeToString(ct.Blob))
				s.observe(c.Server, mt, len(ct.Blob), n)
			}
			if n > left-used {
				drop(OmitBinaryTooLarge, fmt.Sprintf("blob of %d bytes costs more than the %s left", len(ct.Blob), tokens(left-used)))
				continue
			}
			kept = append(kept, ItemContent{Content: ct, Tokens: n})
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
		form := FormWhole
		if truncated {
			form = FormTruncated
		}
		s.add(Item{
			Candidate: c, Rank: rank, Form: form, Value: v.Total(), Contents: kept, Dropped: dropped,
			Tokens: used, Truncated: truncated,
			Reason: fmt.Sprintf("%s, %s; %s", why(rank, c.Pinned), v, wholeNote(used, truncated, dropped)),
		}, fp)
		return
	}
	s.degrade(rank, c, v, contents, dropped, over, fp, est)
}

// degrade returns the best sections of the texts of contents that did not
// fit whole (over), or their outline, or a pointer, or omits c. Whatever
// else the resource holds is dropped: one resource is returned in one form.
func (s *selection) degrade(rank int, c Candidate, v Value, contents []Content, dropped []DroppedContent, over []int, fp fingerprint, est int) {
	left := s.remaining
	whole := "it does not fit whole"
	if est >= 0 {
		whole = fmt.Sprintf("about %s whole", tokens(est))
	}
	var (
		secs []section.Section
		from []int // content index of each section
		kept = map[int]bool{}
	)
	for _, i := range over {
		kept[i] = true
		ct := contents[i]
		mt := cmp.Or(ct.MIMEType, c.MIMEType)
		if !cuttable(mt) {
			dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: OmitUnsupported,
				Detail: fmt.Sprintf("MIME type %q is kept intact, and it does not fit in the %s left", mt, tokens(left))})
			continue
		}
		ss, _ := section.Split(ct.Text, mt)
		for range ss {
			from = append(from, i)
		}
		secs = append(secs, ss...)
	}
	for i, ct := range contents {
		if !kept[i] && ct.Error == "" && !(ct.IsBlob && len(ct.Blob) == 0) && !(!ct.IsBlob && ct.Text == "") && !(ct.IsBlob && !s.req.IncludeBinary) {
			dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: OmitBudgetExhausted,
				Detail: "the resource does not fit whole; only its best sections are returned"})
		}
	}
	if len(secs) == 0 {
		if !s.pointer(rank, c, v, fmt.Sprintf("%s, and it cannot be cut (%s)", whole, dropped[len(dropped)-1].Detail), true) {
			last := dropped[len(dropped)-1]
			s.omit(rank, c, v, last.Reason, last.Detail, true)
		}
		return
	}
	scores := section.Score(secs, s.req.Query)
	top := 0.0
	for _, x := range scores {
		top = max(top, x)
	}
	var picks []section.Pick
	if top > 0 { // some section matches the query
		best := 0
		for j := range secs {
			if scores[j] > scores[best] {
				best = j
			}
		}
		for j := range secs {
			if j == 0 || from[j] != from[j-1] { // a text's first section
				scores[j] = max(scores[j], introShare*top)
			}
		}
		picks = section.Best(secs, scores, s.count, left)
		if len(picks) == 0 {
			// No section fits whole: the best one, cut at a line to what
			// is left.
			if out, n := budget.TrimToBudget(s.count, secs[best].Text, left); out != "" {
				cut := secs[best]
				cut.End = cut.Start + strings.Count(strings.TrimSuffix(out, "\n"), "\n")
				cut.Text = out
				secs[best] = cut
				picks = []section.Pick{{Section: cut, Index: best, Tokens: n}}
			}
		}
	}
	if len(picks) > 0 {
		st := &sectioned{rank: rank, secs: secs, from: from, contents: contents, picked: map[int]int{}}
		used := 0
		for _, p := range picks {
			st.picked[p.Index] = p.Tokens
			used += p.Tokens
		}
		out, ranges := st.build()
		st.item = len(s.res.Items)
		s.sectioned = append(s.sectioned, st)
		s.add(Item{
			Candidate: c, Rank: rank, Form: FormSections, Value: v.Total(), Contents: out, Dropped: dropped,
			Tokens: used, Truncated: true,
			Reason: fmt.Sprintf("%s, %s; best %d of %d sections for the query (lines %s), %s: %s",
				why(rank, c.Pinned), v, len(picks), len(secs), ranges, tokens(used), whole),
		}, fp)
		return
	}
	var outline strings.Builder
	first := -1
	for _, i := range over {
		var own []section.Section
		for j, sec := range secs {
			if from[j] == i {
				own = append(own, sec)
			}
		}
		if o := section.Outline(own); o != "" {
			if first < 0 {
				first = i
			}
			outline.WriteString(o)
		}
	}
	if first >= 0 {
		if text, n := budget.TrimToBudget(s.count, outline.String(), left); text != "" {
			ct := contents[first]
			ct.Text, ct.MIMEType = text, "text/plain"
			s.add(Item{
				Candidate: c, Rank: rank, Form: FormOutline, Value: v.Total(),
				Contents: []ItemContent{{Content: ct, Tokens: n, Truncated: text != outline.String()}},
				Dropped:  dropped, Tokens: n, Truncated: true,
				Reason: fmt.Sprintf("%s, %s; outline of its sections (%s): no section matches the query, or none fits in the %s left; %s",
					why(rank, c.Pinned), v, tokens(n), tokens(left), whole),
			}, fp)
			return
		}
	}
	if !s.pointer(rank, c, v, fmt.Sprintf("no section matches the query or fits in the %s left, and it has no outline that fits; %s", tokens(left), whole), true) {
		s.omit(rank, c, v, OmitBudgetExhausted, fmt.Sprintf("not even a section, an outline or a pointer fits in the %s left; %s", tokens(left), whole), true)
	}
}

// pointer returns c as a pointer item (its descriptor only) if that fits
// in what is left and in the pointers' share of the budget
// ([MaxPointerShare]), and reports whether it did. Only requests with a
// query degrade to pointers.
func (s *selection) pointer(rank int, c Candidate, v Value, because string, read bool) bool {
	if s.req.Query == "" {
		return false
	}
	text := PointerText(c)
	limit := min(s.remaining, int(MaxPointerShare*float64(s.req.TokenBudget))-s.pointers)
	if limit <= 0 || !budget.Fits(s.count, len(text), limit) {
		return false
	}
	n := s.count.Count(text)
	if n > limit {
		return false
	}
	s.pointers += n
	s.add(Item{
		Candidate: c, Rank: rank, Form: FormPointer, Value: v.Total(), Tokens: n, Truncated: true, Unread: !read,
		Reason: fmt.Sprintf("%s, %s; pointer only (%s): %s", why(rank, c.Pinned), v, tokens(n), because),
	}, fingerprint{})
	return true
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

// A sectioned remembers the sections of an item returned as
// [FormSections], so that budget left at the end can take more of them
// without another read.
type sectioned struct {
	item     int // index in Result.Items while selecting
	rank     int
	secs     []section.Section
	from     []int // content index of each section
	contents []Content
	picked   map[int]int // section index → tokens
}

// build returns the item contents of the picked sections, in text order,
// and their line ranges for a reason ("3-10, 40-52").
func (st *sectioned) build() ([]ItemContent, string) {
	var (
		out    []ItemContent
		ranges []string
	)
	for j, sec := range st.secs {
		n, ok := st.picked[j]
		if !ok {
			continue
		}
		ct := st.contents[st.from[j]]
		ct.Text = sec.Text
		out = append(out, ItemContent{Content: ct, Tokens: n, Truncated: true, StartLine: sec.Start, EndLine: sec.End})
		ranges = append(ranges, fmt.Sprintf("%d-%d", sec.Start, sec.End))
	}
	return out, strings.Join(ranges, ", ")
}

// topUp spends what is left of the budget after every candidate was
// considered on more sections of the items returned as sections, best item
// first and each in text order: the rest of a resource that was worth
// reading is better than an unused budget, and costs no read.
func (s *selection) topUp() {
	for _, st := range s.sectioned {
		added, probes := 0, 0
		for j, sec := range st.secs {
			if s.remaining <= 0 || probes == maxTopUpProbes {
				break
			}
			if _, ok := st.picked[j]; ok {
				continue
			}
			probes++
			if !budget.Fits(s.count, len(sec.Text), s.remaining) {
				continue
			}
			n := s.count.Count(sec.Text)
			if n > s.remaining {
				continue
			}
			st.picked[j] = n
			s.remaining -= n
			s.res.TotalTokens += n
			added++
			it := &s.res.Items[st.item]
			it.Tokens += n
		}
		if added > 0 {
			it := &s.res.Items[st.item]
			it.Contents, _ = st.build()
			it.Reason += fmt.Sprintf("; then %d more in text order to use the budget left at the end (%s in all)", added, tokens(it.Tokens))
		}
	}
}

// maxTopUpProbes bounds the sections topUp counts per item.
const maxTopUpProbes = 64
