// Who still needs a checkpoint's tags: the sets whose branch from it is under way, the sets a restore
// to it holds, and a pin. Pure, free of I/O: the reconciler's delete and prune ask these before a tag
// goes.

import type { CocoonSet, Condition } from "../apis/v1/types.ts";
import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import {
  ANN_FROM_CHECKPOINT,
  ANN_PINNED,
  ANN_RESTORE_HOLD,
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

/** A CocoonRestore's hold on a set (ANN_RESTORE_HOLD), as written. */
export interface RestoreHold {
  restore: string;
  uid: string;
  checkpoint: string;
  /** The set's spec.suspend before the restore took it. */
  suspend: boolean;
}

/**
 * The set's restore hold: none, the hold, or "unreadable" (an annotation of another shape, which holds
 * every checkpoint of the namespace: which one it meant cannot be told).
 */
export function restoreHoldOf(cs: CocoonSet): RestoreHold | undefined | "unreadable" {
  const raw = cs.metadata.annotations?.[ANN_RESTORE_HOLD];
  if (raw === undefined) return undefined;
  try {
    const parsed = JSON.parse(raw) as Partial<RestoreHold> | null;
    if (
      typeof parsed?.restore === "string" &&
      typeof parsed.uid === "string" &&
      typeof parsed.checkpoint === "string" &&
      typeof parsed.suspend === "boolean"
    ) {
      return {
        restore: parsed.restore,
        uid: parsed.uid,
        checkpoint: parsed.checkpoint,
        suspend: parsed.suspend,
      };
    }
  } catch {
    // Not JSON: unreadable, like any other shape.
  }
  return "unreadable";
}

/** The set's restore hold when it is the one of the restore with this uid. */
export function restoreHoldBy(cs: CocoonSet | undefined, uid: string | undefined): RestoreHold | undefined {
  const hold = cs ? restoreHoldOf(cs) : undefined;
  return hold !== undefined && hold !== "unreadable" && hold.uid === uid ? hold : undefined;
}

export function encodeRestoreHold(hold: RestoreHold): string {
  return JSON.stringify({
    restore: hold.restore,
    uid: hold.uid,
    checkpoint: hold.checkpoint,
    suspend: hold.suspend,
  });
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
