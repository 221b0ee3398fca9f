// The suspend deadline of step 6 (decisions.md #2): `suspending-since` holds the RFC 3339 UTC time of
// the current entry into Suspending; after 3 minutes there the set reports Failed, and the next pass
// re-enters Suspending with a fresh deadline (behaviours.md item 28).

import type { CocoonSet } from "../apis/v1/types.ts";
import { ANN_SUSPENDING_SINCE } from "../contract/keys.ts";

export const SUSPEND_TIMEOUT_MS = 3 * 60 * 1000;

// Go's time.RFC3339 layout as time.Parse accepts it: fractional seconds are allowed, the zone is Z
// or a numeric offset.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

/** Milliseconds since the epoch, or undefined when the text is not an RFC 3339 timestamp. */
export function parseRFC3339(text: string | undefined): number | undefined {
  const match = text === undefined ? null : RFC3339.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second, fraction, zone] = match;
  const millis = (fraction ?? "").padEnd(3, "0").slice(0, 3);
  const ms = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}.${millis}${zone}`);
  if (Number.isNaN(ms)) return undefined;
  // Date.parse rolls 2026-02-31 over to March; Go rejects it, and so do we.
  const utc = new Date(ms + zoneOffsetMs(zone ?? "Z"));
  const sameDate =
    utc.getUTCFullYear() === Number(year) &&
    utc.getUTCMonth() + 1 === Number(month) &&
    utc.getUTCDate() === Number(day);
  return sameDate ? ms : undefined;
}

function zoneOffsetMs(zone: string): number {
  if (zone === "Z") return 0;
  const sign = zone.startsWith("-") ? -1 : 1;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(4, 6));
  return sign * (hours * 60 + minutes) * 60 * 1000;
}

/** Go's time.RFC3339 in UTC: whole seconds, `Z`. */
export function formatRFC3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Go's time.RFC3339Nano in UTC, as encoding/json writes a time.Time: trailing fraction zeros dropped. */
export function formatRFC3339Nano(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, (_, fraction: string) => {
    const trimmed = fraction.replace(/0+$/, "");
    return trimmed ? `.${trimmed}Z` : "Z";
  });
}

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
