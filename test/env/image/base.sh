#!/usr/bin/env bash
# Builds the base image the image test builds the Dockerfile on, since no base image can be pulled: a
# minimal Debian bookworm root from Debian's packages (mmdebstrap), the `node` user (uid 1000, as in
# the official Node.js image), and the Node 24 binary of the repository's `node` npm package with the
# npm that runs this script. The machine's own extra CAs (/usr/local/share/ca-certificates, e.g. an
# egress proxy's) are trusted inside, by the system and by Node (NODE_EXTRA_CA_CERTS), so the build's
# npm and apt reach their registries from wherever the test runs. Cached in buildah's storage under a
# key of its inputs; prints the image name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
. "$here/buildah.sh"
node_bin=$(readlink -f "$repo/node_modules/node/bin/node")
npm_dir=$(npm root -g)/npm
local_cas=/usr/local/share/ca-certificates
key=$( { cat "$here/base.sh" "$here/buildah.sh"; "$node_bin" --version; npm --version; cat "$local_cas"/*.crt 2>/dev/null || true; } | sha256sum | cut -c1-16)
name=localhost/cocoon-operator-test-base:$key
if bah inspect --type image "$name" >/dev/null 2>&1; then
  echo "$name"
  exit 0
fi
start=$(date +%s)
mkdir -p "$cache"
ca_hooks=()
if [ -d "$local_cas" ]; then
  ca_hooks=(--customize-hook="copy-in $local_cas /usr/local/share"
    --customize-hook='chroot "$1" update-ca-certificates >/dev/null 2>&1')
fi
rootfs=$(mktemp "$cache/base-XXXXXX.tar")
trap 'rm -f "$rootfs"' EXIT
mmdebstrap --quiet --variant=minbase --include=ca-certificates \
  --customize-hook='chroot "$1" useradd --uid 1000 --user-group --create-home --shell /bin/bash node' \
  "${ca_hooks[@]}" \
  bookworm "$rootfs" >&2
ctr=$(bah from scratch)
mnt=$(bah mount "$ctr")
tar -C "$mnt" -xf "$rootfs"
install -m 0755 "$node_bin" "$mnt/usr/local/bin/node"
mkdir -p "$mnt/usr/local/lib/node_modules"
cp -a "$npm_dir" "$mnt/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
bah umount "$ctr" >/dev/null
bah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt --cmd node "$ctr"
bah commit --quiet --rm "$ctr" "$name" >/dev/null
# Earlier bases (other keys) only take space now.
for old in $(bah images --format '{{.Name}}:{{.Tag}}' | grep '^localhost/cocoon-operator-test-base:' | grep -vx "$name" || true); do
  bah rmi "$old" >/dev/null 2>&1 || true
done
echo "base image $name built in $(( $(date +%s) - start ))s" >&2
echo "$name"
