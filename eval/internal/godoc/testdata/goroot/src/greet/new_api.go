//go:build go1.24

package greet

// NewAPI needs go1.24, later than this tree's VERSION.
func NewAPI() {}
