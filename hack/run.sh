#!/usr/bin/env bash
# run.sh will start a local control plane, the webhook and the embedded
# broker (see the README). Until that lands it says what is there.
set -euo pipefail
cat <<MSG
make run is not there yet: it needs the embedded broker and the local
control-plane launcher (open issues). What works today:

  make test    unit and end-to-end tests against a real kube-apiserver and kubectl
  make certs   local certificates in certs/
  make build   the webhook binary in bin/
MSG
exit 1
