#!/usr/bin/env bash
# Builds the repository's Dockerfile, unchanged but for its BASE_IMAGE build argument (base.sh's image),
# with buildah into the cached storage; npm's download cache is shared between builds. Prints the
# image name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
. "$here/buildah.sh"
base=$("$here/base.sh")
name=localhost/cocoon-operator:test
mkdir -p "$cache/npm"
start=$(date +%s)
bah build --quiet --layers --pull=false --build-arg "BASE_IMAGE=$base" \
  --volume "$cache/npm:/root/.npm" --tag "$name" --file "$repo/Dockerfile" "$repo" >&2
echo "image $name built in $(( $(date +%s) - start ))s" >&2
echo "$name"
