// The CocoonClaim reconciler (docs/pools.md). A claim binds one ready member of its pool by an update
// that carries the member's resourceVersion: of claims racing for one member exactly one wins, the
// others try the next member or wait Pending with a reason until one is ready. The set, not the claim's
// status, records the bind (its claim label and controller ownerReference), so a bind survives a crash
// before the status write. Deleting the claim deletes its set, whose own finalizer then tears its VMs
// and snapshots down the usual way.

import { type ConditionUpdate, setStatusConditions, statusMergePatch } from "../apis/status.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonClaim, CocoonClaimStatus, CocoonPool } from "../apis/v1alpha1/types.ts";
import { isDeepStrictEqual } from "../builtins.ts";
import type { Clock } from "../clock.ts";
import { isControlledBy } from "../contract/pod.ts";
import type { Client } from "../controller/client.ts";
import { type ApiError, isConflict, isNotFound, isRefused, unlessNotFound } from "../controller/errors.ts";
import type { EventRecorder } from "../controller/events.ts";
import { type Reconciler, type Request, type Result, requestKey } from "../controller/reconciler.ts";
import { COCOONCLAIMS, COCOONSETS } from "../controller/resources.ts";
import type { HeldMember } from "../guestgate.ts";
import { type Held, heldAgainst } from "../holds.ts";
import type { Logger } from "../log.ts";
import { type ClaimResult, claimReadySeconds, claimsTotal } from "../metrics/pool.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import type { PoolView } from "./catalog.ts";
import {
  boundMember,
  boundSetReady,
  claimCandidates,
  memberReady,
  warmthOf,
  withFinalizer,
  withoutFinalizer,
} from "./decide.ts";
import {
  CONDITION_READY,
  FINALIZER_COCOONCLAIM,
  LABEL_CLAIM,
  LABEL_POOL,
  REASON_BIND_REFUSED,
  REASON_BOUND,
  REASON_CLAIM_READY,
  REASON_CLAIM_RELEASED,
  REASON_NO_READY_MEMBER,
  REASON_POOL_NOT_FOUND,
  REASON_SET_GONE,
  REASON_SET_READY,
  REASON_STARTING,
  REASON_WAKING,
} from "./keys.ts";

export interface ClaimDeps {
  client: Client;
  view: PoolView;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  /**
   * A member of the bound set its guest hooks hold back (docs/guest.md), this claim's PostClaim hooks
   * among them; absent: no guest hooks. The set's own status may still say Running from before the bind.
   */
  guestHeld?: (cs: CocoonSet, claim: string) => HeldMember | undefined;
}

/**
 * A claim whose set's hooks still run is looked at again after this at the latest; the record each
 * phase writes on a pod wakes it sooner.
 */
const GUEST_HOOKS_POLL_MS = 5_000;

interface Pending {
  reason: string;
  message: string;
}

export class ClaimReconciler implements Reconciler {
  private readonly deps: ClaimDeps;
  /** Binds this process made that the set cache may not show yet: the set, by claim. */
  private readonly recentBinds = new ClaimMemo<string>();
  /**
   * Claims whose last bind failed without an answer the server surely gave (a timeout, a 5xx): the
   * update may have been applied, so the next bind looks on the API server for a set this claim
   * already controls before it tries another member.
   */
  private readonly unsureBinds = new ClaimMemo<true>();
  /**
   * Members (`<namespace>/<name>`) a worker of this process is binding now: the other workers pass
   * them over instead of losing the compare-and-swap to their own process.
   */
  private readonly binding = new Set<string>();
  /** When this process first saw each claim not yet Ready (the latency histogram's start). */
  private readonly firstSeen = new ClaimMemo<number>();
  /** The resourceVersion of each claim this process last patched the status of. */
  private readonly patchedOver = new ClaimMemo<string>();

