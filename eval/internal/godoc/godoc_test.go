package godoc

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
	fixture        = "testdata/goroot"
	fixtureQueries = "testdata/queries.tsv"
	golden         = "testdata/want"
)

func convertFixture(t *testing.T) *Dataset {
	t.Helper()
	q, err := os.ReadFile(fixtureQueries)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := Convert(fixture, &Options{Queries: q, QueriesName: fixtureQueries})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestGolden converts the fixture tree and compares every file with
// testdata/want; go test -update rewrites them.
func TestGolden(t *testing.T) {
	ds := convertFixture(t)
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

// lines splits b for a readable diff, capping its size; a corpus line is
// cut to its first 300 bytes.
func lines(b []byte) []string {
	l := strings.Split(string(b), "\n")
	l = l[:min(len(l), 200)]
	for i, s := range l {
		if len(s) > 300 {
			l[i] = s[:300] + "…"
		}
	}
	return l
}

// TestFixture checks what the golden files encode, in words: which
// directories are packages, which files count, the fields of a document and
// the splits.
func TestFixture(t *testing.T) {
	ds := convertFixture(t)
	var ids []string
	docs := map[string]beir.Doc{}
	for _, d := range ds.Corpus {
		ids = append(ids, d.ID)
		docs[d.ID] = d
	}
	// Byte order: "net/web-x" sorts before "net/web/sub" although a
	// directory walk visits net/web/sub first. Left out: internal, vendor,
	// cmd, testdata, _gen, the windows-only package and the command.
	if diff := cmp.Diff([]string{"builtin", "greet", "net/web", "net/web-x", "net/web/sub", "nodoc"}, ids); diff != "" {
		t.Errorf("corpus ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"winonly"}, ds.Stats.Excluded); diff != "" {
		t.Errorf("Excluded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tools/run"}, ds.Stats.Commands); diff != "" {
		t.Errorf("Commands (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"nodoc"}, ds.Stats.NoSynopsis); diff != "" {
		t.Errorf("NoSynopsis (-want +got):\n%s", diff)
	}
	if ds.GoVersion != "go1.23.4" || ds.GoVersionTime != "2024-12-03T19:31:28Z" {
		t.Errorf("version %q, time %q", ds.GoVersion, ds.GoVersionTime)
	}
	if string(ds.License) != "Fixture licence: the files of this tree are test data.\n" {
		t.Errorf("License = %q", ds.License)
	}
	// greet: doc.go, greet.go and greet_cgo.go; builtin, net/web,
	// net/web-x, net/web/sub and nodoc one file each.
	if ds.Stats.SourceFiles != 8 {
		t.Errorf("SourceFiles = %d, want 8", ds.Stats.SourceFiles)
	}

	g := docs["greet"]
	g.Content = ""
	want := beir.Doc{ID: "greet", Title: "package greet", Text: "Package greet says hello.", Name: "greet",
		URI: "godoc://pkg/greet", MIMEType: "text/markdown"}
	if diff := cmp.Diff(want, g); diff != "" {
		t.Errorf("greet (-want +got):\n%s", diff)
	}
	if got := docs["net/web/sub"].Title; got != "package sub (net/web/sub)" {
		t.Errorf("net/web/sub title = %q", got)
	}
	content := docs["greet"].Content
	for _, s := range []string{
		"# package greet\n\n`import \"greet\"`\n\nPackage greet says hello. It is a fixture",
		"\n## Usage\n",                         // a package doc heading at level 2
		"\n#### Caveats\n",                     // a type doc heading at level 4
		"\n\tg := greet.NewGreeter(\"Ann\")\n", // a code block, indented
		"Make a Greeter and call Greeter.Greet; see strings.Builder", // doc links as text
		"[https://go.dev](https://go.dev)",
		"shout\\_it", // escaped by the Markdown printer
		"\n#### func NewGreeter\n\n```go\nfunc NewGreeter(name string) *Greeter\n```\n\nNewGreeter returns a Greeter for name.\n",
		"\n#### func (*Greeter) Greet\n",
		"\n#### func (Set[T]) Add\n",
		"\n### func CgoHello\n",             // cgo is enabled
		"\n````go\ntype Greeter struct {\n", // a fence longer than the ``` inside
		"\t// contains filtered or unexported fields\n",
		"### type Level\n\n```go\ntype Level int\n```\n\nA Level is a loudness.\n\n```go\nconst (\n\tLow Level = iota\n",
		"\n## Bugs\n\nGreet ignores the locale.\n",
	} {
		if !strings.Contains(content, s) {
			t.Errorf("greet content lacks %q", s)
		}
	}
	for _, s := range []string{
		"secret", "hidden", "helper", "whisper", "unexported struct", "loud bool", // unexported
		"TestOnly", "Gen is", "NewAPI", "WindowsOnly", "Draft", "InTestdata", // files left out
	} {
		if strings.Contains(content, s) {
			t.Errorf("greet content holds %q", s)
		}
	}
	if !strings.HasSuffix(content, ".\n") || strings.HasSuffix(content, "\n\n") {
		t.Errorf("greet content does not end with one newline: %q", content[len(content)-20:])
	}
	for _, d := range ds.Corpus {
		if strings.Contains(d.Content, "LeftOut") {
			t.Errorf("%s: documents a package that is left out", d.ID)
		}
	}
	if b := docs["builtin"].Content; !strings.Contains(b, "### func length\n") {
		t.Errorf("builtin lacks its unexported func:\n%s", b)
	}

	wantWeb := "# package web\n\n`import \"net/web\"`\n\nPackage web serves pages.\n\n" +
		"## Functions\n\n### func Serve\n\n```go\nfunc Serve() error\n```\n\nServe serves.\n"
	if diff := cmp.Diff(wantWeb, docs["net/web"].Content); diff != "" {
		t.Errorf("net/web content (-want +got):\n%s", diff)
	}

	// Splits: t1…t4 are single-package, t5 and t6 multi-package; each group
	// is shuffled and halved.
	got := map[string][]string{}
	for _, s := range ds.Splits {
		for _, j := range s.Judgements {
			got[s.Name] = append(got[s.Name], j.QueryID)
		}
	}
	if diff := cmp.Diff(map[string][]string{"test": {"t1", "t3", "t6"}, "dev": {"t2", "t4", "t5"}}, got); diff != "" {
		t.Errorf("splits (-want +got):\n%s", diff)
	}
	st := ds.Stats
	if st.Answers != 8 || st.Helps != 4 || st.Multi != 2 || st.Judged != 5 {
		t.Errorf("Stats: %d answers, %d helps, %d multi, %d judged; want 8, 4, 2, 5", st.Answers, st.Helps, st.Multi, st.Judged)
	}
}

// TestDeterministic converts the fixture twice and checks the bytes match.
func TestDeterministic(t *testing.T) {
	a, err := convertFixture(t).Files()
	if err != nil {
		t.Fatal(err)
	}
	b, err := convertFixture(t).Files()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("second conversion differs (-first +second):\n%s", diff)
	}
}

// TestBEIR writes the fixture's conversion and loads both splits with the
// beir package.
func TestBEIR(t *testing.T) {
	dir := t.TempDir()
	if err := convertFixture(t).Write(dir); err != nil {
		t.Fatal(err)
	}
	checkSplits(t, dir, 6, 6)
}

// checkSplits loads the test and dev splits of dir and checks that they hold
// every query once, with grades 1 and 2 only and at least one 2 each.
func checkSplits(t *testing.T, dir string, docs, queries int) {
	t.Helper()
	splits, err := beir.Splits(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"dev", "test"}, splits); diff != "" {
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
		for _, q := range ds.Queries {
			if other, dup := inSplit[q.ID]; dup {
				t.Errorf("query %s is in %s and %s", q.ID, other, name)
			}
			inSplit[q.ID] = name
			answers := 0
			for doc, grade := range ds.Qrels[q.ID] {
				switch grade {
				case GradeAnswer:
					answers++
				case GradeHelps:
				default:
					t.Errorf("%s: query %s, document %s: grade %d", name, q.ID, doc, grade)
				}
			}
			if answers == 0 {
				t.Errorf("%s: query %s has no answer", name, q.ID)
			}
		}
	}
	if len(inSplit) != queries {
		t.Errorf("%d queries in splits, want %d", len(inSplit), queries)
	}
	for _, name := range splits {
		if n := countIn(inSplit, name); n < queries/2-2 || n > queries/2+2 {
			t.Errorf("split %s has %d of %d queries, want about half", name, n, queries)
		}
	}
}

func countIn(m map[string]string, v string) int {
	n := 0
	for _, x := range m {
		if x == v {
			n++
		}
	}
	return n
}

func TestContext(t *testing.T) {
	c, err := Context("/go", "go1.26.8")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ReleaseTags) != 26 || c.ReleaseTags[0] != "go1.1" || c.ReleaseTags[25] != "go1.26" {
		t.Errorf("ReleaseTags = %v", c.ReleaseTags)
	}
	if c.GOOS != "linux" || c.GOARCH != "amd64" || !c.CgoEnabled || len(c.ToolTags) > 0 || len(c.BuildTags) > 0 {
		t.Errorf("context %+v", c)
	}
	for _, v := range []string{"devel go1.27-abc", "go2.0.0", "1.26", ""} {
		if _, err := Context("/go", v); err == nil {
			t.Errorf("Context(%q) succeeded", v)
		}
	}
}

func TestParseQueries(t *testing.T) {
	known := map[string]bool{"io": true, "os": true, "net/http": true}
	qs, err := ParseQueries("q.tsv", []byte("# comment\n\na1\tcopy a file\tio os\tnet/http\r\na-2\tserve\tnet/http\t-\n"), known)
	if err != nil {
		t.Fatal(err)
	}
	want := []*Query{
		{ID: "a1", Text: "copy a file", Answers: []string{"io", "os"}, Helps: []string{"net/http"}, Line: 3},
		{ID: "a-2", Text: "serve", Answers: []string{"net/http"}, Line: 4},
	}
	if diff := cmp.Diff(want, qs); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}

	tests := []struct{ name, in, want string }{
		{"unknown package", "a\tt\tio\tfmt\n", `q.tsv:1: query a: package "fmt" is not in the corpus`},
		{"unknown answer", "a\tt\tio\t-\nb\tu\tnet/htp\t-\n", `q.tsv:2: query b: package "net/htp" is not in the corpus`},
		{"three fields", "a\tt\tio\n", `q.tsv:1: want 4 tab-separated fields (id, task, answers, helps), got 3`},
		{"repeated id", "a\tt\tio\t-\n# c\na\tu\tio\t-\n", `q.tsv:3: id a is used on line 1 too`},
		{"repeated task", "a\tt\tio\t-\nb\tt\tos\t-\n", `q.tsv:2: query b repeats the task of line 1`},
		{"bad id", "A1\tt\tio\t-\n", `q.tsv:1: id "A1": want lower-case letters, digits and '-'`},
		{"empty task", "a\t \tio\t-\n", `q.tsv:1: query a: empty task`},
		{"padded task", "a\t t\tio\t-\n", `q.tsv:1: query a: the task has surrounding white space`},
		{"no answer", "a\tt\t\tio\n", `q.tsv:1: query a: empty answers`},
		{"dash answer", "a\tt\t-\tio\n", `q.tsv:1: query a: package "-" is not in the corpus`},
		{"empty helps", "a\tt\tio\t\n", `q.tsv:1: query a: empty helps`},
		{"two spaces", "a\tt\tio  os\t-\n", `q.tsv:1: query a: answers "io  os": separate import paths by one space`},
		{"listed twice", "a\tt\tio\tos io\n", `q.tsv:1: query a: package "io" is listed twice`},
		{"no queries", "# only a comment\n", `q.tsv: no queries`},
		{"invalid UTF-8", "a\t\xff\tio\t-\n", `q.tsv: invalid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseQueries("q.tsv", []byte(tt.in), known)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}

// TestConvertErrors converts copies of the fixture with one thing broken.
func TestConvertErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string // path in the tree to replace ("" = none), or remove when content is ""
		content string
		queries string
		want    string
	}{
		{name: "unknown package in the queries", queries: "a\tt\tgreet\t-\nb\tu\tnet/http\t-\n",
			want: `QUERIES:2: query b: package "net/http" is not in the corpus`},
		{name: "query on a left-out package", queries: "a\tt\twinonly\t-\n",
			want: `QUERIES:1: query a: package "winonly" is not in the corpus`},
		{name: "missing VERSION", file: "VERSION", want: `godoc: open ROOT/VERSION: no such file or directory`},
		{name: "devel VERSION", file: "VERSION", content: "devel go1.27-abcdef\n",
			want: `godoc: ROOT/VERSION: want a Go 1 release version such as go1.26.8, got "devel go1.27-abcdef"`},
		{name: "missing LICENSE", file: "LICENSE", want: `godoc: open ROOT/LICENSE: no such file or directory`},
		{name: "two packages in a directory", file: "src/net/web/other.go", content: "package other\n",
			want: `godoc: ROOT/src/net/web: files of package other and package web`},
		{name: "syntax error", file: "src/nodoc/bad.go", content: "package nodoc\n\nfunc {\n",
			want: `godoc: ROOT/src/nodoc/bad.go:3:6: expected 'IDENT', found '{'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "goroot")
			if err := os.CopyFS(root, os.DirFS(fixture)); err != nil {
				t.Fatal(err)
			}
			if tt.file != "" {
				p := filepath.Join(root, filepath.FromSlash(tt.file))
				var err error
				if tt.content == "" {
					err = os.Remove(p)
				} else {
					err = os.WriteFile(p, []byte(tt.content), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			q := []byte(tt.queries)
			if tt.queries == "" {
				var err error
				if q, err = os.ReadFile(fixtureQueries); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Convert(root, &Options{Queries: q, QueriesName: "QUERIES"})
			if err == nil {
				t.Fatalf("Convert succeeded, want %q", tt.want)
			}
			if got := strings.ReplaceAll(err.Error(), root, "ROOT"); got != tt.want {
				t.Errorf("Convert error\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

// TestDefaultQueries checks that a nil Options uses the embedded queries,
// which name packages the fixture does not have.
func TestDefaultQueries(t *testing.T) {
	_, err := Convert(fixture, nil)
	if err == nil || !strings.HasPrefix(err.Error(), QueriesFile+":") {
		t.Errorf("Convert(fixture, nil) = %v, want an error about %s", err, QueriesFile)
	}
}

func TestLongestRun(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a`b": 1, "``` x ````": 4, "`": 1} {
		if got := longestRun(s, '`'); got != want {
			t.Errorf("longestRun(%q) = %d, want %d", s, got, want)
		}
	}
}
