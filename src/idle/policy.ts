// The idle-suspend and expiry policy of a CocoonSet, read from its annotations (docs/idle.md): a
// per-set policy is an annotation, so the CRD specs stay as they are. Pure: a bad value becomes a
// problem message, and the part of the policy it belongs to is ignored (never a suspend, never a
// delete on a typo).

import { parseRFC3339 } from "../rfc3339.ts";
import { type DurationParse, formatGoDuration, msToNs, nsToMs, parseGoDuration } from "./duration.ts";

/** Go duration: a Running set idle this long is suspended. */
export const ANN_SUSPEND_AFTER_IDLE = "cocoonset.cocoonstack.io/suspend-after-idle";
/** RFC 3339: the last use of the set, written by whatever knows (a gateway, the agent, a person). */
export const ANN_LAST_ACTIVITY = "cocoonset.cocoonstack.io/last-activity";
/** RFC 3339: when the set expires. */
export const ANN_EXPIRE_AT = "cocoonset.cocoonstack.io/expire-at";
/** Suspend (default) or Delete: what expiry does. */
export const ANN_EXPIRE_ACTION = "cocoonset.cocoonstack.io/expire-action";
/** Go duration (0 turns the notice off): how long before a suspend or an expiry its Warning comes. */
export const ANN_NOTICE_BEFORE = "cocoonset.cocoonstack.io/notice-before";
/**
 * Go duration: an expire-action Delete deletes no sooner than this after its ExpiringSoon notice,
 * so an expire-at already past when it is written does not delete the set at once.
 */
export const ANN_EXPIRE_DELETE_GRACE = "cocoonset.cocoonstack.io/expire-delete-grace";
export const DEFAULT_NOTICE_BEFORE_MS = 10 * 60_000;
export const DEFAULT_EXPIRE_DELETE_GRACE_MS = 60 * 60_000;
/**
 * RFC 3339, written by the operator with the spec.suspend it sets for idleness or expiry, and removed
 * once the set is resumed: the start of the time parked, durable across operator restarts.
 */
export const ANN_PARKED_AT = "cocoonset.cocoonstack.io/parked-at";

/**
 * The annotations that set the policy. A change to one of them passes the CocoonSet watch (which
 * drops every other annotation-only patch), so `kubectl annotate` on a running set arms it at once.
 * last-activity is not among them: a touch only postpones, and the pass already armed for the old
 * deadline reads it.
 */
export const POLICY_ANNOTATIONS = [
  ANN_SUSPEND_AFTER_IDLE,
  ANN_EXPIRE_AT,
  ANN_EXPIRE_ACTION,
  ANN_NOTICE_BEFORE,
  ANN_EXPIRE_DELETE_GRACE,
] as const;

export function idlePolicyAnnotationsChanged(
  oldAnnotations: Readonly<Record<string, string>> | undefined,
  newAnnotations: Readonly<Record<string, string>> | undefined,
): boolean {
  return POLICY_ANNOTATIONS.some((key) => oldAnnotations?.[key] !== newAnnotations?.[key]);
}

export const EXPIRE_ACTIONS = ["Suspend", "Delete"] as const;
export type ExpireAction = (typeof EXPIRE_ACTIONS)[number];
export const DEFAULT_EXPIRE_ACTION: ExpireAction = "Suspend";

export interface IdleSuspendPolicy {
  /** The idle time that suspends a Running set, in milliseconds (> 0). */
  afterMs: number;
  /** The duration as Go prints it ("30m0s"). */
  after: string;
  /** The last-activity annotation, when present. */
  lastActivityMs?: number;
  /** The renewal time of the set's activity Lease (activity.ts), when it has one. */
  leaseRenewMs?: number;
}

export interface ExpiryPolicy {
  atMs: number;
  action: ExpireAction;
  /** Delete only: the least time from the ExpiringSoon notice to the delete. */
  deleteGraceMs: number;
}

export interface IdlePolicy {
  /** Absent when the annotation is absent or one of its values is bad. */
  idle?: IdleSuspendPolicy;
  /** Absent when expire-at is absent or expire-at or expire-action is bad. */
  expiry?: ExpiryPolicy;
  /** How long before a deadline its Warning event comes; 0: none. */
  noticeBeforeMs: number;
  /** For each part of the policy a bad value turns off, a message naming the value and the part. */
  problems: string[];
}