  constructor(deps: ClaimDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request): Promise<Result> {
    let claim = this.deps.view.claim(req.namespace, req.name);
    if (!claim) {
      this.recentBinds.forget(req);
      this.unsureBinds.forget(req);
      this.firstSeen.forget(req);
      this.patchedOver.forget(req);
      return {};
    }
    if (claim.metadata.deletionTimestamp) return this.release(claim);
    if (!(claim.metadata.finalizers ?? []).includes(FINALIZER_COCOONCLAIM)) {
      // Before the bind, so a bound set never outlives its claim.
      claim = await this.deps.client.update<CocoonClaim>(
        COCOONCLAIMS,
        withFinalizer(claim, FINALIZER_COCOONCLAIM),
      );
    }
    if (this.firstSeen.get(claim) === undefined && !isReady(claim))
      this.firstSeen.set(claim, this.deps.clock.now());

    const boundName = this.boundName(claim);
    if (boundName !== undefined) {
      return this.writeBound(claim, boundName, this.deps.view.set(req.namespace, boundName));
    }
    return this.bind(claim);
  }

  /**
   * The bound set's name: the claim's status, a bind of this process, or the set cache's claim label
   * on a set this claim (by uid) controls. A claim created again under a deleted one's name does not
   * take the old claim's set, which still carries the name in its label.
   */
  private boundName(claim: CocoonClaim): string | undefined {
    const namespace = claim.metadata.namespace ?? "";
    const cached = this.deps.view.boundSet(namespace, claim.metadata.name ?? "");
    if (cached && isControlledBy(cached, claim.metadata)) {
      this.recentBinds.forget(requestOf(claim));
      return cached.metadata.name;
    }
    return claim.status?.cocoonSetRef?.name ?? this.recentBinds.get(claim);
  }

  private async bind(claim: CocoonClaim): Promise<Result> {
    const namespace = claim.metadata.namespace ?? "";
    const poolName = claim.spec.poolRef.name;
    const pool = this.deps.view.pool(namespace, poolName);
    if (!pool || pool.metadata.deletionTimestamp) {
      return this.writePending(claim, poolName, "pool_not_found", {
        reason: REASON_POOL_NOT_FOUND,
        message: `CocoonPool ${poolName} not found`,
      });
    }
    if (this.unsureBinds.get(claim)) {
      const [own] = await this.serverBoundSets(claim);
      this.unsureBinds.forget(requestOf(claim));
      if (own) {
        this.recentBinds.set(claim, own.metadata.name ?? "");
        return this.writeBound(claim, own.metadata.name ?? "", own);
      }
    }
    const boundHere = new Set(this.recentBinds.valuesIn(namespace));
    for (const candidate of claimCandidates(
      pool,
      this.deps.view.members(namespace, poolName),
      claim.metadata.name ?? "",
    )) {
      const name = candidate.metadata.name ?? "";
      const key = `${namespace}/${name}`;
      if (this.binding.has(key) || boundHere.has(name)) continue;
      this.binding.add(key);
      let bound: CocoonSet | undefined;
      try {
        bound = await this.tryBind(claim, pool, candidate);
      } catch (err) {
        if (isRefused(err)) return this.bindRefused(claim, poolName, name, err);
        throw err;
      } finally {
        this.binding.delete(key);
      }
      if (bound) return this.writeBound(claim, bound.metadata.name ?? "", bound);
    }
    const held = heldReadyMember(pool, this.deps.view.members(namespace, poolName));
    if (held) {
      return this.writePending(claim, poolName, "pending", {
        reason: held.reason,
        message: `waiting for a ready member of CocoonPool ${poolName}: ${held.message}`,
      });
    }
    return this.writePending(claim, poolName, "pending", {
      reason: REASON_NO_READY_MEMBER,
      message: `waiting for a ready member of CocoonPool ${poolName}`,
    });
  }

