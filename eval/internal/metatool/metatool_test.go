package metatool

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/eval/beir"
)

var update = flag.Bool("update", false, "rewrite testdata/want from the fixture")

const (
	fixture = "testdata/src"
	golden  = "testdata/want"
)

var fixtureOpts = &Options{TestSize: 3, DevSize: 3}

// TestGolden converts the fixture and compares every file with
// testdata/want; go test -update rewrites them.
func TestGolden(t *testing.T) {
	ds, err := Convert(fixture, fixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := ds.Write(golden); err != nil {
			t.Fatal(err)
		}
	}
	compareDir(t, ds, golden)
}

// compareDir checks that dir holds exactly the files of ds.
func compareDir(t *testing.T, ds *Dataset, dir string) {
	t.Helper()
	files, err := ds.Files()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range files {
		want[f.Path] = true
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Errorf("%v (regenerate the dataset)", err)
			continue
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s/%s differs from a fresh conversion (regenerate it):\n%s", dir, f.Path,
				cmp.Diff(lines(f.Data), lines(got)))
		}
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !want[filepath.ToSlash(rel)] {
			t.Errorf("%s: stale file, not produced by the conversion", p)
		}
		return nil
	})
}

// lines splits b for a readable diff, capping its size.
func lines(b []byte) []string {
	l := strings.Split(string(b), "\n")
	return l[:min(len(l), 200)]
}

