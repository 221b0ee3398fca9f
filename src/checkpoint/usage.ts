// Who still needs a checkpoint's tags: the sets whose branch from it is under way, the sets a restore
// to it holds, and a pin. Pure, free of I/O: the reconciler's delete and prune ask these before a tag
// goes.

import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
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
