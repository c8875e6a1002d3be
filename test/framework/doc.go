// Package framework starts what lockstep's end-to-end suites run against,
// the same way for every suite: a control plane (etcd and kube-apiserver
// from controller-runtime's envtest, and optionally kube-controller-manager
// with the namespace, garbage-collector and ClusterRole aggregation
// controllers), lockstep's CRDs and webhook configurations installed, and
// lockstep itself run in-process with a given configuration, optionally as
// the service account that deploy/rbac grants its permissions to. What
// lockstep logs is captured for the test to read.
//
// Lockstep also runs as the real webhook binary (Build), one process per
// replica (StartReplica), behind a round-robin Front at the address the
// webhook configurations call; Process starts, kills (SIGKILL) and stops
// programs; KillAPIServer and RestartAPIServer crash kube-apiserver and
// bring it back on the same etcd, port and certificates.
//
// test/e2e, test/deploy, test/replicas, test/celrules, test/robustness, the
// benchmarks' bench/env, and `make run` (hack/devenv) and its test use it. The control
// plane binaries come from KUBEBUILDER_ASSETS, or from hack/testbin.sh when
// it is unset (see Assets).
package framework
