// When a CocoonSet with an idle or expiry policy is due, and what the status says about it (docs/idle.md).
// Pure: the set as last read, the clock's now, no I/O.
//
// The set is idle since the latest of three times, each durable across operator restarts:
//   - the last-activity annotation (a time in the future counts as now);
//   - the last spec change and the time the set last became Running, kept together as
//     status.idleClockStart: the status writer stamps it with the time of the first status it writes
//     for a new generation, or the first status that turns the phase to Running. It is written in
//     the same status patch as that observedGeneration or phase, so a restart never loses it. A
//     set whose policy is new (no idleClockStart yet) starts its clock when the operator first
//     sees the policy. A pass whose cache has not shown the operator's own last status yet may
//     restamp it a moment later: the clock may start late by the cache's lag, never early.

import type { CocoonSet, CocoonSetPhase } from "../apis/v1/types.ts";
import { formatRFC3339Nano, parseRFC3339 } from "../rfc3339.ts";
import type { ExpiryPolicy, IdlePolicy, IdleSuspendPolicy } from "./policy.ts";

/** The status fields of the policy; each omitted when it does not apply. */
export interface IdleStatusFields {
  idleClockStart?: string;
  idleSuspendAt?: string;
  expireAt?: string;
  /** When the ExpiringSoon notice for this expireAt was given: a Delete waits its grace from here. */
  expiryNoticedAt?: string;
  /** The idleSuspendAt whose IdleSuspendSoon notice was given. */
  idleSuspendNoticedFor?: string;
}

/**
 * The policy's status fields for the status written with `phase` at `nowMs`. idleSuspendAt shows
 * only while the set is Running and not suspended: any other phase restarts the clock once the set
 * is Running again, so there is nothing to foresee.
 */
export function idleStatusFields(
  cs: CocoonSet,
  policy: IdlePolicy,
  phase: CocoonSetPhase,
  nowMs: number,
): IdleStatusFields {
  const fields: IdleStatusFields = {};
  if (policy.idle) {
    const previous = cs.status?.idleClockStart;
    const stored = parseRFC3339(previous);
    const start = stored === undefined || restartsIdleClock(cs, phase) ? nowMs : stored;
    fields.idleClockStart = formatRFC3339Nano(start);
    if (phase === "Running" && !cs.spec.suspend) {
      const at = idleSuspendAtMs(policy.idle, start, nowMs);
      fields.idleSuspendAt = formatRFC3339Nano(at);
      // The pass that reaches the notice window gives the notice (notices()).
      if (policy.noticeBeforeMs > 0 && nowMs >= at - policy.noticeBeforeMs) {
        fields.idleSuspendNoticedFor = fields.idleSuspendAt;
      }
    }
  }
  if (policy.expiry) {
    fields.expireAt = formatRFC3339Nano(policy.expiry.atMs);
    const noticedAt = expiryNoticedAtMs(cs, policy.expiry);
    if (noticedAt !== undefined) fields.expiryNoticedAt = formatRFC3339Nano(noticedAt);
    else if (
      pendingExpiry(cs, policy) &&
      givesExpiryNotice(policy, policy.expiry) &&
      nowMs >= policy.expiry.atMs - policy.noticeBeforeMs
    ) {
      fields.expiryNoticedAt = formatRFC3339Nano(nowMs);
    }
  }
  return fields;
}

/**
 * Whether an expiry gives notice: with notice-before above zero, and always for a Delete with a grace,
 * which counts from the notice.
 */
function givesExpiryNotice(policy: IdlePolicy, expiry: ExpiryPolicy): boolean {
  return policy.noticeBeforeMs > 0 || (expiry.action === "Delete" && expiry.deleteGraceMs > 0);
}

/** When the last status says the notice of this very expiry was given; undefined when it was not. */
function expiryNoticedAtMs(cs: CocoonSet, expiry: ExpiryPolicy): number | undefined {
  if (cs.status?.expireAt === undefined || parseRFC3339(cs.status.expireAt) !== expiry.atMs) return undefined;
  return parseRFC3339(cs.status.expiryNoticedAt);
}

