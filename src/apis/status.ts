// Status helpers as apimachinery has them: SetStatusCondition over a list of conditions, and the
// merge patch that writes one status over another.

import { formatRFC3339 } from "../rfc3339.ts";
import type { Condition } from "./v1/types.ts";

/** A condition to set; its lastTransitionTime, when given and the condition transitions, is kept. */
export type ConditionUpdate = Omit<Condition, "lastTransitionTime"> & { lastTransitionTime?: string };

export interface TransitionOptions {
  /** A new lastTransitionTime even when the status is unchanged (a phase entered again restarts its clock). */
  restartClock?: boolean;
  /**
   * A new lastTransitionTime is at least one second after the old one: the wire has whole seconds, and
   * a reader that keys on the time must see two transitions within one second as two.
   */
  distinctSeconds?: boolean;
}

/**
 * apimeta.SetStatusCondition: a new type, or a status change, stamps `nowMs`; otherwise the old
 * lastTransitionTime stays while reason, message and observedGeneration follow `next` (an absent
 * observedGeneration is removed). Conditions of other types are kept, in their order. A new list.
 */
export function setStatusCondition(
  conditions: readonly Condition[],
  next: ConditionUpdate,
  nowMs: number,
  opts: TransitionOptions = {},
): Condition[] {
  const existing = conditions.find((c) => c.type === next.type);
  const merged: Condition = { ...next, lastTransitionTime: transitionTime(existing, next, nowMs, opts) };
  const out = conditions.map((c) => (c === existing ? merged : { ...c }));
  if (!existing) out.push(merged);
  return out;
}

/** setStatusCondition for each of `next`, in order. */
export function setStatusConditions(
  conditions: readonly Condition[],
  next: readonly ConditionUpdate[],
  nowMs: number,
  opts: TransitionOptions = {},
): Condition[] {
  let out = [...conditions];
  for (const condition of next) out = setStatusCondition(out, condition, nowMs, opts);
  return out;
}

function transitionTime(
  existing: Condition | undefined,
  next: ConditionUpdate,
  nowMs: number,
  opts: TransitionOptions,
): string {
  if (existing && existing.status === next.status && !opts.restartClock) return existing.lastTransitionTime;
  if (next.lastTransitionTime) return next.lastTransitionTime;
  const previousMs = existing && opts.distinctSeconds ? Date.parse(existing.lastTransitionTime) : Number.NaN;
  return formatRFC3339(Number.isNaN(previousMs) ? nowMs : Math.max(nowMs, previousMs + 1000));
}

/** The new status, with null for each top-level field it no longer has (merge patch deletes those). */
export function statusMergePatch<S extends object>(current: S | undefined, next: S): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...(next as Record<string, unknown>) };
  for (const key of Object.keys(current ?? {})) if (!(key in next)) patch[key] = null;
  return patch;
}
