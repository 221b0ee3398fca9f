// The CocoonHibernation status as pure functions of the current object and the clock: the Ready
// condition per phase, the phase deadlines measured from Ready.lastTransitionTime, and the three
// status writes (setPhase, markFailed, markPending) with their "nothing changed, no patch" rules
// (docs/hibernation.md).

import { setStatusCondition } from "../apis/status.ts";
import type {
  CocoonHibernation,
  CocoonHibernationPhase,
  CocoonHibernationStatus,
  Condition,
} from "../apis/v1/types.ts";
import { isDeepStrictEqual } from "../builtins.ts";

export const CONDITION_READY = "Ready";
export const REASON_DONE = "Done";
export const REASON_FAILED = "Failed";
export const REASON_PENDING = "Pending";

export const REQUEUE_INTERVAL_MS = 5_000;
export const HIBERNATE_TIMEOUT_MS = 3 * 60_000;
export const WAKE_TIMEOUT_MS = 5 * 60_000;
/** The timeouts as Go prints a time.Duration, for messages identical to the Go operator's. */
export const HIBERNATE_TIMEOUT_TEXT = "3m0s";
export const WAKE_TIMEOUT_TEXT = "5m0s";

export function readyConditionOf(ch: CocoonHibernation): Condition | undefined {
  return ch.status?.conditions?.find((c) => c.type === CONDITION_READY);
}

/** Ready.lastTransitionTime in ms, or undefined when there is no usable one. */
export function readyTransitionMs(ch: CocoonHibernation): number | undefined {
  const ltt = readyConditionOf(ch)?.lastTransitionTime;
  if (!ltt) return undefined;
  const ms = Date.parse(ltt);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The Ready condition a phase implies; the message is the phase name unless given. */
export function readyConditionFor(
  phase: CocoonHibernationPhase,
  generation: number,
  message: string = phase,
): Omit<Condition, "lastTransitionTime"> {
  const [status, reason]: [Condition["status"], string] =
    phase === "Hibernated" || phase === "Active"
      ? ["True", REASON_DONE]
      : phase === "Failed"
        ? ["False", REASON_FAILED]
        : ["False", REASON_PENDING];
  return { type: CONDITION_READY, status, observedGeneration: generation, reason, message };
}

/** The phases that run against a deadline, which restarts on every entry from another phase. */
function hasPhaseDeadline(phase: CocoonHibernationPhase): boolean {
  return phase === "Hibernating" || phase === "Waking";
}

/** True when ch has been in phase for longer than timeoutMs, measured from Ready.lastTransitionTime. */
export function phaseDeadlineExceeded(
  ch: CocoonHibernation,
  phase: CocoonHibernationPhase,
  timeoutMs: number,
  nowMs: number,
): boolean {
  if (ch.status?.phase !== phase) return false;
  const since = readyTransitionMs(ch);
  return since !== undefined && nowMs - since > timeoutMs;
}

/**
 * The Ready condition set as apimeta.SetStatusCondition does, with `restartClock` forcing a new time.
 * A new time is at least one second after the old one: the phase-exit dedup keys on this time, and two
 * transitions within one second (a fast simulator, a quick wake after a hibernate) must read as two.
 */
function withReadyCondition(
  conditions: readonly Condition[],
  next: Omit<Condition, "lastTransitionTime">,
  nowMs: number,
  restartClock: boolean,
): Condition[] {
  return setStatusCondition(conditions, next, nowMs, { restartClock, distinctSeconds: true });
}

function statusWith(
  ch: CocoonHibernation,
  fields: Partial<CocoonHibernationStatus>,
  condition: Omit<Condition, "lastTransitionTime">,
  nowMs: number,
  restartClock: boolean,
): CocoonHibernationStatus {
  const current = ch.status ?? {};
  return {
    ...current,
    observedGeneration: ch.metadata.generation ?? 0,
    ...fields,
    conditions: withReadyCondition(current.conditions ?? [], condition, nowMs, restartClock),
  };
}

/**
 * The status after moving to phase on vmName, or undefined when phase, vmName and observed
 * generation are already current (no patch). Entering Hibernating or Waking from another phase
 * restarts Ready's clock, so a retry after Failed gets a fresh deadline.
 */
export function phaseStatus(
  ch: CocoonHibernation,
  phase: CocoonHibernationPhase,
  vmName: string,
  nowMs: number,
): CocoonHibernationStatus | undefined {
  const generation = ch.metadata.generation ?? 0;
  const current = ch.status ?? {};
  if (current.phase === phase && current.vmName === vmName && current.observedGeneration === generation) {
    return undefined;
  }
  const restartClock = hasPhaseDeadline(phase) && current.phase !== phase;
  return statusWith(ch, { phase, vmName }, readyConditionFor(phase, generation), nowMs, restartClock);
}

/** Failed with message on Ready; undefined when that is already the status (a one-shot write). */
export function failedStatus(
  ch: CocoonHibernation,
  message: string,
  nowMs: number,
): CocoonHibernationStatus | undefined {
  const generation = ch.metadata.generation ?? 0;
  const next = statusWith(
    ch,
    { phase: "Failed" },
    readyConditionFor("Failed", generation, message),
    nowMs,
    false,
  );
  return isDeepStrictEqual(next, ch.status ?? {}) ? undefined : next;
}

/**
 * Pending with message on Ready, or undefined for no patch: Hibernated and Waking are never
 * demoted (they carry the CocoonSet's restore intent), and an unchanged Pending is not rewritten.
 */
export function pendingStatus(
  ch: CocoonHibernation,
  message: string,
  nowMs: number,
): CocoonHibernationStatus | undefined {
  const current = ch.status ?? {};
  const generation = ch.metadata.generation ?? 0;
  if (current.phase === "Hibernated" || current.phase === "Waking") return undefined;
  if (
    current.phase === "Pending" &&
    current.observedGeneration === generation &&
    readyConditionOf(ch)?.message === message
  ) {
    return undefined;
  }
  return statusWith(
    ch,
    { phase: "Pending" },
    readyConditionFor("Pending", generation, message),
    nowMs,
    false,
  );
}
