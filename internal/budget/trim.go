package budget

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TrimToBudget returns the longest prefix of text that costs at most
// maxTokens tokens under c, together with its token count.
//
// The cut is made, in order of preference:
//
//  1. at a line boundary: right after a '\n', or at the end of text (so text
//     that fits is returned whole);
//  2. if not even the first line fits, at the end of a word within the first
//     line (before a Unicode space, which is dropped);
//  3. if not even the first word fits, between two runes.
//
// A UTF-8 sequence is never split, so the result is valid UTF-8 whenever text
// is. If nothing fits, or maxTokens <= 0, the result is "" and 0.
//
// The returned count is always c.Count(out) and never exceeds maxTokens.
// BPE counts are not additive across a cut, so candidate prefixes are counted
// whole; the search interpolates on bytes per token to probe only a few of
// them (typically 3–8 counts of about len(out) bytes each, at most about
// 12 + 2·log2(len(text)) counts). "Longest" is exact when the count of a
// prefix never decreases as the prefix grows, which holds for BPE encoders in
// practice; otherwise the result is still a fitting prefix and no fitting
// prefix of the same kind ends at the next boundary after it.
func TrimToBudget(c Counter, text string, maxTokens int) (out string, tokens int) {
	if maxTokens <= 0 || text == "" {
		return "", 0
	}
	if ts, ok := c.(TokenSizer); ok && ts.MaxTokenBytes() > 0 {
		// No prefix longer than this can fit, so never count past it: work
		// is bounded by the budget, not by the size of the resource.
		if limit := maxTokens * ts.MaxTokenBytes(); maxTokens < math.MaxInt/ts.MaxTokenBytes() && limit < len(text) {
			for limit > 0 && !utf8.RuneStart(text[limit]) {
				limit--
			}
			text = text[:limit]
		}
	}
	t := trimmer{c: c, text: text, max: maxTokens}
	b := t.search(lineCuts{text}, bracket{hi: -1})
	if b.lo > 0 {
		return text[:b.lo], b.loTok
	}
	// b.hi is now the first line boundary, known not to fit.
	b = t.search(wordCuts{text}, bracket{hi: b.hi, hiTok: b.hiTok})
	if b.lo > 0 {
		return text[:b.lo], b.loTok
	}
	b = t.search(runeCuts{text}, bracket{hi: b.hi, hiTok: b.hiTok})
	return text[:b.lo], b.loTok
}

type trimmer struct {
	c    Counter
	text string
	max  int
}

// A bracket is the state of a search: lo is a cut known to fit with loTok
// tokens (0 for the empty prefix, which is never returned as a cut), hi is a
// cut known not to fit with hiTok tokens, or -1 while no such cut is known.
type bracket struct {
	lo, loTok int
	hi, hiTok int
}

// A cutSet enumerates the admissible cut positions (byte offsets k with
// 0 < k <= len(text)) of one kind.
type cutSet interface {
	// prev returns the largest cut <= off, or 0 if there is none.
	prev(off int) int
	// next returns the smallest cut > off, or -1 if there is none.
	next(off int) int
}

// search narrows b until no cut of cs lies strictly between b.lo and b.hi,
// and returns it. b.lo is then the largest probed cut that fits.
//
// Probes are chosen by linear interpolation of tokens over bytes between the
// bracket ends (regula falsi), which usually lands within a line or two of the
// answer because token density is roughly uniform. When the same end has
// moved three times in a row, or after interpolateProbes probes, the next
// probe bisects instead (or, with no upper end yet, at least doubles), which
// bounds the probes by about interpolateProbes + 2·log2(len(text)).
func (t *trimmer) search(cs cutSet, b bracket) bracket {
	const interpolateProbes = 12
	n := len(t.text)
	streak, lastFit := 0, false
	for probes := 0; ; probes++ {
		safe := streak >= 3 || probes >= interpolateProbes
		var target float64
		switch {
		case b.hi < 0 && b.loTok <= 0:
			// Nothing measured yet: assume ~4 bytes per token, typical of
			// English prose and code in both encodings.
			target = max(4*float64(t.max), 2*float64(b.lo))
		case b.hi < 0:
			// Extrapolate the density seen so far, with 10% headroom so that
			// the first probe past the answer closes the bracket.
			perTok := float64(b.lo) / float64(b.loTok)
			target = float64(b.lo) + 1.1*perTok*float64(t.max-b.loTok) + 1
			if safe {
				target = max(target, 2*float64(b.lo))
			}
		case safe:
			target = float64(b.lo) + float64(b.hi-b.lo)/2
		default:
			target = float64(b.lo) + float64(t.max-b.loTok)*float64(b.hi-b.lo)/float64(b.hiTok-b.loTok)
		}
		off := n
		if target < float64(n) {
			off = int(target)
		}
		k := cs.prev(off)
		if k <= b.lo {
			k = cs.next(b.lo)
		}
		if k < 0 || (b.hi >= 0 && k >= b.hi) {
			return b
		}
		tok := t.c.Count(t.text[:k])
		fit := tok <= t.max
		if fit == lastFit {
			streak++
		} else {
			streak, lastFit = 1, fit
		}
		if fit {
			b.lo, b.loTok = k, tok
		} else {
			b.hi, b.hiTok = k, tok
		}
	}
}

// lineCuts are the offsets just after each '\n', plus the end of the text.
type lineCuts struct{ s string }

func (c lineCuts) prev(off int) int {
	if off >= len(c.s) {
		return len(c.s)
	}
	return strings.LastIndexByte(c.s[:off], '\n') + 1
}

func (c lineCuts) next(off int) int {
	if off >= len(c.s) {
		return -1
	}
	i := strings.IndexByte(c.s[off:], '\n')
	if i < 0 {
		return len(c.s)
	}
	return off + i + 1
}

// runeCuts are the offsets that do not fall inside a UTF-8 sequence: the
// start of every rune (or stray byte of invalid UTF-8), plus the end.
type runeCuts struct{ s string }

func (c runeCuts) isCut(k int) bool {
	return k == len(c.s) || (k > 0 && k < len(c.s) && utf8.RuneStart(c.s[k]))
}

func (c runeCuts) prev(off int) int {
	k := min(off, len(c.s))
	for k > 0 && !c.isCut(k) {
		k--
	}
	return k
}

func (c runeCuts) next(off int) int {
	if off >= len(c.s) {
		return -1
	}
	k := off + 1
	for !c.isCut(k) {
		k++
	}
	return k
}

// wordCuts are the rune cuts where a word ends: the rune before is not a
// Unicode space and the rune after is one (or the text ends).
type wordCuts struct{ s string }

func (c wordCuts) isCut(k int) bool {
	if !(runeCuts{c.s}).isCut(k) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(c.s[:k])
	if unicode.IsSpace(before) {
		return false
	}
	if k == len(c.s) {
		return true
	}
	after, _ := utf8.DecodeRuneInString(c.s[k:])
	return unicode.IsSpace(after)
}

func (c wordCuts) prev(off int) int {
	rc := runeCuts{c.s}
	k := rc.prev(off)
	for k > 0 && !c.isCut(k) {
		k = rc.prev(k - 1)
	}
	return k
}

func (c wordCuts) next(off int) int {
	rc := runeCuts{c.s}
	k := rc.next(off)
	for k >= 0 && !c.isCut(k) {
		k = rc.next(k)
	}
	return k
}
