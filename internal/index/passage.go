package index

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Passage limits.
const (
	// PassageBytes is the most bytes of text in one passage: about what a
	// sentence encoder reads in one window (USE-lite reads 128 tokens, and
	// an embedder with a longer window should still embed one topic per
	// vector rather than a whole page).
	PassageBytes = 2 << 10
	// minPassageBytes is how long a passage grows before a heading, or the
	// last paragraph break, may end it: shorter passages would cost a
	// vector each for a few lines.
	minPassageBytes = PassageBytes / 2
	// MaxPassages is the most passages of one text that get a vector: the
	// first, then those that open at a heading, then the others in text
	// order (the whole text is still indexed lexically).
	MaxPassages = 64
)

// A Span is one passage of a resource's indexed text: the bytes
// [Start, End) of the text (End excludes the passage's trailing white
// space), on lines Line through EndLine (1-based, counting "\n").
type Span struct {
	Start, End    int
	Line, EndLine int
	// Heading reports that the passage opens with a Markdown heading.
	Heading bool
}

// Passages cuts text into the passages that are embedded for it, in text
// order. A passage holds at most PassageBytes (the last two of a text
// about the same, so neither is a scrap); it ends before the first
// Markdown heading 1 KiB or more into it, else before the last heading
// that fits (128 bytes or more into it), else at the last paragraph break
// (a blank line), line break or white space that fits, in that order of
// preference, 512 bytes or more into it (else at a rune). Passages hold at least one non-space
// character and no surrounding white space; a text without words has
// none. Of a text with more than MaxPassages passages, the first is kept,
// then those that open at a heading, then the others in text order, up to
// MaxPassages, returned in text order.
func Passages(text string) []Span {
	spans := cutPassages(text)
	if len(spans) > MaxPassages {
		spans = keepPassages(spans)
	}
	numberLines(text, spans)
	return spans
}

// cutPassages cuts the whole of text into passages as Passages describes,
// without choosing MaxPassages of them or numbering their lines.
func cutPassages(text string) []Span {
	type lineInfo struct {
		start         int // first non-space byte
		heading, para bool
	}
	var lines []lineInfo
	para := true
	for off := 0; off < len(text); {
		next := len(text)
		if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
			next = off + nl + 1
		}
		l := text[off:next]
		if t := strings.TrimLeftFunc(l, unicode.IsSpace); t == "" {
			para = true
		} else {
			lines = append(lines, lineInfo{start: off + len(l) - len(t), heading: isHeading(l), para: para})
			para = false
		}
		off = next
	}
	var spans []Span
	li := 0 // the first line starting after pos
	for pos := skipSpace(text, 0); pos < len(text); {
		for li < len(lines) && lines[li].start <= pos {
			li++
		}
		limit := pos + PassageBytes
		if rest := len(text) - pos; rest > PassageBytes && rest < PassageBytes+minPassageBytes {
			// The rest takes two passages: cut it near the middle rather
			// than leave a scrap whose vector says little.
			limit = pos + rest/2 + minPassageBytes/4
		}
		cut := -1
		// Candidates: lines starting in (pos, limit].
		var lastHeading, lastPara, lastLine = -1, -1, -1
		for j := li; j < len(lines) && lines[j].start <= limit; j++ {
			l := lines[j]
			if l.heading && l.start-pos >= minPassageBytes {
				cut = l.start
				break
			}
			if l.heading && l.start-pos >= minPassageBytes/8 {
				lastHeading = l.start
			}
			if l.para && l.start-pos >= minPassageBytes/2 {
				lastPara = l.start
			}
			if l.start-pos >= minPassageBytes/2 {
				lastLine = l.start
			}
		}
		switch {
		case cut >= 0:
		case limit >= len(text):
			cut = len(text)
		case lastHeading >= 0:
			cut = lastHeading
		case lastPara >= 0:
			cut = lastPara
		case lastLine >= 0:
			cut = lastLine
		default:
			cut = pos + len(cutBytes(text[pos:], limit-pos))
			if i := strings.LastIndexFunc(text[pos+minPassageBytes/2:cut], unicode.IsSpace); i >= 0 {
				cut = pos + minPassageBytes/2 + i
			}
			if cut <= pos { // a rune wider than the bound cannot happen; be safe
				_, n := utf8.DecodeRuneInString(text[pos:])
				cut = pos + n
			}
		}
		end := pos + len(strings.TrimRightFunc(text[pos:cut], unicode.IsSpace))
		if end > pos {
			spans = append(spans, Span{Start: pos, End: end, Heading: isHeading(lineAt(text, pos))})
		}
		pos = skipSpace(text, cut)
	}
	return spans
}

// numberLines sets the Line and EndLine of spans, which are in text order.
func numberLines(text string, spans []Span) {
	line, at := 1, 0
	for i := range spans {
		sp := &spans[i]
		line += strings.Count(text[at:sp.Start], "\n")
		sp.Line = line
		line += strings.Count(text[sp.Start:sp.End], "\n")
		sp.EndLine = line
		at = sp.End
	}
}

// skipSpace returns the offset of the first non-space character of text at
// or after i (len(text) when none).
func skipSpace(text string, i int) int {
	return len(text) - len(strings.TrimLeftFunc(text[i:], unicode.IsSpace))
}

// lineAt returns the rest of the line at byte i of text.
func lineAt(text string, i int) string {
	line := text[i:]
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	return line
}

// isHeading reports whether line is a Markdown ATX heading ("# Title" to
// "###### Title").
func isHeading(line string) bool {
	line = strings.TrimLeft(line, " ")
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && n < len(line) && (line[n] == ' ' || line[n] == '\t')
}

// keepPassages chooses MaxPassages of spans (more than that): the first,
// then those that open at a heading, then the rest, each in text order;
// the result is in text order.
func keepPassages(spans []Span) []Span {
	keep := make([]bool, len(spans))
	keep[0] = true
	n := 1
	for pass := 0; pass < 2 && n < MaxPassages; pass++ {
		for i := 1; i < len(spans) && n < MaxPassages; i++ {
			if !keep[i] && (pass == 1 || spans[i].Heading) {
				keep[i] = true
				n++
			}
		}
	}
	out := make([]Span, 0, MaxPassages)
	for i, sp := range spans {
		if keep[i] {
			out = append(out, sp)
		}
	}
	return out
}

// passageText is what is embedded for a passage: its words, with runs of
// white space collapsed to one space.
func passageText(text string, sp Span) string {
	return strings.Join(strings.Fields(text[sp.Start:sp.End]), " ")
}
