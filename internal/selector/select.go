package selector

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/section"
)

// MinUsefulTokens is the smallest remainder worth reading a resource to trim
// into. Once an item is selected and fewer tokens than this are left, a
// candidate is read only if its descriptor's Size says it fits whole: by
// the Request's Estimator when there is one, else as a byte bound (a BPE
// token covers at least one byte of UTF-8 text). The others become
// pointers or are omitted unread with [OmitBudgetExhausted].
const MinUsefulTokens = 32

// Request errors returned by [Select], wrapped with the offending value.
var (
	// ErrInvalidBudget means Request.TokenBudget is below 1.
	ErrInvalidBudget = errors.New("selector: token budget must be at least 1")
	// ErrInvalidMaxItems means Request.MaxItems is negative.
	ErrInvalidMaxItems = errors.New("selector: max items must not be negative")
	// ErrInvalidValueFloor means Request.ValueFloor is outside [0, 1].
	ErrInvalidValueFloor = errors.New("selector: value floor must be in [0, 1]")
)

// MinSectionRead is the fewest tokens left for which, once an item is
// selected, a candidate estimated not to fit whole is still read for its
// best sections (with a query); below it, the candidate becomes a pointer
// unread.
const MinSectionRead = 256

// MaxPointerShare is the share of the budget that pointer items
// ([FormPointer]) may take together, so that pointers never crowd out
// content.
const MaxPointerShare = 0.125

// Select reads and packs the candidates, best first, so that the returned
// contents cost at most req.TokenBudget tokens under count. See the package
// documentation for the rules.
//
// ranked must be in rank order (best first); Select never reorders it. A
// repeated (server, URI) is omitted as [OmitDuplicate] without a second read.
// read is called at most once per candidate, one call at a time, and only
// for a candidate that may be returned. A read error omits that candidate
// ([OmitReadFailed]) and selection continues.
//
// Select returns ErrInvalidBudget, ErrInvalidMaxItems or
// ErrInvalidValueFloor (wrapped) for a bad request, and ctx.Err() if ctx is
// done before selection finishes; the
// result is then empty. It panics if read or count is nil. The same inputs
// (candidates, Request including Now, read results, and the Estimator's
// state) always give the same Result.
func Select(ctx context.Context, req Request, ranked []Candidate, read ReadFunc, count budget.Counter) (Result, error) {
	if req.TokenBudget < 1 {
		return Result{}, fmt.Errorf("%w (got %d)", ErrInvalidBudget, req.TokenBudget)
	}
	if req.MaxItems < 0 {
		return Result{}, fmt.Errorf("%w (got %d)", ErrInvalidMaxItems, req.MaxItems)
	}
	if !(req.ValueFloor >= 0 && req.ValueFloor <= 1) {
		return Result{}, fmt.Errorf("%w (got %v)", ErrInvalidValueFloor, req.ValueFloor)
	}
	if read == nil || count == nil {
		panic("selector: Select needs a ReadFunc and a Counter")
	}
	s := &selection{
		req:       req,
		query:     section.NewQuery(req.Query),
		read:      read,
		count:     count,
		remaining: req.TokenBudget,
		seen:      make(map[resource.Key]int),
	}
	values := make([]Value, len(ranked))
	scale := scaleOf(ranked)
	for i, c := range ranked {
		values[i] = valueOf(c, scale, req.Now)
	}
	s.values = values
	s.shareCap = sectionShare(values, ranked, req.ValueFloor, req.TokenBudget)
	// Pinned candidates first, in their order; then by value, ties in rank
	// order. Without annotations the value order is the rank order.
	order := make([]int, len(ranked))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		if px, py := ranked[x].Pinned, ranked[y].Pinned; px != py {
			if px {
				return -1
			}
			return 1
		}
		if ranked[x].Pinned {
			return 0
		}
		return cmp.Compare(values[y].Total(), values[x].Total())
	})
	// A repeated key is a duplicate of its first occurrence in rank order,
	// whatever order the values give.
	for i, c := range ranked {
		if _, dup := s.seen[c.Key()]; !dup {
			s.seen[c.Key()] = i + 1
		}
	}
	for _, i := range order {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := s.consider(ctx, i+1, ranked[i], values[i]); err != nil {
			return Result{}, err
		}
	}
	s.fill(ctx)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	s.topUp()
	s.placePointers()
	slices.SortStableFunc(s.res.Items, func(x, y Item) int { return cmp.Compare(x.Rank, y.Rank) })
	slices.SortStableFunc(s.res.Omitted, func(x, y Omitted) int { return cmp.Compare(x.Rank, y.Rank) })
	return s.res, nil
}

