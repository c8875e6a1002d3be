# lockstep — make targets. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

GO        ?= go
TESTBIN   := hack/testbin.sh
# Unit and e2e tests run with the race detector; the e2e tests start their own
# kube-apiserver, etcd and kube-controller-manager from the binaries
# hack/testbin.sh provides.
TEST_FLAGS ?= -race -count=1 -timeout 45m

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the binaries into bin/ (webhook, broker, and kubectl-lockstep: the kubectl plugin)
	$(GO) build -o bin/ ./cmd/...

.PHONY: krew
krew: ## pack kubectl-lockstep for krew: archives for every platform and the krew manifest with their SHA-256 (from plugins/lockstep.yaml) in dist/ (VERSION=v0.1.0)
	$(GO) run ./hack/krew -version $(VERSION) -out dist -manifest plugins/lockstep.yaml

.PHONY: generate
generate: ## regenerate deepcopy code, CRD manifests (deploy/crds, with CEL rules from the field-policy tags), webhook configurations (deploy/webhook), lockstep's ClusterRole and Role and the admission policies on its own writes (deploy/rbac), the Helm chart's copies of them (charts/lockstep) and the dashboard and alerts (deploy/monitoring)
	GO=$(GO) bash hack/generate.sh

.PHONY: certs
certs: ## generate a local CA and serving certificate in certs/
	$(GO) run ./hack/gencerts -dir certs

.PHONY: testbin
testbin: ## provide kube-apiserver, kube-controller-manager, etcd and kubectl (built once, cached)
	@bash $(TESTBIN) >/dev/null

.PHONY: vet
vet: ## go vet
	$(GO) vet ./...

.PHONY: test
test: vet ## run every test: unit and end-to-end (real kube-apiserver, etcd, kubectl)
	@assets=$$(bash $(TESTBIN)); \
	echo "make test: control plane binaries in $$assets"; \
	KUBEBUILDER_ASSETS=$$assets $(GO) test $(TEST_FLAGS) ./...

.PHONY: unit
unit: ## run the unit tests only (no control plane)
	$(GO) test $(TEST_FLAGS) -skip '^TestMakeRun$$|^TestAPIServerKilledAndRestarted$$' $$($(GO) list ./... | grep -v -e /test/e2e -e /test/deploy -e /test/replicas -e /test/celrules -e /test/typedcrds -e /test/helm -e /test/plugin -e /test/observability -e '/test/robustness$$')

.PHONY: e2e
e2e: ## run the end-to-end tests only (test/e2e with the README walkthrough, test/deploy, test/celrules, test/typedcrds, test/helm, test/plugin, test/observability, the robustness suite's short run, make run's own test)
	@assets=$$(bash $(TESTBIN)); \
	KUBEBUILDER_ASSETS=$$assets $(GO) test $(TEST_FLAGS) -v ./test/e2e/... ./test/deploy/... ./test/celrules/... ./test/typedcrds/... ./test/helm/... ./test/plugin/... ./test/observability/... ./test/robustness && \
	KUBEBUILDER_ASSETS=$$assets $(GO) test $(TEST_FLAGS) -v -run '^TestMakeRun$$' ./hack/devenv

# How long `make fuzz` runs each fuzz target.
FUZZTIME ?= 1m

.PHONY: fuzz
fuzz: ## run every fuzz target under Go's fuzzing engine for FUZZTIME each (default 1m; make test runs each on its corpus and a fixed set of mutated inputs); findings are saved under testdata/fuzz
	@FUZZTIME=$(FUZZTIME) GO=$(GO) bash hack/fuzz.sh

.PHONY: run
run: ## run lockstep locally: etcd, kube-apiserver, kube-controller-manager, webhook, embedded broker (state in .state/; Ctrl-C stops all)
	@bash hack/run.sh

.PHONY: run-reset
run-reset: ## forget make run's state (etcd data, broker store, kubeconfig, logs in .state/)
	rm -rf .state

# make robustness: how long, and with which seed (the time when empty).
DURATION ?= 10m
SEED ?=

.PHONY: robustness
robustness: ## random traffic under injected faults, checked against lockstep's promises (DURATION=10m SEED=<n>; not part of make test, which runs a short one); results in test/robustness/RESULTS.md
	@assets=$$(bash $(TESTBIN)); \
	KUBEBUILDER_ASSETS=$$assets LOCKSTEP_ROBUSTNESS_DURATION=$(DURATION) LOCKSTEP_ROBUSTNESS_SEED=$(SEED) \
	LOCKSTEP_ROBUSTNESS_RESULTS=$(CURDIR)/test/robustness/RESULTS.md \
	$(GO) test -count=1 -timeout 4h -v -run '^TestRobustness$$' ./test/robustness

# The image `make image` builds and deploy/base names (set it in an overlay).
IMAGE ?= ghcr.io/lockstep-dev/lockstep:latest

.PHONY: image
image: ## build the container image (IMAGE=registry/lockstep:tag; needs docker; see Dockerfile)
	docker build -t $(IMAGE) .

.PHONY: manifests
manifests: ## print the deployment with cert-manager (kubectl kustomize deploy/cert-manager)
	@"$$(bash $(TESTBIN))/kubectl" kustomize deploy/cert-manager

.PHONY: bench
bench: ## run the benchmark suite (not part of make test) and write bench/RESULTS.md (BEFORE=<commit>: compare with that commit too)
	@bash hack/bench.sh $(if $(BEFORE),-before $(BEFORE))
