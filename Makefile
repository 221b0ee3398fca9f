# The two commands a newcomer needs: `make run` and `make test`. Each does its own set-up.
.PHONY: deps testenv test run sandbox-up sandbox-down bench

deps: node_modules/.deps-stamp
node_modules/.deps-stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@npx --no-install node --version | grep -q '^v24\.' || { echo "npm ci did not install Node 24 (package node@24)"; exit 1; }
	@touch $@

# dist/: the JavaScript compiled from src/ that the image and `npm start` run.
.PHONY: build
build: deps
	npm run build

# kube-apiserver, kube-scheduler, kubectl and etcd built from Go modules (cached outside the tree).
testenv:
	@test/env/controlplane/build.sh >/dev/null

test: deps testenv
	npm test

run: deps testenv
	npm run run

sandbox-up: deps testenv
	npm run sandbox -- up

sandbox-down: deps
	npm run sandbox -- down

# The five benchmarks one after another (about 10 minutes); each rewrites its section of BENCHMARKS.md.
# Benchmarks 3-5 measure another operator binary with
#   make bench BENCH_OPERATOR_ARGS='--operator-command "/path/to/cocoon-operator" --label go'
BENCH_OPERATOR_ARGS ?=
bench: deps testenv
	npm run bench:settled
	npm run bench:throughput
	npm run bench:scaleup -- $(BENCH_OPERATOR_ARGS)
	npm run bench:memory -- $(BENCH_OPERATOR_ARGS)
	npm run bench:suspend -- $(BENCH_OPERATOR_ARGS)
