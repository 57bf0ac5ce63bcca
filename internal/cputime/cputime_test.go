package cputime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/cputime"
)

// Busy work shows up as CPU time, and the count never goes back.
func TestProcessCountsWork(t *testing.T) {
	before, ok := cputime.Process()
	if !ok {
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			t.Fatalf("CPU time not read on %s", runtime.GOOS)
		}
		return
	}
	// Spin until the count moves 20 ms, or give up after 10 s of wall time
	// (a busy machine may schedule this process little, never not at all).
	x, after := uint64(1), before
	for start := time.Now(); after-before < 20*time.Millisecond && time.Since(start) < 10*time.Second; {
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if after, _ = cputime.Process(); after < before {
			t.Fatalf("CPU time went back from %v to %v", before, after)
		}
	}
	if after-before < 20*time.Millisecond {
		t.Errorf("10 s of busy work counted %v of CPU (x=%d)", after-before, x)
	}
}
