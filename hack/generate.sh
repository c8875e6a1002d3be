#!/usr/bin/env bash
# generate.sh writes everything `make generate` writes: the deepcopy code
# of api/v1alpha1, the CRD manifests in deploy/crds (with the CEL rules
# hack/celgen derives from the field-policy tags), the webhook
# configurations in deploy/webhook (lockstep's namespace written in by
# hack/webhookns) and lockstep's ClusterRole and the Role in its namespace
# in deploy/rbac, from the markers beside the code; the admission
# policies that bound what lockstep's service account may write with its
# cluster-wide rights (deploy/rbac/rights_policy.yaml, hack/rightspolicy);
# the ClusterRole
# lockstep-adopt, which grants adoption to the users an administrator
# binds it to, from the marker in api/v1alpha1; and lockstep's Grafana
# dashboard and Prometheus alerting rules in deploy/monitoring (with
# copies for the Helm chart), from hack/monitoring. hack/chartgen copies the
# CRDs into the Helm chart (charts/lockstep/crds) and makes its templates
# of the webhook configurations, the roles and the policies.
#
#   bash hack/generate.sh          # into the repository (make generate)
#   bash hack/generate.sh DIR      # into DIR, in the same layout (the test
#                                  # that the committed files are up to date)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-.}
go=${GO:-go}

mkdir -p "$out/api/v1alpha1" "$out/deploy/crds" "$out/deploy/webhook" "$out/deploy/rbac"
"$go" tool controller-gen object paths=./api/... output:object:dir="$out/api/v1alpha1"
"$go" tool controller-gen crd paths=./api/... output:crd:dir="$out/deploy/crds"
"$go" run ./hack/celgen -dir "$out/deploy/crds"
"$go" tool controller-gen webhook rbac:roleName=lockstep,fileName=cluster_role.yaml paths=./internal/... \
	output:webhook:dir="$out/deploy/webhook" output:rbac:dir="$out/deploy/rbac"
"$go" run ./hack/webhookns -file "$out/deploy/webhook/manifests.yaml"
"$go" run ./hack/webhookns -file "$out/deploy/rbac/cluster_role.yaml"
"$go" run ./hack/rightspolicy -root "$out"
"$go" tool controller-gen rbac:roleName=lockstep-adopt,fileName=adopt_role.yaml paths=./api/... \
	output:rbac:dir="$out/deploy/rbac"
"$go" run ./hack/chartgen -root "$out"
"$go" run ./hack/monitoring -root "$out"