// TestFixture checks what the golden files encode, in words: trimming,
// merging, matching plugin_info.json, escaping and the multi split.
func TestFixture(t *testing.T) {
	ds, err := Convert(fixture, fixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]beir.Doc{}
	var order []string
	for _, d := range ds.Corpus {
		docs[d.ID] = d
		order = append(order, d.ID)
	}
	if diff := cmp.Diff([]string{"weather", "NewsTool", "PDF&URLTool", "a b/c?d", "SSH", "scraper", "twins", "renamed"}, order); diff != "" {
		t.Errorf("corpus order (-want +got):\n%s", diff)
	}
	wantDocs := map[string]beir.Doc{
		// matched: title from name_for_human, content byte for byte
		"weather": {ID: "weather", Title: "Weather Now", Text: "Get the forecast for any city.", Name: "weather",
			URI: "metatool://tool/weather", MIMEType: "text/plain", Content: "Plugin for weather.\nUse it for forecasts. "},
		// matched with a trailing space in the description; text and title trimmed
		"SSH": {ID: "SSH", Title: "ChatSSH", Text: "Run commands on your server.", Name: "SSH",
			URI: "metatool://tool/SSH", MIMEType: "text/plain", Content: "Ability to SSH."},
		// two identical records: still one match
		"scraper": {ID: "scraper", Title: "Scraper", Text: "Scrape content from webpages by providing a URL.", Name: "scraper",
			URI: "metatool://tool/scraper", MIMEType: "text/plain", Content: "Scrape pages."},
		// two disagreeing records: no match
		"twins": {ID: "twins", Title: "twins", Text: "Two plugins claim this description.", Name: "twins",
			URI: "metatool://tool/twins", MIMEType: "text/plain"},
		// name matches, description does not: no match
		"renamed": {ID: "renamed", Title: "renamed", Text: "Described differently in plugin_info.", Name: "renamed",
			URI: "metatool://tool/renamed", MIMEType: "text/plain"},
		"a b/c?d": {ID: "a b/c?d", Title: "a b/c?d", Text: "A tool whose name needs escaping in a URI.", Name: "a b/c?d",
			URI: "metatool://tool/a%20b%2Fc%3Fd", MIMEType: "text/plain"},
		"PDF&URLTool": {ID: "PDF&URLTool", Title: "PDF&URLTool", Text: "Chat with PDF files and web pages.", Name: "PDF&URLTool",
			URI: "metatool://tool/PDF&URLTool", MIMEType: "text/plain"},
	}
	for id, want := range wantDocs {
		if diff := cmp.Diff(want, docs[id]); diff != "" {
			t.Errorf("doc %q (-want +got):\n%s", id, diff)
		}
	}
	if diff := cmp.Diff([]string{"twins"}, ds.Stats.AmbiguousInfo); diff != "" {
		t.Errorf("AmbiguousInfo (-want +got):\n%s", diff)
	}

	// Relevant tools by query text, over every split.
	text := map[string]string{}
	for _, q := range ds.Queries {
		text[q.ID] = q.Text
	}
	got := map[string]map[string][]string{}
	for _, s := range ds.Splits {
		got[s.Name] = map[string][]string{}
		for _, j := range s.Judgements {
			got[s.Name][text[j.QueryID]] = j.DocIDs
		}
	}
	single := map[string][]string{}
	for _, name := range []string{SplitTest, SplitDev, SplitTrain} {
		for q, d := range got[name] {
			single[q] = d
		}
	}
	wantSingle := map[string][]string{
		"Will it rain in Paris tomorrow?": {"weather"},
		// merged across a trailing space, tools in corpus order
		"What happened in the world today?": {"weather", "NewsTool"},
		"Summarize this PDF, please.":       {"PDF&URLTool"},
		"Log into my server.":               {"SSH"},
		`"Quoted" text, with a comma`:       {"scraper"},
		"Two lines,\nin one query":          {"scraper"},
		"Is the caf茅 open?":                 {"a b/c?d"},
		"Any news on twins?":                {"NewsTool", "twins"}, // corpus order
		"Something renamed?":                {"renamed"},
	}
	if diff := cmp.Diff(wantSingle, single); diff != "" {
		t.Errorf("single-tool queries (-want +got):\n%s", diff)
	}
	wantMulti := map[string][]string{
		"Weather and news for Paris?":            {"weather", "NewsTool", "SSH"},
		`"Scrape a page and chat with its PDF."`: {"PDF&URLTool", "scraper"},
		"Will it rain in Paris tomorrow?":        {"weather", "NewsTool"},
	}
	if diff := cmp.Diff(wantMulti, got[SplitMulti]); diff != "" {
		t.Errorf("multi-tool queries (-want +got):\n%s", diff)
	}
	sizes := map[string]int{}
	for _, s := range ds.Splits {
		sizes[s.Name] = len(s.Judgements)
	}
	if diff := cmp.Diff(map[string]int{"test": 3, "dev": 3, "train": 3, "multi": 3}, sizes); diff != "" {
		t.Errorf("split sizes (-want +got):\n%s", diff)
	}
	wantStats := Stats{
		Tools: 8, ToolsWithInfo: 3, AmbiguousInfo: []string{"twins"}, PluginInfo: 8,
		SingleRows: 12, SingleExact: 10, SingleTrimmed: 2, SingleQueries: 9, SingleMultiTool: 2, SingleRepeated: 1,
		MultiRows: 4, MultiQueries: 3, MultiTrimmed: 2, MultiInSingle: 1, MultiTools: 5,
		SingleQuoted: 0, MultiQuoted: 1, ToolsUnused: 0,
	}
	if diff := cmp.Diff(wantStats, ds.Stats); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

// TestDeterministic converts the fixture twice and checks the bytes match.
func TestDeterministic(t *testing.T) {
	var prev []File
	for i := range 2 {
		ds, err := Convert(fixture, fixtureOpts)
		if err != nil {
			t.Fatal(err)
		}
		files, err := ds.Files()
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if diff := cmp.Diff(prev, files); diff != "" {
				t.Errorf("second conversion differs (-first +second):\n%s", diff)
			}
		}
		prev = files
	}
}

