// Package selector decides which ranked resources to read and packs their
// contents under a token budget.
//
// It is pure: it reads through a caller-supplied [ReadFunc] and counts with a
// caller-supplied [budget.Counter], and does no I/O of its own. Ranking and
// fusion happen before; [Select] takes candidates in rank order and never
// changes the ranks it reports.
//
// # Value
//
// Each candidate has a [Value]: its relevance (its score over the best
// unpinned score) × a priority factor (the priority annotation, 0.96–1.04)
// × a recency factor (lastModified, 0.98–1.02, neutral at 30 days); absent
// annotations count as 1, and they reorder close matches only. Pinned
// candidates are considered first, in their order; the others in
// decreasing value, ties in rank order. A candidate whose relevance is
// below [Request.ValueFloor] × the relevance of the first unpinned item
// returned or deferred as a pointer (the best that can be returned), or,
// among at least [CalibrationPool] unpinned candidates, whose place in the
// spread of their scores ([Value].Spread: 0 the weakest, 1 the best) is
// below [SpreadFloor] × that item's, is omitted unread ([OmitLowValue]),
// unless, once every candidate was considered, at least [FillShare] of the
// budget is left: then those within [FillBand] under the first floor are
// read in value order while it is, and one of them that would come whole
// is kept only if its text holds a word of the query. A ValueFloor of 0
// turns both floors off. Items and omissions are reported in rank order.
//
// Tokens enter through the form, not the order: what a resource costs
// decides whether it is read whole, in sections, as an outline or as a
// pointer. Ordering by value per estimated token (fractional knapsack)
// was measured on the eval's godoc budget benchmark and rejected: it
// prefers small, marginal resources, and the relevant share of tokens
// fell from 0.578 to 0.327 at 500 tokens (0.478 even with value over
// tokens^0.05).
//
// # Reads
//
// Descriptors are checked before any read, so a resource is read only if
// it may be returned:
//
//   - once [Request.MaxItems] items are selected, or no tokens are left,
//     the rest are omitted unread;
//   - a candidate's cost is estimated from its descriptor's size and MIME
//     type ([budget.Estimator], which learns each server's bytes per token
//     from every exact count); once fewer than [MinUsefulTokens] are left,
//     only one estimated to fit whole is read, and once fewer than
//     [MinSectionRead] are left (with a query; or fewer than the share,
//     when the budget is shared in smaller ones), one estimated not to fit
//     whole becomes a pointer without a read;
//   - a repeated (server, URI), a descriptor for the user only (unless
//     asked for), and with [Request.IncludeBinary] off a descriptor whose
//     MIME type is clearly binary, are omitted unread.
//
// [Result.Reads] counts ReadFunc calls: each read candidate is an item or
// an omission with [Omitted.Read] set, and an unread item is a pointer
// ([Item.Unread]). A failed read omits that candidate and selection goes
// on; a cancelled context stops it.
//
// # Packing
//
// A read resource is counted exactly. Every usable content that fits is
// returned whole ([FormWhole]). With a [Request.Query], a resource whose
// texts do not fit degrades, and selection goes on after it:
//
//  1. [FormSections]: its texts are split into sections (package section:
//     Markdown headings, top-level declarations of code, paragraphs) and
//     the sections that best match the query (BM25 over the resource's own
//     sections) are returned whole, each with its line range, in text order;
//     if none fits whole, the run of the best one's lines that holds the
//     most of the query (section.Focus), or else its head, cut to fit (at a
//     line, or within its first line). Where no section shares a word with
//     the query, the candidate's indexed passages ([Candidate.Passages])
//     score its sections instead. Each text's opening section (its overview) is added when
//     there is room after the matches, unless the resource's share holds
//     one section (below).
//  2. [FormOutline]: no section matches the query: its headings with their
//     line ranges.
//  3. [FormPointer]: not even that: the descriptor alone ([PointerText]),
//     counted.
//
// While the m unpinned candidates at or above the floors are considered, a
// resource degraded to sections takes at most 1/min(m, [MaxShareWays],
// budget/[MinShareTokens]) of the budget, and when that share is under
// [OneSectionShare] tokens, its one best section only (or the lines of it
// around its match), without its overview. Each picked section brings its leads: the declaration or
// heading line of the section a window was cut from, and its Markdown
// parent headings, each a one-line content, when they fit.
//
// Budget still left after every candidate goes to more sections of the
// items returned as sections, the best for the query among all of them
// (BM25 over all their sections, weighed by relevance), without another
// read; then the candidates that could only be pointers get what is left, in value
// order, at most [MaxPointerShare] of the budget together.
// Without a query a text that does not fit is cut to what is left, at a
// line where it can be ([FormTruncated]), and the budget is then full, as a caller that cannot
// say what it needs gets the head.
//
// A text whose MIME type cannot be cut (application/* other than JSON,
// XML, YAML, JavaScript and the like) is kept intact: whole or not at all
// ([OmitUnsupported]). A blob is never shown as base64 text: with
// IncludeBinary off it is dropped (a resource of blobs only is omitted);
// with it on, it is returned as bytes, costs the tokens of its standard
// base64 encoding, and is kept whole or dropped, never cut.
//
// Content already returned through another URI or server is omitted
// ([OmitDuplicateContent]). The total of the returned items never exceeds
// [Request.TokenBudget], and every candidate ends up in exactly one of
// [Result.Items] or [Result.Omitted], each with a reason a person can read.
// The same inputs (and read results, and Estimator state) give the same
// Result.
package selector
