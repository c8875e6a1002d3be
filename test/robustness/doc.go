// Package robustness proves lockstep's promises under faults, the way
// etcd's robustness tests prove etcd's: random traffic from several
// clients while faults are injected, then a check of the whole history
// and of what is left against the promises (package check).
//
// A run (Run) starts on loopback: etcd, five kube-apiservers behind a
// front that admits only the ready ones, and kube-controller-manager
// (test/framework), three lockstep replicas as separate processes with
// leader election behind a round-robin front, the
// test broker (internal/broker/fakebroker) and the embedded broker
// (internal/broker/embedded), each behind a fault proxy (faultproxy). Clients
// (traffic.go) create, update, re-plan, bind, unbind, delete, adopt,
// detach, dry-run and edit in conflict, over several namespaces, each
// request as a user of its own; the fault schedule (faults.go) kills the
// leader or a follower (SIGKILL), kills a kube-apiserver, stops, hangs,
// slows, breaks and spoils the brokers, and makes asynchronous operations
// fail. When the faults stop, lockstep is given time to converge; then
// the checks run, and the figures go to a results file (report.go).
//
// Everything random comes from the run's seed: each client's choices,
// the fault schedule, and every per-request draw (a hash of the seed and
// the request), so that a seed replays the same traffic and faults. The
// interleaving with real time is not replayed; the verdict never depends
// on timing alone (no latency is asserted, every wait is generous).
//
// The lockstep binary is built with the build tag lockstep_breaks, so
// that a run can switch one of the deliberate breaks of package
// internal/breaks on; the suite's own tests show that each is caught.
package robustness
