// Package deploy tests lockstep's deployment manifests (deploy/) against a
// real kube-apiserver and etcd (controller-runtime envtest) and
// kube-controller-manager (namespace, garbage-collector and ClusterRole
// aggregation controllers), with the kubectl that hack/testbin.sh builds,
// all started with test/framework:
//
//   - every kustomize variant (deploy/base, deploy/cert-manager,
//     deploy/with-embedded-broker) renders with `kubectl kustomize` and
//     passes a server-side dry-run apply, every object validated by the API
//     server (cert-manager's CRDs are stubbed in testdata/), with no Pod
//     Security warning in lockstep's namespace, which enforces the
//     restricted standard (baseline with the embedded broker); and the
//     rendered objects keep the properties docs/deployment.md promises
//     (replicas, anti-affinity, probes, security context, namespaceSelector,
//     CA injection; the embedded broker's pod without token or role, with
//     only SETUID and SETGID, basic auth from a Secret, HTTPS, action
//     users);
//   - lockstep runs with exactly the deployed RBAC, impersonating its
//     service account, through a whole instance and binding lifecycle, so
//     that a missing rule fails the test.
package deploy
