package jsonscan

import (
	"strings"
	"testing"
)

func TestValues(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  int
	}{
		{`42`, 10, 0},
		{`{}`, 10, 1},
		{`[{},{},{}]`, 10, 6},
		{`{"a":1,"b":[1,2]}`, 10, 4},
		{`{"a":"{[,,,]}"}`, 10, 1},         // brackets and commas in strings do not count
		{`{"a":"x\"{[,"}`, 10, 1},          // nor after an escaped quote
		{`{"a":"x\\"}` + `,{}`, 10, 3},     // an escaped backslash ends the escape
		{strings.Repeat("[", 100), 10, 11}, // stops once past the limit
		{`"open {,,,`, 10, 0},              // an unterminated string runs to the end
	} {
		if got := Values([]byte(c.in), c.limit); got != c.want {
			t.Errorf("Values(%q, %d) = %d, want %d", c.in, c.limit, got, c.want)
		}
	}
}

func TestElements(t *testing.T) {
	for _, c := range []struct {
		in    string
		limit int
		want  int
	}{
		{`{"a":[1,2]}`, 10, 0}, // not an array
		{``, 10, 0},
		{`[]`, 10, 1},
		{" \n\t[1]", 10, 1},
		{`[1,[2,3],{"a":1,"b":2},"x,]y"]`, 10, 4}, // only commas directly inside count
		{`[{"a":"x\"],"},2]`, 10, 2},
		{"[" + strings.Repeat("1,", 100) + "1]", 10, 11}, // stops once past the limit
	} {
		if got := Elements([]byte(c.in), c.limit); got != c.want {
			t.Errorf("Elements(%q, %d) = %d, want %d", c.in, c.limit, got, c.want)
		}
	}
}
