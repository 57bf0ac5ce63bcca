// Package td is test data.
package td

// InTestdata must not be documented.
func InTestdata() {}
