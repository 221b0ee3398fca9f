#!/usr/bin/env bash
# Builds actionlint (the GitHub Actions workflow linter, a Go module) at the pinned version into a
# cache directory outside the work tree, keyed by that version, so later runs reuse the binary.
# Prints the binary's path on stdout.
set -euo pipefail
version=v1.7.12
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
cache=${COCOON_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cocoon-operator/testenv}
bin=$cache/actionlint-$version
if [ -x "$bin/actionlint" ]; then
  echo "$bin/actionlint"
  exit 0
fi
start=$(date +%s)
mkdir -p "$bin.partial"
GOBIN="$bin.partial" go install -trimpath -ldflags "-s -w" "github.com/rhysd/actionlint/cmd/actionlint@$version" >&2
rm -rf "$bin" && mv "$bin.partial" "$bin"
echo "actionlint $version built in $(( $(date +%s) - start ))s into $bin" >&2
echo "$bin/actionlint"