// A selection is the state of one Select call.
type selection struct {
	req   Request
	query section.Query // req.Query's terms, analysed once
	read  ReadFunc
	count budget.Counter

	res       Result
	remaining int                  // tokens left: req.TokenBudget - res.TotalTokens
	full      string               // why the budget is full after a text did not fit; "" if not
	seen      map[resource.Key]int // rank of the first candidate with each key
	fps       []packed             // the contents of the items so far
	// anchor is the relevance of the first unpinned item returned or
	// deferred as a pointer: candidates come in decreasing value, so it is
	// about the best relevance among those that can be returned, and
	// ValueFloor is a share of it. It is a relevance, not a value, so that
	// annotations reorder close matches but cannot lift the floor over a
	// clearly better one. 0 until then: a best candidate that is omitted
	// (binary, for the user, unreadable) does not raise the floor for the
	// rest.
	anchor float64
	// anchorSpread is the Spread of the candidate that set anchor; the
	// spread floor is a share of it.
	anchorSpread float64
	values       []Value // each ranked candidate's value, by rank − 1
	// shareCap is the share of the budget one resource's sections may take
	// while other candidates close to the best are still to be considered
	// (see sectionShare); what it leaves goes to them, and what is left at
	// the end to the best sections of all (topUp).
	shareCap float64
	// filling is set while fill reads candidates below the floor.
	filling   bool
	pointers  int              // tokens taken by pointer items
	sectioned []*sectioned     // items returned as sections, in the order added
	pending   []pendingPointer // candidates that can only be pointers, in value order
}

// packed remembers an item's content fingerprint.
type packed struct {
	fp   fingerprint
	rank int
	key  resource.Key
}

// consider decides on the candidate at rank: omit it unread, or read and pack it.
// It returns an error only when ctx is done.
func (s *selection) consider(ctx context.Context, rank int, c Candidate, v Value) error {
	if first := s.seen[c.Key()]; first != rank {
		s.omit(rank, c, v, OmitDuplicate, fmt.Sprintf("same server and URI as rank %d", first), false)
		return nil
	}
	if reason, detail := s.skip(c, v); reason != "" {
		s.omit(rank, c, v, reason, detail, false)
		return nil
	}
	est, known := s.estimate(c)
	if neverCut := binaryMIME(c.MIMEType) || (s.req.Query != "" && !cuttableMIME(c.MIMEType)); neverCut && known && s.req.Estimator != nil && est > s.remaining {
		// It can only come whole, and the estimate says it will not fit.
		reason := OmitUnsupported
		if binaryMIME(c.MIMEType) {
			reason = OmitBinaryTooLarge
		}
		why := fmt.Sprintf("%q is never cut, and about %s whole (%s) is more than the %s left", c.MIMEType, tokens(est), c.sizeString(), tokens(s.remaining))
		s.pointerOr(rank, c, v, why, false, reason)
		return nil
	}
	if least := s.minSectionRead(); len(s.res.Items) > 0 && s.req.Query != "" && known && est > s.remaining && s.remaining < least {
		why := fmt.Sprintf("about %s whole, more than the %s left, which is under the %d worth reading it for its sections", tokens(est), tokens(s.remaining), least)
		s.pointerOr(rank, c, v, why, false, OmitBudgetExhausted)
		return nil
	}
	if len(s.res.Items) > 0 && s.remaining < MinUsefulTokens && (!known || est > s.remaining) {
		size := "unknown size"
		switch {
		case known && s.req.Estimator != nil:
			size = fmt.Sprintf("%s, about %s", c.sizeString(), tokens(est))
		case known:
			size = c.sizeString()
		}
		why := fmt.Sprintf("%s left, fewer than the %d worth reading a resource of %s for", tokens(s.remaining), MinUsefulTokens, size)
		s.pointerOr(rank, c, v, why, false, OmitBudgetExhausted)
		return nil
	}
	contents, err := s.read(ctx, c.Server, c.URI)
	s.res.Reads++
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		s.omit(rank, c, v, OmitReadFailed, err.Error(), true)
		return nil
	}
	if !known {
		est = -1
	}
	s.pack(rank, c, v, contents, est)
	return nil
}

