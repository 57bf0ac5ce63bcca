package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "want -src DIR") {
		t.Errorf("run without -src: %v, want a usage error", err)
	}
	if !strings.Contains(errOut.String(), "-src") {
		t.Errorf("usage does not mention -src:\n%s", errOut.String())
	}
}

// TestTwice runs the command twice on the real MetaTool sources, when
// present, and checks the two directories are byte for byte the same.
func TestTwice(t *testing.T) {
	src := os.Getenv("METATOOL_SRC")
	if src == "" {
		src = "../../../../shared/evaldata/metatool"
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("MetaTool sources not found (%v); set METATOOL_SRC", err)
	}
	var dirs [2]map[string]string
	for i := range dirs {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		if err := run([]string{"-src", src, "-out", out}, &stdout, &stderr); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		dirs[i] = readTree(t, out)
	}
	if len(dirs[0]) == 0 {
		t.Fatal("no files written")
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

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