/**
 * When an expire-action Delete deletes: at expire-at, and no sooner than the grace after its notice
 * (not yet given: it is given now, or at the start of its window, whichever is later).
 */
function expiryDeleteAtMs(cs: CocoonSet, policy: IdlePolicy, expiry: ExpiryPolicy, nowMs: number): number {
  const noticedAt = expiryNoticedAtMs(cs, expiry) ?? Math.max(nowMs, expiry.atMs - policy.noticeBeforeMs);
  return Math.max(expiry.atMs, noticedAt + expiry.deleteGraceMs);
}

/** When the expiry acts: expire-at for a Suspend, later for a Delete within its grace. */
function expiryActsAtMs(cs: CocoonSet, policy: IdlePolicy, expiry: ExpiryPolicy, nowMs: number): number {
  return expiry.action === "Delete" ? expiryDeleteAtMs(cs, policy, expiry, nowMs) : expiry.atMs;
}

export type Notice =
  | { kind: "expiry"; expiry: ExpiryPolicy; actsAtMs: number }
  | { kind: "idle-suspend"; idle: IdleSuspendPolicy; atMs: number };

/**
 * The Warning notices due at nowMs that the last status does not record as given: an expiry within
 * notice-before of its time (or already past it), an idle suspend within notice-before of it.
 */
export function dueNotices(cs: CocoonSet, policy: IdlePolicy, nowMs: number): Notice[] {
  if (cs.metadata.deletionTimestamp) return [];
  const out: Notice[] = [];
  const expiry = pendingExpiry(cs, policy);
  if (
    expiry &&
    givesExpiryNotice(policy, expiry) &&
    nowMs >= expiry.atMs - policy.noticeBeforeMs &&
    expiryNoticedAtMs(cs, expiry) === undefined
  ) {
    out.push({ kind: "expiry", expiry, actsAtMs: expiryActsAtMs(cs, policy, expiry, nowMs) });
  }
  const idle = armedIdle(cs, policy);
  if (idle && policy.noticeBeforeMs > 0) {
    const at = idleSuspendAtMs(idle.policy, idle.startMs, nowMs);
    const noticed = cs.status?.idleSuspendNoticedFor;
    if (nowMs >= at - policy.noticeBeforeMs && nowMs < at && parseRFC3339(noticed) !== at) {
      out.push({ kind: "idle-suspend", idle: idle.policy, atMs: at });
    }
  }
  return out;
}

/** The time of the next thing the policy does to the set (a suspend or a delete), for the gauge. */
export function nextActionAtMs(cs: CocoonSet, policy: IdlePolicy, nowMs: number): number | undefined {
  if (cs.metadata.deletionTimestamp) return undefined;
  const times: number[] = [];
  const expiry = pendingExpiry(cs, policy);
  if (expiry) times.push(expiryActsAtMs(cs, policy, expiry, nowMs));
  const idle = armedIdle(cs, policy);
  if (idle) times.push(idleSuspendAtMs(idle.policy, idle.startMs, nowMs));
  return times.length === 0 ? undefined : Math.min(...times);
}

/** A status for a generation the last status did not see, or the first Running one, restarts the clock. */
function restartsIdleClock(cs: CocoonSet, phase: CocoonSetPhase): boolean {
  const generation = cs.metadata.generation ?? 0;
  if ((cs.status?.observedGeneration ?? 0) !== generation) return true;
  return phase === "Running" && cs.status?.phase !== "Running";
}

/** The time a set whose clock started at startMs is idle-suspended, as seen at nowMs. */
function idleSuspendAtMs(idle: IdleSuspendPolicy, startMs: number, nowMs: number): number {
  return idleSinceMs(idle, startMs, nowMs) + idle.afterMs;
}

/**
 * How far ahead of the operator's clock a reported use may be and still count (as now): clocks
 * differ by a little. A stamp further ahead is clamped away (it counts as no use, and the step warns),
 * so a stamp in the far future cannot keep a set from ever going idle.
 */
export const MAX_ACTIVITY_AHEAD_MS = 5 * 60_000;

