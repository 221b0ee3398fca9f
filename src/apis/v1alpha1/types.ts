// CocoonCheckpoint, group cocoonset.cocoonstack.io/v1alpha1 (docs/checkpoints.md): a named,
// durable copy of a suspended CocoonSet's snapshots, and the source new sets branch from. Its own CRD:
// the v1 kinds are untouched, and the Go operator ignores it.

import { GROUP, type ObjectMeta } from "../v1/types.ts";

export const VERSION_V1ALPHA1 = "v1alpha1";
export const API_VERSION_V1ALPHA1 = `${GROUP}/${VERSION_V1ALPHA1}`;
export const KIND_COCOONCHECKPOINT = "CocoonCheckpoint";
export const PLURAL_COCOONCHECKPOINTS = "cocooncheckpoints";

/**
 * Pending: waiting for the set to be Suspended at its current generation (or for the set to exist).
 * Copying: the member list is fixed and the tags are being written. Ready: every tag exists.
 */
export const CHECKPOINT_PHASES = ["Pending", "Copying", "Ready"] as const;
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
}

export interface CocoonCheckpointSpec {
  cocoonSetRef: { name: string };
}

export interface CocoonCheckpointStatus {
  phase?: CheckpointPhase;
  message?: string;
  observedGeneration?: number;
  members?: CheckpointMember[];
  totalBytes?: number;
  /** When the checkpoint became Ready (RFC 3339). */
  readyTime?: string;
}

export interface CocoonCheckpoint {
  apiVersion: typeof API_VERSION_V1ALPHA1;
  kind: typeof KIND_COCOONCHECKPOINT;
  metadata: ObjectMeta;
  spec: CocoonCheckpointSpec;
  status?: CocoonCheckpointStatus;
}
