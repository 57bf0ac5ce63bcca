package section

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/budget"
)

// A section too big to return whole gives the lines around its match, not
// its head, with their exact line range and count.
func TestFocusReturnsTheLinesAroundTheMatch(t *testing.T) {
	tok, err := budget.NewTokenizer("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("func table() {\n")
	for i := range 50 {
		if i == 37 {
			b.WriteString("\t// a teapot refuses to brew coffee\n\tadd(418, \"teapot\")\n")
			continue
		}
		fmt.Fprintf(&b, "\tadd(%d, \"status %d\")\n", 300+i, i)
	}
	b.WriteString("}\n")
	ss, _ := Split(b.String(), "text/x-go")
	if len(ss) != 1 {
		t.Fatalf("%d sections", len(ss))
	}
	got, n, ok := Focus(ss[0], NewQuery("which status is the teapot"), tok, 60)
	if !ok {
		t.Fatal("no focus")
	}
	if !strings.Contains(got.Text, `add(418, "teapot")`) || strings.HasPrefix(got.Text, "func table") {
		t.Errorf("focus %d-%d is not around the match: %q", got.Start, got.End, got.Text)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	if want := strings.Join(lines[got.Start-1:got.End], ""); want != got.Text {
		t.Errorf("lines %d-%d hold %q, not %q", got.Start, got.End, want, got.Text)
	}
	if n != tok.Count(got.Text) || n > 60 || n < 40 {
		t.Errorf("%d tokens (count %d), want the run grown to nearly 60", n, tok.Count(got.Text))
	}
	if _, _, ok := Focus(ss[0], NewQuery("kubernetes"), tok, 60); ok {
		t.Error("a query the section does not hold was focused on")
	}
}
