// The pure decisions of warm pools (docs/pools.md): which CocoonSets a pool creates, deletes or
// suspends, the pool's status, which members a claim tries in which order, and the member as a bind
// writes it. No I/O: the reconcilers in this room read the cache, call these, and write the answers.

import { createHash } from "node:crypto";
import { type ConditionUpdate, setStatusConditions } from "../apis/status.ts";
import {
  API_VERSION,
  type CocoonSet,
  type CocoonSetSpec,
  KIND_COCOONSET,
  type OwnerReference,
} from "../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CocoonClaim,
  type CocoonPool,
  type CocoonPoolStatus,
  DEFAULT_POOL_WARMTH,
  KIND_COCOONCLAIM,
  KIND_COCOONPOOL,
  type PoolWarmth,
} from "../apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT } from "../checkpoint/keys.ts";
import { type Held, heldAgainst } from "../holds.ts";
import { ANN_LAST_ACTIVITY, ANN_SUSPEND_AFTER_IDLE, POLICY_ANNOTATIONS } from "../idle/policy.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import { BOOKKEEPING_KEYS } from "./bookkeeping.ts";
import {
  ANN_POOL_TEMPLATE,
  CONDITION_READY,
  LABEL_CLAIM,
  LABEL_CLAIMED_FROM,
  LABEL_POOL,
  REASON_ENOUGH_READY,
  REASON_FILLING,
} from "./keys.ts";

/** While a template rolls, at most this many members beyond `replicas` exist. */
export const ROLL_SURGE = 1;
/**
 * At most this many unclaimed members start (boot, branch, hibernate) at once. Every member start is
 * CocoonSet passes that share the CocoonSet controller's workers with claimed sets waking, which a
 * pool refilling 50 members at once would queue behind its own members.
 */
export const MAX_STARTING = 8;

export function warmthOf(pool: CocoonPool): PoolWarmth {
  return pool.spec.warmth ?? DEFAULT_POOL_WARMTH;
}

/** JSON with object keys sorted, so equal templates hash equal whatever order the API server wrote. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/** What makes a member current: its template, its checkpoint and the warmth it is kept at. */
export function templateHash(pool: CocoonPool): string {
  const source = canonicalJson({
    template: pool.spec.template,
    fromCheckpoint: pool.spec.fromCheckpoint ?? "",
    warmth: warmthOf(pool),
  });
  return createHash("sha256").update(source).digest("hex").slice(0, 16);
}

const settled = (cs: CocoonSet): boolean =>
  (cs.status?.observedGeneration ?? 0) === (cs.metadata.generation ?? 0);

/** Ready to claim: Running (a Running pool) or Suspended (a Suspended pool) at its generation. */
export function memberReady(cs: CocoonSet, warmth: PoolWarmth): boolean {
  if (!settled(cs) || cs.metadata.deletionTimestamp) return false;
  return warmth === "Running"
    ? cs.status?.phase === "Running" && !cs.spec.suspend
    : cs.status?.phase === "Suspended" && cs.spec.suspend === true;
}

/** A Suspended pool's member has booted (so its state is warm) and is not asked to hibernate yet. */
function bootedAwake(cs: CocoonSet): boolean {
  return settled(cs) && cs.status?.phase === "Running" && !cs.spec.suspend && !cs.metadata.deletionTimestamp;
}

