package template

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseQueryUnclosedQuotesIsLinear: each unclosed “ or ‘ used to scan
// to the end of the query for its closer, so a query of n of them cost n²
// (1 MB of "“a ": 2.2 s). Eight times the input must cost well under
// sixty-four times the time.
func TestParseQueryUnclosedQuotesIsLinear(t *testing.T) {
	timeOf := func(q string) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			ParseQuery(q)
			best = min(best, time.Since(start))
		}
		return best
	}
	for _, unit := range []string{"“a ", "“a ‘b "} {
		small := strings.Repeat(unit, 128<<10/len(unit))
		large := strings.Repeat(unit, 1<<20/len(unit))
		ts, tl := timeOf(small), timeOf(large)
		t.Logf("%q: %v for 128 KiB, %v for 1 MiB", unit, ts, tl)
		if tl > 24*ts+5*time.Millisecond {
			t.Errorf("%q: ParseQuery took %v for 128 KiB and %v for 1 MiB: quadratic", unit, ts, tl)
		}
	}
}

func TestTokensQuotes(t *testing.T) {
	tests := []struct {
		q    string
		want []token
	}{
		{"“a “b c” d", []token{{"a “b c", true}, {"d", false}}},
		{"“a ‘b", []token{{"“a", false}, {"‘b", false}}},
		{"“a ‘b’ “c”", []token{{"a ‘b’ “c", true}}},
		{"x “a b ‘c d’ “e", []token{{"x", false}, {"“a", false}, {"b", false}, {"c d", true}, {"“e", false}}},
		{"don't 'x y'", []token{{"don't", false}, {"x y", true}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tokens(tt.q), cmp.AllowUnexported(token{})); diff != "" {
			t.Errorf("tokens(%q) mismatch (-want +got):\n%s", tt.q, diff)
		}
	}
}