  /**
   * The API server refused the bind as sent (an admission policy on the claim's annotations, say): it
   * would refuse it for every member. The claim waits Pending saying why, with a Warning, and the pass
   * fails so that the work queue backs off instead of trying again at once.
   */
  private async bindRefused(
    claim: CocoonClaim,
    poolName: string,
    setName: string,
    err: ApiError,
  ): Promise<Result> {
    const message = `the API server refused the bind of CocoonSet ${setName}: ${err.message}`;
    if (claim.status?.reason !== REASON_BIND_REFUSED || claim.status.message !== message) {
      this.deps.events.event(claim, "Warning", REASON_BIND_REFUSED, message);
    }
    await this.writePending(claim, poolName, "pending", { reason: REASON_BIND_REFUSED, message });
    throw err;
  }

  /**
   * The sets on the API server (not the cache, which may not show a bind made just before) that carry
   * this claim's label, that this claim (by uid) controls, and that are not being deleted.
   */
  private async serverBoundSets(claim: CocoonClaim): Promise<CocoonSet[]> {
    const { items } = await this.deps.client.list<CocoonSet>(COCOONSETS, claim.metadata.namespace ?? "", {
      labelSelector: `${LABEL_CLAIM}=${claim.metadata.name ?? ""}`,
    });
    return items.filter((cs) => isControlledBy(cs, claim.metadata) && !cs.metadata.deletionTimestamp);
  }

  /**
   * The compare-and-swap: the update fails with a conflict when anyone wrote the member since the
   * cache read it. A conflict re-reads the member once: a status write of its own pass loses nothing,
   * a bind by another claim (or a delete by the pool) takes it out of the running.
   */
  private async tryBind(
    claim: CocoonClaim,
    pool: CocoonPool,
    cached: CocoonSet,
  ): Promise<CocoonSet | undefined> {
    const namespace = claim.metadata.namespace ?? "";
    const poolName = pool.metadata.name ?? "";
    let member: CocoonSet | undefined = cached;
    for (let attempt = 0; member && attempt < 2; attempt++) {
      try {
        const bound = await this.deps.client.update<CocoonSet>(
          COCOONSETS,
          boundMember(member, claim, pool, this.deps.clock.now()),
        );
        this.recentBinds.set(claim, bound.metadata.name ?? "");
        this.count(namespace, poolName, "bound");
        this.deps.events.event(
          claim,
          "Normal",
          REASON_BOUND,
          `bound CocoonSet ${bound.metadata.name} of CocoonPool ${poolName}`,
        );
        return bound;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        if (isRefused(err)) throw err;
        if (!isConflict(err)) {
          // The server may have applied the update all the same: the next pass looks for it first.
          this.unsureBinds.set(claim, true);
          throw err;
        }
        this.count(namespace, poolName, "conflict");
      }
      const fresh = await unlessNotFound(() =>
        this.deps.client.get<CocoonSet>(COCOONSETS, namespace, cached.metadata.name ?? ""),
      );
      // An earlier attempt of this claim the server applied (its answer lost) wrote the conflict.
      if (fresh && isControlledBy(fresh, claim.metadata) && !fresh.metadata.deletionTimestamp) {
        this.recentBinds.set(claim, fresh.metadata.name ?? "");
        return fresh;
      }
      member =
        fresh &&
        fresh.metadata.labels?.[LABEL_POOL] === poolName &&
        fresh.metadata.labels?.[LABEL_CLAIM] === undefined &&
        memberReady(fresh, warmthOf(pool)) &&
        heldAgainst(fresh, "bind") === undefined
          ? fresh
          : undefined;
    }
    return undefined;
  }

