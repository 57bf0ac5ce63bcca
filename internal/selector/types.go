package selector

import (
	"context"
	"time"

	"github.com/contextd/contextd/internal/budget"

	"github.com/contextd/contextd/internal/resource"
)

// A Candidate is a ranked resource descriptor: what is known before reading.
type Candidate struct {
	Server      string // configured server name
	URI         string // opaque, exactly as listed
	Name        string
	Title       string
	Description string
	MIMEType    string // "" = unknown; never guessed from the URI
	Size        int64  // bytes, from the descriptor; 0 = unknown
	// IndexedSize is the bytes of the resource's text as the content index
	// last read it (0: none). Without a descriptor Size it stands in for
	// one when deciding whether reading the resource is worth it.
	IndexedSize int64
	Score       float64 // fused relevance, higher is better; not used to reorder
	// Audience is the descriptor's audience annotation ("user",
	// "assistant"; MCP 2025-11-25 "Annotations"); empty means both.
	Audience []string
	// Pinned marks a resource the caller asked for by URI (an IDE's open
	// file): callers put pinned candidates first, and neither the audience
	// rule nor the value floor applies to them.
	Pinned bool
	// Probation marks a candidate of a server whose reads in this request
	// mostly came to nothing (passed over by the caller, then taken back):
	// its text sets the value floor only if it bears out its descriptor
	// (holds at least half of the query's words the descriptor holds). A
	// server naming every word of a task in its descriptors, whose reads
	// fail but now and then answer a page naming one (a login page), had
	// every honest page under the floor.
	Probation bool
	// Priority is the descriptor's priority annotation in [0, 1] (1: most
	// important); 0 means absent and counts as neutral. The go-sdk decodes
	// the annotation into a float64, so an explicit 0 cannot be told from
	// an absent one and counts as neutral too.
	Priority float64
	// LastModified is the descriptor's lastModified annotation (ISO 8601,
	// as sent: an RFC 3339 time, or a date such as 2025-01-12 taken as its
	// midnight UTC); "" or unparsable counts as neutral.
	LastModified string
	// Passages are the passages of the resource's text that the content
	// index embedded, with their similarity to the query: a dense signal
	// for choosing its sections when the task's words are not the text's.
	// Lines are those of the text as indexed (a read of one text content).
	// nil: sections are chosen by their words alone.
	Passages []Passage
}

// A Passage is a run of lines of a resource's text and its embedding's
// cosine similarity to the query, in [−1, 1].
type Passage struct {
	StartLine, EndLine int // 1-based, inclusive
	Similarity         float64
}

// Key returns the candidate's identity, (server, URI).
func (c Candidate) Key() resource.Key { return resource.Key{Server: c.Server, URI: c.URI} }

// A Content is one item of a resources/read result.
type Content = resource.Content

// A ReadFunc reads one resource (resources/read on server for uri). It must
// return ctx's error, or one wrapping it, when ctx is done.
type ReadFunc func(ctx context.Context, server, uri string) ([]Content, error)

// A Request says how much to select.
type Request struct {
	// TokenBudget is the most tokens the returned contents may cost
	// together, as counted by the Counter given to Select. It must be >= 1.
	// Only content is counted: a caller that frames each item (headers,
	// separators) should subtract that framing from its own budget first.
	TokenBudget int

	// IncludeBinary returns blob contents as bytes. Each blob then costs the
	// token count of its standard (padded) base64 encoding: what a model is
	// shown when given the bytes. If false, blobs are dropped from items and
	// cost nothing, and descriptors with a binary MIME type are not read.
	IncludeBinary bool

	// MaxItems caps the number of returned items; 0 means no limit. It must
	// not be negative.
	MaxItems int

	// IncludeUserAudience also returns resources annotated for the user
	// only (audience ["user"]), which are otherwise left out of model
	// context unread (OmitUserAudience).
	IncludeUserAudience bool

	// Query is the task the candidates were ranked for. With it, a text
	// too big for what is left is cut into sections and its best sections
	// for the query are returned ([FormSections]), degrading to an outline
	// and then a pointer; without it, the text's head is kept
	// ([FormTruncated]) and the budget is then full.
	Query string

	// ValueFloor leaves out, unread ([OmitLowValue]), a candidate whose
	// relevance is below ValueFloor times that of the first unpinned item
	// returned or deferred as a pointer (the best that can be returned;
	// see [Value]), and, when it is above 0, one in the lower part of the
	// pool's spread of scores ([SpreadFloor]). It must be in [0, 1]; 0
	// keeps every candidate.
	ValueFloor float64

	// Now is the time lastModified recency is measured from; zero turns
	// recency off.
	Now time.Time

	// Estimator predicts a candidate's tokens from its descriptor's size
	// and MIME type, so that one that cannot fit whole is not read for it
	// and learns from every exact count. nil uses
	// only the descriptor's size as a byte bound.
	Estimator *budget.Estimator
}

// A Form is how much of a resource an item returns.
type Form string

