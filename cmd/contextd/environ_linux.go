//go:build linux

package main

import "golang.org/x/sys/unix"

// hideEnviron makes the process not dumpable, which gives /proc/PID/environ
// (and the other per-process files that could show its memory) to root: a
// stdio server contextd runs as the same user read the daemon's token and
// every server's credentials from contextd's environment there, around
// what contextd withholds from its own environment. Processes contextd
// starts are dumpable again (execve resets it). It also stops core dumps
// and same-user ptrace of contextd, which a daemon holding credentials
// should not allow anyway.
func hideEnviron() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
