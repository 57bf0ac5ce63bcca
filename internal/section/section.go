// Package section splits a text resource into sections and picks the ones
// that best serve a query, so that a resource too big for the token budget
// can still contribute its relevant part instead of its head.
//
// A text is split by its structure, chosen from its MIME type and, when
// that says nothing more specific than text, from its content:
//
//   - Markdown (text/markdown, or any text with at least two ATX headings
//     outside code fences): one section per ATX heading (CommonMark 0.31
//     §4.2), from the heading to the line before the next one; text before
//     the first heading is a section of its own. A heading with nothing
//     under it but blank lines runs on into the next heading's section, so
//     no section is a bare heading.
//   - Source code (text/x-*, application/javascript, application/typescript
//     and the like): one section per top-level declaration, a run that starts
//     at an unindented line after a blank line, with the comments directly
//     above it. This needs no parser and holds for Go, Python, JavaScript,
//     Rust, C and most languages whose bodies are indented.
//   - Anything else: paragraphs (runs separated by blank lines), merged up
//     to about [TargetLines] lines.
//
// A section longer than [MaxLines] lines is cut into windows of
// [TargetLines] lines, at blank lines where possible, each keeping its
// section's heading.
package section

import (
	"slices"
	"strings"
)

// Line counts that shape sections.
const (
	// MaxLines is the longest section kept whole; longer ones are cut
	// into windows.
	MaxLines = 60
	// TargetLines is the length that windows and merged paragraphs aim for.
	TargetLines = 40
)

// A Kind is how a text was split.
type Kind int

// Kinds of split.
const (
	Paragraphs Kind = iota // blank-line separated paragraphs, merged
	Markdown               // ATX headings
	Code                   // top-level declarations
)

func (k Kind) String() string {
	switch k {
	case Markdown:
		return "markdown"
	case Code:
		return "code"
	}
	return "paragraphs"
}

// A Section is a run of whole lines of a text.
type Section struct {
	// Start and End are 1-based line numbers, inclusive.
	Start, End int
	// Heading is the Markdown heading or the declaration line that opens
	// the section (trimmed, at most 120 bytes), or "" for a paragraph run.
	// Windows cut from one long section all carry its heading.
	Heading string
	// Level is the Markdown heading level (1–6); 0 for other kinds and for
	// text before the first heading.
	Level int
	// Text is the section's lines exactly as in the source, each with its
	// line ending (the last line of the text may have none).
	Text string
}

// Split returns the sections of text, in order; together they cover every
// line exactly once. mimeType may carry parameters and may be empty. It
// returns nil for an empty text.
func Split(text, mimeType string) ([]Section, Kind) {
	if text == "" {
		return nil, Paragraphs
	}
	lines := splitLines(text)
	kind := kindOf(mimeType, lines)
	var starts []int // 0-based line index where each section starts
	switch kind {
	case Markdown:
		starts = joinBareHeadings(lines, markdownStarts(lines))
	case Code:
		starts = codeStarts(lines)
	default:
		starts = paragraphStarts(lines)
	}
	if len(starts) == 0 || starts[0] != 0 {
		starts = append([]int{0}, starts...)
	}
	var out []Section
	for i, s := range starts {
		e := len(lines)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		heading, level := headingOf(kind, lines[s:e])
		out = append(out, windows(lines, s, e, heading, level)...)
	}
	return out, kind
}

// splitLines splits text after each '\n', keeping the endings.
func splitLines(text string) []string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func blank(line string) bool { return strings.TrimSpace(line) == "" }

// kindOf picks the split for a MIME type, sniffing the content only when
// the type is absent or generic text.
func kindOf(mimeType string, lines []string) Kind {
	t, _, _ := strings.Cut(mimeType, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	switch t {
	case "text/markdown", "text/x-markdown":
		return Markdown
	case "application/javascript", "application/x-javascript", "text/javascript",
		"application/typescript", "application/x-typescript", "application/x-sh",
		"application/x-python", "application/x-ruby", "application/x-php", "application/sql":
		return Code
	case "", "text/plain":
		if len(markdownStarts(lines)) >= 2 {
			return Markdown
		}
		return Paragraphs
	}
	if strings.HasPrefix(t, "text/x-") && t != "text/x-markdown" {
		return Code
	}
	return Paragraphs
}

// atxLevel returns the level of an ATX heading line (CommonMark §4.2: up to
// three spaces of indentation, 1–6 '#', then a space, a tab or the end of
// the line), or 0.
func atxLevel(line string) int {
	s := strings.TrimRight(line, "\r\n")
	indent := len(s) - len(strings.TrimLeft(s, " "))
	if indent > 3 {
		return 0
	}
	s = s[indent:]
	n := len(s) - len(strings.TrimLeft(s, "#"))
	if n < 1 || n > 6 {
		return 0
	}
	if rest := s[n:]; rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0
	}
	return n
}

