//go:build race

package index

// raceOn is whether the tests run under the race detector, which makes
// the prefilter's property tests about ten times slower.
const raceOn = true
