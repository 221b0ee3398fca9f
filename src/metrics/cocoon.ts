// The cocoon_operator_* collectors both reconcilers write to (docs/observability.md), registered on the
// process registry next to the controller-runtime metrics. Object names are never labels beyond
// namespace and cocoonset, as upstream.

import { COCOONSET_PHASES } from "../apis/v1/types.ts";
import { metricsRegistry } from "../controller/metrics.ts";
import { Counter, Gauge, Histogram } from "../controller/prom.ts";

const SET_LABELS = ["namespace", "cocoonset"] as const;
/** Phase-duration buckets of the Go operator: 10 s … 30 min. */
const PHASE_BUCKETS = [10, 30, 60, 180, 600, 1800];

function counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return new Counter({ name: `cocoon_operator_${name}`, help, labelNames, registers: [metricsRegistry] });
}

export const subagentRebuildTotal = counter(
  "subagent_rebuild_total",
  "Pods deleted for recreate within the rebuild budget.",
  SET_LABELS,
);
export const subagentDeadLetterTotal = counter(
  "subagent_dead_letter_total",
  "Pods parked with the dead-letter annotation after the rebuild budget ran out.",
  SET_LABELS,
);
export const slotReleasePodsDeletedTotal = counter(
  "slot_release_pods_deleted_total",
  "Pods deleted by a hibernatePolicy=release suspend to free their scheduling seats.",
  SET_LABELS,
);
export const slotReleaseWakeUnschedulableTotal = counter(
  "slot_release_wake_unschedulable_total",
  "Passes that saw a released main's wake pod Unschedulable.",
  SET_LABELS,
);
export const slotReleaseWakeTotal = counter(
  "slot_release_wake_total",
  "Released mains woken, by where they landed (hint-node or pool).",
  [...SET_LABELS, "placement"] as const,
);
export const migrateUnschedulableTotal = counter(
  "migrate_unschedulable_total",
  "Passes that saw a migrating main Unschedulable on its target.",
  SET_LABELS,
);
export const lifecycleStateFailedObservedTotal = counter(
  "lifecycle_state_failed_observed_total",
  "Mains observed with vk-cocoon lifecycle-state=failed, by the set's phase.",
  ["phase"] as const,
);
export const hibernatePhaseDurationSeconds = new Histogram({
  name: "cocoon_operator_hibernate_phase_duration_seconds",
  help: "Time a CocoonHibernation spent hibernating, by result (ok or timeout).",
  labelNames: ["result"] as const,
  buckets: PHASE_BUCKETS,
  registers: [metricsRegistry],
});
export const wakePhaseDurationSeconds = new Histogram({
  name: "cocoon_operator_wake_phase_duration_seconds",
  help: "Time a CocoonHibernation spent waking, by result (ok or timeout).",
  labelNames: ["result"] as const,
  buckets: PHASE_BUCKETS,
  registers: [metricsRegistry],
});
export const idleSuspendTotal = counter(
  "idle_suspend_total",
  "Sets suspended by the operator because they were idle for their suspend-after-idle.",
  SET_LABELS,
);
export const expiredTotal = counter(
  "expired_total",
  "Sets that reached their expire-at, by the expire-action taken (Suspend or Delete).",
  [...SET_LABELS, "action"] as const,
);
export const nextDeadlineTimestampSeconds = new Gauge({
  name: "cocoon_operator_idle_next_deadline_timestamp_seconds",
  help: "When the idle or expiry policy next suspends or deletes the set (Unix time); absent when it will not.",
  labelNames: SET_LABELS,
  registers: [metricsRegistry],
});
/** Parked durations: a minute … a week. */
const PARKED_BUCKETS = [60, 600, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600];
export const parkedDurationSeconds = new Histogram({
  name: "cocoon_operator_parked_duration_seconds",
  help: "Time a set suspended for idleness or expiry stayed suspended, observed when it is resumed.",
  buckets: PARKED_BUCKETS,
  registers: [metricsRegistry],
});

export const snapshotDeletesTotal = counter(
  "snapshot_deletes_total",
  "Snapshot tag and manifest deletes asked of the registry, by result (deleted, including already absent, or failed).",
  ["result"] as const,
);
// Both series exist from the start, so increase() and rate() see the first delete and the first failure.
for (const result of ["deleted", "failed"]) snapshotDeletesTotal.inc({ result }, 0);

/** The phase of every CocoonSet in the cache, read at scrape time ("" before the first status). */
let setPhases: () => Iterable<string> = () => [];

/** The phases of the cached sets at scrape time: the operator's informer, once it runs. */
export function observeSetPhases(phases: () => Iterable<string>): void {
  setPhases = phases;
}

new Gauge({
  name: "cocoon_operator_cocoonsets",
  help: "CocoonSets in the operator's cache, by status.phase (Pending before the first status).",
  labelNames: ["phase"] as const,
  registers: [metricsRegistry],
  // Every phase has a series, 0 when no set is in it.
  collect() {
    const counts = new Map<string, number>(COCOONSET_PHASES.map((phase) => [phase, 0]));
    for (const phase of setPhases()) {
      const key = phase || "Pending";
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    this.reset();
    for (const [phase, count] of counts) this.set({ phase }, count);
  },
});
