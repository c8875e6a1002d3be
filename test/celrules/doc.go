// Package celrules checks the CEL rules that the CRDs in deploy/crds carry
// (generated from the field-policy tags by internal/validate/celrules)
// against a real kube-apiserver and etcd (controller-runtime envtest) with
// no webhooks installed:
//
//   - the CRDs install, so the rules compile and fit the API server's cost
//     budgets;
//   - for every create-only field of every kind, pairs of old and new
//     objects (set, removed, changed, unchanged, zero against absent, and
//     changes nested in the field) are created and updated through the API
//     server, and its verdict (refused by the field's rule or not) agrees
//     with the verdict of the field-policy engine (internal/validate) on the
//     same pair; fields the rules leave to the engine are refused by the
//     engine alone;
//   - the API server drops status on create, where the engine refuses
//     read-only fields: status needs no rule.
package celrules
