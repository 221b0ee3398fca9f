// Who still needs a checkpoint's tags: the sets whose branch from it is under way, and a pin. Pure,
// free of I/O: the reconciler's delete and prune ask these before a tag goes.

import type { CocoonSet, Condition } from "../apis/v1/types.ts";
import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import {
  ANN_FROM_CHECKPOINT,
  ANN_PINNED,
  BRANCH_COPY_FAILED,
  BRANCH_COPYING,
  CONDITION_BRANCHED,
} from "./keys.ts";

export function branchedCondition(cs: CocoonSet): Condition | undefined {
  return cs.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
}

/** Copying, or retrying a failed copy: the branch has begun and not finished. */
export function isBranchUnderWay(condition: Condition | undefined): boolean {
  return (
    condition?.status === "False" &&
    (condition.reason === BRANCH_COPYING || condition.reason === BRANCH_COPY_FAILED)
  );
}

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

/** Pinned by annotation: keep-checkpoints never deletes it. */
export function isPinned(ck: CocoonCheckpoint): boolean {
  return ck.metadata.annotations?.[ANN_PINNED] === "true";
}
