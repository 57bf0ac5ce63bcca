package engine

import "context"

// withTemplates adds to ranked the resources that the servers' resource
// templates yield for values found in the query, ranked alongside the listed
// ones, and returns at most n. (Issue 5, rule 8: not yet implemented; the
// listed resources are returned as ranked.)
func (e *Engine) withTemplates(ctx context.Context, query string, filt Filter, ranked []Ranked, n int) []Ranked {
	return ranked
}
