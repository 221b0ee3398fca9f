// The I/O of the idle and expiry policy, run as one step of the CocoonSet pass: warn
// about bad policy values, record the end of a parking, and act on the verdict of deadlines.ts.
// An idle or expiry suspend is a spec.suspend=true patch, so the pass goes on into the ordinary
// suspend (step 6) with everything that guards the VMs' live state; an expiry delete goes through
// the ordinary finalizer and teardown. Both writes carry the resourceVersion the verdict was made
// on: a set changed since (a last-activity touch the cache did not show yet, an extended expire-at)
// is looked at again instead of being suspended or deleted on stale data.

import type { CocoonSet } from "../apis/v1/types.ts";
import { isConflict, isNotFound } from "../controller/errors.ts";
import type { Result } from "../controller/reconciler.ts";
import { COCOONSETS } from "../controller/resources.ts";
import {
  expiredTotal,
  idleSuspendTotal,
  nextDeadlineTimestampSeconds,
  parkedDurationSeconds,
} from "../metrics/cocoon.ts";
import {
  type ActivitySource,
  CONTINUE,
  finish,
  type Pass,
  type Step,
  type StepOutcome,
} from "../pass/pass.ts";
import { patchSetAnnotations, setEvent } from "../pass/writes.ts";
import { formatRFC3339Nano, parseRFC3339 } from "../rfc3339.ts";
import { activityLeaseName } from "./activity.ts";
import {
  dueNotices,
  idleVerdict,
  isFarFuture,
  MAX_ACTIVITY_AHEAD_MS,
  type Notice,
  nextActionAtMs,
  nextDeadlineInMs,
} from "./deadlines.ts";
import { formatGoDuration, msToNs } from "./duration.ts";
import {
  ANN_EXPIRE_AT,
  ANN_LAST_ACTIVITY,
  ANN_PARKED_AT,
  type IdleSuspendPolicy,
  readIdlePolicy,
} from "./policy.ts";

export const REASON_IDLE_SUSPENDED = "IdleSuspended";
export const REASON_EXPIRED = "Expired";
export const REASON_IDLE_POLICY_INVALID = "IdlePolicyInvalid";
export const REASON_EXPIRING_SOON = "ExpiringSoon";
export const REASON_ACTIVITY_IN_FUTURE = "ActivityInFuture";
export const REASON_IDLE_SUSPEND_SOON = "IdleSuspendSoon";

/** A write refused because the set changed after the cache's copy: look again after this. */
export const STALE_SET_RETRY_MS = 1_000;

/** The policy's step, run before the generation stamp (src/cocoonset/reconciler.ts). */
export function idlePolicyStep(): Step {
  return applyIdlePolicy;
}

/**
 * A pass's result, requeued no later than the set's next idle or expiry deadline: the operator wakes
 * for the deadline instead of polling. An immediate requeue stays as it is (its pass computes the
 * deadline again); a set without a pending deadline keeps its result.
 */
export function wakeForPolicyDeadline(
  result: Result,
  cs: CocoonSet,
  now: number,
  activity: ActivitySource | undefined,
): Result {
  const policy = readIdlePolicy(cs.metadata.annotations, activity?.lastUseMs(cs));
  showNextAction(cs, nextActionAtMs(cs, policy, now));
  if (result.requeue && !result.requeueAfterMs) return result;
  const inMs = nextDeadlineInMs(cs, policy, now);
  if (inMs === undefined) return result;
  return { ...result, requeueAfterMs: Math.min(result.requeueAfterMs || inMs, inMs) };
}

/** The gauge of the set's next policy action; the set's series goes when there is none. */
function showNextAction(cs: CocoonSet, atMs: number | undefined): void {
  const labels = { namespace: cs.metadata.namespace ?? "", cocoonset: cs.metadata.name ?? "" };
  if (atMs === undefined) nextDeadlineTimestampSeconds.remove(labels);
  else nextDeadlineTimestampSeconds.set(labels, atMs / 1000);
}

