// Package report writes the results of lockstep's benchmarks as markdown:
// the machine they ran on (CPU, cores, memory, Go version, kube-apiserver
// version, commit, date), a summary of every target with its measured
// figure, then one section per benchmark with its tables and notes.
package report
