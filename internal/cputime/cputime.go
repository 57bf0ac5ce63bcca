// Package cputime reads the CPU time the current process has used, for
// benchmarks that report CPU per operation beside wall time (on a shared
// 2-core machine wall time alone hides a change that burns more cores).
package cputime

import "time"

// Process returns the CPU time, user and system together, the process has
// used since it started. ok is false where the system does not say
// (then the duration is 0): a benchmark should not report the metric.
func Process() (d time.Duration, ok bool) { return process() }

// Used is Process without ok: 0 where the system does not say.
func Used() time.Duration {
	d, _ := Process()
	return d
}
