// Package tool is left out.
package main

// LeftOut must not be documented.
func LeftOut() {}
