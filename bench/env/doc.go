// Package env starts the control plane lockstep's benchmarks run against,
// on loopback only:
//
//   - a real kube-apiserver and etcd (controller-runtime envtest, started
//     with test/framework as every end-to-end suite does) with
//     lockstep's CRDs and webhook configurations from deploy/, plus two
//     copies of the ServiceInstance CRD for the end-to-end baselines: one
//     without webhooks (group plain.bench.lockstep.dev, with a copy of the
//     ServiceBinding CRD beside it) and one whose create-only fields are
//     CEL transition rules, self == oldSelf (group
//     cel.bench.lockstep.dev); copies of both CRDs behind webhooks that
//     allow every request at once, served by the allow-all server below
//     (group allowed.bench.lockstep.dev: what calling an admission webhook
//     costs kube-apiserver, without any admission work); and
//     kube-controller-manager (its
//     namespace, garbage-collector and ClusterRole aggregation
//     controllers) only while a benchmark that deletes a namespace runs;
//   - lockstep itself, the real cmd/webhook binary built from the working
//     tree and run as a separate process with LOCKSTEP_* settings, exactly
//     as it is deployed (so that whatever internal/app wires, the journal
//     and the lock included, is what is measured), with its embedded
//     broker when a benchmark asks for it, as the service account
//     of deploy/base with the RBAC of deploy/rbac, with its memory readable
//     from /proc and its metrics scraped over HTTP;
//   - the allow-all baseline webhook server (bench/cmd/allow-all), a
//     separate process with the same TLS setup and certificates, and two
//     reference servers of the same command that decode the objects first
//     (modes typed and spec-first), each in its own process.
//
// The serviceinstances webhooks are installed with a namespace selector
// that skips namespaces labelled SkipAdmissionLabel=true: benchmarks that
// send AdmissionReviews to lockstep themselves persist their objects there
// without a second trip through admission. The status guard applies
// everywhere.
//
// It needs Linux (/proc) and the kube-apiserver, etcd, kubectl and
// kube-controller-manager binaries that hack/testbin.sh provides.
package env
