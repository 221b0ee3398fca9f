#!/usr/bin/env bash
# Builds kube-apiserver, kube-scheduler, kubectl and etcd from their Go modules into a cache
# directory outside the work tree, keyed by the hash of the go.mod/go.sum files, so a second run
# (or a CI run on the same machine) reuses the binaries. Prints the bin directory on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
key=$(cat "$here"/k8s/go.mod "$here"/k8s/go.sum "$here"/etcd/go.mod "$here"/etcd/go.sum "$here"/build.sh | sha256sum | cut -c1-16)
cache=${COCOON_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cocoon-operator/testenv}
bin=$cache/$key/bin
if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-scheduler" ] && [ -x "$bin/kubectl" ] && [ -x "$bin/etcd" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin.partial"
k8sv=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$here/k8s/go.mod")
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8sv -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$k8sv" | cut -d. -f2) -X k8s.io/client-go/pkg/version.gitVersion=$k8sv"
start=$(date +%s)
(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin.partial/etcd" go.etcd.io/etcd/server/v3) >&2
for cmd in kube-apiserver kube-scheduler kubectl; do
  (cd "$here/k8s" && go build -trimpath -ldflags "$ldflags" -o "$bin.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd") >&2
done
rm -rf "$bin" && mv "$bin.partial" "$bin"
echo "control plane built in $(( $(date +%s) - start ))s into $bin" >&2
echo "$bin"
