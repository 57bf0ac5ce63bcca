package godoc

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A Query is one task of the query file.
type Query struct {
	ID, Text string
	// Answers are the packages graded 2, Helps those graded 1, each in the
	// order the file lists them.
	Answers, Helps []string
	// Line is the query's line in the file.
	Line int
}

// ParseQueries reads a query file: UTF-8 text, one query per line, in four
// tab-separated fields:
//
//	ID	TASK	ANSWERS	HELPS
//
// ID is unique and made of lower-case ASCII letters, digits and '-'; TASK is
// the query text, unique and without surrounding white space; ANSWERS lists
// one or more import paths separated by spaces, the packages that answer the
// task (grade 2); HELPS lists the packages that help (grade 1) the same way,
// or is "-" for none. No package is listed twice in one query. Empty lines
// and lines that begin with '#' are ignored.
//
// Every package named must be in known (nil accepts any); an error names
// name and the line.
func ParseQueries(name string, b []byte, known map[string]bool) ([]*Query, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s: invalid UTF-8", name)
	}
	var qs []*Query
	ids, texts := map[string]int{}, map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		q, err := parseQuery(line, known)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, n, err)
		}
		if l, dup := ids[q.ID]; dup {
			return nil, fmt.Errorf("%s:%d: id %s is used on line %d too", name, n, q.ID, l)
		}
		if l, dup := texts[q.Text]; dup {
			return nil, fmt.Errorf("%s:%d: query %s repeats the task of line %d", name, n, q.ID, l)
		}
		ids[q.ID], texts[q.Text] = n, n
		q.Line = n
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%s: no queries", name)
	}
	return qs, nil
}

func parseQuery(line string, known map[string]bool) (*Query, error) {
	f := strings.Split(line, "\t")
	if len(f) != 4 {
		return nil, fmt.Errorf("want 4 tab-separated fields (id, task, answers, helps), got %d", len(f))
	}
	q := &Query{ID: f[0], Text: f[1]}
	if q.ID == "" || strings.IndexFunc(q.ID, func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-')
	}) >= 0 {
		return nil, fmt.Errorf("id %q: want lower-case letters, digits and '-'", q.ID)
	}
	switch {
	case strings.TrimSpace(q.Text) == "":
		return nil, fmt.Errorf("query %s: empty task", q.ID)
	case strings.TrimSpace(q.Text) != q.Text:
		return nil, fmt.Errorf("query %s: the task has surrounding white space", q.ID)
	}
	seen := map[string]bool{}
	list := func(field, what string) ([]string, error) {
		if strings.TrimSpace(field) != field || strings.Contains(field, "  ") {
			return nil, fmt.Errorf("query %s: %s %q: separate import paths by one space", q.ID, what, field)
		}
		if field == "-" && what == "helps" {
			return nil, nil
		}
		if field == "" {
			return nil, fmt.Errorf("query %s: empty %s", q.ID, what)
		}
		var out []string
		for _, p := range strings.Fields(field) {
			if known != nil && !known[p] {
				return nil, fmt.Errorf("query %s: package %q is not in the corpus", q.ID, p)
			}
			if seen[p] {
				return nil, fmt.Errorf("query %s: package %q is listed twice", q.ID, p)
			}
			seen[p] = true
			out = append(out, p)
		}
		return out, nil
	}
	var err error
	if q.Answers, err = list(f[2], "answers"); err != nil {
		return nil, err
	}
	if q.Helps, err = list(f[3], "helps"); err != nil {
		return nil, err
	}
	return q, nil
}
