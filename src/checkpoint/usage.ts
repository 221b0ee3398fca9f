// Who still needs a checkpoint's tags: the sets whose branch from it is under way, the sets a restore
// to it holds, the pools whose members branch from it, the restores to it not finished, and a pin.
// Pure, free of I/O: the reconciler's delete and prune ask these before a tag goes.

import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonPool, CocoonRestore } from "../apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, branchedCondition, isBranchUnderWay, restoreHoldOf } from "../holds.ts";
import { ANN_PINNED } from "./keys.ts";

/**
 * The names of the sets (of the checkpoint's namespace) whose branch from it is under way, sorted.
 * A set being deleted is not one: its teardown drops whatever it copied.
 */
export function setsBranchingNow(sets: readonly CocoonSet[], checkpointName: string): string[] {
  return sets
    .filter(
      (cs) =>
        cs.metadata.annotations?.[ANN_FROM_CHECKPOINT] === checkpointName &&
        !cs.metadata.deletionTimestamp &&
        isBranchUnderWay(branchedCondition(cs)),
    )
    .map((cs) => cs.metadata.name ?? "")
    .sort();
}

/**
 * The names of the sets (of the checkpoint's namespace) a restore to it holds, sorted. A set being
 * deleted is one too: its teardown may still wait while the restore's copies are recorded.
 */
export function setsRestoringNow(sets: readonly CocoonSet[], checkpointName: string): string[] {
  return sets
    .filter((cs) => {
      const hold = restoreHoldOf(cs);
      return hold === "unreadable" || hold?.checkpoint === checkpointName;
    })
    .map((cs) => cs.metadata.name ?? "")
    .sort();
}

/** Pinned by annotation: keep-checkpoints never deletes it. */
export function isPinned(ck: CocoonCheckpoint): boolean {
  return ck.metadata.annotations?.[ANN_PINNED] === "true";
}

/** What the API server holds that may need a checkpoint (of its namespace). */
export interface CheckpointNeeders {
  sets: readonly CocoonSet[];
  pools: readonly CocoonPool[];
  restores: readonly CocoonRestore[];
}

/**
 * Who still needs the checkpoint's tags, sorted and named by kind: sets branching from it or held by a
 * restore to it; pools that branch their members from it (a pool not being deleted keeps creating
 * members, each a branch); restores to it that are neither Restored nor Failed (one still Pending has
 * not taken its hold yet).
 */
export function checkpointNeeders(needers: CheckpointNeeders, checkpointName: string): string[] {
  const sets = new Set([
    ...setsBranchingNow(needers.sets, checkpointName),
    ...setsRestoringNow(needers.sets, checkpointName),
  ]);
  const pools = needers.pools.filter(
    (pool) => pool.spec.fromCheckpoint === checkpointName && !pool.metadata.deletionTimestamp,
  );
  const restores = needers.restores.filter(
    (r) =>
      r.spec.checkpointRef.name === checkpointName &&
      r.status?.phase !== "Restored" &&
      r.status?.phase !== "Failed",
  );
  return [
    ...[...sets].sort().map((name) => `CocoonSet ${name}`),
    ...pools.map((pool) => `CocoonPool ${pool.metadata.name}`).sort(),
    ...restores.map((r) => `CocoonRestore ${r.metadata.name}`).sort(),
  ];
}