/** `leaseRenewMs`: the renewal of the set's activity Lease, another report of its last use. */
export function readIdlePolicy(
  annotations: Readonly<Record<string, string>> | undefined,
  leaseRenewMs?: number,
): IdlePolicy {
  const problems: string[] = [];
  const noticeBeforeMs = durationOrDefault(
    annotations,
    ANN_NOTICE_BEFORE,
    DEFAULT_NOTICE_BEFORE_MS,
    problems,
  );
  const policy: IdlePolicy = { noticeBeforeMs, problems };
  const after = annotations?.[ANN_SUSPEND_AFTER_IDLE];
  if (after !== undefined) {
    const duration = positiveDuration(after);
    const lastActivity = annotations?.[ANN_LAST_ACTIVITY];
    const lastActivityMs = lastActivity === undefined ? undefined : parseRFC3339(lastActivity);
    if (typeof duration === "string") {
      problems.push(`${ANN_SUSPEND_AFTER_IDLE}=${JSON.stringify(after)}: ${duration}; idle suspend is off`);
    } else if (lastActivity !== undefined && lastActivityMs === undefined) {
      problems.push(
        `${ANN_LAST_ACTIVITY}=${JSON.stringify(lastActivity)} is not an RFC 3339 time; idle suspend is off`,
      );
    } else {
      policy.idle = {
        afterMs: nsToMs(duration.ns),
        after: formatGoDuration(duration.ns),
        ...(lastActivityMs === undefined ? {} : { lastActivityMs }),
        ...(leaseRenewMs === undefined ? {} : { leaseRenewMs }),
      };
    }
  }
  const expireAt = annotations?.[ANN_EXPIRE_AT];
  const action = annotations?.[ANN_EXPIRE_ACTION];
  if (expireAt !== undefined) {
    const atMs = parseRFC3339(expireAt);
    if (atMs === undefined) {
      problems.push(`${ANN_EXPIRE_AT}=${JSON.stringify(expireAt)} is not an RFC 3339 time; expiry is off`);
    } else if (action !== undefined && !isExpireAction(action)) {
      problems.push(
        `${ANN_EXPIRE_ACTION}=${JSON.stringify(action)} is not one of ${EXPIRE_ACTIONS.join(", ")}; expiry is off`,
      );
    } else {
      const deleteGraceMs = durationOrDefault(
        annotations,
        ANN_EXPIRE_DELETE_GRACE,
        DEFAULT_EXPIRE_DELETE_GRACE_MS,
        problems,
      );
      policy.expiry = { atMs, action: action ?? DEFAULT_EXPIRE_ACTION, deleteGraceMs };
    }
  }
  return policy;
}

function isExpireAction(value: string): value is ExpireAction {
  return (EXPIRE_ACTIONS as readonly string[]).includes(value);
}

/**
 * A Go duration of zero or more in ms, or the default when the annotation is absent or bad (a bad
 * value only loses its setting: the notice and the grace stay at their defaults, never shorter).
 */
function durationOrDefault(
  annotations: Readonly<Record<string, string>> | undefined,
  key: string,
  defaultMs: number,
  problems: string[],
): number {
  const text = annotations?.[key];
  if (text === undefined) return defaultMs;
  const parsed = parseGoDuration(text);
  const why = !parsed.ok ? parsed.error : parsed.ns < 0n ? "the duration must not be negative" : undefined;
  if (why === undefined && parsed.ok) return nsToMs(parsed.ns);
  problems.push(
    `${key}=${JSON.stringify(text)}: ${why}; using the default ${formatGoDuration(msToNs(defaultMs))}`,
  );
  return defaultMs;
}

/** A Go duration above zero, or why not. */
function positiveDuration(text: string): Extract<DurationParse, { ok: true }> | string {
  const parsed = parseGoDuration(text);
  if (!parsed.ok) return parsed.error;
  if (parsed.ns <= 0n) return "the duration must be above zero";
  return parsed;
}
