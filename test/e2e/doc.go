// Package e2e holds lockstep's end-to-end tests: a real kube-apiserver and
// etcd (controller-runtime envtest), kube-controller-manager with the
// namespace, garbage-collector and ClusterRole aggregation controllers,
// lockstep's CRDs and webhook configurations installed from deploy/,
// lockstep's webhook server running in-process, and the real kubectl
// binary, whose output the tests read as a person would.
//
// test/framework starts all of it. The binaries come from hack/testbin.sh
// (KUBEBUILDER_ASSETS); `make test` provides them. Run only these tests with `make e2e`.
package e2e