// estimate returns the tokens c is expected to cost whole, from its
// descriptor's size: the Estimator's estimate, or without one the size in
// bytes (a BPE token covers at least one byte of UTF-8 text). ok is false
// when the size is unknown.
func (s *selection) estimate(c Candidate) (int, bool) {
	size := c.bytes()
	if size <= 0 {
		return 0, false
	}
	if s.req.Estimator != nil {
		return s.req.Estimator.Estimate(c.Server, c.MIMEType, size)
	}
	return int(min(size, int64(s.req.TokenBudget)+1)), true
}

// bytes returns c's size in bytes: the descriptor's, else its indexed
// text's, else 0 (unknown).
func (c Candidate) bytes() int64 {
	if c.Size > 0 {
		return c.Size
	}
	return max(c.IndexedSize, 0)
}

// sizeString says c's size and where it comes from: "1234 bytes" (the
// descriptor's) or "1234 bytes as indexed".
func (c Candidate) sizeString() string {
	if c.Size > 0 {
		return fmt.Sprintf("%d bytes", c.Size)
	}
	return fmt.Sprintf("%d bytes as indexed", c.bytes())
}

// skip returns why c must not be read, judging from the descriptor and the
// state of the selection alone, or "" if it may be returned.
func (s *selection) skip(c Candidate, v Value) (OmitReason, string) {
	switch {
	case s.full != "":
		return OmitBudgetExhausted, s.full
	case s.remaining <= 0:
		return OmitBudgetExhausted, "no tokens left"
	case s.req.MaxItems > 0 && len(s.res.Items) >= s.req.MaxItems:
		return OmitMaxItems, fmt.Sprintf("%d items already selected", len(s.res.Items))
	case !s.req.IncludeUserAudience && !c.Pinned && userOnly(c.Audience):
		return OmitUserAudience, "annotated for the user only (audience [\"user\"])"
	case !s.req.IncludeBinary && binaryMIME(c.MIMEType):
		return OmitBinaryExcluded, fmt.Sprintf("descriptor MIME type %q is binary", c.MIMEType)
	case !c.Pinned && !s.filling && v.Relevance < s.req.ValueFloor*s.anchor:
		floor := s.req.ValueFloor * s.anchor
		prec := distinctPrecision(v.Relevance, floor)
		return OmitLowValue, fmt.Sprintf("relevance %.*f is below the floor %.*f (%.2f × the best returned relevance %.2f)",
			prec, v.Relevance, prec, floor, s.req.ValueFloor, s.anchor)
	case !c.Pinned && !s.filling && s.req.ValueFloor > 0 && v.Spread < SpreadFloor*s.anchorSpread:
		floor := SpreadFloor * s.anchorSpread
		prec := distinctPrecision(v.Spread, floor)
		return OmitLowValue, fmt.Sprintf("relevance %.2f is in the lower part of the candidates' scores: %.*f of the way from the weakest to the best, below the floor %.*f (%.2f × the best returned's %.2f)",
			v.Relevance, prec, v.Spread, prec, floor, SpreadFloor, s.anchorSpread)
	}
	return "", ""
}

// pack fits the read contents of c into what is left of the budget and
// records the item, or the omission if nothing of it fits. est is the
// estimated whole cost, or -1 if unknown.
func (s *selection) pack(rank int, c Candidate, v Value, contents []Content, est int) {
	fp := fingerprintOf(contents)
	for _, seen := range s.fps {
		if exact, near := fp.same(seen.fp); exact || near {
			how := "the same content as"
			if !exact {
				how = "nearly the same content as"
			}
			s.omit(rank, c, v, OmitDuplicateContent, fmt.Sprintf("%s rank %d (%s %s)", how, seen.rank, seen.key.Server, seen.key.URI), true)
			return
		}
	}
	if s.req.Query != "" {
		s.packQuery(rank, c, v, contents, fp, est)
		return
	}
	s.packHead(rank, c, v, contents, fp)
}

