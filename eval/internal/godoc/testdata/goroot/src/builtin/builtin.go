// Package builtin documents predeclared identifiers.
package builtin

// Type stands for any type.
type Type int

// length returns the length of v.
func length(v Type) int
