#!/usr/bin/env bash
# run.sh is `make run`: lockstep on this machine, ready for kubectl, with
# nothing installed but Go. It provides etcd, kube-apiserver,
# kube-controller-manager and kubectl with the script the tests use (hack/testbin.sh: built once, cached, with
# progress shown), builds lockstep's local environment (hack/devenv) and
# hands over to it; devenv starts everything, prints what to type next, and
# stops everything on Ctrl-C. State (etcd data, the embedded broker's store,
# kubeconfig, logs) is kept in .state/.
set -euo pipefail
cd "$(dirname "$0")/.."

assets=$(bash hack/testbin.sh)
echo "make run: building lockstep (hack/devenv -> bin/lockstep-dev)" >&2
go build -o bin/lockstep-dev ./hack/devenv
# exec: Ctrl-C and kill reach devenv itself, which stops what it started.
exec bin/lockstep-dev -root "$PWD" -state "$PWD/.state" -assets "$assets"