/** Whether a reported use is too far ahead of nowMs to count. */
export function isFarFuture(activityMs: number, nowMs: number): boolean {
  return activityMs > nowMs + MAX_ACTIVITY_AHEAD_MS;
}

function idleSinceMs(idle: IdleSuspendPolicy, startMs: number, nowMs: number): number {
  const uses = [idle.lastActivityMs, idle.leaseRenewMs].filter(
    (at): at is number => at !== undefined && !isFarFuture(at, nowMs),
  );
  return Math.max(startMs, ...uses.map((at) => Math.min(at, nowMs)));
}

export type IdleVerdict =
  | { action: "none" }
  | { action: "idle-suspend"; idleForMs: number; idle: IdleSuspendPolicy }
  | { action: "expire"; expiry: ExpiryPolicy };

const NONE: IdleVerdict = { action: "none" };

/** What the policy asks of the set now: expiry first (it is the stronger), then idleness. */
export function idleVerdict(cs: CocoonSet, policy: IdlePolicy, nowMs: number): IdleVerdict {
  if (cs.metadata.deletionTimestamp) return NONE;
  const expiry = pendingExpiry(cs, policy);
  if (expiry && nowMs >= expiryActsAtMs(cs, policy, expiry, nowMs)) return { action: "expire", expiry };
  const idle = armedIdle(cs, policy);
  if (idle && nowMs >= idleSuspendAtMs(idle.policy, idle.startMs, nowMs)) {
    return {
      action: "idle-suspend",
      idleForMs: nowMs - idleSinceMs(idle.policy, idle.startMs, nowMs),
      idle: idle.policy,
    };
  }
  return NONE;
}

/**
 * The longest wait asked for: a Node timer longer than 2^31-1 ms fires at once, so a deadline months
 * away is approached in daily passes (each one reads the cache only).
 */
export const MAX_DEADLINE_WAIT_MS = 24 * 60 * 60_000;

/**
 * Milliseconds from nowMs to the earliest deadline still ahead (the pass requeues then, or after
 * MAX_DEADLINE_WAIT_MS at the latest), or undefined when none is: a set without a policy, or with
 * nothing left to do, is not woken.
 */
export function nextDeadlineInMs(cs: CocoonSet, policy: IdlePolicy, nowMs: number): number | undefined {
  if (cs.metadata.deletionTimestamp) return undefined;
  const deadlines: number[] = [];
  const expiry = pendingExpiry(cs, policy);
  if (expiry) deadlines.push(expiry.atMs - policy.noticeBeforeMs, expiryActsAtMs(cs, policy, expiry, nowMs));
  const idle = armedIdle(cs, policy);
  if (idle) {
    const at = idleSuspendAtMs(idle.policy, idle.startMs, nowMs);
    deadlines.push(at);
    if (policy.noticeBeforeMs > 0) deadlines.push(at - policy.noticeBeforeMs);
  }
  const ahead = deadlines.filter((at) => at > nowMs);
  return ahead.length === 0
    ? undefined
    : Math.min(Math.ceil(Math.min(...ahead) - nowMs), MAX_DEADLINE_WAIT_MS);
}

/** The expiry, unless what it does is done: a Suspend expiry of a set already suspended. */
function pendingExpiry(cs: CocoonSet, policy: IdlePolicy): ExpiryPolicy | undefined {
  const expiry = policy.expiry;
  if (!expiry || (expiry.action === "Suspend" && cs.spec.suspend)) return undefined;
  return expiry;
}

/**
 * The idle policy with its clock start, when the last status written says the set is Running at
 * its current generation, not suspended, with a clock start recorded.
 */
function armedIdle(
  cs: CocoonSet,
  policy: IdlePolicy,
): { policy: IdleSuspendPolicy; startMs: number } | undefined {
  const status = cs.status;
  if (!policy.idle || cs.spec.suspend || status?.phase !== "Running") return undefined;
  if ((status.observedGeneration ?? 0) !== (cs.metadata.generation ?? 0)) return undefined;
  const startMs = parseRFC3339(status.idleClockStart);
  return startMs === undefined ? undefined : { policy: policy.idle, startMs };
}
