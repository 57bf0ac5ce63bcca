package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The converter's fixture: a small GOROOT-like tree, an npm package, a godoc
// dataset and questions over them.
const fixture = "../../internal/answers/testdata/"

func fixtureArgs(out string, extra ...string) []string {
	return append([]string{
		"-goroot", fixture + "goroot", "-npmdocs", fixture + "npm/docs/content", "-godoc", fixture + "godoc",
		"-packages", "hash/one,greet", "-pages", "spec.html,debug.md", "-out", out,
	}, extra...)
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"-goroot", "x"}, {"-npmdocs", "y"}, {"-goroot", "x", "-npmdocs", "y", "extra"}} {
		var out, errOut bytes.Buffer
		err := run(args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "want -goroot DIR -npmdocs DIR") {
			t.Errorf("run(%q): %v, want a usage error", args, err)
		}
		if !strings.Contains(errOut.String(), "-npmdocs") {
			t.Errorf("usage does not mention -npmdocs:\n%s", errOut.String())
		}
	}
}

// TestTwice runs the command twice on the fixture and checks that the two
// directories are byte for byte the same.
func TestTwice(t *testing.T) {
	var dirs [2]map[string]string
	for i := range dirs {
		out := t.TempDir()
		var stdout, stderr bytes.Buffer
		if err := run(fixtureArgs(out, "-questions", fixture+"questions.jsonl"), &stdout, &stderr); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		if want := "go1.23.4, npm 1.2.3: 7 documents, 7 questions (2 test, 5 dev)"; !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
		dirs[i] = readTree(t, out)
	}
	if len(dirs[0]) != 8 {
		t.Errorf("wrote %d files, want 8: %v", len(dirs[0]), dirs[0])
	}
	for name, a := range dirs[0] {
		if b, ok := dirs[1][name]; !ok || a != b {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestAmbiguousAnswer checks that an answer found in two documents fails the
// conversion and writes nothing.
func TestAmbiguousAnswer(t *testing.T) {
	q := filepath.Join(t.TempDir(), "q.jsonl")
	line := `{"id":"a001","kind":"similar","doc":"npmdocs:commands/npm-ci.md","near":["npmdocs:using-npm/config.md"],"question":"q?","answers":["section: "]}`
	if err := os.WriteFile(q, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	err := run(fixtureArgs(out, "-questions", q), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `q.jsonl:1: question a001: answer "section: " occurs in 2 documents`) {
		t.Errorf("run: %v, want an ambiguous-answer error", err)
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

// TestLocate converts the fixture, then looks strings up in the result.
func TestLocate(t *testing.T) {
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := run(fixtureArgs(out, "-questions", fixture+"questions.jsonl"), &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for s, want := range map[string]string{
		"modulus = 65521": "gosrc:hash/one/one.go\t49\t",
		"section: ":       "npmdocs:commands/npm-ci.md\t",
		"no such text":    `"no such text": 0 of 7 documents`,
	} {
		stdout.Reset()
		if err := run([]string{"-out", out, "-locate", s}, &stdout, &stderr); err != nil {
			t.Fatalf("-locate %q: %v", s, err)
		}
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("-locate %q printed\n%s\nwant a line containing %q", s, stdout.String(), want)
		}
	}
	stdout.Reset()
	if err := run([]string{"-out", out, "-locate", "section: "}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(stdout.String(), `"section: ": 2 of 7 documents`+"\n") {
		t.Errorf("-locate section: printed\n%s", stdout.String())
	}
	if err := run([]string{"-out", t.TempDir(), "-locate", "x"}, &stdout, &stderr); err == nil {
		t.Error("-locate in a directory without a dataset succeeded")
	}
}
