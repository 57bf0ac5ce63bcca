//go:build ignore

// Gen is a generator program, excluded by the ignore tag.
package main

func main() {}
