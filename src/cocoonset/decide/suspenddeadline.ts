// The suspend deadline of step 6: `suspending-since` holds the RFC 3339 UTC time of the current entry
// into Suspending; after 3 minutes there the set reports Failed, and the next pass re-enters
// Suspending with a fresh deadline, so a VM that cannot hibernate surfaces every 3 minutes.

import type { CocoonSet } from "../../apis/v1/types.ts";
import { ANN_SUSPENDING_SINCE } from "../../contract/keys.ts";
import { formatRFC3339, parseRFC3339 } from "../../rfc3339.ts";

export const SUSPEND_TIMEOUT_MS = 3 * 60 * 1000;

/** True once the set has been in Suspending for longer than the timeout (Go: time.Since > timeout). */
export function suspendDeadlinePassed(sinceMs: number, now: number): boolean {
  return now - sinceMs > SUSPEND_TIMEOUT_MS;
}

/**
 * What a pass that has not reached Suspended does with the deadline:
 * - `arm`: persist `suspending-since` = `since` (a fresh entry into Suspending: the set was in another
 *   phase, Failed after a timeout included, or the annotation is missing or unreadable); the deadline
 *   is not checked on this pass;
 * - `wait`: still within the deadline, stay Suspending;
 * - `expired`: report Failed with a SuspendTimedOut Warning.
 */
export type SuspendDeadline = { action: "arm"; since: string } | { action: "wait" } | { action: "expired" };

export function checkSuspendDeadline(cs: CocoonSet, now: number): SuspendDeadline {
  const since = parseRFC3339(cs.metadata.annotations?.[ANN_SUSPENDING_SINCE]);
  if (cs.status?.phase !== "Suspending" || since === undefined) {
    return { action: "arm", since: formatRFC3339(now) };
  }
  return suspendDeadlinePassed(since, now) ? { action: "expired" } : { action: "wait" };
}

/** Suspended landed: the annotation goes, when there is one to remove. */
export function shouldClearSuspendingSince(cs: CocoonSet): boolean {
  return cs.metadata.annotations?.[ANN_SUSPENDING_SINCE] !== undefined;
}
