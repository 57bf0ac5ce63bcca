package section

import (
	"slices"

	"github.com/contextd/contextd/internal/lexical"
)

// A Query is a task's terms as Score and Focus match them:
// lexical.TokenizeQuery's, sorted and distinct. Make it once per task
// (NewQuery), so a long task costs its analysis once and not once per
// text it is matched against.
type Query []string

// NewQuery returns task's Query.
func NewQuery(task string) Query {
	q := lexical.TokenizeQuery(task)
	slices.Sort(q)
	return slices.Compact(q)
}

// Has reports whether t is one of q's terms.
func (q Query) Has(t string) bool {
	_, ok := slices.BinarySearch(q, t)
	return ok
}
