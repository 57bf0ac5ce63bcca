//go:build linux

package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestTheProcessIsNotDumpable(t *testing.T) {
	hideEnviron()
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || d != 0 {
		t.Fatalf("PR_GET_DUMPABLE = %d, %v; want 0: /proc/PID/environ stays readable to the same user", d, err)
	}
}
