//go:build !linux

package main

// hideEnviron does nothing off Linux.
func hideEnviron() {}
