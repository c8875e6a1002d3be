#!/usr/bin/env bash
# bench.sh runs lockstep's benchmark suite and writes the results
# to bench/RESULTS.md: admission overhead, end to end through
# kube-apiserver, typed kinds, the broker path, the journal under churn, a GitOps
# burst, scale, the embedded broker, and the Go micro-benchmarks. About
# 36 minutes on 2 cores, a quarter of it the burst (with -before, the
# compared benchmarks run twice: about an hour and a half); not part of
# `make test`.
#
#   bash hack/bench.sh                       # everything, bench/RESULTS.md
#   bash hack/bench.sh -only admission -out /tmp/admission.md
#   bash hack/bench.sh -before 06b4b49       # also against that commit
#
# Extra arguments go to bench/cmd/lockstep-bench (-h lists them). The
# control plane binaries come from hack/testbin.sh (built once, cached).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

KUBEBUILDER_ASSETS=$(bash hack/testbin.sh)
export KUBEBUILDER_ASSETS
echo "bench: control plane binaries in $KUBEBUILDER_ASSETS" >&2

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/lockstep-bench" ./bench/cmd/lockstep-bench
"$bin/lockstep-bench" -out bench/RESULTS.md -timeout 180m "$@"
