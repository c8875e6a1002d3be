// Package quota predicts, before any broker call, whether kube-apiserver's
// ResourceQuota admission will refuse the create of one of lockstep's
// objects. kube-apiserver charges quota after every admission webhook, so
// a create lockstep carries out at its broker and the quota then refuses
// is provisioned for nothing and undone by orphan mitigation; lockstep
// refuses it first, with kube-apiserver's own status and words.
//
// What it decides is what kube-apiserver's quota admission decides for
// the object count of a custom resource (count/<resource>.<group>), read
// from the same fields:
//
//   - count.go: which quotas count a create (the resource in
//     status.hard, no scopes: kube-apiserver's object count evaluator
//     matches no scope, so a scoped quota never counts a custom
//     resource), and whether one more fits (status.used + 1 <=
//     status.hard; a quota whose status.used lacks the resource has an
//     unknown status and refuses, as kube-apiserver refuses it);
//   - inflight.go: the creates this replica is deciding or has just
//     allowed, which the cached quotas do not count yet, so that two
//     creates through one replica never both take the last unit.
//
// It does no I/O: admission reads the quotas from lockstep's cache.
package quota