// packHead packs without a query: contents in order, whole while they fit;
// the first text that does not fit is cut to its head and fills the budget.
func (s *selection) packHead(rank int, c Candidate, v Value, contents []Content, fp fingerprint) {
	left := s.remaining
	var (
		kept        []ItemContent
		dropped     []DroppedContent
		stop        bool   // a text was trimmed: the budget is full
		cut         string // how the trimmed text was cut, for the reason
		budgetDrop  string // detail of the first content dropped for lack of budget
		truncatedBy bool   // some content was cut or dropped for lack of budget
	)
	for i, ct := range contents {
		drop := func(r OmitReason, detail string) {
			dropped = append(dropped, DroppedContent{Index: i, URI: ct.URI, MIMEType: ct.MIMEType, Reason: r, Detail: detail})
			if r != OmitEmpty && r != OmitBinaryExcluded && r != OmitInvalid {
				truncatedBy = true
				if budgetDrop == "" {
					budgetDrop = detail
				}
			}
		}
		switch r, detail := s.unusable(ct); {
		case stop:
			drop(OmitBudgetExhausted, "")
		case r != "":
			drop(r, detail)
		case ct.IsBlob:
			n := s.blobCost(c.Server, ct.Blob, left)
			if n > left {
				drop(OmitBinaryTooLarge, fmt.Sprintf("blob of %d bytes costs more than the %s left", len(ct.Blob), tokens(left)))
				continue
			}
			kept = append(kept, ItemContent{Content: ct, Tokens: n})
			left -= n
		case !cuttableMIME(cmp.Or(ct.MIMEType, c.MIMEType)) && !s.wholeFits(ct, left):
			drop(OmitUnsupported, fmt.Sprintf("MIME type %q is kept intact, and it does not fit in the %s left", cmp.Or(ct.MIMEType, c.MIMEType), tokens(left)))
		default:
			// TrimToBudget returns the text whole when it fits, and counts
			// only about as much of a long text as it keeps.
			out, n := budget.TrimToBudget(s.count, ct.Text, left)
			if out == ct.Text {
				s.observe(c.Server, cmp.Or(ct.MIMEType, c.MIMEType), len(ct.Text), n)
				kept = append(kept, ItemContent{Content: ct, Tokens: n})
				left -= n
				continue
			}
			stop = true
			if out == "" {
				drop(OmitTooLarge, fmt.Sprintf("not even the first character of a text fits in the %s left", tokens(left)))
				continue
			}
			truncatedBy = true
			cut = fmt.Sprintf("cut to %d of %d bytes", len(out), len(ct.Text))
			if len(contents) > 1 {
				cut = fmt.Sprintf("content %d of %d %s", i+1, len(contents), cut)
			}
			lines := strings.Count(out, "\n") + 1
			if strings.HasSuffix(out, "\n") {
				lines--
			}
			ct.Text = out
			kept = append(kept, ItemContent{Content: ct, Tokens: n, Truncated: true, StartLine: 1, EndLine: lines})
			left -= n
		}
	}
	if len(kept) == 0 {
		if stop {
			s.full = fmt.Sprintf("budget full: not even the start of rank %d fit in the %s left", rank, tokens(s.remaining))
		}
		reason, detail := emptyReason(contents, dropped, budgetDrop)
		s.omit(rank, c, v, reason, detail, true)
		return
	}
	used := s.remaining - left
	form := FormWhole
	if truncatedBy {
		form = FormTruncated
	}
	s.add(Item{
		Candidate: c,
		Rank:      rank,
		Form:      form,
		Value:     v.Total(),
		Contents:  kept,
		Dropped:   dropped,
		Tokens:    used,
		Truncated: truncatedBy,
		Reason:    itemReason(rank, c.Pinned, used, truncatedBy, cut, dropped),
	}, fp)
	if stop {
		s.full = fmt.Sprintf("budget filled by rank %d", rank)
	}
}

// unusable returns why a content of a read result cannot be returned
// whatever the budget (OmitInvalid, OmitEmpty or OmitBinaryExcluded), or
// "" if it can.
func (s *selection) unusable(ct Content) (OmitReason, string) {
	switch {
	case ct.Error != "":
		return OmitInvalid, ct.Error
	case ct.IsBlob && len(ct.Blob) == 0, !ct.IsBlob && ct.Text == "":
		return OmitEmpty, ""
	case ct.IsBlob && !s.req.IncludeBinary:
		return OmitBinaryExcluded, ""
	}
	return "", ""
}

// blobCost returns what a blob costs: the tokens of its standard base64
// encoding, as a model would be shown it (the bytes themselves are
// returned, never the base64 text); or left+1 when its length proves it
// cannot fit in left, without counting. A count teaches the estimator the
// binary ratio, whatever the blob's MIME type says.
func (s *selection) blobCost(server string, blob []byte, left int) int {
	if !budget.Fits(s.count, base64.StdEncoding.EncodedLen(len(blob)), left) {
		return left + 1
	}
	n := s.count.Count(base64.StdEncoding.EncodeToString(blob))
	s.observe(server, "application/octet-stream", len(blob), n)
	return n
}

