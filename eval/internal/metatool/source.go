package metatool

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// A tool is one entry of plugin_des.json.
type tool struct {
	name, description string
}

// parseTools reads a JSON object of name → description, keeping file order
// and rejecting repeated names (which a map would silently collapse).
func parseTools(path string, b []byte) ([]tool, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s: invalid UTF-8", path)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	fail := func(err error) error {
		return fmt.Errorf("%s:%d: %v", path, lineOf(b, dec.InputOffset()), err)
	}
	if t, err := dec.Token(); err != nil {
		return nil, fail(err)
	} else if t != json.Delim('{') {
		return nil, fail(errors.New("want a JSON object of tool name → description"))
	}
	var tools []tool
	first := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		name := t.(string) // object keys are always strings
		line := lineOf(b, dec.InputOffset())
		var desc string
		if err := dec.Decode(&desc); err != nil {
			return nil, fail(fmt.Errorf("tool %q: %v", name, err))
		}
		switch {
		case strings.TrimSpace(name) == "":
			return nil, fail(errors.New("empty tool name"))
		case strings.ContainsAny(name, "\t\r\n"):
			// The name is the corpus id, which must fit in a qrels field.
			return nil, fail(fmt.Errorf("tool name %q holds a tab or line break", name))
		case strings.TrimSpace(desc) == "":
			return nil, fail(fmt.Errorf("tool %q has an empty description", name))
		}
		if l, dup := first[name]; dup {
			return nil, fail(fmt.Errorf("tool %q is listed twice (first on line %d)", name, l))
		}
		first[name] = line
		tools = append(tools, tool{name: name, description: desc})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fail(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(errors.New("data after the JSON object"))
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("%s: no tools", path)
	}
	return tools, nil
}

// pluginInfo is one record of plugin_info.json (an OpenAI plugin manifest
// excerpt).
type pluginInfo struct {
	NameForModel        string `json:"name_for_model"`
	NameForHuman        string `json:"name_for_human"`
	DescriptionForModel string `json:"description_for_model"`
	DescriptionForHuman string `json:"description_for_human"`
}

func parsePluginInfo(path string, b []byte) ([]pluginInfo, error) {
	var infos []pluginInfo
	if err := decodeAll(b, &infos); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return infos, nil
}

// decodeAll decodes b, which must hold exactly one JSON value, into v. A
// syntax error reports its line.
func decodeAll(b []byte, v any) error {
	if !utf8.Valid(b) {
		return errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("line %d: %v", lineOf(b, se.Offset), err)
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

// A query is one query text and its relevant tools (positions in the
// corpus).
type query struct {
	text  string
	tools map[int]bool
}

// queries collects query texts, trimmed and merged.
type queries struct {
	queries  []*query // order of first appearance
	byText   map[string]*query
	rows     int // entries read
	exact    int // distinct texts before trimming
	trimmed  int // entries whose text had surrounding white space
	repeated int // entries repeating a (text, tool) pair
	seen     map[string]bool
}

func newQueries() *queries {
	return &queries{byText: map[string]*query{}, seen: map[string]bool{}}
}

// add records one entry: its text and its tools (already checked).
func (qs *queries) add(text string, tools []int) error {
	qs.rows++
	if !qs.seen[text] {
		qs.seen[text] = true
		qs.exact++
	}
	t := strings.TrimSpace(text)
	if t != text {
		qs.trimmed++
	}
	if t == "" {
		return errors.New("empty query text")
	}
	q := qs.byText[t]
	if q == nil {
		q = &query{text: t, tools: map[int]bool{}}
		qs.byText[t] = q
		qs.queries = append(qs.queries, q)
	}
	for _, pos := range tools {
		if q.tools[pos] {
			qs.repeated++
		}
		q.tools[pos] = true
	}
	return nil
}

// parseSingle reads all_clean_data.csv: a "Query,Tool" header, then one
// query and one tool name per record.
func parseSingle(path string, b []byte, known map[string]int) (*queries, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%s: invalid UTF-8", path)
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = 2
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if !slices.Equal(header, []string{"Query", "Tool"}) {
		return nil, fmt.Errorf("%s:1: want the header Query,Tool, got %q", path, header)
	}
	qs := newQueries()
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err) // a csv.ParseError has the line
		}
		line, _ := r.FieldPos(0)
		pos, ok := known[rec[1]]
		if !ok {
			return nil, fmt.Errorf("%s:%d: tool %q is not in %s", path, line, rec[1], ToolsFile)
		}
		if err := qs.add(rec[0], []int{pos}); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, line, err)
		}
	}
	if len(qs.queries) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return qs, nil
}

// parseMulti reads multi_tool_query_golden.json: a list of {query, tool: [names]}.
func parseMulti(path string, b []byte, known map[string]int) (*queries, error) {
	var entries []struct {
		Query *string  `json:"query"`
		Tool  []string `json:"tool"`
	}
	if err := decodeAll(b, &entries); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	qs := newQueries()
	for i, e := range entries {
		if e.Query == nil || len(e.Tool) == 0 {
			return nil, fmt.Errorf("%s: entry %d: want a query and at least one tool", path, i+1)
		}
		var tools []int
		for _, name := range e.Tool {
			pos, ok := known[name]
			if !ok {
				return nil, fmt.Errorf("%s: entry %d: tool %q is not in %s", path, i+1, name, ToolsFile)
			}
			tools = append(tools, pos)
		}
		if err := qs.add(*e.Query, tools); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %v", path, i+1, err)
		}
	}
	if len(qs.queries) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return qs, nil
}
