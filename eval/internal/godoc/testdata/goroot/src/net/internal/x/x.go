// Package x is left out.
package x

// LeftOut must not be documented.
func LeftOut() {}