// wholeFits reports whether text content ct fits whole in left tokens.
func (s *selection) wholeFits(ct Content, left int) bool {
	return budget.Fits(s.count, len(ct.Text), left) && s.count.Count(ct.Text) <= left
}

// add records an item and charges its tokens.
func (s *selection) add(it Item, fp fingerprint) {
	// A text that holds none of the query's words does not set the
	// floor, nor one on probation that does not bear out its descriptor:
	// ranked first by its descriptor alone, a server's lorem ipsum had
	// every page that answers the task fall under it.
	if !it.Pinned && s.anchor == 0 && (s.req.Query == "" || holdsQueryTerm(it.Contents, s.query) && (!it.Probation || bearsOut(it, s.query))) {
		s.anchor, s.anchorSpread = s.values[it.Rank-1].Relevance, s.values[it.Rank-1].Spread
	}
	s.fps = append(s.fps, packed{fp: fp, rank: it.Rank, key: it.Key()})
	s.remaining -= it.Tokens
	s.res.TotalTokens += it.Tokens
	s.res.Items = append(s.res.Items, it)
}

func (s *selection) omit(rank int, c Candidate, v Value, reason OmitReason, detail string, read bool) {
	s.res.Omitted = append(s.res.Omitted, Omitted{Candidate: c, Rank: rank, Value: v.Total(), Reason: reason, Detail: detail, Read: read})
}

// emptyReason says why a read resource yielded nothing to return: lack of
// budget first (it is what the caller can change), then binary exclusion.
func emptyReason(contents []Content, dropped []DroppedContent, budgetDrop string) (OmitReason, string) {
	if len(contents) == 0 {
		return OmitEmpty, "read returned no contents"
	}
	for _, d := range dropped {
		switch d.Reason {
		case OmitTooLarge, OmitBinaryTooLarge:
			return d.Reason, budgetDrop
		case OmitUnsupported:
			return d.Reason, d.Detail
		}
	}
	blobs, invalid := 0, ""
	for _, d := range dropped {
		switch d.Reason {
		case OmitBinaryExcluded:
			blobs++
		case OmitInvalid:
			if invalid == "" {
				invalid = d.Detail
			}
		}
	}
	if invalid != "" {
		return OmitInvalid, invalid
	}
	if blobs > 0 {
		return OmitBinaryExcluded, fmt.Sprintf("all %d non-empty contents are blobs", blobs)
	}
	return OmitEmpty, fmt.Sprintf("all %d contents are empty", len(contents))
}

// itemReason explains an item, e.g. "rank 1, fits whole (312 tokens)".
func itemReason(rank int, pinned bool, n int, truncated bool, cut string, dropped []DroppedContent) string {
	var b strings.Builder
	why := fmt.Sprintf("rank %d", rank)
	if pinned {
		why = "pinned"
	}
	if truncated {
		fmt.Fprintf(&b, "%s, truncated to %s to fit the budget", why, tokens(n))
	} else {
		fmt.Fprintf(&b, "%s, fits whole (%s)", why, tokens(n))
	}
	if cut != "" {
		fmt.Fprintf(&b, "; %s", cut)
	}
	notes := []struct {
		reason           OmitReason
		singular, plural string
	}{
		{OmitBudgetExhausted, "later content dropped", "later contents dropped"},
		{OmitTooLarge, "text over budget dropped", "texts over budget dropped"},
		{OmitBinaryTooLarge, "blob over budget dropped", "blobs over budget dropped"},
		{OmitBinaryExcluded, "binary content excluded", "binary contents excluded"},
		{OmitEmpty, "empty content skipped", "empty contents skipped"},
	}
	for _, note := range notes {
		n := 0
		for _, d := range dropped {
			if d.Reason == note.reason {
				n++
			}
		}
		switch {
		case n == 1:
			fmt.Fprintf(&b, "; 1 %s", note.singular)
		case n > 1:
			fmt.Fprintf(&b, "; %d %s", n, note.plural)
		}
	}
	return b.String()
}

// tokens formats a token count for a reason: "1 token", "12 tokens".
func tokens(n int) string {
	if n == 1 {
		return "1 token"
	}
	return fmt.Sprintf("%d tokens", n)
}

// userOnly reports whether an audience annotation names the user and not
// the assistant.
func userOnly(audience []string) bool {
	return slices.Contains(audience, "user") && !slices.Contains(audience, "assistant")
}
