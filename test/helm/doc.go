// Package helm tests lockstep's Helm chart (charts/lockstep) with the Helm
// Go SDK, the way `helm` itself would run it:
//
//   - rendered with the settings of deploy/base and deploy/cert-manager, the
//     chart holds the same objects as `kubectl kustomize` renders from
//     deploy/, object by object, apart from the labels Helm adds and the
//     certificate the chart makes itself; its monitoring objects are those
//     of deploy/monitoring; every value reaches the objects it is for, and
//     settings that cannot work together are refused;
//   - `helm lint` finds nothing to report;
//   - against a real kube-apiserver and etcd (test/framework), started
//     without lockstep's CRDs or webhook configurations, the chart installs
//     (CRDs first), upgrades with changed values (keeping its certificate)
//     and uninstalls, leaving the CRDs and the objects users made, as the
//     chart's notes say.
package helm
