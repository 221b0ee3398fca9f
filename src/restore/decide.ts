// A CocoonRestore's pure decisions (docs/checkpoints.md): whether it may begin (each refusal with its
// reason, decided before anything is touched), what it copies, and its conditions. Free of I/O.

import { type ConditionUpdate, setStatusConditions } from "../apis/status.ts";
import type { CocoonSet, Condition } from "../apis/v1/types.ts";
import {
  type CocoonCheckpoint,
  type CocoonRestore,
  DEFAULT_RESTORE_DEADLINE,
  type RestorePhase,
} from "../apis/v1alpha1/types.ts";
import type { CheckpointLookup } from "../checkpoint/catalog.ts";
import { incompatibleCopies, planBranch } from "../checkpoint/members.ts";
import { describeMismatches } from "../contract/restoredeps.ts";
import { type RestoreHold, restoreHoldOf } from "../holds.ts";
import { nsToMs, parseGoDuration } from "../idle/duration.ts";
import {
  CONDITION_PROGRESSING,
  CONDITION_RESTORED,
  REASON_API_UNAVAILABLE,
  REASON_CHECKPOINT_DELETING,
  REASON_CHECKPOINT_NOT_FOUND,
  REASON_CHECKPOINT_NOT_READY,
  REASON_CHECKPOINT_OF_OTHER_SET,
  REASON_INCOMPATIBLE,
  REASON_NOTHING_TO_RESTORE,
  REASON_RESTORE_IN_PROGRESS,
  REASON_RESTORED,
  REASON_SET_DELETING,
  REASON_SET_NOT_FOUND,
} from "./keys.ts";

export interface Refusal {
  reason: string;
  message: string;
}

/** What a restore's start is judged on. */
export interface RestoreStart {
  restore: CocoonRestore;
  set: CocoonSet | undefined;
  checkpoint: CheckpointLookup;
  /**
   * The set this one was branched from: the cocoonSetRef of the checkpoint its from-checkpoint
   * annotation names, when that checkpoint is known.
   */
  branchedFrom: string | undefined;
  /** The uids of the namespace's restores that are not Restored or Failed. */
  liveRestores: ReadonlySet<string>;
}

export function isFinal(phase: RestorePhase | undefined): boolean {
  return phase === "Restored" || phase === "Failed";
}

/** The restore's failureDeadline as written, or the default. */
export function restoreDeadline(r: CocoonRestore): string {
  return r.spec.failureDeadline ?? DEFAULT_RESTORE_DEADLINE;
}

/**
 * When the restore's deadline ends (epoch ms): creation plus failureDeadline (default
 * DEFAULT_RESTORE_DEADLINE). Undefined without a creation time; a duration the CRD would not admit
 * counts as the default.
 */
export function restoreDeadlineMs(r: CocoonRestore): number | undefined {
  const created = Date.parse(r.metadata.creationTimestamp ?? "");
  if (Number.isNaN(created)) return undefined;
  const parsed = parseGoDuration(restoreDeadline(r));
  const fallback = parseGoDuration(DEFAULT_RESTORE_DEADLINE);
  const ns = parsed.ok && parsed.ns > 0n ? parsed.ns : fallback.ok ? fallback.ns : 0n;
  return created + nsToMs(ns);
}

/**
 * Another live restore's hold on the set, or "unreadable"; undefined when the set is free for this one
 * (no hold, its own, or a stale one whose restore is gone or finished).
 */
export function heldByOther(
  cs: CocoonSet,
  restore: CocoonRestore,
  liveRestores: ReadonlySet<string>,
): RestoreHold | "unreadable" | undefined {
  const hold = restoreHoldOf(cs);
  if (hold === undefined || hold === "unreadable") return hold;
  if (hold.uid === restore.metadata.uid) return undefined;
  return liveRestores.has(hold.uid) ? hold : undefined;
}

/** Why the restore cannot begin, or undefined (then `plan` says what it copies). */
export function refuseStart(start: RestoreStart): Refusal | undefined {
  const { restore, set, checkpoint } = start;
  const setName = restore.spec.cocoonSetRef.name;
  const ckName = restore.spec.checkpointRef.name;
  if (!set) return { reason: REASON_SET_NOT_FOUND, message: `CocoonSet ${setName} not found` };
  if (set.metadata.deletionTimestamp) {
    return { reason: REASON_SET_DELETING, message: `CocoonSet ${setName} is being deleted` };
  }
  const other = heldByOther(set, restore, start.liveRestores);
  if (other === "unreadable") {
    return {
      reason: REASON_RESTORE_IN_PROGRESS,
      message: `CocoonSet ${setName} carries an unreadable cocoonset.cocoonstack.io/restore hold; remove it once no restore runs`,
    };
  }
  if (other) {
    return {
      reason: REASON_RESTORE_IN_PROGRESS,
      message: `CocoonRestore ${other.restore} is restoring CocoonSet ${setName}; one restore at a time`,
    };
  }
  if (checkpoint === "unavailable") {
    return {
      reason: REASON_API_UNAVAILABLE,
      message: "the CocoonCheckpoint API is not served or not enabled in this operator",
    };
  }
  const unusable = checkpointRefusal(checkpoint, ckName);
  if (unusable || !checkpoint) return unusable;
  const source = checkpoint.spec.cocoonSetRef.name;
  if (source !== setName && source !== start.branchedFrom) {
    return {
      reason: REASON_CHECKPOINT_OF_OTHER_SET,
      message: `CocoonCheckpoint ${ckName} is of CocoonSet ${source}, which is neither ${setName} nor the set it was branched from`,
    };
  }
  return refusePlan(set, checkpoint);
}

