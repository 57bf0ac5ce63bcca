package section

import (
	"regexp"
	"strings"
	"unicode"
)

// mdLink matches a Markdown inline link, [text](target), capturing its text.
var mdLink = regexp.MustCompile(`\[([^\]\n]*)\]\([^)\s]*(?:\s+"[^"\n]*")?\)`)

// scoringText returns what of a Markdown section (Level > 0) its score is
// computed from: its lines without link targets (a link to
// architecture.md does not make a section about architecture) and without
// navigation paragraphs (two or more links and next to no other text, such
// as "[Architecture](architecture.md) | [Structure](structure.md)", on one
// line or several); and whether anything besides headings is left. A
// section of a title and a link bar has nothing left and scores 0:
// returned, it would tell the reader nothing. Other sections are returned
// as they are.
func scoringText(s Section) (string, bool) {
	if s.Level == 0 {
		return s.Text, true
	}
	var b strings.Builder
	body := false
	var para []string
	flush := func() {
		joined := strings.Join(para, "")
		para = para[:0]
		links := len(mdLink.FindAllStringIndex(joined, -1))
		if links >= 2 && isNavigation(mdLink.ReplaceAllString(joined, ""), links) {
			return
		}
		if links > 0 {
			joined = mdLink.ReplaceAllString(joined, "$1")
		}
		b.WriteString(joined)
		for line := range strings.Lines(joined) {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				body = true
			}
		}
	}
	for line := range strings.Lines(s.Text) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			// A blank line or a heading ends a paragraph.
			flush()
			b.WriteString(line)
			continue
		}
		para = append(para, line)
	}
	flush()
	return b.String(), body
}

// isNavigation reports whether what is left of a paragraph of links once
// they are taken out is separators and emphasis, and a word or two per
// link at most ("| Server Features" beside five links).
func isNavigation(rest string, links int) bool {
	n := 0
	for _, r := range rest {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n <= 6*links
}

// Informative reports whether s holds something to read: text besides
// white space, Markdown headings and navigation links. A title and a bar
// of links to other pages is not worth its tokens as a section or as an
// overview.
func Informative(s Section) bool {
	if strings.TrimSpace(s.Text) == "" {
		return false
	}
	_, body := scoringText(s)
	return body
}