  /** `cs` is the set as the bind returned it or as cached; undefined when the cache has no such set. */
  private async writeBound(claim: CocoonClaim, setName: string, cs: CocoonSet | undefined): Promise<Result> {
    const namespace = claim.metadata.namespace ?? "";
    const now = this.deps.clock.now();
    let condition: ConditionUpdate;
    // A set this claim does not control (by uid) is not its own, unless this process has just bound
    // it and the cache does not show the bind yet.
    const own =
      cs && (isControlledBy(cs, claim.metadata) || this.recentBinds.get(claim) === setName) ? cs : undefined;
    // The claim names itself: a set cache behind the bind shows no claim label, so no PostClaim owed.
    const held =
      own && boundSetReady(own) ? this.deps.guestHeld?.(own, claim.metadata.name ?? "") : undefined;
    if (!own && this.recentBinds.get(claim) === undefined) {
      condition = {
        type: CONDITION_READY,
        status: "False",
        reason: REASON_SET_GONE,
        message: `CocoonSet ${setName} is gone`,
      };
    } else if (held) {
      // Running, but not yet for this claim: its PostClaim hooks (or another Fail hook) have not succeeded.
      condition = { type: CONDITION_READY, status: "False", reason: held.reason, message: held.message };
    } else if (own && boundSetReady(own)) {
      condition = {
        type: CONDITION_READY,
        status: "True",
        reason: REASON_SET_READY,
        message: `CocoonSet ${setName} is Running`,
      };
    } else {
      // The reason says how the set comes up and stays until it runs: a woken set passing through
      // Pending is still a wake. The message leaves the set's phase out, so the claim's status is
      // written when the claim's state changes, not on every step of the set's.
      const waking =
        readyReason(claim) === REASON_WAKING ||
        own?.status?.phase === "Suspended" ||
        own?.status?.phase === "Suspending" ||
        own?.status?.phase === "Waking";
      condition = {
        type: CONDITION_READY,
        status: "False",
        reason: waking ? REASON_WAKING : REASON_STARTING,
        message: `waiting for CocoonSet ${setName} to be Running`,
      };
    }
    const next: CocoonClaimStatus = {
      observedGeneration: claim.metadata.generation ?? 0,
      phase: "Bound",
      reason: REASON_BOUND,
      message: `bound CocoonSet ${setName}`,
      cocoonSetRef: { name: setName },
      boundTime: claim.status?.boundTime ?? formatRFC3339(now),
      conditions: setStatusConditions(
        claim.status?.conditions ?? [],
        [{ ...condition, observedGeneration: claim.metadata.generation ?? 0 }],
        now,
      ),
    };
    const wasReady = isReady(claim);
    await this.writeStatus(claim, next);
    if (!wasReady && condition.status === "True") {
      const since = this.firstSeen.get(claim) ?? Date.parse(claim.metadata.creationTimestamp ?? "");
      this.firstSeen.forget(requestOf(claim));
      const labels = { namespace, pool: claim.spec.poolRef.name };
      if (Number.isFinite(since)) claimReadySeconds.observe(labels, Math.max(0, now - since) / 1000);
      this.deps.events.event(claim, "Normal", REASON_CLAIM_READY, condition.message);
    }
    return held ? { requeueAfterMs: GUEST_HOOKS_POLL_MS } : {};
  }

  private async writePending(
    claim: CocoonClaim,
    poolName: string,
    result: ClaimResult,
    pending: Pending,
  ): Promise<Result> {
    const now = this.deps.clock.now();
    const next: CocoonClaimStatus = {
      observedGeneration: claim.metadata.generation ?? 0,
      phase: "Pending",
      reason: pending.reason,
      message: pending.message,
      conditions: setStatusConditions(
        claim.status?.conditions ?? [],
        [
          {
            type: CONDITION_READY,
            status: "False",
            reason: pending.reason,
            message: pending.message,
            observedGeneration: claim.metadata.generation ?? 0,
          },
        ],
        now,
      ),
    };
    if (claim.status?.reason !== pending.reason) this.count(claim.metadata.namespace ?? "", poolName, result);
    await this.writeStatus(claim, next);
    return {};
  }

