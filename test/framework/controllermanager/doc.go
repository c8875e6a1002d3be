// Package controllermanager runs kube-controller-manager next to a local
// control plane (controller-runtime's envtest), with the controllers that
// let deletes finish: the namespace controller (a deleted namespace's
// objects are deleted, then the namespace) and the garbage collector
// (objects whose owner is gone are deleted, such as a binding's Secret);
// and the ClusterRole aggregation controller, so that roles labelled to
// aggregate into edit, view or admin (a typed kind's) are added to them;
// and the resource quota controller, which writes each ResourceQuota's
// limits and what its namespace holds into its status: kube-apiserver's
// quota admission reads them there, and enforces no quota without them.
// envtest starts etcd and kube-apiserver only; without these controllers a
// deleted namespace stays Terminating forever.
//
// `make run` (hack/devenv) and the end-to-end tests (test/e2e) start it
// the same way, from the binary hack/testbin.sh builds next to
// kube-apiserver.
package controllermanager
