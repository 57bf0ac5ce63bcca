package section

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/budget"
)

// bigQuery is a query of n distinct terms (about 6 bytes each), as a
// caller may send up to the 1 MiB request bound.
func bigQuery(n int) string {
	var q strings.Builder
	for i := range n {
		fmt.Fprintf(&q, "w%dx ", i)
	}
	return q.String()
}

// timeOf returns the least of three runs of f.
func timeOf(f func()) time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		f()
		best = min(best, time.Since(start))
	}
	return best
}

// Focus and Score cost the text plus the query, not the text times the
// query: a caller's query of 100,000 terms against a 160 KiB line (Focus)
// or a 1 MiB text of 600 sections (Score) took 5.3 s and 2.0 s of CPU
// before. Each is timed against the same query on a one-line text, which
// costs the query's own analysis; the ratio stays small.
func TestBigQueriesCostTheirLengthNotTimesTheText(t *testing.T) {
	c, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	q := bigQuery(100000)
	var line, text strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&line, "w%dx ", i*7)
	}
	for i := range 25000 {
		fmt.Fprintf(&text, "w%dx w%dx w%dx w%dx w%dx\n", i*7, i, i+1, i+2, i+3)
	}
	small := Section{Start: 1, End: 1, Text: "w1x w2x w3x\n"}
	big := Section{Start: 1, End: 1, Text: line.String()}
	base := timeOf(func() { Focus(small, NewQuery(q), c, 100) })
	got := timeOf(func() { Focus(big, NewQuery(q), c, 100) })
	t.Logf("Focus: %v on a %d KiB line, %v on a short one", got, len(big.Text)>>10, base)
	if got > 8*base+100*time.Millisecond {
		t.Errorf("Focus on a %d KiB line took %v, %.0f× its time on a short one (%v): it grows with the text times the query", len(big.Text)>>10, got, float64(got)/float64(base), base)
	}
	secs, _ := Split(text.String(), "text/plain")
	base = timeOf(func() { Score([]Section{small}, NewQuery(q)) })
	got = timeOf(func() { Score(secs, NewQuery(q)) })
	t.Logf("Score: %v on %d sections, %v on one short one", got, len(secs), base)
	if got > 8*base+100*time.Millisecond {
		t.Errorf("Score of %d sections took %v, %.0f× its time on one short section (%v): it grows with the sections times the query", len(secs), got, float64(got)/float64(base), base)
	}
}

// BenchmarkFocusBigQuery: Focus of a 160 KiB line for a query of 100,000
// terms.
func BenchmarkFocusBigQuery(b *testing.B) {
	c, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		b.Fatal(err)
	}
	q := bigQuery(100000)
	var line strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&line, "w%dx ", i*7)
	}
	sec := Section{Start: 1, End: 1, Text: line.String()}
	for b.Loop() {
		Focus(sec, NewQuery(q), c, 100)
	}
}
