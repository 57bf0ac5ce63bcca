//go:build !linux

package index_test

import "time"

// processCPU is 0 where the benchmarks do not read the process's CPU time.
func processCPU() time.Duration { return 0 }
