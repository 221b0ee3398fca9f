// The CocoonPool reconciler (docs/pools.md): keeps `replicas` unclaimed members from the current
// template, rolls outdated ones gradually, hibernates a Suspended pool's booted members, and writes
// the pool's status. It creates no member while sets claimed from it come up (a bounded hold), so a
// burst of claims is not slowed by its own refill. Every delete and every suspend carries the
// member's cached resourceVersion, so neither lands on a member a claim has just bound. Deleting the
// pool deletes its unclaimed members; bound sets belong to their claims and stay. A settled pool
// writes nothing.

import { statusMergePatch } from "../apis/status.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonPool } from "../apis/v1alpha1/types.ts";
import { isDeepStrictEqual } from "../builtins.ts";
import type { Clock } from "../clock.ts";
import type { Client } from "../controller/client.ts";
import { type ApiError, isAlreadyExists, isConflict, isNotFound, isRefused } from "../controller/errors.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { COCOONPOOLS, COCOONSETS } from "../controller/resources.ts";
import type { Logger } from "../log.ts";
import { forgetPoolSeries } from "../metrics/forget.ts";
import { recordPoolMembers } from "../metrics/pool.ts";
import type { PoolView } from "./catalog.ts";
import { newMember, planPool, poolStatus, refillHold, withFinalizer, withoutFinalizer } from "./decide.ts";
import { MEMBER_EXPECTATION_TTL_MS, type MemberExpectations } from "./expectations.ts";
import {
  CONDITION_READY,
  FINALIZER_COCOONPOOL,
  REASON_CREATE_REFUSED,
  REASON_DELETE_REFUSED,
  REASON_FILLED,
  REASON_MEMBER_CREATED,
  REASON_MEMBER_DELETED,
  REASON_MEMBER_SUSPENDED,
  REASON_SUSPEND_REFUSED,
} from "./keys.ts";
import { generatedName } from "./names.ts";

/** A lost race (a bind took the member first) is looked at again after this. */
const CONFLICT_RETRY_MS = 100;

/**
 * A member write the API server refused as sent (403 or 422: an admission policy, a ResourceQuota):
 * the same write fails again until the template, the policy or the quota changes.
 */
interface Refusal {
  reason: string;
  message: string;
  error: ApiError;
}

function refusal(reason: string, write: string, error: ApiError): Refusal {
  return { reason, message: `the API server refused to ${write}: ${error.message}`, error };
}

export interface PoolDeps {
  client: Client;
  view: PoolView;
  expectations: MemberExpectations;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
}

export class PoolReconciler implements Reconciler {
  private readonly deps: PoolDeps;
  /** When each pool's refill hold began, by `<namespace>/<name>`. */
  private readonly heldSince = new Map<string, number>();

  constructor(deps: PoolDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request): Promise<Result> {
    const { view, expectations } = this.deps;
    const key = `${req.namespace}/${req.name}`;
    let pool = view.pool(req.namespace, req.name);
    if (!pool) {
      expectations.forget(key);
      this.heldSince.delete(key);
      forgetPoolSeries(req.namespace, req.name);
      return {};
    }
    const members = view.members(req.namespace, req.name);
    // The cache's events end the wait; the requeue covers a write it will never show.
    if (expectations.pending(key, members)) return { requeueAfterMs: MEMBER_EXPECTATION_TTL_MS };
    if (pool.metadata.deletionTimestamp) return this.finalize(pool, members, key);
    if (!(pool.metadata.finalizers ?? []).includes(FINALIZER_COCOONPOOL)) {
      // Before the first member, so none is left behind when the pool goes.
      pool = await this.deps.client.update<CocoonPool>(
        COCOONPOOLS,
        withFinalizer(pool, FINALIZER_COCOONPOOL),
      );
    }

    const plan = planPool(pool, members);
    const claimed = view.claimed(req.namespace, req.name);
    const now = this.deps.clock.now();
    const hold = refillHold(claimed, this.heldSince.get(key), now);
    if (hold.since === undefined) this.heldSince.delete(key);
    else this.heldSince.set(key, hold.since);
    for (const { member, held } of plan.held) {
      this.deps.events.event(
        pool,
        "Normal",
        held.reason,
        `left member CocoonSet ${member.metadata.name} as it is: ${held.message}`,
      );
    }
    let lostRace = false;
    let refused: Refusal | undefined;
    for (const member of plan.delete) {
      const outcome = await this.deleteMember(pool, member, key);
      lostRace = outcome === false || lostRace;
      if (typeof outcome === "object") refused ??= outcome;
    }
    for (const member of plan.suspend) {
      const outcome = await this.suspendMember(pool, member);
      lostRace = outcome === false || lostRace;
      if (typeof outcome === "object") refused ??= outcome;
    }
    const createRefused = await this.createMembers(pool, hold.until === undefined ? plan.create : 0, key);
    refused ??= createRefused;
    if (refused) {
      // The Ready condition and a Warning say why, and the failed pass makes the work queue back off.
      const status = poolStatus(pool, members, claimed.length, now, {
        reason: refused.reason,
        message: refused.message,
      });
      this.deps.events.event(pool, "Warning", refused.reason, refused.message);
      await this.writeStatus(pool, status);
      throw refused.error;
    }

    await this.writeStatus(pool, poolStatus(pool, members, claimed.length, now));
    if (lostRace) return { requeueAfterMs: CONFLICT_RETRY_MS };
    // The claimed sets' events end the hold sooner; this ends one whose wake never completes.
    return hold.until !== undefined && plan.create > 0 ? { requeueAfterMs: hold.until - now } : {};
  }

