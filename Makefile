# The two commands a newcomer needs: `make run` and `make test`. Each does its own set-up.
.PHONY: deps testenv test run sandbox-up sandbox-down bench

deps: node_modules/.deps-stamp
node_modules/.deps-stamp: package.json package-lock.json
	npm ci --no-audit --no-fund
	@npx --no-install node --version | grep -q '^v24\.' || { echo "npm ci did not install Node 24 (package node@24)"; exit 1; }
	@touch $@

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
