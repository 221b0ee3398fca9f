#!/usr/bin/env bash
# Builds the repository's Dockerfile, unchanged but for its BASE_IMAGE build argument (base.sh's image),
# with buildah into the cached storage; npm's download cache is shared between builds. The image is
# tagged with a hash of what the build reads (the base, the Dockerfile and the files .dockerignore
# lets in), so an unchanged tree reuses it without a build (vfs makes even a fully cached build take a
# minute). Prints the image name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
. "$here/buildah.sh"
base=$("$here/base.sh")
inputs=$(cd "$repo" && { echo "$base"; cat Dockerfile .dockerignore; find package.json package-lock.json tsconfig.json tsconfig.build.json src -type f | LC_ALL=C sort | xargs sha256sum; } | sha256sum | cut -c1-16)
name=localhost/cocoon-operator:test-$inputs
if bah inspect --type image "$name" >/dev/null 2>&1; then
  echo "$name"
  exit 0
fi
mkdir -p "$cache/npm"
start=$(date +%s)
bah build --quiet --pull=false --build-arg "BASE_IMAGE=$base" \
  --volume "$cache/npm:/root/.npm" --tag "$name" --file "$repo/Dockerfile" "$repo" >&2
echo "image $name built in $(( $(date +%s) - start ))s" >&2
# Images of earlier trees and the intermediate stages only take space now: on the vfs driver every
# layer is a full copy of its root, so they are dropped (under 1 GB stays: this image and the base).
for old in $(bah images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/cocoon-operator:test-' | grep -vx "$name" || true); do
  bah rmi "$old" >/dev/null 2>&1 || true
done
bah rmi --prune >/dev/null 2>&1 || true
echo "$name"
