// The series of an object that is gone: every collector labelled by a set (or a pool) forgets that
// object's series, whatever its other labels, so a cluster that keeps creating and deleting sets
// (branches, pool members, expiry) does not grow its scrape without end.

import {
  checkpointBranchesTotal,
  checkpointBranchFailuresTotal,
  checkpointBytesTotal,
  checkpointDurationSeconds,
  checkpointsTotal,
} from "./checkpoint.ts";
import {
  expiredTotal,
  idleSuspendTotal,
  migrateUnschedulableTotal,
  nextDeadlineTimestampSeconds,
  slotReleasePodsDeletedTotal,
  slotReleaseWakeTotal,
  slotReleaseWakeUnschedulableTotal,
  subagentDeadLetterTotal,
  subagentRebuildTotal,
} from "./cocoon.ts";
import { CLAIM_RESULTS, claimReadySeconds, claimsTotal, POOL_MEMBER_STATES, poolMembers } from "./pool.ts";

type Labels = Record<string, string>;

/** A collector and the values its labels beyond the object's own take. */
interface Labelled {
  collector: { remove(labels: Labels): void };
  extra?: { label: string; values: readonly string[] };
}

/** Every collector labelled by namespace and cocoonset. */
export const SET_SERIES: readonly Labelled[] = [
  { collector: subagentRebuildTotal },
  { collector: subagentDeadLetterTotal },
  { collector: slotReleasePodsDeletedTotal },
  { collector: slotReleaseWakeUnschedulableTotal },
  { collector: slotReleaseWakeTotal, extra: { label: "placement", values: ["hint-node", "pool"] } },
  { collector: migrateUnschedulableTotal },
  { collector: idleSuspendTotal },
  { collector: expiredTotal, extra: { label: "action", values: ["Suspend", "Delete"] } },
  { collector: nextDeadlineTimestampSeconds },
  { collector: checkpointDurationSeconds },
  { collector: checkpointBytesTotal },
  { collector: checkpointsTotal, extra: { label: "transition", values: ["ready", "pruned", "deleted"] } },
  { collector: checkpointBranchesTotal },
  { collector: checkpointBranchFailuresTotal },
];

/** Every collector labelled by namespace and pool. */
export const POOL_SERIES: readonly Labelled[] = [
  { collector: poolMembers, extra: { label: "state", values: POOL_MEMBER_STATES } },
  { collector: claimsTotal, extra: { label: "result", values: CLAIM_RESULTS } },
  { collector: claimReadySeconds },
];

function forget(series: readonly Labelled[], own: Labels): void {
  for (const { collector, extra } of series) {
    if (!extra) collector.remove(own);
    else for (const value of extra.values) collector.remove({ ...own, [extra.label]: value });
  }
}

/** The set is gone: none of its series remains. */
export function forgetSetSeries(namespace: string, cocoonset: string): void {
  forget(SET_SERIES, { namespace, cocoonset });
}

/** The pool is gone: none of its series remains. */
export function forgetPoolSeries(namespace: string, pool: string): void {
  forget(POOL_SERIES, { namespace, pool });
}