/** The checkpoint cannot be restored from: gone, being deleted, or not Ready. */
export function checkpointRefusal(ck: CocoonCheckpoint | undefined, name: string): Refusal | undefined {
  if (!ck) return { reason: REASON_CHECKPOINT_NOT_FOUND, message: `CocoonCheckpoint ${name} not found` };
  if (ck.metadata.deletionTimestamp) {
    return { reason: REASON_CHECKPOINT_DELETING, message: `CocoonCheckpoint ${name} is being deleted` };
  }
  if (ck.status?.phase !== "Ready") {
    return {
      reason: REASON_CHECKPOINT_NOT_READY,
      message: `CocoonCheckpoint ${name} is not Ready (phase ${ck.status?.phase ?? "none"})`,
    };
  }
  return undefined;
}

/** The copies cannot all restore as the set's spec asks, or there are none. */
export function refusePlan(set: CocoonSet, checkpoint: CocoonCheckpoint): Refusal | undefined {
  const ckName = checkpoint.metadata.name ?? "";
  const plan = planBranch(set, checkpoint);
  if (plan.length === 0) {
    return {
      reason: REASON_NOTHING_TO_RESTORE,
      message: `CocoonCheckpoint ${ckName} holds no snapshot for any slot of CocoonSet ${set.metadata.name}`,
    };
  }
  const incompatible = incompatibleCopies(set, plan);
  if (incompatible.length === 0) return undefined;
  const members = incompatible.map(({ copy, mismatches }) => {
    const m = copy.member;
    const place = m.role === "toolbox" ? `toolbox ${m.toolbox}` : `${m.role} (slot ${m.slot})`;
    return `member ${place}, VM ${m.vmName}: ${describeMismatches(mismatches)}`;
  });
  return {
    reason: REASON_INCOMPATIBLE,
    message: `CocoonCheckpoint ${ckName} cannot restore as CocoonSet ${set.metadata.name}'s spec asks; ${members.join("; ")}`,
  };
}

/**
 * Why the set is not yet suspended and confirmed for the copy (spec.suspend, Suspended at its
 * generation), or undefined when it is.
 */
export function notSuspendedForCopy(cs: CocoonSet): string | undefined {
  if (cs.spec.suspend !== true) return `CocoonSet ${cs.metadata.name} is not suspended yet`;
  const phase = cs.status?.phase ?? "unknown";
  const generation = cs.metadata.generation ?? 0;
  if (phase !== "Suspended" || (cs.status?.observedGeneration ?? 0) !== generation) {
    return `waiting for CocoonSet ${cs.metadata.name} to be Suspended at generation ${generation} (phase ${phase}, observed ${cs.status?.observedGeneration ?? 0})`;
  }
  return undefined;
}

/**
 * Why the resumed set has not finished its restore, or undefined when it has: Running at its
 * generation, and no restored VM still owed a restore (each dropped once its VM runs from the copy).
 */
export function notRestoredYet(
  cs: CocoonSet,
  owed: readonly string[],
  vms: readonly string[],
): string | undefined {
  const phase = cs.status?.phase ?? "unknown";
  const generation = cs.metadata.generation ?? 0;
  if (phase !== "Running" || (cs.status?.observedGeneration ?? 0) !== generation) {
    return `waiting for CocoonSet ${cs.metadata.name} to be Running at generation ${generation} (phase ${phase})`;
  }
  const pending = vms.filter((vm) => owed.includes(vm));
  return pending.length === 0 ? undefined : `waiting for ${pending.join(", ")} to run from the checkpoint`;
}

/** Restored and Progressing for a phase, with the reason and message of the status. */
export function restoreConditions(
  existing: readonly Condition[],
  phase: RestorePhase,
  reason: string,
  message: string,
  generation: number,
  nowMs: number,
): Condition[] {
  const at = generation === 0 ? {} : { observedGeneration: generation };
  const restored: ConditionUpdate = {
    type: CONDITION_RESTORED,
    status: phase === "Restored" ? "True" : "False",
    reason: phase === "Restored" ? REASON_RESTORED : reason,
    message,
    ...at,
  };
  const progressing: ConditionUpdate = {
    type: CONDITION_PROGRESSING,
    status: phase === "Restoring" ? "True" : "False",
    reason,
    message,
    ...at,
  };
  return setStatusConditions(existing, [restored, progressing], nowMs);
}