const created = (cs: CocoonSet): string => cs.metadata.creationTimestamp ?? "";
const byName = (a: CocoonSet, b: CocoonSet): number =>
  (a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1;
const oldestFirst = (a: CocoonSet, b: CocoonSet): number =>
  created(a) === created(b) ? byName(a, b) : created(a) < created(b) ? -1 : 1;

export interface PoolPlan {
  /** Members to create from the current template. */
  create: number;
  /** Unclaimed members to delete (with their cached resourceVersion as the precondition). */
  delete: CocoonSet[];
  /** Members of a Suspended pool to hibernate (a resourceVersion-guarded patch of spec.suspend). */
  suspend: CocoonSet[];
  /** Members the plan would delete or hibernate that another holds (a restore): left alone, and why. */
  held: { member: CocoonSet; held: Held }[];
}

/**
 * What a pool does next with its unclaimed members (the cache's, not being deleted). Outdated members
 * that are not ready go at once; outdated ready ones stay while the current ones are not ready yet, so
 * the pool never holds fewer than `replicas - 1` ready members while a template rolls, and at most
 * `replicas + ROLL_SURGE` members exist then. Beyond `replicas`, current members go not-ready first,
 * then newest first. No more than MAX_STARTING current members are starting at any time. A member
 * another holds (src/holds.ts) is neither deleted nor hibernated: the roll or scale-down waits for
 * it, and the resourceVersion each write carries makes the cached judgment the server's.
 */
export function planPool(pool: CocoonPool, members: readonly CocoonSet[]): PoolPlan {
  const replicas = pool.spec.replicas ?? 0;
  const warmth = warmthOf(pool);
  const hash = templateHash(pool);
  const ready = (cs: CocoonSet) => memberReady(cs, warmth);
  const live = members.filter((cs) => !cs.metadata.deletionTimestamp);
  const current = live.filter((cs) => cs.metadata.annotations?.[ANN_POOL_TEMPLATE] === hash);
  const outdated = live.filter((cs) => cs.metadata.annotations?.[ANN_POOL_TEMPLATE] !== hash);

  const deletes = outdated.filter((cs) => !ready(cs)).sort(oldestFirst);
  const excess = Math.max(0, current.length - replicas);
  const byDeletePreference = [...current].sort((a, b) =>
    ready(a) === ready(b) ? oldestFirst(b, a) : ready(a) ? 1 : -1,
  );
  const excessMembers = byDeletePreference.slice(0, excess);
  deletes.push(...excessMembers);
  const kept = current.filter((cs) => !excessMembers.includes(cs));
  const readyKept = kept.filter(ready).length;

  const outdatedReady = outdated.filter(ready).sort(oldestFirst);
  const keepOutdated = Math.min(outdatedReady.length, Math.max(0, replicas - 1 - readyKept));
  deletes.push(...outdatedReady.slice(0, outdatedReady.length - keepOutdated));

  const total = kept.length + keepOutdated;
  const starting = kept.length - readyKept;
  const create = Math.max(
    0,
    Math.min(replicas - kept.length, replicas + ROLL_SURGE - total, MAX_STARTING - starting),
  );
  const suspend = warmth === "Suspended" ? kept.filter(bootedAwake).sort(oldestFirst) : [];
  const held: PoolPlan["held"] = [];
  const free = (cs: CocoonSet): boolean => {
    const why = heldAgainst(cs, "pool");
    if (why) held.push({ member: cs, held: why });
    return why === undefined;
  };
  return { create, delete: deletes.filter(free), suspend: suspend.filter(free), held };
}

/** The label selector of a pool's unclaimed members. */
export function poolSelector(pool: CocoonPool): string {
  return `${LABEL_POOL}=${pool.metadata.name ?? ""}`;
}

/**
 * The pool's status from its unclaimed members and the count of members bound to claims. `stuck`: why
 * the pool cannot fill (a member's create refused), which the Ready condition reports while it is not
 * ready.
 */
export function poolStatus(
  pool: CocoonPool,
  members: readonly CocoonSet[],
  claimed: number,
  nowMs: number,
  stuck?: { reason: string; message: string },
): CocoonPoolStatus {
  const warmth = warmthOf(pool);
  const hash = templateHash(pool);
  const live = members.filter((cs) => !cs.metadata.deletionTimestamp);
  const ready = live.filter((cs) => memberReady(cs, warmth)).length;
  const replicas = pool.spec.replicas ?? 0;
  const enough = ready >= replicas;
  const counted = `${ready} of ${replicas} members ready to claim (${warmth})`;
  const condition: ConditionUpdate = {
    type: CONDITION_READY,
    status: enough ? "True" : "False",
    reason: enough ? REASON_ENOUGH_READY : (stuck?.reason ?? REASON_FILLING),
    // A refused write is named even when enough members are ready: the pool cannot reach its plan.
    message: stuck ? `${counted}; ${stuck.message}` : counted,
    observedGeneration: pool.metadata.generation ?? 0,
  };
  return {
    observedGeneration: pool.metadata.generation ?? 0,
    replicas: live.length,
    ready,
    starting: live.length - ready,
    claimed,
    outdated: live.filter((cs) => cs.metadata.annotations?.[ANN_POOL_TEMPLATE] !== hash).length,
    selector: poolSelector(pool),
    conditions: setStatusConditions(pool.status?.conditions ?? [], [condition], nowMs),
  };
}

function ownerReference(apiVersion: string, kind: string, owner: CocoonPool | CocoonClaim): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name ?? "",
    uid: owner.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

const withoutKeys = (
  map: Readonly<Record<string, string>> | undefined,
  keys: readonly string[],
): Record<string, string> =>
  Object.fromEntries(Object.entries(map ?? {}).filter(([key]) => !keys.includes(key)));

const onlyKeys = (
  map: Readonly<Record<string, string>> | undefined,
  keys: readonly string[],
): Record<string, string> =>
  Object.fromEntries(Object.entries(map ?? {}).filter(([key]) => keys.includes(key)));

/**
 * A new member named `name`. The template's idle and expiry annotations are held back until a claim
 * binds it (a warm member is never idle-suspended or expired); a Suspended pool's main-only member
 * releases its seat while hibernated. Every member boots first, so a claim wakes a warm VM.
 */
export function newMember(pool: CocoonPool, name: string): CocoonSet {
  const template = pool.spec.template;
  const spec: CocoonSetSpec = { ...template.spec };
  delete spec.suspend;
  const mainOnly = (spec.agent.replicas ?? 0) === 0 && (spec.toolboxes ?? []).length === 0;
  if (warmthOf(pool) === "Suspended" && mainOnly) spec.hibernatePolicy = "release";
  return {
    apiVersion: API_VERSION,
    kind: KIND_COCOONSET,
    metadata: {
      name,
      namespace: pool.metadata.namespace ?? "",
      // A template's bookkeeping keys (a copied set's reclaim record, a claim label) are never carried.
      labels: {
        ...withoutKeys(template.metadata?.labels, BOOKKEEPING_KEYS),
        [LABEL_POOL]: pool.metadata.name ?? "",
      },
      annotations: {
        ...withoutKeys(template.metadata?.annotations, [...POLICY_ANNOTATIONS, ...BOOKKEEPING_KEYS]),
        [ANN_POOL_TEMPLATE]: templateHash(pool),
        ...(pool.spec.fromCheckpoint ? { [ANN_FROM_CHECKPOINT]: pool.spec.fromCheckpoint } : {}),
      },
      ownerReferences: [ownerReference(API_VERSION_V1ALPHA1, KIND_COCOONPOOL, pool)],
    },
    spec,
  };
}

/** A stable number from a string (FNV-1a), to spread concurrent claims over the ready members. */
function spread(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return hash;
}

const rotate = <T>(items: T[], by: number): T[] =>
  items.length === 0 ? items : [...items.slice(by % items.length), ...items.slice(0, by % items.length)];

/**
 * The ready members a claim tries, in order: current before outdated, each group oldest first and
 * rotated by the claim's name, so that claims arriving together mostly try different members first.
 * A member another holds (a restore) is not one: the bind would take a set the holder still writes.
 */
export function claimCandidates(
  pool: CocoonPool,
  members: readonly CocoonSet[],
  claimName: string,
): CocoonSet[] {
  const warmth = warmthOf(pool);
  const hash = templateHash(pool);
  const ready = members.filter(
    (cs) =>
      memberReady(cs, warmth) &&
      cs.metadata.labels?.[LABEL_CLAIM] === undefined &&
      heldAgainst(cs, "bind") === undefined,
  );
  const current = ready
    .filter((cs) => cs.metadata.annotations?.[ANN_POOL_TEMPLATE] === hash)
    .sort(oldestFirst);
  const outdated = ready
    .filter((cs) => cs.metadata.annotations?.[ANN_POOL_TEMPLATE] !== hash)
    .sort(oldestFirst);
  const by = spread(claimName);
  return [...rotate(current, by), ...rotate(outdated, by)];
}

/**
 * The member as the bind writes it (an update carrying the cached resourceVersion, so only one claim
 * can win it): out of the pool's labels, owned by the claim, with the template's held-back idle and
 * expiry annotations and then the claim's own, and awake. An idle clock passed at bind starts at bind.
 */
export function boundMember(
  member: CocoonSet,
  claim: CocoonClaim,
  pool: CocoonPool,
  nowMs: number,
): CocoonSet {
  const policy = {
    ...onlyKeys(pool.spec.template.metadata?.annotations, POLICY_ANNOTATIONS),
    ...onlyKeys(claim.metadata.annotations, POLICY_ANNOTATIONS),
  };
  const annotations = { ...member.metadata.annotations, ...policy };
  if (policy[ANN_SUSPEND_AFTER_IDLE] !== undefined) annotations[ANN_LAST_ACTIVITY] = formatRFC3339(nowMs);
  return {
    ...member,
    metadata: {
      ...member.metadata,
      labels: {
        ...withoutKeys(member.metadata.labels, [LABEL_POOL]),
        [LABEL_CLAIM]: claim.metadata.name ?? "",
        [LABEL_CLAIMED_FROM]: pool.metadata.name ?? "",
      },
      annotations,
      ownerReferences: [
        ...(member.metadata.ownerReferences ?? []).filter((ref) => ref.controller !== true),
        ownerReference(API_VERSION_V1ALPHA1, KIND_COCOONCLAIM, claim),
      ],
    },
    // Only a suspended member's spec changes: a Running one's generation stays, so it is Ready at once.
    spec: member.spec.suspend ? { ...member.spec, suspend: false } : member.spec,
  };
}

/** Running at its generation and awake: the claim's Ready condition turns True. */
export function boundSetReady(cs: CocoonSet): boolean {
  return memberReady(cs, "Running");
}

/**
 * How long at most a pool holds its refill while sets claimed from it come up. Their claims wait on
 * those wakes, and new members booting (and, in a Suspended pool, hibernating) compete with them for
 * the nodes, the API server and the registry; a wake that never completes holds nothing past this.
 */
export const REFILL_HOLD_MS = 10_000;

export interface RefillHold {
  /** When the hold began, for the next pass to pass back; undefined when no claimed set comes up. */
  since: number | undefined;
  /** When it ends (epoch ms); undefined when the pool may create members. */
  until: number | undefined;
}

/** The refill hold: from when a set claimed from the pool is first seen not Running, REFILL_HOLD_MS at most. */
export function refillHold(
  claimed: readonly CocoonSet[],
  heldSinceMs: number | undefined,
  nowMs: number,
): RefillHold {
  if (!claimed.some((cs) => !cs.metadata.deletionTimestamp && !boundSetReady(cs)))
    return { since: undefined, until: undefined };
  const since = heldSinceMs ?? nowMs;
  const until = since + REFILL_HOLD_MS;
  return { since, until: until > nowMs ? until : undefined };
}

/** The object with `finalizer` added (last), unless it has it. */
export function withFinalizer<T extends CocoonPool | CocoonClaim>(obj: T, finalizer: string): T {
  const finalizers = obj.metadata.finalizers ?? [];
  return finalizers.includes(finalizer)
    ? obj
    : { ...obj, metadata: { ...obj.metadata, finalizers: [...finalizers, finalizer] } };
}

/** The object without `finalizer`. */
export function withoutFinalizer<T extends CocoonPool | CocoonClaim>(obj: T, finalizer: string): T {
  return {
    ...obj,
    metadata: { ...obj.metadata, finalizers: (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer) },
  };
}
