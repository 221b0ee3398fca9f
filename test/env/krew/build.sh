#!/usr/bin/env bash
# Builds krew and its manifest validator (validate-krew-manifest) from their Go module into a cache
# directory outside the work tree, keyed by the hash of go.mod/go.sum, as the control plane's
# binaries are (test/env/controlplane/build.sh). Prints the bin directory on stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
key=$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)
cache=${COCOON_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cocoon-operator/testenv}
bin=$cache/krew-$key/bin
if [ -x "$bin/kubectl-krew" ] && [ -x "$bin/validate-krew-manifest" ]; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin.partial"
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$bin.partial/kubectl-krew" sigs.k8s.io/krew/cmd/krew) >&2
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$bin.partial/validate-krew-manifest" sigs.k8s.io/krew/cmd/validate-krew-manifest) >&2
rm -rf "$bin" && mv "$bin.partial" "$bin"
echo "$bin"
