// Package catalog builds a big MCP resource catalogue from real text, for
// tests and benchmarks of indexing at scale: the Go standard library's
// documentation as the eval ships it (eval/datasets/godoc/corpus.jsonl, 177
// packages), served as one resource per package (whole: a few KiB to 130
// KiB of Markdown) followed by one resource per documented func or type
// (its declaration and prose, with its package's import line), taken from
// the packages in turn, until the catalogue holds the number asked for.
// Descriptors carry what real servers declare: a name, a title, a
// one-sentence description, text/markdown, the size in bytes, and for some
// a lastModified date and a priority annotation, all fixed by the
// resource's position (the catalogue is the same on every run).
//
// The corpus is read at run time, not linked: nothing in the daemon
// imports this package (cmd/contextd's deps test checks it).
package catalog

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// A Resource is one catalogue entry: its descriptor and its text.
type Resource struct {
	URI, Name, Title, Description, MIMEType string
	// Size is len(Text), in bytes, as the descriptor declares it.
	Size int64
	// LastModified is an RFC 3339 time, or empty (one resource in three).
	LastModified string
	// Priority is the priority annotation in [0, 1], or 0 for none (one in
	// five has one).
	Priority float64
	// Package is the Go import path the text documents.
	Package string
	Text    string
}

// A Question is a task from the corpus' queries with the packages judged
// relevant to it (any score above 0).
type Question struct {
	ID, Text string
	Packages []string
}

// DefaultCorpus returns the path of eval/datasets/godoc in this checkout,
// found from this source file's place (for tests and the fixture server
// run with go run).
func DefaultCorpus() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("eval", "datasets", "godoc")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "eval", "datasets", "godoc")
}

type doc struct {
	ID      string `json:"_id"`
	Title   string `json:"title"`
	Text    string `json:"text"`
	Content string `json:"content"`
}

// Load builds a catalogue of n resources (at most the corpus holds: 2,772)
// from the dataset directory dir (DefaultCorpus). Errors: the corpus cannot
// be read or parsed, or n < 1.
func Load(dir string, n int) ([]Resource, error) {
	if n < 1 {
		return nil, fmt.Errorf("catalog: %d resources asked for; want at least 1", n)
	}
	f, err := os.Open(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	var docs []doc
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var d doc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("catalog: corpus line %d: %w", len(docs)+1, err)
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	var out []Resource
	add := func(r Resource) bool {
		if len(out) == n {
			return false
		}
		i := len(out)
		r.MIMEType = "text/markdown"
		r.Size = int64(len(r.Text))
		if i%3 != 0 {
			// Spread over two years before a fixed day, newest first by
			// position.
			r.LastModified = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC).Add(-time.Duration(i*7919%730) * 24 * time.Hour).Format(time.RFC3339)
		}
		if i%5 == 0 {
			r.Priority = float64(i*37%10+1) / 10
		}
		out = append(out, r)
		return true
	}
	sections := make([][]Resource, len(docs))
	for i, d := range docs {
		if !add(Resource{URI: "godoc://pkg/" + d.ID, Name: d.ID, Title: d.Title, Description: d.Text, Package: d.ID, Text: d.Content}) {
			return out, nil
		}
		sections[i] = symbols(d)
	}
	for round := 0; ; round++ {
		more := false
		for _, ss := range sections {
			if round < len(ss) {
				more = true
				if !add(ss[round]) {
					return out, nil
				}
			}
		}
		if !more {
			return out, nil
		}
	}
}

// symbols cuts a package's documentation into one resource per "### func"
// or "### type" section, followed by the package's overview.
func symbols(d doc) []Resource {
	var out []Resource
	short := d.ID[strings.LastIndex(d.ID, "/")+1:]
	// Each page opens with its package's overview (up to its first "## "
	// heading, at most 2 KiB), as a documentation site's symbol pages do.
	intro, _, _ := strings.Cut(d.Content, "\n## ")
	if len(intro) > 2048 {
		intro = intro[:strings.LastIndex(intro[:2048], "\n")+1]
	}
	intro = strings.TrimSpace(strings.TrimPrefix(intro, "# "))
	lines := strings.Split(d.Content, "\n")
	for i := 0; i < len(lines); i++ {
		head := lines[i]
		kind, name, ok := strings.Cut(strings.TrimPrefix(head, "### "), " ")
		if !strings.HasPrefix(head, "### ") || !ok || (kind != "func" && kind != "type") {
			continue
		}
		name = strings.Trim(strings.Fields(name + " ")[0], "`")
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "### ") && !strings.HasPrefix(lines[j], "## ") {
			j++
		}
		body := strings.TrimSpace(strings.Join(lines[i+1:j], "\n"))
		text := fmt.Sprintf("# %s %s.%s\n\n`import %q`\n\n%s\n\n## About package %s\n\n%s\n", kind, short, name, d.ID, body, short, intro)
		desc := firstSentence(body)
		if desc == "" {
			desc = fmt.Sprintf("The %s %s of package %s.", kind, name, d.ID)
		}
		out = append(out, Resource{
			URI:         "godoc://pkg/" + d.ID + "/" + name,
			Name:        short + "." + name,
			Title:       kind + " " + short + "." + name,
			Description: desc,
			Package:     d.ID,
			Text:        text,
		})
		i = j - 1
	}
	return out
}

// firstSentence returns the first sentence of the prose of a section (its
// lines outside code fences), or "".
func firstSentence(body string) string {
	fence := false
	var prose []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if !fence && strings.TrimSpace(l) != "" {
			prose = append(prose, strings.TrimSpace(l))
		}
		if !fence && strings.TrimSpace(l) == "" && len(prose) > 0 {
			break
		}
	}
	s := strings.Join(prose, " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// Questions returns the corpus' queries judged in split ("dev" or "test")
// with their relevant packages, in the order of queries.jsonl.
func Questions(dir, split string) ([]Question, error) {
	rel := map[string][]string{}
	qf, err := os.ReadFile(filepath.Join(dir, "qrels", split+".tsv"))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(qf)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) != 3 || f[2] == "0" {
			continue
		}
		rel[f[0]] = append(rel[f[0]], f[1])
	}
	f, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	var out []Question
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, fmt.Errorf("catalog: queries: %w", err)
		}
		if ps := rel[q.ID]; len(ps) > 0 {
			out = append(out, Question{ID: q.ID, Text: q.Text, Packages: ps})
		}
	}
	return out, sc.Err()
}
