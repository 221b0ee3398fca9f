// CocoonCheckpoint, group cocoonset.cocoonstack.io/v1alpha1 (docs/checkpoints.md): a named,
// durable copy of a suspended CocoonSet's snapshots, and the source new sets branch from. Its own CRD:
// the v1 kinds are untouched, and the Go operator ignores it.

import { type CocoonSetSpec, type Condition, GROUP, type ObjectMeta } from "../v1/types.ts";

export const VERSION_V1ALPHA1 = "v1alpha1";
export const API_VERSION_V1ALPHA1 = `${GROUP}/${VERSION_V1ALPHA1}`;
export const KIND_COCOONCHECKPOINT = "CocoonCheckpoint";
export const PLURAL_COCOONCHECKPOINTS = "cocooncheckpoints";

/**
 * Pending: waiting for the set to be Suspended at its current generation (or for the set to exist).
 * Copying: the member list is fixed and the tags are being written. Ready: every tag exists.
 * Failed: spec.failureDeadline passed before Ready; final (the tags written stay until the delete).
 */
export const CHECKPOINT_PHASES = ["Pending", "Copying", "Ready", "Failed"] as const;
export type CheckpointPhase = (typeof CHECKPOINT_PHASES)[number];

/** The member's place in its set: an agent slot (0 = main) or a toolbox by name. */
export interface CheckpointMember {
  role: "main" | "sub-agent" | "toolbox";
  /** Agent slot; absent for a toolbox. */
  slot?: number;
  /** Toolbox name; absent for an agent. */
  toolbox?: string;
  /** The source VM, whose repository holds the checkpoint tag. */
  vmName: string;
  /** Digest of `<vmName>:ckpt-<checkpoint>`; empty until copied. */
  digest?: string;
  /** The snapshot's `cocoonstack.snapshot.baseimage` ("" when it records none). */
  image?: string;
  /** The hypervisor the snapshot was taken with (the VM's `vm.cocoonstack.io/backend`). */
  backend?: string;
  /** The guest OS of the snapshot (the VM's `cocoonset.cocoonstack.io/os`). */
  os?: string;
  /** The snapshot compatibility class the VM ran under ("" for none). */
  snapshotCompatibilityClass?: string;
  /** Config plus layer sizes the manifest references. */
  bytes?: number;
  /** Why the member's `:hibernate` was not copied: it is not the snapshot of the suspend checkpointed. */
  skipped?: string;
}

export interface CocoonCheckpointSpec {
  cocoonSetRef: { name: string };
  /** A Go duration from the checkpoint's creation; not Ready by then: phase Failed. */
  failureDeadline?: string;
}

/** How far the copy is: members tagged and their bytes, against what the copy takes. */
export interface CheckpointProgress {
  membersCopied: number;
  membersTotal: number;
  bytesCopied: number;
  bytesTotal: number;
}

export interface CocoonCheckpointStatus {
  phase?: CheckpointPhase;
  message?: string;
  observedGeneration?: number;
  members?: CheckpointMember[];
  totalBytes?: number;
  progress?: CheckpointProgress;
  /** Bytes of its snapshots the set's current `:hibernate` snapshots do not reference. */
  exclusiveBytes?: number;
  /** The set generation exclusiveBytes was measured at. */
  exclusiveBytesSetGeneration?: number;
  /** When the checkpoint became Ready (RFC 3339). */
  readyTime?: string;
  /** Ready and Progressing, and Deleting while a delete waits or a tag delete fails. */
  conditions?: Condition[];
}

export interface CocoonCheckpoint {
  apiVersion: typeof API_VERSION_V1ALPHA1;
  kind: typeof KIND_COCOONCHECKPOINT;
  metadata: ObjectMeta;
  spec: CocoonCheckpointSpec;
  status?: CocoonCheckpointStatus;
}

// ---- CocoonPool and CocoonClaim (docs/pools.md) ----

export const KIND_COCOONPOOL = "CocoonPool";
export const PLURAL_COCOONPOOLS = "cocoonpools";
export const KIND_COCOONCLAIM = "CocoonClaim";
export const PLURAL_COCOONCLAIMS = "cocoonclaims";

