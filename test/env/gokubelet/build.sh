#!/usr/bin/env bash
# Builds the kubelet exec endpoint (main.go beside this script, over the real kubelet's streaming
# code) with the control plane's Go module into the test-environment cache, keyed by the hash of its
# sources, so later runs reuse the binary. Prints the binary's path on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
module=$here/../controlplane/k8s
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
key=$(cat "$here/main.go" "$module/go.mod" "$module/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
cache=${COCOON_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cocoon-operator/testenv}
bin=$cache/gokubelet-$key
if [ -x "$bin/gokubelet" ]; then
  echo "$bin/gokubelet"
  exit 0
fi
start=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/main.go" "$module/go.mod" "$module/go.sum" "$work/"
mkdir -p "$bin.partial"
(cd "$work" && go build -trimpath -ldflags "-s -w" -o "$bin.partial/gokubelet" .) >&2
rm -rf "$bin" && mv "$bin.partial" "$bin"
echo "gokubelet built in $(( $(date +%s) - start ))s into $bin" >&2
echo "$bin/gokubelet"
