// Package gobench runs Go benchmarks (`go test -run '^$' -bench ...
// -benchmem`) in the repository and reads their standard output format,
// so that micro-benchmarks that live beside the code they measure (the
// policy engine, the parameter-schema checks, the embedded broker) land in
// the same results file as the load benchmarks.
package gobench
