// What a checkpoint really holds: the bytes of its snapshots that its set's current `:hibernate`
// snapshots do not reference, so the registry keeps them for the checkpoint alone (or for other
// checkpoints of the same VMs). Right after the copy that is nothing: the checkpoint tags the
// `:hibernate` content. It grows as the set wakes (its `:hibernate` tags go) and suspends anew (new
// layers). Pure, free of I/O: the reconciler reads the manifests.

import type { CocoonSet } from "../apis/v1/types.ts";
import { ANN_HIBERNATE_RECLAIM } from "../contract/keys.ts";
import { referencedBlobs } from "../registry/index.ts";

/** Bytes of `held`'s blobs (config and layers) that `current` (absent: no `:hibernate`) does not reference. */
export function bytesNotIn(
  held: Record<string, unknown>,
  current: Record<string, unknown> | undefined,
): number {
  const shared = new Set(current ? referencedBlobs(current).map((b) => b.digest) : []);
  return referencedBlobs(held)
    .filter((b) => !shared.has(b.digest))
    .reduce((sum, b) => sum + (b.size ?? 0), 0);
}

/**
 * The set generation to measure at, when the set's `:hibernate` tags are settled for it: Suspended at
 * its generation (every snapshot pushed), or Running at it with no reclaim record left (every tag the
 * wake drops is gone). Undefined while they may still move.
 */
export function settledSetGeneration(cs: CocoonSet | undefined): number | undefined {
  if (!cs) return undefined;
  const generation = cs.metadata.generation ?? 0;
  if (cs.status?.observedGeneration !== generation) return undefined;
  if (cs.status.phase === "Suspended") return generation;
  if (cs.status.phase === "Running" && cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] === undefined) {
    return generation;
  }
  return undefined;
}
