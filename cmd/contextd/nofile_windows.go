package main

// openFileLimit returns 0: Windows has no per-process limit on open
// handles of the same kind.
func openFileLimit() uint64 { return 0 }