/** Running: members run, a claim is instant. Suspended: members are hibernated, a claim wakes one. */
export const POOL_WARMTHS = ["Running", "Suspended"] as const;
export type PoolWarmth = (typeof POOL_WARMTHS)[number];
export const DEFAULT_POOL_WARMTH: PoolWarmth = "Running";

export interface CocoonPoolTemplate {
  /** Labels and annotations every member gets (an idle policy, say, that applies once claimed). */
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: CocoonSetSpec;
}

export interface CocoonPoolSpec {
  /** Unclaimed members to keep. */
  replicas: number;
  warmth?: PoolWarmth;
  template: CocoonPoolTemplate;
  /** A CocoonCheckpoint in the namespace every member branches from. */
  fromCheckpoint?: string;
}

export interface CocoonPoolStatus {
  observedGeneration?: number;
  /** Unclaimed members (the /scale subresource's status replicas). */
  replicas?: number;
  /** Unclaimed members being created, woken, suspended or replaced. */
  starting?: number;
  /** Unclaimed members ready to claim. */
  ready?: number;
  /** Members bound to a claim, which the pool no longer touches. */
  claimed?: number;
  /** Unclaimed members whose template is not the current one. */
  outdated?: number;
  /** The label selector of the unclaimed members (the /scale subresource's selector). */
  selector?: string;
  conditions?: Condition[];
}

export interface CocoonPool {
  apiVersion: typeof API_VERSION_V1ALPHA1;
  kind: typeof KIND_COCOONPOOL;
  metadata: ObjectMeta;
  spec: CocoonPoolSpec;
  status?: CocoonPoolStatus;
}

export const CLAIM_PHASES = ["Pending", "Bound"] as const;
export type ClaimPhase = (typeof CLAIM_PHASES)[number];

export interface CocoonClaimSpec {
  poolRef: { name: string };
  /**
   * Handed to the bound set's PostClaim hooks on their stdin (docs/guest.md); never logged, never in
   * an event. Not a place for secrets: anyone who may read the claim reads them.
   */
  parameters?: Record<string, string>;
}

export interface CocoonClaimStatus {
  observedGeneration?: number;
  phase?: ClaimPhase;
  /** Why the claim is Pending, or what it is waiting for. */
  reason?: string;
  message?: string;
  cocoonSetRef?: { name: string };
  /** When the claim bound its set (RFC 3339). */
  boundTime?: string;
  conditions?: Condition[];
}

export interface CocoonClaim {
  apiVersion: typeof API_VERSION_V1ALPHA1;
  kind: typeof KIND_COCOONCLAIM;
  metadata: ObjectMeta;
  spec: CocoonClaimSpec;
  status?: CocoonClaimStatus;
}

// ---- CocoonRestore (docs/checkpoints.md) ----

export const KIND_COCOONRESTORE = "CocoonRestore";
export const PLURAL_COCOONRESTORES = "cocoonrestores";

/**
 * Pending: not begun (or refused before anything was touched, then Failed). Restoring: the set is
 * held by this restore, suspended, its `:hibernate` snapshots replaced, then resumed. Restored: every
 * member's VM restores (or, for a set suspended before, will restore) from the checkpoint. Failed:
 * refused or stopped, with the reason; final.
 */
export const RESTORE_PHASES = ["Pending", "Restoring", "Restored", "Failed"] as const;
export type RestorePhase = (typeof RESTORE_PHASES)[number];

export interface CocoonRestoreSpec {
  cocoonSetRef: { name: string };
  checkpointRef: { name: string };
  /**
   * A Go duration from the restore's creation (default DEFAULT_RESTORE_DEADLINE): a restore not
   * Restored by then is Failed (DeadlineExceeded) and lets go of its set.
   */
  failureDeadline?: string;
}

/** The failureDeadline of a CocoonRestore that sets none. */
export const DEFAULT_RESTORE_DEADLINE = "1h";

