// Package secret is left out.
package secret

// LeftOut must not be documented.
func LeftOut() {}
