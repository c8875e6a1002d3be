//go:build !race

package suite

// raceFlags: not under the race detector, nothing to add.
var raceFlags []string
