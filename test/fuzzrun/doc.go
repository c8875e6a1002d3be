// Package fuzzrun runs a Go fuzz target's body inside plain `go test`: on
// its seeds and its saved corpus (testdata/fuzz/<target>), and then on a
// bounded, deterministic stream of inputs mutated from them. `go test`
// (and so `make test`) thereby tries the same few thousand random inputs on
// every run, on any machine, and fails the same way twice; `make fuzz` runs
// the same targets under Go's own fuzzing engine for longer.
//
// A failing input is saved as testdata/fuzz/<target>/<name> in the format
// of Go's fuzzing engine, where `go test` replays it from then on as a seed
// of the target (`go test -run '<target>/<name>'` runs it alone): every
// finding becomes a regression test once it is committed.
//
// Mutations work on bytes (flips, insertions, deletions, repeats, splices
// of another input) and on tokens of a dictionary (JSON punctuation,
// escapes, numbers and literals by default), so that inputs that are JSON
// often stay nearly so.
package fuzzrun