// fence returns the fence marker a line opens or closes ("```" or "~~~"
// runs, CommonMark §4.5), or "".
func fence(line string) string {
	s := strings.TrimLeft(strings.TrimRight(line, "\r\n"), " ")
	if len(line)-len(strings.TrimLeft(line, " ")) > 3 {
		return ""
	}
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			if c == "`" && strings.Contains(s[n:], "`") {
				return "" // inline code: a backtick fence's info string has no backtick
			}
			return s[:n]
		}
	}
	return ""
}

// markdownStarts returns the lines that hold an ATX heading outside fenced
// code blocks.
func markdownStarts(lines []string) []int {
	var starts []int
	open := "" // the fence being inside of, or ""
	for i, l := range lines {
		if f := fence(l); f != "" {
			switch {
			case open == "":
				open = f
			case f[0] == open[0] && len(f) >= len(open) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), f[:1])) == "":
				open = ""
			}
			continue
		}
		if open == "" && atxLevel(l) > 0 {
			starts = append(starts, i)
		}
	}
	return starts
}

// joinBareHeadings drops the start of each section that follows a heading
// with nothing under it, so that "## Routes" directly over "### With
// changing geometry" is one section: a heading alone tells a reader
// nothing, and picked alone it is a fragment.
func joinBareHeadings(lines []string, starts []int) []int {
	out := starts[:0:0]
	for i, s := range starts {
		if i > 0 && !slices.ContainsFunc(lines[starts[i-1]+1:s], func(l string) bool { return !blank(l) }) {
			continue // the section ends on a bare heading: it runs on
		}
		out = append(out, s)
	}
	return out
}

// closer reports whether a line only closes a block: "}", ");", "end", …
func closer(line string) bool {
	s := strings.TrimSpace(line)
	if s == "end" {
		return true
	}
	return s != "" && strings.Trim(s, "})];,") == ""
}

// comment reports whether a line starts with a common comment marker.
func comment(line string) bool {
	s := strings.TrimSpace(line)
	for _, p := range []string{"//", "#", "/*", "*", "--", ";", "\"\"\"", "'''"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// codeStarts returns the first lines of top-level declarations: unindented,
// not a block closer, after a blank line, with the comment lines directly
// above them.
func codeStarts(lines []string) []int {
	var starts []int
	for i, l := range lines {
		if i == 0 || blank(l) || !blank(lines[i-1]) || l[0] == ' ' || l[0] == '\t' || closer(l) {
			continue
		}
		starts = append(starts, i)
	}
	return starts
}

// paragraphStarts returns the first line of each run of about TargetLines
// lines made of whole paragraphs.
func paragraphStarts(lines []string) []int {
	var starts []int
	cur := -1 // start of the run being built
	for i, l := range lines {
		if blank(l) || (i > 0 && !blank(lines[i-1])) {
			continue
		}
		if cur < 0 || i-cur >= TargetLines {
			starts = append(starts, i)
			cur = i
		}
	}
	return starts
}

// headingOf returns the heading and level of a section's lines.
func headingOf(kind Kind, lines []string) (string, int) {
	clip := func(s string) string {
		s = strings.TrimSpace(s)
		if len(s) > 120 {
			cut := 120
			for cut > 0 && s[cut]&0xC0 == 0x80 {
				cut--
			}
			s = s[:cut]
		}
		return s
	}
	switch kind {
	case Markdown:
		if lv := atxLevel(lines[0]); lv > 0 {
			h := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(lines[0]), "#"))
			// A closing sequence of '#' is not part of the heading (§4.2).
			if t := strings.TrimRight(h, "#"); t != h && (t == "" || strings.HasSuffix(t, " ")) {
				h = strings.TrimSpace(t)
			}
			return clip(h), lv
		}
	case Code:
		for _, l := range lines {
			if !blank(l) && !comment(l) {
				return clip(l), 0
			}
		}
	}
	return "", 0
}

// windows returns lines[s:e] as one section, or cut into windows of about
// TargetLines lines (at a blank line when one is near) when it is longer
// than MaxLines.
func windows(lines []string, s, e int, heading string, level int) []Section {
	var out []Section
	for s < e {
		end := e
		if e-s > MaxLines {
			end = s + TargetLines
			// Prefer to cut after a blank line within the last quarter.
			for j := end; j > s+TargetLines*3/4; j-- {
				if blank(lines[j-1]) {
					end = j
					break
				}
			}
		}
		out = append(out, Section{
			Start: s + 1, End: end, Heading: heading, Level: level,
			Text: strings.Join(lines[s:end], ""),
		})
		s = end
	}
	return out
}
