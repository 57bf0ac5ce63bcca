// Package selector decides which ranked resources to read and packs their
// contents under a token budget.
//
// It is pure: it reads through a caller-supplied [ReadFunc] and counts with a
// caller-supplied [budget.Counter], and does no I/O of its own. Ranking and
// fusion happen before; [Select] takes candidates already in rank order.
//
// # Selection
//
// [Select] walks the candidates best first. Descriptors are checked before
// any read, so a resource is read only if it may be returned:
//
//   - once the budget is full (no tokens left, or a text had to be trimmed)
//     or [Request.MaxItems] items are selected, the rest are omitted unread;
//   - once fewer than [MinUsefulTokens] tokens remain, only a candidate whose
//     descriptor declares a Size that fits whole is still read;
//   - a repeated (server, URI) is omitted unread;
//   - with [Request.IncludeBinary] off, a descriptor whose MIME type is
//     clearly binary (image/*, audio/*, video/*, font/*, PDF, ZIP, …) is
//     omitted unread.
//
// Every candidate ends up in exactly one of [Result.Items] or
// [Result.Omitted], each with a reason a person can read.
//
// # Packing
//
// The contents of a read result are packed in order, each counted exactly:
//
//   - a text that fits is kept whole;
//   - a text that does not fit is cut at a line boundary to what is left
//     ([budget.TrimToBudget]), the item is marked truncated, later contents
//     are dropped and the budget is full. This happens to the best candidate
//     too: a big top match is trimmed, never skipped;
//   - a blob is never shown as base64 text. With IncludeBinary off it is
//     dropped (a resource of blobs only is omitted); with it on, it costs the
//     tokens of its standard base64 encoding and is kept whole or dropped,
//     never cut, and later contents are still packed.
//
// The total of the returned items never exceeds [Request.TokenBudget].
//
// # Reads
//
// [Result.Reads] counts ReadFunc calls. Each read candidate is either
// returned or omitted with [Omitted.Read] set, so Reads equals len(Items)
// plus the omissions marked Read. A failed read omits that candidate and
// selection goes on; a cancelled context stops it.
package selector
