package answers

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/eval/beir"
)

const (
	fixtureGoroot    = "testdata/goroot"
	fixtureNPMDocs   = "testdata/npm/docs/content"
	fixtureGodoc     = "testdata/godoc"
	fixtureQuestions = "testdata/questions.jsonl"
)

var fixturePackages = []string{"hash/one", "greet"}
var fixturePages = []string{"spec.html", "debug.md"}

func fixtureOptions(t *testing.T, questions []byte) *Options {
	t.Helper()
	if questions == nil {
		var err error
		if questions, err = os.ReadFile(fixtureQuestions); err != nil {
			t.Fatal(err)
		}
	}
	return &Options{Questions: questions, QuestionsName: fixtureQuestions, Packages: fixturePackages, Pages: fixturePages}
}

func convertFixture(t *testing.T) *Dataset {
	t.Helper()
	ds, err := Convert(fixtureGoroot, fixtureNPMDocs, fixtureGodoc, fixtureOptions(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestFixtureCorpus checks the documents of each server: which files count,
// their ids, fields and order.
func TestFixtureCorpus(t *testing.T) {
	ds := convertFixture(t)
	var ids []string
	docs := map[string]beir.Doc{}
	for _, d := range ds.Corpus {
		ids = append(ids, d.ID)
		docs[d.ID] = d
	}
	// Packages sorted; no _test.go, _windows.go, testdata/ or internal/
	// files; pages in the order given; npm's .md files only, by path.
	want := []string{
		"gosrc:greet/greet.go", "gosrc:hash/one/one.go",
		"godoc:doc/spec.html", "godoc:doc/debug.md", "godoc:pkg/greet",
		"npmdocs:commands/npm-ci.md", "npmdocs:using-npm/config.md",
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("corpus ids (-want +got):\n%s", diff)
	}
	src, err := os.ReadFile(filepath.Join(fixtureGoroot, "src/greet/greet.go"))
	if err != nil {
		t.Fatal(err)
	}
	wantDocs := map[string]beir.Doc{
		"gosrc:greet/greet.go": {ID: "gosrc:greet/greet.go", Title: "greet/greet.go", Text: "", Name: "greet.go",
			URI: "file:///usr/local/go/src/greet/greet.go", MIMEType: "text/x-go", Server: "gosrc", Content: string(src)},
		"godoc:doc/spec.html": {ID: "godoc:doc/spec.html", Title: "The Fixture Specification", Text: "Version of today",
			Name: "spec.html", URI: "godoc://doc/spec.html", MIMEType: "text/html", Server: "godoc"},
		"godoc:doc/debug.md": {ID: "godoc:doc/debug.md", Title: `Fixture "debug" settings`, Name: "debug.md",
			URI: "godoc://doc/debug.md", MIMEType: "text/markdown", Server: "godoc"},
		"godoc:pkg/greet": {ID: "godoc:pkg/greet", Title: "package greet", Text: "Package greet says hello.", Name: "greet",
			URI: "godoc://pkg/greet", MIMEType: "text/markdown", Server: "godoc"},
		"npmdocs:commands/npm-ci.md": {ID: "npmdocs:commands/npm-ci.md", Title: "npm-ci", Text: "Clean install a project",
			Name: "npm-ci.md", URI: "npm-docs://commands/npm-ci.md", MIMEType: "text/markdown", Server: "npmdocs"},
		"npmdocs:using-npm/config.md": {ID: "npmdocs:using-npm/config.md", Title: "Config", Text: "About npm configuration",
			Name: "config.md", URI: "npm-docs://using-npm/config.md", MIMEType: "text/markdown", Server: "npmdocs"},
	}
	for id, w := range wantDocs {
		got := docs[id]
		if w.Content == "" {
			if got.Content == "" {
				t.Errorf("%s: empty content", id)
			}
			got.Content = ""
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", id, diff)
		}
	}
	// Files are served as they are: the page keeps its header, the npm page
	// its front matter.
	if c := docs["godoc:doc/spec.html"].Content; !strings.HasPrefix(c, "<!--{\n\t\"Title\"") {
		t.Errorf("spec.html content = %.40q…", c)
	}
	if c := docs["npmdocs:commands/npm-ci.md"].Content; !strings.HasPrefix(c, "---\ntitle: npm-ci\n") {
		t.Errorf("npm-ci.md content = %.40q…", c)
	}
	for _, d := range ds.Corpus {
		for _, s := range []string{"WINDOWS-ONLY", "TEST-ONLY", "IN-TESTDATA", "IN-INTERNAL", "not markdown"} {
			if strings.Contains(d.Content, s) {
				t.Errorf("%s holds %q from a file that is left out", d.ID, s)
			}
		}
	}
	if ds.GoVersion != "go1.23.4" || ds.GoVersionTime != "2024-12-03T19:31:28Z" || ds.NPMVersion != "1.2.3" {
		t.Errorf("versions %q %q %q", ds.GoVersion, ds.GoVersionTime, ds.NPMVersion)
	}
	if ds.Stats.GoSrcSkipped != 1 {
		t.Errorf("GoSrcSkipped = %d, want 1 (greet_windows.go)", ds.Stats.GoSrcSkipped)
	}
	if diff := cmp.Diff(map[string]int{"gosrc": 2, "godoc": 3, "npmdocs": 2}, ds.Stats.Docs); diff != "" {
		t.Errorf("Docs per server (-want +got):\n%s", diff)
	}
}

// TestFixtureFiles checks the generated files: names, BEIR validity, the
// answers file and the licences; and that converting twice gives the same
// bytes.
func TestFixtureFiles(t *testing.T) {
	ds := convertFixture(t)
	files, err := ds.Files()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string][]byte{}
	for _, f := range files {
		names = append(names, f.Path)
		byName[f.Path] = f.Data
	}
	if diff := cmp.Diff([]string{"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "qrels/dev.tsv",
		"LICENSE", "answers.jsonl", "LICENSE-npm", "README.md"}, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if got := string(byName["LICENSE-npm"]); got != "Fixture npm licence.\n" {
		t.Errorf("LICENSE-npm = %q", got)
	}
	if got := string(byName["LICENSE"]); !strings.HasPrefix(got, "Fixture licence") {
		t.Errorf("LICENSE = %q", got)
	}

	dir := t.TempDir()
	if err := ds.Write(dir); err != nil {
		t.Fatal(err)
	}
	again := convertFixture(t)
	files2, err := again.Files()
	if err != nil {
		t.Fatal(err)
	}
	for i := range files {
		if !bytes.Equal(files[i].Data, files2[i].Data) {
			t.Errorf("%s differs between two conversions", files[i].Path)
		}
	}

	// Both splits load, every question is in exactly one, graded 2 on its
	// document, and answers.jsonl agrees.
	split := map[string]string{}
	for _, s := range []string{SplitTest, SplitDev} {
		b, err := beir.Load(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		for q, docs := range b.Qrels {
			if _, dup := split[q]; dup {
				t.Errorf("%s is in two splits", q)
			}
			split[q] = s
			if len(docs) != 1 {
				t.Errorf("%s: %d judgements, want 1", q, len(docs))
			}
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(byName["answers.jsonl"]), "\n"), "\n")
	if len(lines) != 7 {
		t.Fatalf("answers.jsonl has %d lines, want 7", len(lines))
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[5]), &first); err != nil {
		t.Fatal(err)
	}
	wantLine := map[string]any{"_id": "a006", "split": split["a006"], "corpus-id": "npmdocs:commands/npm-ci.md",
		"kind": "similar", "answers": []any{"cannot be added with this command", "Individual dependencies"}}
	if diff := cmp.Diff(wantLine, first); diff != "" {
		t.Errorf("answers.jsonl line 6 (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(lines[0], `{"_id":"a001","split":`) {
		t.Errorf("answers.jsonl field order: %s", lines[0])
	}
	if len(split) != 7 {
		t.Errorf("%d questions judged, want 7", len(split))
	}
	// Groups (server, kind): gosrc similar 1, gosrc reworded 1, godoc
	// similar 1, godoc reworded 2, npmdocs similar 2 → test gets 0+0+0+1+1.
	test := 0
	for _, s := range split {
		if s == SplitTest {
			test++
		}
	}
	if test != 2 || len(ds.InTest) != 2 {
		t.Errorf("%d test questions (InTest %d), want 2", test, len(ds.InTest))
	}
	readme := string(byName["README.md"])
	for _, s := range []string{"go1.23.4", "npm** 1.2.3", "| `gosrc` | 2 |", "Artistic License 2.0",
		"| similar | 4 | 0 | 0 | 0 |", "| reworded | 3 | 0 | 0 | 0 |"} {
		if !strings.Contains(readme, s) {
			t.Errorf("README lacks %q", s)
		}
	}
}

// TestConvertErrors checks that bad inputs fail with an error naming the
// problem.
func TestConvertErrors(t *testing.T) {
	q, err := os.ReadFile(fixtureQuestions)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                  string
		goroot, npm, godocDir string
		opts                  *Options
		want                  string
	}{
		{"no goroot", "testdata/none", fixtureNPMDocs, fixtureGodoc, fixtureOptions(t, q), "VERSION"},
		{"npm docs not npm's", fixtureGoroot, "testdata/goroot/src", fixtureGodoc, fixtureOptions(t, q), "package.json"},
		{"no godoc dataset", fixtureGoroot, fixtureNPMDocs, "testdata/none", fixtureOptions(t, q), "godoc dataset"},
		{"package without files", fixtureGoroot, fixtureNPMDocs, fixtureGodoc,
			&Options{Questions: q, Packages: []string{"greet/internal/none"}, Pages: fixturePages}, "greet/internal/none"},
		{"missing page", fixtureGoroot, fixtureNPMDocs, fixtureGodoc,
			&Options{Questions: q, Packages: fixturePackages, Pages: []string{"nope.html"}}, "nope.html"},
		{"answer outside its doc", fixtureGoroot, fixtureNPMDocs, fixtureGodoc, fixtureOptions(t,
			[]byte(`{"id":"a001","kind":"similar","doc":"gosrc:greet/greet.go","near":["gosrc:hash/one/one.go"],"question":"q?","answers":["modulus = 65521"]}`)),
			`answer "modulus = 65521" occurs in gosrc:hash/one/one.go, not in doc gosrc:greet/greet.go`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Convert(c.goroot, c.npm, c.godocDir, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}
