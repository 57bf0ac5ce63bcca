package answers

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/eval/beir"
)

// The shipped dataset, the versions it was made from, and where the tests
// find npm's documentation to check it (or $ANSWERS_NPMDOCS).
const (
	shipped           = "../../datasets/answers"
	shippedGodoc      = "../../datasets/godoc"
	shippedGoVersion  = "go1.26.8"
	shippedNPMVersion = "11.19.1"
	defaultNPMDocs    = "/usr/lib/node_modules/npm/docs/content"
)

// TestShipped loads both splits of eval/datasets/answers and checks the
// embedded questions against the shipped corpus, without Go or npm: every
// answer occurs in its document and in no other, and answers.jsonl, the
// queries and the qrels agree with the question file.
func TestShipped(t *testing.T) {
	qs, err := ParseQuestions(QuestionsFile, Questions)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Question{}
	for _, q := range qs {
		byID[q.ID] = q
	}
	var corpus []beir.Doc
	judged := map[string]string{} // query id → split
	for _, s := range []string{SplitTest, SplitDev} {
		ds, err := beir.Load(shipped, s)
		if err != nil {
			t.Fatal(err)
		}
		corpus = ds.Corpus
		for _, q := range ds.Queries {
			want := byID[q.ID]
			if want == nil || want.Question != q.Text {
				t.Errorf("%s: query %s %q is not in the question file", s, q.ID, q.Text)
				continue
			}
			if _, dup := judged[q.ID]; dup {
				t.Errorf("%s is in two splits", q.ID)
			}
			judged[q.ID] = s
			if g := ds.Qrels[q.ID]; len(g) != 1 || g[want.Doc] != GradeAnswer {
				t.Errorf("%s: judgements %v, want %s graded 2 only", q.ID, g, want.Doc)
			}
		}
	}
	if len(judged) != len(qs) {
		t.Errorf("%d questions judged, %d in the file", len(judged), len(qs))
	}
	located, err := Check(QuestionsFile, qs, corpus)
	if err != nil {
		t.Fatal(err)
	}

	// At least 150 questions, about half in each split, and every (server,
	// kind) group well represented in both.
	count := map[string]int{}
	for _, q := range located {
		count[judged[q.ID]+" "+q.Server+" "+q.Kind]++
		count[judged[q.ID]]++
	}
	if len(qs) < 150 {
		t.Errorf("%d questions, want at least 150", len(qs))
	}
	for _, s := range []string{SplitTest, SplitDev} {
		for _, sv := range Servers {
			for _, k := range []string{KindDeep, KindSimilar, KindReworded} {
				if n := count[s+" "+sv+" "+k]; n < 7 {
					t.Errorf("%s: %d %s questions on %s, want at least 7", s, n, k, sv)
				}
			}
		}
	}

	all, err := LoadAnswers(shipped, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range all {
		q := byID[a.ID]
		if q == nil || a.Split != judged[a.ID] || a.CorpusID != q.Doc || a.Kind != q.Kind || strings.Join(a.Answers, "\x00") != strings.Join(q.Answers, "\x00") {
			t.Errorf("%s: %+v disagrees with the question file or the qrels", AnswersFile, a)
		}
	}
	if len(all) != len(qs) {
		t.Errorf("%s has %d answers, want %d", AnswersFile, len(all), len(qs))
	}
	test, err := LoadAnswers(shipped, SplitTest)
	if err != nil {
		t.Fatal(err)
	}
	if n := count[SplitTest]; len(test) != n {
		t.Errorf("LoadAnswers(test) gave %d answers, the qrels %d", len(test), n)
	}
}

// TestShippedCorpus checks the corpus's promises: its size bounds, a code
// server without descriptions, and no test files.
func TestShippedCorpus(t *testing.T) {
	ds, err := beir.Load(shipped, SplitDev)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	per := map[string]int{}
	for _, d := range ds.Corpus {
		total += len(d.Content)
		per[d.Server]++
		if d.Content == "" || d.URI == "" || d.MIMEType == "" || d.Title == "" {
			t.Errorf("%s: empty content, uri, mimeType or title", d.ID)
		}
		if d.Server == ServerGoSrc && (d.Text != "" || strings.HasSuffix(d.Name, "_test.go") || d.MIMEType != GoMIMEType) {
			t.Errorf("%s: a source file with a description, a test file or MIME type %q", d.ID, d.MIMEType)
		}
	}
	if len(ds.Corpus) > 700 || total > 6_000_000 {
		t.Errorf("%d resources, %d content bytes; want at most 700 and 6 MB", len(ds.Corpus), total)
	}
	if per[ServerGoSrc] < 150 || per[ServerGoDoc] < 150 || per[ServerNPM] < 80 {
		t.Errorf("resources per server %v", per)
	}
}

// TestShippedUpToDate converts the Go distribution the tests run with (or
// $ANSWERS_GOROOT) and npm's documentation ($ANSWERS_NPMDOCS, or
// /usr/lib/node_modules/npm/docs/content) and checks that
// eval/datasets/answers holds exactly the result. It is skipped unless they
// are the versions the dataset was made from.
func TestShippedUpToDate(t *testing.T) {
	goroot := os.Getenv("ANSWERS_GOROOT")
	if goroot == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Skipf("go env GOROOT: %v; set ANSWERS_GOROOT to check the shipped dataset", err)
		}
		goroot = strings.TrimSpace(string(out))
	}
	b, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		t.Skipf("%v; set ANSWERS_GOROOT to a %s distribution to check the shipped dataset", err, shippedGoVersion)
	}
	if v, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(v) != shippedGoVersion {
		t.Skipf("%s is %s, not %s", goroot, strings.TrimSpace(v), shippedGoVersion)
	}
	npmDocs := os.Getenv("ANSWERS_NPMDOCS")
	if npmDocs == "" {
		npmDocs = defaultNPMDocs
	}
	pj, err := os.ReadFile(filepath.Join(npmDocs, "..", "..", "package.json"))
	if err != nil {
		t.Skipf("%v; set ANSWERS_NPMDOCS to npm %s's docs/content to check the shipped dataset", err, shippedNPMVersion)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(pj, &meta); err != nil || meta.Version != shippedNPMVersion {
		t.Skipf("npm at %s is %q (%v), not %s", npmDocs, meta.Version, err, shippedNPMVersion)
	}
	ds, err := Convert(goroot, npmDocs, shippedGodoc, nil)
	if err != nil {
		t.Fatal(err)
	}
	compareDir(t, ds, shipped)
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
			t.Errorf("%s/%s differs from a fresh conversion; regenerate it with go run ./eval/cmd/convert-answers", dir, f.Path)
		}
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !want[filepath.ToSlash(rel)] {
			t.Errorf("%s: stale file, not produced by the conversion", p)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
