// Package cputime measures the CPU time a Go benchmark uses per operation,
// beside the wall time testing reports. Unlike ns/op, CPU time does not
// grow when other processes compete for the CPU, so it is the figure to
// compare on a busy machine.
//
//	stop := cputime.Start(b)
//	for b.Loop() { ... }
//	stop() // reports cpu-ns/op
package cputime