// TestBEIR writes the fixture's conversion and loads every split with the
// beir package: ids unique, splits disjoint, every query in one split.
func TestBEIR(t *testing.T) {
	ds, err := Convert(fixture, fixtureOpts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ds.Write(dir); err != nil {
		t.Fatal(err)
	}
	checkSplits(t, dir, map[string]int{"test": 3, "dev": 3, "train": 3, "multi": 3}, 8)
}

func checkSplits(t *testing.T, dir string, sizes map[string]int, docs int) {
	t.Helper()
	splits, err := beir.Splits(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"dev", "multi", "test", "train"}, splits); diff != "" {
		t.Errorf("splits (-want +got):\n%s", diff)
	}
	inSplit := map[string]string{}
	for _, name := range splits {
		ds, err := beir.Load(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Corpus) != docs {
			t.Errorf("%s: %d documents, want %d", name, len(ds.Corpus), docs)
		}
		if len(ds.Queries) != sizes[name] {
			t.Errorf("%s: %d queries, want %d", name, len(ds.Queries), sizes[name])
		}
		for _, q := range ds.Queries {
			if other, dup := inSplit[q.ID]; dup {
				t.Errorf("query %s is in %s and %s", q.ID, other, name)
			}
			inSplit[q.ID] = name
			if len(ds.Qrels[q.ID]) == 0 {
				t.Errorf("%s: query %s has no relevant tool", name, q.ID)
			}
		}
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	if len(inSplit) != total {
		t.Errorf("%d queries in splits, want %d", len(inSplit), total)
	}
}

func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"unknown tool in the CSV", SingleFile, "Query,Tool\nok?,weather\nhello?,nope\n",
			`SRC/all_clean_data.csv:3: tool "nope" is not in plugin_des.json`},
		{"bad CSV header", SingleFile, "Text,Tool\nhello?,weather\n",
			`SRC/all_clean_data.csv:1: want the header Query,Tool, got ["Text" "Tool"]`},
		{"three CSV fields", SingleFile, "Query,Tool\nhello?,weather,x\n",
			`SRC/all_clean_data.csv: record on line 2: wrong number of fields`},
		{"empty query", SingleFile, "Query,Tool\n  ,weather\n",
			`SRC/all_clean_data.csv:2: empty query text`},
		{"unknown tool in the multi file", MultiFile, `[{"query": "q", "tool": ["weather", "nope"]}]`,
			`SRC/multi_tool_query_golden.json: entry 1: tool "nope" is not in plugin_des.json`},
		{"multi entry without tools", MultiFile, `[{"query": "q", "tool": []}]`,
			`SRC/multi_tool_query_golden.json: entry 1: want a query and at least one tool`},
		{"multi syntax error", MultiFile, "[\n{\"query\": \"q\",\n}]",
			`SRC/multi_tool_query_golden.json: line 3: invalid character '}' looking for beginning of object key string`},
		{"duplicate tool", ToolsFile, "{\n\"a\": \"x\",\n\"weather\": \"y\",\n\"a\": \"z\"\n}",
			`SRC/plugin_des.json:4: tool "a" is listed twice (first on line 2)`},
		{"tool name with a tab", ToolsFile, `{"a\tb": "x"}`,
			`SRC/plugin_des.json:1: tool name "a\tb" holds a tab or line break`},
		{"tools not an object", ToolsFile, `["weather"]`,
			`SRC/plugin_des.json:1: want a JSON object of tool name → description`},
		{"description not a string", ToolsFile, `{"weather": 3}`,
			`SRC/plugin_des.json:1: tool "weather": json: cannot unmarshal number into Go value of type string`},
		{"too few queries", SingleFile, "Query,Tool\nhello?,weather\n",
			`metatool: 1 single-tool queries, fewer than test (3) + dev (3)`},
		{"missing file", PluginInfoFile, "",
			`metatool: open SRC/plugin_info.json: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			entries, err := os.ReadDir(fixture)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(fixture, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				if e.Name() == tt.file {
					if tt.content == "" {
						continue
					}
					b = []byte(tt.content)
				}
				if err := os.WriteFile(filepath.Join(src, e.Name()), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Convert(src, fixtureOpts)
			if err == nil {
				t.Fatalf("Convert succeeded, want %q", tt.want)
			}
			if got := strings.ReplaceAll(err.Error(), src, "SRC"); got != tt.want {
				t.Errorf("Convert error\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}
