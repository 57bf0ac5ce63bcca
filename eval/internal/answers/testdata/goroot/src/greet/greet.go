// Package greet says hello.
package greet

const shoutLimit = 3 // how loud a greeting may get

// Hello greets name.
func Hello(name string) string { return "hello, " + name }
