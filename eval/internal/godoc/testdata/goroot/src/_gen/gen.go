// Package _gen is left out.
package gen

// LeftOut must not be documented.
func LeftOut() {}