async function applyIdlePolicy(pass: Pass): Promise<StepOutcome> {
  const activity = pass.deps.activity;
  const policy = readIdlePolicy(pass.cs.metadata.annotations, activity?.lastUseMs(pass.cs));
  for (const problem of policy.problems) setEvent(pass, "Warning", REASON_IDLE_POLICY_INVALID, problem);
  const now = pass.deps.clock.now();
  if (policy.idle) {
    await activity?.ensureReportable(pass.cs, pass.deps.client);
    warnFarFuture(pass, policy.idle, now);
  }
  for (const notice of dueNotices(pass.cs, policy, now)) giveNotice(pass, notice, now);
  await endParking(pass, now);
  const verdict = idleVerdict(pass.cs, policy, now);
  if (verdict.action === "none") return CONTINUE;
  const labels = { namespace: pass.namespace, cocoonset: pass.name };
  if (verdict.action === "idle-suspend") {
    if (!(await park(pass, now))) return finish({ requeueAfterMs: STALE_SET_RETRY_MS });
    idleSuspendTotal.inc(labels);
    const idleFor = formatGoDuration(msToNs(Math.floor(verdict.idleForMs / 1000) * 1000));
    setEvent(
      pass,
      "Normal",
      REASON_IDLE_SUSPENDED,
      `idle for ${idleFor} (suspend-after-idle ${verdict.idle.after}): suspending`,
    );
    return CONTINUE;
  }
  const { expiry } = verdict;
  const reached = `expire-at ${formatRFC3339Nano(expiry.atMs)} reached`;
  if (expiry.action === "Suspend") {
    if (!(await park(pass, now))) return finish({ requeueAfterMs: STALE_SET_RETRY_MS });
    expiredTotal.inc({ ...labels, action: expiry.action });
    setEvent(pass, "Normal", REASON_EXPIRED, `${reached}: suspending`);
    return CONTINUE;
  }
  try {
    await pass.deps.client.delete(COCOONSETS, pass.namespace, pass.name, {
      preconditions: {
        uid: pass.cs.metadata.uid ?? "",
        resourceVersion: pass.cs.metadata.resourceVersion ?? "",
      },
    });
  } catch (error) {
    if (isNotFound(error)) return finish();
    if (isConflict(error)) return finish({ requeueAfterMs: STALE_SET_RETRY_MS });
    throw error;
  }
  expiredTotal.inc({ ...labels, action: expiry.action });
  setEvent(pass, "Normal", REASON_EXPIRED, `${reached}: deleting`);
  // The deletion's own watch event starts the teardown pass.
  return finish();
}

/** A reported use too far ahead of the operator's clock counts as none (deadlines.ts): say so. */
function warnFarFuture(pass: Pass, idle: IdleSuspendPolicy, now: number): void {
  const reports: [string, number | undefined][] = [
    [`the ${ANN_LAST_ACTIVITY} annotation`, idle.lastActivityMs],
    [`the Lease ${activityLeaseName(pass.name)}`, idle.leaseRenewMs],
  ];
  for (const [where, at] of reports) {
    if (at === undefined || !isFarFuture(at, now)) continue;
    setEvent(
      pass,
      "Warning",
      REASON_ACTIVITY_IN_FUTURE,
      `${where} reports a use at ${formatRFC3339Nano(at)}, more than ${formatGoDuration(msToNs(MAX_ACTIVITY_AHEAD_MS))} ahead of the operator's clock: not counted; write the reporter's current time (kubectl cocoon touch uses the API server's)`,
    );
  }
}

/** The Warning a while before the policy acts (notice-before), so whoever uses the set can keep it. */
function giveNotice(pass: Pass, notice: Notice, now: number): void {
  const when = (atMs: number) =>
    `${formatRFC3339Nano(atMs)} (in ${formatGoDuration(msToNs(Math.max(0, Math.ceil((atMs - now) / 1000) * 1000)))})`;
  if (notice.kind === "idle-suspend") {
    setEvent(
      pass,
      "Warning",
      REASON_IDLE_SUSPEND_SOON,
      `idle (suspend-after-idle ${notice.idle.after}): suspending at ${when(notice.atMs)} unless it is used; record a use with kubectl cocoon touch ${pass.name} or the ${ANN_LAST_ACTIVITY} annotation`,
    );
    return;
  }
  const { expiry } = notice;
  const expireAt = `expire-at ${formatRFC3339Nano(expiry.atMs)}`;
  const message =
    expiry.action === "Delete"
      ? `${expireAt}: deleting the set at ${when(notice.actsAtMs)}, no sooner than expire-delete-grace ${formatGoDuration(msToNs(expiry.deleteGraceMs))} after this notice`
      : `${expireAt}: suspending the set at ${when(notice.actsAtMs)}`;
  setEvent(pass, "Warning", REASON_EXPIRING_SOON, `${message}; move or remove ${ANN_EXPIRE_AT} to keep it`);
}

/**
 * spec.suspend=true with the parking's start, in one patch conditional on the resourceVersion the
 * verdict saw; pass.cs follows the write so the rest of the pass suspends. False on a conflict.
 */
async function park(pass: Pass, now: number): Promise<boolean> {
  let updated: CocoonSet;
  try {
    updated = await pass.deps.client.patch<CocoonSet>(COCOONSETS, pass.namespace, pass.name, {
      metadata: {
        resourceVersion: pass.cs.metadata.resourceVersion,
        annotations: { [ANN_PARKED_AT]: formatRFC3339Nano(now) },
      },
      spec: { suspend: true },
    });
  } catch (error) {
    if (isConflict(error)) return false;
    throw error;
  }
  pass.cs.metadata = updated.metadata;
  pass.cs.spec = updated.spec;
  return true;
}

/** A set parked by the policy and resumed since (spec.suspend false): the time parked is observed. */
async function endParking(pass: Pass, now: number): Promise<void> {
  const parkedAt = pass.cs.metadata.annotations?.[ANN_PARKED_AT];
  if (parkedAt === undefined || pass.cs.spec.suspend) return;
  const since = parseRFC3339(parkedAt);
  await patchSetAnnotations(pass, { [ANN_PARKED_AT]: null });
  if (since !== undefined && now >= since) parkedDurationSeconds.observe((now - since) / 1000);
}
