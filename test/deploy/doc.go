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
//   - lockstep runs with exactly the deployed RBAC and admission policies,
//     impersonating its service account, through a whole instance and
//     binding lifecycle and a typed kind's, so that a missing rule fails
//     the test; and acting as that account, every write beyond lockstep's
//     work that its cluster-wide rights would otherwise allow (ClusterRoles
//     that aggregate Secrets into view, Secrets in kube-system or not its
//     own, other projects' CRDs, Leases elsewhere) is refused.
package deploy