/** One VM whose `:hibernate` the restore replaced, and the checkpoint member it came from. */
export interface RestoredMember {
  vmName: string;
  /** The checkpoint member's VM (another set's for a checkpoint of the set this one branched from). */
  fromVM: string;
  /** Digest of the checkpoint member's tag. */
  digest: string;
}

export interface CocoonRestoreStatus {
  phase?: RestorePhase;
  /** Why the restore is waiting, or why it failed (the reason's words). */
  reason?: string;
  message?: string;
  observedGeneration?: number;
  /** The set's spec.suspend before the restore began: the restore returns it there. */
  suspendedBefore?: boolean;
  /** The VMs whose `:hibernate` now holds the checkpoint's snapshot (owed a restore). */
  members?: RestoredMember[];
  /** The set's spec.suspend was returned to suspendedBefore. */
  resumed?: boolean;
  startTime?: string;
  completionTime?: string;
  /** Restored and Progressing. */
  conditions?: Condition[];
}

export interface CocoonRestore {
  apiVersion: typeof API_VERSION_V1ALPHA1;
  kind: typeof KIND_COCOONRESTORE;
  metadata: ObjectMeta;
  spec: CocoonRestoreSpec;
  status?: CocoonRestoreStatus;
}

// ---- CocoonGuestPolicy (docs/guest.md) ----

export const KIND_COCOONGUESTPOLICY = "CocoonGuestPolicy";
export const PLURAL_COCOONGUESTPOLICIES = "cocoonguestpolicies";

/**
 * When a hook runs. PreHibernate: before a VM is asked to hibernate (a suspend, a CocoonHibernation,
 * a migration's quiesce). PostWake: once a VM runs again on its own state. PostClone: once a VM runs
 * on state copied from another machine (a sub-agent fork, a branch, a pool member, a restore of
 * another set's checkpoint, a first boot from an image). PostClaim: once a claim has bound the set.
 */
export const HOOK_POINTS = ["PreHibernate", "PostWake", "PostClone", "PostClaim"] as const;
export type HookPoint = (typeof HOOK_POINTS)[number];

/** Fail: the member is not Ready (or the hibernate does not happen) until the hook succeeds. Ignore: a Warning. */
export const FAILURE_POLICIES = ["Fail", "Ignore"] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

/** The built-in refresh, as the record and events name it. */
export const REFRESH_STEP = "refresh";
/** The read of the guest's owner mark that tells a clone from a wake. */
export const READ_OWNER_STEP = "read-owner";
/** The write of the owner mark once a VM's post hooks succeeded. */
export const WRITE_OWNER_STEP = "write-owner";
/** The operator's own steps: a policy's hook by one of these names could not be told apart from them. */
export const RESERVED_HOOK_NAMES = [REFRESH_STEP, READ_OWNER_STEP, WRITE_OWNER_STEP] as const;

export const DEFAULT_HOOK_TIMEOUT_SECONDS = 30;
export const DEFAULT_HOOK_BACKOFF_SECONDS = 2;

export interface GuestHook {
  /** Unique within the policy; events and status name the hook by it, never by its command. */
  name: string;
  on: HookPoint[];
  exec: { command: string[] };
  /** Each attempt's deadline; default DEFAULT_HOOK_TIMEOUT_SECONDS. */
  timeoutSeconds?: number;
  /** Default Fail. */
  failurePolicy?: FailurePolicy;
  /** Attempts after the first; default 0. */
  retries?: number;
  /** The wait before the first retry, doubled for each further one; default DEFAULT_HOOK_BACKOFF_SECONDS. */
  backoffSeconds?: number;
}

export interface GuestRefresh {
  /** The built-in refresh (a new identity, entropy, the clock) once a VM runs on copied state. */
  afterClone?: boolean;
  /** Entropy and the clock once a VM runs again on its own state. */
  afterWake?: boolean;
}

export interface CocoonGuestPolicySpec {
  refresh?: GuestRefresh;
  hooks?: GuestHook[];
}

export interface CocoonGuestPolicy {
  apiVersion: typeof API_VERSION_V1ALPHA1;
  kind: typeof KIND_COCOONGUESTPOLICY;
  metadata: ObjectMeta;
  spec: CocoonGuestPolicySpec;
}
