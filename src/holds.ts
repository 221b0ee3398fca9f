// Who holds a set. A set has at most one holder at a time: a CocoonRestore (its hold annotation), a
// branch from a checkpoint that has not finished, or its teardown (a deletion under way); a claim's
// bind and a pool's delete or suspend of a member are single compare-and-swap writes that take the set
// only when nothing holds it. Every feature asks `heldAgainst` before it takes a set, on the API
// server's object (a GET, the object a write returned, or the object a write's resourceVersion
// precondition pins), and refuses or waits with the reason it returns. Pure, free of I/O.

import type { CocoonSet, Condition } from "./apis/v1/types.ts";
/**
 * On a CocoonSet while a CocoonRestore holds it: JSON
 * `{"restore":<name>,"uid":<uid>,"checkpoint":<name>,"suspend":<spec.suspend before>}`. The checkpoint
 * it names keeps its tags while it is there (a delete waits, keep-checkpoints skips it).
 */
export const ANN_RESTORE_HOLD = "cocoonset.cocoonstack.io/restore";
/** On a new CocoonSet: branch it from the named CocoonCheckpoint in its namespace, before its first pod. */
export const ANN_FROM_CHECKPOINT = "cocoonset.cocoonstack.io/from-checkpoint";
/** The CocoonSet condition saying which checkpoint the set came from, or why it has not branched. */
export const CONDITION_BRANCHED = "Branched";
// Branched=False reasons that mark a branch under way (copying, or retrying a failed copy), and the
// two that end it without a branch.
export const BRANCH_COPYING = "Copying";
export const BRANCH_COPY_FAILED = "CopyFailed";
export const BRANCH_NOT_APPLIED = "NotApplied";
export const BRANCH_INCOMPATIBLE = "Incompatible";

/** The condition reason and event reason of a feature that finds the set held by another. */
export const REASON_SET_HELD = "SetHeld";

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

/** Annotated to branch, and the branch neither done nor ended without one: it may still copy. */
function branchOpen(cs: CocoonSet): boolean {
  if (cs.metadata.annotations?.[ANN_FROM_CHECKPOINT] === undefined) return false;
  const branched = branchedCondition(cs);
  return (
    branched?.status !== "True" &&
    branched?.reason !== BRANCH_NOT_APPLIED &&
    branched?.reason !== BRANCH_INCOMPATIBLE
  );
}

/** What takes a set: each feature that writes its snapshots, its suspend state or its existence. */
export type Taker = "restore" | "bind" | "branch" | "pool" | "teardown";

export type Holder = "teardown" | "restore" | "branch";

export interface Held {
  holder: Holder;
  /** For the condition and the event: REASON_SET_HELD. */
  reason: string;
  message: string;
}

/**
 * Why `taker` may not take the set now, or undefined when it may. `restoreUid`: the restore asking,
 * whose own hold does not hold it off. The teardown takes over from a branch (both run in the set's
 * own pass, one after the other, and the teardown collects what the branch copied) but waits for a
 * restore, whose copies run outside the set's pass: it collects them once the restore has let go.
 */
export function heldAgainst(cs: CocoonSet, taker: Taker, restoreUid?: string): Held | undefined {
  const name = cs.metadata.name ?? "";
  if (taker !== "teardown" && cs.metadata.deletionTimestamp) {
    return held("teardown", `CocoonSet ${name} is being deleted`);
  }
  const hold = restoreHoldOf(cs);
  if (hold !== undefined && !(taker === "restore" && hold !== "unreadable" && hold.uid === restoreUid)) {
    const by =
      hold === "unreadable"
        ? `an unreadable ${ANN_RESTORE_HOLD} annotation`
        : `CocoonRestore ${hold.restore} (to CocoonCheckpoint ${hold.checkpoint})`;
    return held("restore", `CocoonSet ${name} is held by ${by}`);
  }
  if ((taker === "restore" || taker === "bind") && branchOpen(cs)) {
    const from = cs.metadata.annotations?.[ANN_FROM_CHECKPOINT] ?? "";
    return held("branch", `CocoonSet ${name} has not finished its branch from CocoonCheckpoint ${from}`);
  }
  return undefined;
}

function held(holder: Holder, message: string): Held {
  return { holder, reason: REASON_SET_HELD, message };
}
