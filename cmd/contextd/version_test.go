package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestPrintVersionShowsRevisionAndDirtyFlag(t *testing.T) {
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		want     []string
	}{
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "false"}, {Key: "vcs.time", Value: "2026-12-01T18:00:00Z"}},
			[]string{"revision: 0123abcd\n", "commit time: 2026-12-01T18:00:00Z", "go: go1.99.1 "}},
		{"dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}},
			[]string{"revision: 0123abcd (dirty: built with uncommitted changes)"}},
		{"no vcs", nil, []string{"revision: unknown (built without VCS information)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printVersion(&b, &debug.BuildInfo{GoVersion: "go1.99.1", Settings: tt.settings})
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestShortVersion(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}
	for _, tt := range []struct {
		release string
		bi      *debug.BuildInfo
		want    string
	}{
		{"1.4.0", bi, "1.4.0"},
		{"", bi, "v1.2.3"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{"", nil, "devel"},
	} {
		if got := shortVersion(tt.release, tt.bi); got != tt.want {
			t.Errorf("shortVersion(%q, %v) = %q, want %q", tt.release, tt.bi, got, tt.want)
		}
	}
}

// A binary built by go build in a git checkout prints the checkout's
// revision. The go command stamps it only where the module's .git is a
// directory: a clone, as CI has, not a git worktree (whose .git is a file);
// -buildvcs=true overrides a GOFLAGS=-buildvcs=false in the go env.
func TestVersionPrintsTheRevisionOfTheCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(root)), ".git")); err != nil || !fi.IsDir() {
		t.Skip("a git worktree: the go command stamps VCS information only under a .git directory")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "contextd")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("contextd version: %v\n%s", err, out)
	}
	if rev := strings.TrimSpace(string(head)); !strings.Contains(string(out), "revision: "+rev) {
		t.Errorf("contextd version does not print HEAD %s:\n%s", rev, out)
	}
	if !strings.Contains(string(out), "go: go1.") {
		t.Errorf("no Go version:\n%s", out)
	}
}