  /** Creates `count` members; the API server's refusal of one, if it refused any. */
  private async createMembers(pool: CocoonPool, count: number, key: string): Promise<Refusal | undefined> {
    let refused: Refusal | undefined;
    const creates = Array.from({ length: count }, async () => {
      const member = newMember(pool, generatedName(pool.metadata.name ?? ""));
      try {
        await this.deps.client.create<CocoonSet>(COCOONSETS, member.metadata.namespace ?? "", member);
      } catch (err) {
        // A name taken by chance: the next pass draws another.
        if (isAlreadyExists(err)) return;
        if (isRefused(err)) {
          refused = refusal(REASON_CREATE_REFUSED, "create a member CocoonSet", err);
          return;
        }
        throw err;
      }
      this.deps.expectations.created(key, member.metadata.name ?? "");
      this.deps.events.event(
        pool,
        "Normal",
        REASON_MEMBER_CREATED,
        `created member CocoonSet ${member.metadata.name}`,
      );
    });
    await Promise.all(creates);
    return refused;
  }

  /**
   * False when the member moved on since the cache saw it (bound, say): it is not deleted. The
   * API server's refusal when it refused the delete.
   */
  private async deleteMember(pool: CocoonPool, member: CocoonSet, key: string): Promise<boolean | Refusal> {
    const name = member.metadata.name ?? "";
    try {
      await this.deps.client.delete(COCOONSETS, member.metadata.namespace ?? "", name, {
        preconditions: {
          uid: member.metadata.uid ?? "",
          resourceVersion: member.metadata.resourceVersion ?? "",
        },
      });
    } catch (err) {
      if (isNotFound(err)) return true;
      if (isConflict(err)) return false;
      if (isRefused(err)) return refusal(REASON_DELETE_REFUSED, `delete member CocoonSet ${name}`, err);
      throw err;
    }
    this.deps.expectations.deleted(key, name);
    this.deps.events.event(
      pool,
      "Normal",
      REASON_MEMBER_DELETED,
      `deleted unclaimed member CocoonSet ${name}`,
    );
    return true;
  }

  /** As deleteMember, for the suspend of a booted member of a Suspended pool. */
  private async suspendMember(pool: CocoonPool, member: CocoonSet): Promise<boolean | Refusal> {
    const name = member.metadata.name ?? "";
    try {
      await this.deps.client.patch(COCOONSETS, member.metadata.namespace ?? "", name, {
        metadata: { resourceVersion: member.metadata.resourceVersion },
        spec: { suspend: true },
      });
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return false;
      if (isRefused(err)) return refusal(REASON_SUSPEND_REFUSED, `suspend member CocoonSet ${name}`, err);
      throw err;
    }
    this.deps.events.event(
      pool,
      "Normal",
      REASON_MEMBER_SUSPENDED,
      `hibernating booted member CocoonSet ${name}`,
    );
    return true;
  }

  private async writeStatus(pool: CocoonPool, next: NonNullable<CocoonPool["status"]>): Promise<void> {
    recordPoolMembers(pool.metadata.namespace ?? "", pool.metadata.name ?? "", {
      starting: next.starting ?? 0,
      ready: next.ready ?? 0,
      outdated: next.outdated ?? 0,
      claimed: next.claimed ?? 0,
    });
    if (isDeepStrictEqual(pool.status ?? {}, next)) return;
    await this.deps.client.patch(
      COCOONPOOLS,
      pool.metadata.namespace ?? "",
      pool.metadata.name ?? "",
      { status: statusMergePatch(pool.status, next) },
      { subresource: "status" },
    );
    const wasReady = pool.status?.conditions?.find((c) => c.type === CONDITION_READY)?.status === "True";
    const ready = next.conditions?.find((c) => c.type === CONDITION_READY);
    if (!wasReady && ready?.status === "True")
      this.deps.events.event(pool, "Normal", REASON_FILLED, ready.message);
  }

  /** Deletes every unclaimed member, then lets the pool go; bound sets stay with their claims. */
  private async finalize(pool: CocoonPool, members: readonly CocoonSet[], key: string): Promise<Result> {
    if (!(pool.metadata.finalizers ?? []).includes(FINALIZER_COCOONPOOL)) return {};
    let lostRace = false;
    for (const member of members) {
      if (member.metadata.deletionTimestamp) continue;
      lostRace = !(await this.deleteMember(pool, member, key)) || lostRace;
    }
    if (lostRace) return { requeueAfterMs: CONFLICT_RETRY_MS };
    // The next pass, once the cache shows every delete, drops the finalizer.
    const now = this.deps.view.members(pool.metadata.namespace ?? "", pool.metadata.name ?? "");
    if (this.deps.expectations.pending(key, now)) return { requeueAfterMs: MEMBER_EXPECTATION_TTL_MS };
    try {
      await this.deps.client.update<CocoonPool>(COCOONPOOLS, withoutFinalizer(pool, FINALIZER_COCOONPOOL));
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return {};
  }
}
