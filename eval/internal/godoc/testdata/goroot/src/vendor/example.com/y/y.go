// Package y is left out.
package y

// LeftOut must not be documented.
func LeftOut() {}
