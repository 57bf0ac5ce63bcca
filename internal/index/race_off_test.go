//go:build !race

package index

// raceOn is whether the tests run under the race detector.
const raceOn = false
