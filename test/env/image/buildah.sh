# Sourced by the image scripts: buildah as root on the vfs driver with chroot isolation (no daemon, no
# overlay or user namespaces needed), its storage in the cache directory beside the control plane's.
cache=${COCOON_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cocoon-operator/testenv}/image
export BUILDAH_ISOLATION=chroot
bah() { buildah --root "$cache/storage" --runroot "$cache/run" --storage-driver vfs "$@"; }
