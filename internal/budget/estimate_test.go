package budget

import (
	"math"
	"strings"
	"testing"
)

func TestClassOf(t *testing.T) {
	for mt, want := range map[string]ContentClass{
		"text/markdown":                   Prose,
		"":                                Prose,
		"text/plain; charset=utf-8":       Prose,
		"application/json":                Structured,
		"application/vnd.api+json":        Structured,
		"image/svg+xml":                   Structured,
		"text/csv":                        Structured,
		"text/x-go":                       Code,
		"application/javascript":          Code,
		"IMAGE/PNG":                       Binary,
		"application/pdf":                 Binary,
		"application/x-unknown-something": Prose,
	} {
		if got := ClassOf(mt); got != want {
			t.Errorf("ClassOf(%q) = %v, want %v", mt, got, want)
		}
	}
}

func TestEstimateStartsFromTheClassPrior(t *testing.T) {
	e := NewEstimator()
	if _, ok := e.Estimate("s", "text/markdown", 0); ok {
		t.Error("unknown size gave an estimate")
	}
	if n, _ := e.Estimate("s", "text/markdown", 4000); n != 1000 {
		t.Errorf("4000 bytes of Markdown: %d tokens, want 1000", n)
	}
	if n, _ := e.Estimate("s", "application/json", 2400); n != 1000 {
		t.Errorf("2400 bytes of JSON: %d tokens, want 1000", n)
	}
	if n, _ := e.Estimate("s", "image/png", 1050); n != 1000 {
		t.Errorf("1050 bytes of PNG: %d tokens, want 1000", n)
	}
}

// A server whose Markdown is dense (say, tables of numbers) is learned:
// after its exact counts, its estimates follow them, and other servers and
// classes keep the prior.
func TestEstimatorLearnsEachServersRatio(t *testing.T) {
	tok, err := NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	dense := strings.Repeat("| 3.14159 | 2.71828 | 1.41421 | 0.57721 |\n", 50)
	exact := tok.Count(dense)
	e := NewEstimator()
	before, _ := e.Estimate("tables", "text/markdown", int64(len(dense)))
	for range 20 {
		e.Observe("tables", "text/markdown", len(dense), exact)
	}
	after, _ := e.Estimate("tables", "text/markdown", int64(len(dense)))
	if errBefore, errAfter := math.Abs(float64(before-exact)), math.Abs(float64(after-exact)); errAfter > 0.1*float64(exact) || errAfter >= errBefore {
		t.Fatalf("exact %d tokens: estimate %d before learning, %d after", exact, before, after)
	}
	if n, _ := e.Estimate("other", "text/markdown", 4000); n != 1000 {
		t.Errorf("another server's estimate moved: %d", n)
	}
	if n, _ := e.Estimate("tables", "text/x-go", 3400); n != 1000 {
		t.Errorf("another class's estimate moved: %d", n)
	}
	e.Observe("other", "text/markdown", -1, 5)
	e.Observe("other", "text/markdown", 5, 0)
	if n, _ := e.Estimate("other", "text/markdown", 4000); n != 1000 {
		t.Errorf("invalid observations moved the estimate: %d", n)
	}
}

// Evidence is bounded, so a server whose content changes is followed.
func TestEstimatorFollowsAChangingServer(t *testing.T) {
	e := NewEstimator()
	for range 1000 {
		e.Observe("s", "text/plain", 10000, 1000) // 10 bytes per token
	}
	for range 1000 {
		e.Observe("s", "text/plain", 2000, 1000) // then 2
	}
	if r := e.BytesPerToken("s", "text/plain"); r > 2.2 {
		t.Errorf("ratio %.2f still remembers the old content", r)
	}
}
