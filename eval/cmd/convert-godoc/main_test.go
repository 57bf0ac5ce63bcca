package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The converter's fixture: a small GOROOT-like tree and queries over it.
const (
	fixture        = "../../internal/godoc/testdata/goroot"
	fixtureQueries = "../../internal/godoc/testdata/queries.tsv"
)

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "want -goroot DIR") {
		t.Errorf("run without -goroot: %v, want a usage error", err)
	}
	if !strings.Contains(errOut.String(), "-goroot") {
		t.Errorf("usage does not mention -goroot:\n%s", errOut.String())
	}
}

// TestTwice runs the command twice on the fixture and checks that the two
// directories are byte for byte the same.
func TestTwice(t *testing.T) {
	var dirs [2]map[string]string
	for i := range dirs {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		if err := run([]string{"-goroot", fixture, "-queries", fixtureQueries, "-out", out}, &stdout, &stderr); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		if want := "go1.23.4: 6 packages"; !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
		dirs[i] = readTree(t, out)
	}
	if len(dirs[0]) != 6 {
		t.Errorf("wrote %d files, want 6: %v", len(dirs[0]), dirs[0])
	}
	for name, a := range dirs[0] {
		if b, ok := dirs[1][name]; !ok || a != b {
			t.Errorf("%s differs between two runs", name)
		}
	}
	if len(dirs[0]) != len(dirs[1]) {
		t.Errorf("runs wrote %d and %d files", len(dirs[0]), len(dirs[1]))
	}
}

// TestUnknownPackage checks that a query naming a package the tree does not
// have fails the conversion and writes nothing.
func TestUnknownPackage(t *testing.T) {
	q := filepath.Join(t.TempDir(), "q.tsv")
	if err := os.WriteFile(q, []byte("a\tserve HTTP\tnet/http\t-\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	err := run([]string{"-goroot", fixture, "-queries", q, "-out", out}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `q.tsv:1: query a: package "net/http" is not in the corpus`) {
		t.Errorf("run: %v, want an unknown-package error", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output directory written despite the error (%v)", err)
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
