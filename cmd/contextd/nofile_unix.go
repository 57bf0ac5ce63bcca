//go:build !windows

package main

import "syscall"

// openFileLimit returns the process's soft limit on open files (0 when
// unknown). Go raises it to the hard limit at start.
func openFileLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return uint64(r.Cur)
}
