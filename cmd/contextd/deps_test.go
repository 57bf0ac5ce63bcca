package main

import (
	"os/exec"
	"strings"
	"testing"
)

// DESIGN.md: eval/ is never linked into the daemon binary; `contextd eval`
// runs the separate contextd-eval program. Nor is the test catalogue
// (internal/catalog), which reads the eval's data.
func TestEvalIsNotLinkedIntoTheDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/contextd/contextd/eval") || strings.HasPrefix(pkg, "github.com/contextd/contextd/internal/catalog") || strings.HasPrefix(pkg, "gonum.org/") {
			t.Errorf("the daemon links %s", pkg)
		}
	}
}
