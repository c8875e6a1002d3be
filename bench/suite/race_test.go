//go:build race

package suite

// raceFlags build the binaries and Go benchmarks the harness test runs
// with the race detector too, so that they reuse the test's build cache.
var raceFlags = []string{"-race"}
