// Package etcdtest starts a real etcd process for tests: the binary is
// $KUBEBUILDER_ASSETS/etcd (hack/testbin.sh provides it; `make test` sets
// the variable). It listens on 127.0.0.1 ports chosen at random, keeps its
// data in a temporary directory, and is stopped when the test ends.
package etcdtest
