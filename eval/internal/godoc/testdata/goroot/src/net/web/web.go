// Package web serves pages.
package web

// Serve serves.
func Serve() error { return nil }
