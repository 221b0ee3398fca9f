// Every label, annotation, finalizer and tag of the cocoon contract, with the exact
// strings the Go operator, cocoon-common and vk-cocoon use.

// Pod labels written by the operator.
export const LABEL_COCOONSET = "cocoonset.cocoonstack.io/name";
export const LABEL_ROLE = "cocoonset.cocoonstack.io/role";
export const LABEL_SLOT = "cocoonset.cocoonstack.io/slot";
export const LABEL_APP_NAME = "app.kubernetes.io/name";

// Node labels published by vk-cocoon, used as pod nodeSelector keys.
export const LABEL_NODE_POOL = "cocoonstack.io/pool";
export const LABEL_SNAPSHOT_CPU_CLASS = "cocoonstack.io/snapshot-cpu-class";
export const LABEL_HOSTNAME = "kubernetes.io/hostname";

// Toleration key that marks a cocoon pod, and the owner kind that finds its set.
export const TOLERATION_KEY = "virtual-kubelet.io/provider";
export const KIND_COCOONSET = "CocoonSet";

// Roles.
export const ROLE_MAIN = "main";
export const ROLE_SUB_AGENT = "sub-agent";
export const ROLE_TOOLBOX = "toolbox";
export type Role = typeof ROLE_MAIN | typeof ROLE_SUB_AGENT | typeof ROLE_TOOLBOX;

// Pod annotations written by the operator: the VMSpec (first 14) and control keys.
export const ANN_VM_NAME = "vm.cocoonstack.io/name";
export const ANN_IMAGE = "cocoonset.cocoonstack.io/image";
export const ANN_MODE = "cocoonset.cocoonstack.io/mode";
export const ANN_OS = "cocoonset.cocoonstack.io/os";
export const ANN_STORAGE = "cocoonset.cocoonstack.io/storage";
export const ANN_NETWORK = "cocoonset.cocoonstack.io/network";
export const ANN_SNAPSHOT_POLICY = "cocoonset.cocoonstack.io/snapshot-policy";
export const ANN_MANAGED = "cocoonset.cocoonstack.io/managed";
export const ANN_FORCE_PULL = "cocoonset.cocoonstack.io/force-pull";
export const ANN_FORK_FROM = "vm.cocoonstack.io/fork-from";
export const ANN_CONN_TYPE = "vm.cocoonstack.io/conn-type";
export const ANN_BACKEND = "vm.cocoonstack.io/backend";
export const ANN_NO_DIRECT_IO = "vm.cocoonstack.io/no-direct-io";
export const ANN_PROBE_PORT = "vm.cocoonstack.io/probe-port";
export const ANN_COCOONSET_GENERATION = "cocoonset.cocoonstack.io/generation";
export const ANN_HIBERNATE = "vm.cocoonstack.io/hibernate";
export const ANN_RESTORE_FROM_HIBERNATE = "vm.cocoonstack.io/restore-from-hibernate";
export const ANN_KEEP_SNAPSHOT_ON_DELETE = "vm.cocoonstack.io/keep-snapshot-on-delete";
export const ANN_CLONE_FROM_DIR = "vm.cocoonstack.io/clone-from-dir";
export const ANN_DEAD_LETTER = "cocoonset.cocoonstack.io/dead-letter";

// Pod annotations written by vk-cocoon.
export const ANN_VM_ID = "vm.cocoonstack.io/id";
export const ANN_IP = "vm.cocoonstack.io/ip";
export const ANN_VNC_PORT = "vm.cocoonstack.io/vnc-port";
export const ANN_LIFECYCLE_STATE = "vm.cocoonstack.io/lifecycle-state";
export const ANN_LIFECYCLE_OBSERVED_GENERATION = "vm.cocoonstack.io/lifecycle-observed-generation";
export const ANN_LIFECYCLE_STATE_MESSAGE = "vm.cocoonstack.io/lifecycle-state-message";

// CocoonSet annotations written by the operator.
export const ANN_HIBERNATED_ON_NODE = "cocoonset.cocoonstack.io/hibernated-on-node";
export const ANN_DELETE_VM_NAMES = "cocoonset.cocoonstack.io/delete-vm-names";
export const ANN_REBUILD_HISTORY = "cocoonset.cocoonstack.io/rebuild-history";
export const ANN_HIBERNATE_RECLAIM = "cocoonset.cocoonstack.io/hibernate-reclaim";
export const ANN_SUSPENDING_SINCE = "cocoonset.cocoonstack.io/suspending-since";

// Finalizers.
export const FINALIZER_COCOONSET = "cocoonset.cocoonstack.io/finalizer";
export const FINALIZER_COCOONHIBERNATION = "cocoonhibernation.cocoonset.cocoonstack.io/finalizer";

// Registry tags and manifest annotations.
export const TAG_HIBERNATE = "hibernate";
export const TAG_LATEST = "latest";
export const MANIFEST_ANN_BASE_IMAGE = "cocoonstack.snapshot.baseimage";
export const MANIFEST_ANN_FROM_NODE = "cocoonstack.snapshot.from-node";

// Lifecycle states vk-cocoon writes.
export const LIFECYCLE_CREATING = "creating";
export const LIFECYCLE_READY = "ready";
export const LIFECYCLE_HIBERNATING = "hibernating";
export const LIFECYCLE_HIBERNATED = "hibernated";
export const LIFECYCLE_FAILED = "failed";

/** Boolean annotations are true only for the exact string "true": "True", "1" and "yes" are false. */
export const TRUE = "true";

/** The placeholder container every cocoon pod carries; vk-cocoon never pulls it. */
export const PLACEHOLDER_CONTAINER = "agent";
export const PLACEHOLDER_IMAGE = "ghcr.io/cocoonstack/placeholder:latest";