  /**
   * Patches the status when it differs. A claim the cache still shows at the version this process
   * last patched over has that patch in flight to the cache: its watch event brings the claim again,
   * so this pass writes nothing rather than the same status twice.
   */
  private async writeStatus(claim: CocoonClaim, next: CocoonClaimStatus): Promise<void> {
    if (isDeepStrictEqual(claim.status ?? {}, next)) return;
    const version = claim.metadata.resourceVersion ?? "";
    if (version !== "" && this.patchedOver.get(claim) === version) return;
    await this.deps.client.patch(
      COCOONCLAIMS,
      claim.metadata.namespace ?? "",
      claim.metadata.name ?? "",
      { status: statusMergePatch(claim.status, next) },
      { subresource: "status" },
    );
    this.patchedOver.set(claim, version);
  }

  /**
   * Deletes the claim's set (found through the API server, not the cache, which may not show a bind
   * made just before), then lets the claim go. The set's finalizer deletes its VMs and snapshots.
   */
  private async release(claim: CocoonClaim): Promise<Result> {
    const namespace = claim.metadata.namespace ?? "";
    if (!(claim.metadata.finalizers ?? []).includes(FINALIZER_COCOONCLAIM)) return {};
    for (const cs of await this.serverBoundSets(claim)) {
      try {
        await this.deps.client.delete(COCOONSETS, namespace, cs.metadata.name ?? "", {
          preconditions: { uid: cs.metadata.uid ?? "" },
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      this.deps.events.event(
        claim,
        "Normal",
        REASON_CLAIM_RELEASED,
        `deleted bound CocoonSet ${cs.metadata.name}`,
      );
    }
    try {
      await this.deps.client.update<CocoonClaim>(
        COCOONCLAIMS,
        withoutFinalizer(claim, FINALIZER_COCOONCLAIM),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.recentBinds.forget(requestOf(claim));
    this.unsureBinds.forget(requestOf(claim));
    this.firstSeen.forget(requestOf(claim));
    this.patchedOver.forget(requestOf(claim));
    return {};
  }

  private count(namespace: string, pool: string, result: ClaimResult): void {
    claimsTotal.inc({ namespace, pool, result });
  }
}

const requestOf = (claim: CocoonClaim): Request => ({
  namespace: claim.metadata.namespace ?? "",
  name: claim.metadata.name ?? "",
});

/**
 * A value per claim, by namespace and name, that holds only for the claim of the uid it was set for
 * (a claim deleted and created again under its name starts afresh); forgotten when the claim goes.
 */
class ClaimMemo<T> {
  private readonly entries = new Map<string, { uid: string; value: T }>();

  get(claim: CocoonClaim): T | undefined {
    const entry = this.entries.get(requestKey(requestOf(claim)));
    return entry?.uid === (claim.metadata.uid ?? "") ? entry.value : undefined;
  }

  set(claim: CocoonClaim, value: T): void {
    this.entries.set(requestKey(requestOf(claim)), { uid: claim.metadata.uid ?? "", value });
  }

  forget(req: Request): void {
    this.entries.delete(requestKey(req));
  }

  /** The values of the namespace's claims. */
  valuesIn(namespace: string): T[] {
    return [...this.entries]
      .filter(([key]) => key.startsWith(`${namespace}/`))
      .map(([, entry]) => entry.value);
  }
}

/** Why the pool's first ready unclaimed member another holds (a restore) cannot be bound, if any. */
function heldReadyMember(pool: CocoonPool, members: readonly CocoonSet[]): Held | undefined {
  for (const cs of members) {
    if (!memberReady(cs, warmthOf(pool)) || cs.metadata.labels?.[LABEL_CLAIM] !== undefined) continue;
    const held = heldAgainst(cs, "bind");
    if (held) return held;
  }
  return undefined;
}

function isReady(claim: CocoonClaim): boolean {
  return claim.status?.conditions?.find((c) => c.type === CONDITION_READY)?.status === "True";
}

function readyReason(claim: CocoonClaim): string | undefined {
  return claim.status?.conditions?.find((c) => c.type === CONDITION_READY)?.reason;
}