// Forms, from most to least of the resource. A resource degrades along
// them until one fits: whole → sections → outline → pointer.
const (
	// FormWhole: every returned content whole. With Item.Truncated set,
	// some contents did not fit and are listed in Item.Dropped.
	FormWhole Form = "whole"
	// FormSections: the sections of its texts that best match the query
	// (package section), each a content with its line range; the best one
	// is cut to fit when none fits whole (at a line, or within its first
	// line), so a content's last line may be partial.
	FormSections Form = "sections"
	// FormOutline: no matching section fits; one text content listing its
	// sections' headings with their line ranges, cut at a line if need be.
	FormOutline Form = "outline"
	// FormPointer: nothing of the content fits or matches; the item has no
	// contents and costs the tokens of its descriptor ([PointerText]).
	FormPointer Form = "pointer"
	// FormTruncated: without a Request.Query, a text cut at a line
	// boundary to what was left (its head), or a content dropped for lack
	// of budget. With a query, a resource is whole or degraded instead.
	FormTruncated Form = "truncated"
)

// An ItemContent is one returned content of an item.
type ItemContent struct {
	Content // Text is cut short when Truncated

	Tokens    int  // tokens this content costs: of Text, or of Blob's base64
	Truncated bool // Text was cut to fit the budget
	// StartLine and EndLine are the 1-based, inclusive lines of the
	// content's text that Text holds, for a section or a cut head (whose
	// last line may be cut within the line, then Truncated); both 0 when
	// Text is the whole text (or an outline, or a blob).
	StartLine, EndLine int
}

// A DroppedContent is a content of a read result that an item does not
// return.
type DroppedContent struct {
	Index    int    // 0-based position in the read result
	URI      string // the content's own URI
	MIMEType string
	Reason   OmitReason // OmitBinaryExcluded, OmitBinaryTooLarge, OmitTooLarge, OmitBudgetExhausted, OmitEmpty or OmitInvalid
	Detail   string     // specifics, such as why an item is invalid
}

// An Item is a selected resource and the contents returned for it.
type Item struct {
	Candidate

	Rank      int           // 1-based position of the candidate in the ranked input
	Form      Form          // how much of the resource is returned
	Value     float64       // see [Value]
	Contents  []ItemContent // in read order; empty only for FormPointer
	Dropped   []DroppedContent
	Tokens    int  // sum of Contents[i].Tokens, or the pointer's tokens
	Truncated bool // some content was cut or dropped for lack of budget (always, but for FormWhole with nothing dropped)
	// Unread marks a pointer decided from the descriptor alone, without a
	// read (and not counted in Result.Reads).
	Unread bool
	Reason string
}

// An Omitted is a candidate that is not returned.
type Omitted struct {
	Candidate

	Rank   int     // 1-based position of the candidate in the ranked input
	Value  float64 // see [Value]
	Reason OmitReason
	Detail string // specifics for a person, such as the read error
	Read   bool   // the resource was read (and counted in Result.Reads)
}

// An OmitReason says why a candidate, or a content of an item, was left out.
type OmitReason string

// Omission reasons. The "not read" ones are decided from the descriptor
// alone, before any read.
const (
	// OmitBudgetExhausted: not read because the budget was full (no tokens
	// left, an earlier text had to be trimmed, or fewer than MinUsefulTokens
	// left); for a content, dropped after an earlier content was trimmed.
	OmitBudgetExhausted OmitReason = "budget_exhausted"
	// OmitMaxItems: not read because Request.MaxItems items were selected.
	OmitMaxItems OmitReason = "max_items"
	// OmitDuplicate: not read because an earlier candidate has the same
	// server and URI.
	OmitDuplicate OmitReason = "duplicate"
	// OmitBinaryExcluded: Request.IncludeBinary is off and the descriptor's
	// MIME type is binary (not read), or every content read was a blob.
	OmitBinaryExcluded OmitReason = "binary_excluded"
	// OmitReadFailed: the read returned an error, given in Detail.
	OmitReadFailed OmitReason = "read_failed"
	// OmitEmpty: the read returned no contents, or only empty ones.
	OmitEmpty OmitReason = "empty_content"
	// OmitBinaryTooLarge: a blob costs more tokens than are left; blobs are
	// never cut.
	OmitBinaryTooLarge OmitReason = "binary_too_large"
	// OmitInvalid: the content item was unusable as sent (Content.Error,
	// e.g. a blob that is not base64); the read's other items are unaffected.
	OmitInvalid OmitReason = "invalid_content"
	// OmitTooLarge: not even the first rune of a text fits in what is left.
	OmitTooLarge OmitReason = "too_large"
	// OmitUserAudience: not read because the descriptor is annotated for
	// the user only (audience ["user"]) and Request.IncludeUserAudience is
	// off.
	OmitUserAudience OmitReason = "audience_user"
	// OmitDuplicateContent: read, but its contents are the same as an item
	// already returned through another URI or server (the same text up to
	// white space, or the same bytes), or, for texts of 300 words or more,
	// nearly the same (SimHash of word 3-shingles within 3 of 64 bits).
	OmitDuplicateContent OmitReason = "duplicate_content"
	// OmitLowValue: not read because its relevance is below
	// Request.ValueFloor times that of the first unpinned item returned,
	// or its Spread below SpreadFloor times that item's; or read to use
	// a budget left unused, and not kept because its text holds no word
	// of the query.
	OmitLowValue OmitReason = "low_value"
	// OmitUnsupported: a text of a MIME type contextd cannot cut
	// (application/* other than JSON, XML, YAML, JavaScript and the like)
	// did not fit whole; it is kept intact or not at all.
	OmitUnsupported OmitReason = "unsupported_too_large"
)

// A Result is the outcome of Select.
type Result struct {
	Items       []Item    // in rank order (pinned first)
	Omitted     []Omitted // in rank order
	TotalTokens int       // sum of Items[i].Tokens; never above Request.TokenBudget
	Reads       int       // ReadFunc calls made
}
