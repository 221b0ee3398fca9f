// The cocoon_operator_pool_* and claim collectors (docs/pools.md, docs/observability.md). Labels are
// the namespace and the pool, never a claim's or member's name (one series each would grow without bound).

import { metricsRegistry } from "../controller/metrics.ts";
import { Counter, Gauge, Histogram } from "../controller/prom.ts";

const POOL_LABELS = ["namespace", "pool"] as const;

/** starting, ready, outdated (unclaimed members, outdated counted in starting or ready too) and claimed. */
export const POOL_MEMBER_STATES = ["starting", "ready", "outdated", "claimed"] as const;
export type PoolMemberState = (typeof POOL_MEMBER_STATES)[number];

export const poolMembers = new Gauge({
  name: "cocoon_operator_pool_members",
  help: "Members of a CocoonPool by state: starting, ready (to claim), outdated (an older template), claimed.",
  labelNames: [...POOL_LABELS, "state"] as const,
  registers: [metricsRegistry],
});

/** bound (a member won), conflict (another claim or writer won the member first), pending, pool_not_found. */
export const CLAIM_RESULTS = ["bound", "conflict", "pending", "pool_not_found"] as const;
export type ClaimResult = (typeof CLAIM_RESULTS)[number];

export const claimsTotal = new Counter({
  name: "cocoon_operator_claims_total",
  help: "CocoonClaim bind attempts by result: bound, conflict (lost the member to another writer), pending (no ready member), pool_not_found.",
  labelNames: [...POOL_LABELS, "result"] as const,
  registers: [metricsRegistry],
});

export const claimReadySeconds = new Histogram({
  name: "cocoon_operator_claim_ready_seconds",
  help: "Time from the operator's first sight of a CocoonClaim to its Ready condition turning True.",
  labelNames: POOL_LABELS,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
  registers: [metricsRegistry],
});

export function recordPoolMembers(
  namespace: string,
  pool: string,
  counts: Record<PoolMemberState, number>,
): void {
  for (const state of POOL_MEMBER_STATES) poolMembers.set({ namespace, pool, state }, counts[state]);
}
