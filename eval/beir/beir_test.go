package beir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validFiles is a small dataset with two splits. Its corpus exercises the
// contextd fields, a missing title, and unknown fields; its qrels a graded
// score, a zero and a negative score.
var validFiles = map[string]string{
	"corpus.jsonl": `{"_id":"d1","title":"Weather","text":"Forecasts.","name":"weather","uri":"metatool://tool/weather","mimeType":"text/plain","content":"Long\nbody"}
{"_id":"d2","text":"News of the day.","metadata":{"source":"x"}}
{"_id":"d3","title":"Finance","text":"","server":"s1"}
`,
	"queries.jsonl": "{\"_id\":\"q1\",\"text\":\"rain tomorrow?\"}\n" +
		"{\"_id\":\"q2\",\"text\":\"stock news\",\"metadata\":{}}\r\n" +
		"{\"_id\":\"q3\",\"text\":\"unjudged\"}\n" +
		`{"_id":"q4","text":"only negatives"}`, // no final newline
	"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq2\td2\t2\nq2\td3\t1\nq1\td1\t1\nq1\td2\t0\n",
	"qrels/dev.tsv":  "query-id\tcorpus-id\tscore\nq4\td1\t-1\n",
}

func writeDataset(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	dir := writeDataset(t, validFiles)
	got, err := Load(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	want := &Dataset{
		Split: "test",
		Corpus: []Doc{
			{ID: "d1", Title: "Weather", Text: "Forecasts.", Name: "weather", URI: "metatool://tool/weather", MIMEType: "text/plain", Content: "Long\nbody"},
			{ID: "d2", Text: "News of the day."},
			{ID: "d3", Title: "Finance", Server: "s1"},
		},
		// file order of queries.jsonl, not of the qrels
		Queries: []Query{{ID: "q1", Text: "rain tomorrow?"}, {ID: "q2", Text: "stock news"}},
		Qrels: map[string]map[string]int{
			"q1": {"d1": 1, "d2": 0},
			"q2": {"d2": 2, "d3": 1},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load mismatch (-want +got):\n%s", diff)
	}

	dev, err := Load(dir, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Query{{ID: "q4", Text: "only negatives"}}, dev.Queries); diff != "" {
		t.Errorf("dev queries mismatch (-want +got):\n%s", diff)
	}

	splits, err := Splits(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"dev", "test"}, splits); diff != "" {
		t.Errorf("Splits mismatch (-want +got):\n%s", diff)
	}
}

func TestLoadErrors(t *testing.T) {
	// with returns validFiles with one file replaced (or removed, for "").
	with := func(name, content string) map[string]string {
		m := map[string]string{}
		for k, v := range validFiles {
			m[k] = v
		}
		if content == "" {
			delete(m, name)
		} else {
			m[name] = content
		}
		return m
	}
	const header = "query-id\tcorpus-id\tscore\n"
	tests := []struct {
		name  string
		files map[string]string
		split string
		want  string // the error, with the dataset directory as DIR
	}{
		{"missing corpus", with("corpus.jsonl", ""), "test",
			"DIR/corpus.jsonl: no such file or directory"},
		{"missing queries", with("queries.jsonl", ""), "test",
			"DIR/queries.jsonl: no such file or directory"},
		{"missing split", validFiles, "train",
			`DIR/qrels/train.tsv: no split "train" (splits: dev, test)`},
		{"split with a path", validFiles, "../test",
			`DIR/qrels: invalid split name "../test"`},
		{"empty split name", validFiles, "",
			`DIR/qrels: invalid split name ""`},
		{"bad JSON", with("corpus.jsonl", "{\"_id\":\"d1\",\"text\":\"a\"}\n{\"_id\":\"d2\",\"text\":\"b\"\n"), "test",
			"DIR/corpus.jsonl:2: not a JSON object: unexpected end of JSON input"},
		{"two objects on a line", with("corpus.jsonl", `{"_id":"d1","text":"a"} {"_id":"d2","text":"b"}`+"\n"), "test",
			"DIR/corpus.jsonl:1: not a JSON object: invalid character '{' after top-level value"},
		{"not an object", with("queries.jsonl", "[1,2]\n"), "test",
			`DIR/queries.jsonl:1: field "": JSON array where a string is expected`},
		{"numeric id", with("corpus.jsonl", `{"_id":7,"text":"a"}`+"\n"), "test",
			`DIR/corpus.jsonl:1: field "_id": JSON number where a string is expected`},
		{"title of the wrong type", with("corpus.jsonl", `{"_id":"d1","title":["x"],"text":"a"}`+"\n"), "test",
			`DIR/corpus.jsonl:1: field "title": JSON array where a string is expected`},
		{"missing id", with("corpus.jsonl", `{"title":"t","text":"a"}`+"\n"), "test",
			`DIR/corpus.jsonl:1: missing "_id"`},
		{"empty id", with("queries.jsonl", `{"_id":"","text":"a"}`+"\n"), "test",
			`DIR/queries.jsonl:1: empty "_id"`},
		{"missing text", with("corpus.jsonl", `{"_id":"d1","title":"t"}`+"\n"), "test",
			`DIR/corpus.jsonl:1: "d1": missing "text"`},
		{"null text", with("queries.jsonl", `{"_id":"q1","text":null}`+"\n"), "test",
			`DIR/queries.jsonl:1: "q1": missing "text"`},
		{"empty query text", with("queries.jsonl", `{"_id":"q1","text":" "}`+"\n"), "test",
			`DIR/queries.jsonl:1: query "q1" has an empty text`},
		{"duplicate document", with("corpus.jsonl", validFiles["corpus.jsonl"]+`{"_id":"d2","text":"again"}`+"\n"), "test",
			`DIR/corpus.jsonl:4: duplicate _id "d2" (first on line 2)`},
		{"duplicate query", with("queries.jsonl", `{"_id":"q1","text":"a"}`+"\n"+`{"_id":"q1","text":"b"}`+"\n"), "test",
			`DIR/queries.jsonl:2: duplicate _id "q1" (first on line 1)`},
		{"empty line", with("queries.jsonl", `{"_id":"q1","text":"a"}`+"\n\n"+`{"_id":"q2","text":"b"}`+"\n"), "test",
			"DIR/queries.jsonl:2: empty line"},
		{"invalid UTF-8", with("corpus.jsonl", "{\"_id\":\"d1\",\"text\":\"\xff\"}\n"), "test",
			"DIR/corpus.jsonl:1: invalid UTF-8"},
		{"empty corpus", with("corpus.jsonl", "\n"), "test",
			"DIR/corpus.jsonl:1: empty line"},
		{"missing header", with("qrels/test.tsv", "q1\td1\t1\n"), "test",
			`DIR/qrels/test.tsv:1: want the header line "query-id\tcorpus-id\tscore", got "q1\td1\t1"`},
		{"header only", with("qrels/test.tsv", header), "test",
			"DIR/qrels/test.tsv: no judgements after the header"},
		{"two fields", with("qrels/test.tsv", header+"q1\td1\t1\nq2 d2 1\n"), "test",
			"DIR/qrels/test.tsv:3: want 3 tab-separated fields (query-id, corpus-id, score), got 1"},
		{"float score", with("qrels/test.tsv", header+"q1\td1\t1.0\n"), "test",
			`DIR/qrels/test.tsv:2: score "1.0" is not an integer`},
		{"unknown query", with("qrels/test.tsv", header+"q1\td1\t1\nq9\td1\t1\n"), "test",
			`DIR/qrels/test.tsv:3: query-id "q9" is not in queries.jsonl`},
		{"unknown document", with("qrels/test.tsv", header+"q1\td9\t1\n"), "test",
			`DIR/qrels/test.tsv:2: corpus-id "d9" is not in corpus.jsonl`},
		{"duplicate judgement", with("qrels/test.tsv", header+"q1\td1\t1\nq2\td1\t1\nq1\td1\t2\n"), "test",
			`DIR/qrels/test.tsv:4: query "q1" and document "d1" already judged on line 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDataset(t, tt.files)
			_, err := Load(dir, tt.split)
			if err == nil {
				t.Fatalf("Load succeeded, want error %q", tt.want)
			}
			got := strings.ReplaceAll(err.Error(), dir, "DIR")
			if got != tt.want {
				t.Errorf("Load error\n got: %s\nwant: %s", got, tt.want)
			}
			var be *Error
			if !errors.As(err, &be) {
				t.Errorf("Load error %T is not a *beir.Error", err)
			}
		})
	}
}

func TestLoadMissingDir(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope"), "test")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing directory: %v, want fs.ErrNotExist", err)
	}
	if _, err := Splits(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Splits without qrels/: %v, want fs.ErrNotExist", err)
	}
}

// TestLongLine checks that a line longer than any buffer is read whole.
func TestLongLine(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	files := map[string]string{
		"corpus.jsonl":  `{"_id":"d1","text":"` + long + `"}` + "\n",
		"queries.jsonl": `{"_id":"q1","text":"x"}` + "\n",
		"qrels/t.tsv":   "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
	}
	ds, err := Load(writeDataset(t, files), "t")
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Corpus[0].Text; got != long {
		t.Errorf("long text has %d bytes, want %d", len(got), len(long))
	}
}
