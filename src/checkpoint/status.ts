// The CocoonCheckpoint's conditions and deadline, from its phase: pure, free of I/O (the reconciler
// writes them). Ready says whether branches can use it; Progressing whether a copy is under way or
// retrying; Deleting why a delete has not finished (branches still copying, or a tag the registry
// refuses to delete).

import { type ConditionUpdate, setStatusConditions } from "../apis/status.ts";
import type { Condition } from "../apis/v1/types.ts";
import type { CheckpointPhase, CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import { nsToMs, parseGoDuration } from "../idle/duration.ts";

export const CONDITION_READY = "Ready";
export const CONDITION_PROGRESSING = "Progressing";
export const CONDITION_DELETING = "Deleting";

// Condition reasons.
export const CONDITION_REASON_PENDING = "Pending";
export const CONDITION_REASON_COPYING = "Copying";
export const CONDITION_REASON_COPY_FAILED = "CopyFailed";
export const CONDITION_REASON_FAILED = "Failed";
export const CONDITION_REASON_READY = "Ready";
export const CONDITION_REASON_IN_USE = "InUse";
export const CONDITION_REASON_TAG_DELETE_FAILED = "TagDeleteFailed";

/** Ready and Progressing for a phase; `retrying` marks a Copying checkpoint whose last copy failed. */
export function phaseConditions(
  existing: readonly Condition[],
  phase: CheckpointPhase,
  message: string,
  generation: number,
  nowMs: number,
  retrying = false,
): Condition[] {
  const at = generation === 0 ? {} : { observedGeneration: generation };
  const ready: ConditionUpdate =
    phase === "Ready"
      ? { type: CONDITION_READY, status: "True", reason: CONDITION_REASON_READY, message, ...at }
      : { type: CONDITION_READY, status: "False", reason: notReadyReason(phase, retrying), message, ...at };
  const progressing: ConditionUpdate =
    phase === "Copying"
      ? {
          type: CONDITION_PROGRESSING,
          status: "True",
          reason: retrying ? CONDITION_REASON_COPY_FAILED : CONDITION_REASON_COPYING,
          message,
          ...at,
        }
      : {
          type: CONDITION_PROGRESSING,
          status: "False",
          reason: notReadyReason(phase, false),
          message,
          ...at,
        };
  return setStatusConditions(existing, [ready, progressing], nowMs);
}

function notReadyReason(phase: CheckpointPhase, retrying: boolean): string {
  if (retrying) return CONDITION_REASON_COPY_FAILED;
  switch (phase) {
    case "Pending":
      return CONDITION_REASON_PENDING;
    case "Copying":
      return CONDITION_REASON_COPYING;
    case "Failed":
      return CONDITION_REASON_FAILED;
    case "Ready":
      return CONDITION_REASON_READY;
  }
}

/** The Deleting condition, True with why the delete waits. */
export function deletingCondition(
  existing: readonly Condition[],
  reason: typeof CONDITION_REASON_IN_USE | typeof CONDITION_REASON_TAG_DELETE_FAILED,
  message: string,
  generation: number,
  nowMs: number,
): Condition[] {
  const at = generation === 0 ? {} : { observedGeneration: generation };
  return setStatusConditions(
    existing,
    [{ type: CONDITION_DELETING, status: "True", reason, message, ...at }],
    nowMs,
  );
}

/** When spec.failureDeadline ends (epoch ms), or undefined without one. */
export function failureDeadlineMs(ck: CocoonCheckpoint): number | undefined {
  const raw = ck.spec.failureDeadline;
  const created = Date.parse(ck.metadata.creationTimestamp ?? "");
  if (raw === undefined || Number.isNaN(created)) return undefined;
  const parsed = parseGoDuration(raw);
  // The CRD admits only positive durations; anything else here has no deadline to keep.
  if (!parsed.ok || parsed.ns <= 0n) return undefined;
  return created + nsToMs(parsed.ns);
}
