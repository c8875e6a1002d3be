#!/usr/bin/env bash
# testbin.sh provides kube-apiserver, kube-controller-manager, etcd and kubectl
# of pinned versions and prints the directory that holds them (the value for
# KUBEBUILDER_ASSETS). kube-controller-manager runs the namespace and garbage
# collector controllers for `make run` and the end-to-end tests.
#
# Where the binaries come from, in order:
#   1. $KUBEBUILDER_ASSETS, if it already holds all three;
#   2. the cache ($LOCKSTEP_CACHE, default ~/.cache/lockstep), if built before;
#   3. controller-runtime's setup-envtest download (needs the internet; given a
#      short deadline so that it fails fast where there is none); its archives
#      hold no kube-controller-manager, which is then built alone;
#   4. a build from the Go module proxy of every binary still missing
#      (kube-apiserver ≈ 5 min on 2 cores, kube-controller-manager ≈ 4 min).
#
# Progress goes to stderr; the only line on stdout is the directory.
# Safe to run from two terminals at once: the build holds a file lock.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
SETUP_ENVTEST_VERSION="${SETUP_ENVTEST_VERSION:-release-0.22}"
CACHE="${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}"
DEST="$CACHE/testbin/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION"
BINARIES=(kube-apiserver kube-controller-manager etcd kubectl)

say() { printf 'testbin: %s\n' "$*" >&2; }

complete() {
  local dir="$1" b
  [ -n "$dir" ] || return 1
  for b in "${BINARIES[@]}"; do [ -x "$dir/$b" ] || return 1; done
}

if complete "${KUBEBUILDER_ASSETS:-}"; then
  say "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
  echo "$KUBEBUILDER_ASSETS"; exit 0
fi
if complete "$DEST"; then
  echo "$DEST"; exit 0
fi

mkdir -p "$CACHE/testbin"
exec 9>"$CACHE/testbin/.lock"
if ! flock -n 9; then
  say "another testbin.sh is building; waiting for it to finish"
  flock 9
fi
if complete "$DEST"; then echo "$DEST"; exit 0; fi

# 3. setup-envtest (downloads prebuilt binaries; there is no kubectl in its
#    archives before some versions, and never a kube-controller-manager).
try_setup_envtest() {
  say "trying setup-envtest download of Kubernetes $KUBE_VERSION (needs the internet)"
  local out b
  out=$(timeout 90 go run "sigs.k8s.io/controller-runtime/tools/setup-envtest@$SETUP_ENVTEST_VERSION" \
        use "$KUBE_VERSION" --bin-dir "$CACHE/testbin/setup-envtest" -p path 2>/dev/null) || return 1
  mkdir -p "$DEST"
  for b in kube-apiserver etcd kubectl; do
    [ -x "$out/$b" ] && [ ! -x "$DEST/$b" ] && cp "$out/$b" "$DEST/"
  done
  return 0
}
missing() { local b; for b in "$@"; do [ -x "$DEST/$b" ] || return 0; done; return 1; }
if missing kube-apiserver etcd kubectl && [ "${LOCKSTEP_TESTBIN_NO_DOWNLOAD:-}" != "1" ]; then
  try_setup_envtest || say "download not possible"
fi
if complete "$DEST"; then echo "$DEST"; exit 0; fi
say "building what is missing from the Go module proxy (first time only: ~10-14 min on 2 cores)"

WORK="$CACHE/testbin/build"
mkdir -p "$WORK/kube" "$WORK/etcd" "$DEST"
export GOFLAGS="-mod=mod"
export CGO_ENABLED=0

# --- kube-apiserver and kubectl -------------------------------------------
say "[1/5] resolving k8s.io/kubernetes v$KUBE_VERSION"
(
  cd "$WORK/kube"
  modfile=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  staging_version="v0.${KUBE_VERSION#1.}"
  {
    echo "module lockstep.dev/testbin/kube"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    echo
    echo "replace ("
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$modfile" | awk -v v="$staging_version" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  go mod tidy >&2 2>&1 || go mod tidy
)

ldflags() {
  local pkg=k8s.io/component-base/version
  local major=${KUBE_VERSION%%.*} rest=${KUBE_VERSION#*.}
  local minor=${rest%%.*}
  echo "-s -w -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
}

# build_kube NAME STEP NOTE: builds k8s.io/kubernetes/cmd/NAME into $DEST
# unless it is there; the binary appears only once complete.
build_kube() {
  local name="$1" step="$2" note="$3"
  [ -x "$DEST/$name" ] && return 0
  say "[$step] building $name v$KUBE_VERSION$note"
  (cd "$WORK/kube" && go build -trimpath -ldflags "$(ldflags)" -o "$DEST/$name.tmp" "k8s.io/kubernetes/cmd/$name")
  mv "$DEST/$name.tmp" "$DEST/$name"
}
build_kube kube-apiserver 2/5 " (the long one: ~5 min on 2 cores)"
build_kube kube-controller-manager 3/5 " (~4 min on 2 cores)"
build_kube kubectl 4/5 ""

# --- etcd ------------------------------------------------------------------
if [ ! -x "$DEST/etcd" ]; then
  say "[5/5] building etcd v$ETCD_VERSION"
  (
    cd "$WORK/etcd"
    cat > go.mod <<MOD
module lockstep.dev/testbin/etcd

go 1.26

require go.etcd.io/etcd/server/v3 v$ETCD_VERSION
MOD
    cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
    go mod tidy >&2 2>&1 || go mod tidy
    go build -trimpath -ldflags "-s -w" -o "$DEST/etcd.tmp" go.etcd.io/etcd/server/v3
  )
  mv "$DEST/etcd.tmp" "$DEST/etcd"
fi

complete "$DEST" || { say "failed: $DEST is still missing a binary"; exit 1; }
say "done: $DEST"
"$DEST/kubectl" version --client >&2 || true
echo "$DEST"
