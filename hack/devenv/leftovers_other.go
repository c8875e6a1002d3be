//go:build !linux

package main

import "io"

// reapLeftovers finds leftovers through /proc, which only Linux has.
// Elsewhere a leftover etcd or kube-apiserver keeps its port, and this run
// picks other ports (see state.ports); stop it by hand (its command line
// names the state directory).
func reapLeftovers(string, io.Writer) error { return nil }
