# The two commands a newcomer needs: `make run` and `make test`. Each does its own set-up.
# `make help` lists every target (the text after `##`).
.PHONY: all help deps lint build plugin sdk testenv test run sandbox-up sandbox-down import-crds bench mutation

all: lint build test ## Lint (typecheck + biome), build dist/, then the full test suite

help: ## Show this help
	@echo "cocoon-operator Makefile targets:"
	@grep -E '^[a-zA-Z_-]+:.*?## .*$$' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

deps: node_modules/.deps-stamp ## Install the pinned npm dependencies (Node 24 included)
node_modules/.deps-stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@npx --no-install node --version | grep -q '^v24\.' || { echo "npm ci did not install Node 24 (package node@24)"; exit 1; }
	@touch $@

lint: deps ## Typecheck (tsc) and lint and format-check (biome)
	npm run typecheck
	npm run lint

# dist/: the JavaScript compiled from src/ that the image and `npm start` run.
build: deps ## Compile src/ to JavaScript in dist/ (what the image and npm start run)
	npm run build

# The kubectl-cocoon release in dist/plugin/: kubectl-cocoon.mjs (the bundle), the krew archive
# kubectl-cocoon-$(PLUGIN_VERSION).tar.gz and cocoon.yaml (its krew manifest, with the archive's
# sha256 and the uri $(PLUGIN_URI_BASE)/$(PLUGIN_VERSION)/kubectl-cocoon-$(PLUGIN_VERSION).tar.gz).
# Both default to the package's version and the repository's releases (scripts/plugin.ts).
PLUGIN_VERSION ?=
PLUGIN_URI_BASE ?=
plugin: deps ## Build the kubectl-cocoon bundle, krew archive and manifest into dist/plugin/
	npm run plugin -- $(if $(PLUGIN_VERSION),--version $(PLUGIN_VERSION)) $(if $(PLUGIN_URI_BASE),--uri-base $(PLUGIN_URI_BASE))

# The SDK package (docs/sdk.md) in dist/sdk/: package/ (ESM for Node 20 with .d.ts declarations, its
# package.json, README.md and LICENSE) and the tarball cocoonstack-sdk-VERSION.tgz that `npm install`
# takes (scripts/sdk.ts). The build fails when the SDK's import closure reaches the operator runtime.
sdk: deps ## Build the SDK package (@cocoonstack/sdk) and its npm tarball into dist/sdk/
	npm run sdk

# kube-apiserver, kube-scheduler, kubectl, etcd, actionlint and the kubelet exec endpoint built from Go modules (cached outside the tree).
testenv: ## Build the test control plane, actionlint and the kubelet exec endpoint (cached in ~/.cache/cocoon-operator)
	@test/env/controlplane/build.sh >/dev/null
	@test/env/actionlint/build.sh >/dev/null
	@test/env/gokubelet/build.sh >/dev/null

test: deps testenv ## Run every test: typecheck, lint, unit, integration and reliability
	npm test

run: deps testenv ## Run the operator from the checkout (against your cluster, or a sandbox it starts)
	npm run run

sandbox-up: deps testenv ## Start the sandbox (control plane, registry, vk-cocoon simulator)
	npm run sandbox -- up

sandbox-down: deps ## Stop the sandbox
	npm run sandbox -- down

# Upstream copies the CRDs from cocoon-common; here src/apis is their source, and the YAML is generated.
import-crds: deps ## Regenerate config/crd/bases from src/apis (the committed CRDs)
	npm run gen:crds

# The five benchmarks one after another (about 10 minutes); each rewrites its section of BENCHMARKS.md.
# Benchmarks 3-5 measure another operator binary with
#   make bench BENCH_OPERATOR_ARGS='--operator-command "/path/to/cocoon-operator" --label go'
BENCH_OPERATOR_ARGS ?=
bench: deps testenv ## Run the five benchmarks (about 10 minutes; rewrites BENCHMARKS.md)
	npm run bench:settled
	npm run bench:throughput
	npm run bench:scaleup -- $(BENCH_OPERATOR_ARGS)
	npm run bench:memory -- $(BENCH_OPERATOR_ARGS)
	npm run bench:suspend -- $(BENCH_OPERATOR_ARGS)

# StrykerJS over the rooms that hold safety rules, each mutant against the unit tests that load its
# file; not part of `make test` (about an hour on two cores). Scores and survivors: reports/mutation/summary.md.
#   make mutation MUTATION_ROOMS="restore pool"
MUTATION_ROOMS ?=
mutation: deps ## Mutation testing of pass/, cocoonset/decide/, checkpoint/, restore/, pool/ (not in CI)
	npm run mutation -- $(MUTATION_ROOMS)
