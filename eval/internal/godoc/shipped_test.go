package godoc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contextd/contextd/eval/beir"
)

// shipped is the dataset directory this package generates, from the Go
// distribution shippedVersion.
const (
	shipped        = "../../datasets/godoc"
	shippedVersion = "go1.26.8"
	shippedDocs    = 177
)

// TestShipped loads both splits of eval/datasets/godoc.
func TestShipped(t *testing.T) {
	qs, err := ParseQueries(QueriesFile, Queries, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSplits(t, shipped, shippedDocs, len(qs))
}

// TestShippedQueries checks the embedded queries against the shipped corpus,
// without a Go distribution: every package judged is a document.
func TestShippedQueries(t *testing.T) {
	ds, err := beir.Load(shipped, SplitDev)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, d := range ds.Corpus {
		known[d.ID] = true
	}
	qs, err := ParseQueries(QueriesFile, Queries, known)
	if err != nil {
		t.Fatal(err)
	}
	multi := 0
	for _, q := range qs {
		if len(q.Answers) > 1 {
			multi++
		}
	}
	if len(qs) < 120 || multi < 20 {
		t.Errorf("%d queries, %d multi-package; want at least 120 and 20", len(qs), multi)
	}
}

// TestShippedUpToDate converts the Go distribution the tests run with (or
// $GODOC_GOROOT) and checks that eval/datasets/godoc holds exactly the
// result. It is skipped unless that distribution is shippedVersion.
func TestShippedUpToDate(t *testing.T) {
	goroot := os.Getenv("GODOC_GOROOT")
	if goroot == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Skipf("go env GOROOT: %v; set GODOC_GOROOT to check the shipped dataset", err)
		}
		goroot = strings.TrimSpace(string(out))
	}
	b, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		t.Skipf("%v; set GODOC_GOROOT to a %s distribution to check the shipped dataset", err, shippedVersion)
	}
	if v, _, _ := strings.Cut(string(b), "\n"); strings.TrimSpace(v) != shippedVersion {
		t.Skipf("%s is %s, not %s", goroot, strings.TrimSpace(v), shippedVersion)
	}
	ds, err := Convert(goroot, nil)
	if err != nil {
		t.Fatal(err)
	}
	compareDir(t, ds, shipped)
}
