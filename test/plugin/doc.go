// Package plugin tests `kubectl lockstep` (internal/plugin,
// cmd/kubectl-lockstep) against a real kube-apiserver, etcd and
// kube-controller-manager (test/framework) and lockstep running in-process
// with its embedded broker serving examples/bundles, as `make run` does.
//
// Every command runs as a user would run it and what it prints is compared
// with a golden file in testdata/ (times, ids and hashes replaced by
// placeholders): marketplace, describe plan, provision and bind (with
// refusals as they came), history, why (an object, a healthy namespace and
// a namespace stuck on a broker that refuses to deprovision, whose way out
// it names), detach, adopt, and shell completion. `go test ./test/plugin
// -update` rewrites the golden files.
//
// The walkthrough of docs/kubectl-plugin.md runs too: the built
// kubectl-lockstep on the PATH, the real kubectl finding it.
package plugin
