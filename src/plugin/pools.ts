// What the pool commands share (docs/pools.md): reading pools and claims with errors that say what
// to do, a pool's members by state, and the judges the claim and release waits use.

import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonClaim, CocoonPool } from "../apis/v1alpha1/types.ts";
import { isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../controller/resources.ts";
import { memberReady, templateHash, warmthOf } from "../pool/decide.ts";
import {
  ANN_POOL_TEMPLATE,
  CONDITION_READY,
  LABEL_CLAIM,
  LABEL_CLAIMED_FROM,
  LABEL_POOL,
} from "../pool/keys.ts";
import type { CommandContext } from "./command.ts";
import { PluginError } from "./errors.ts";
import type { Verdict } from "./wait.ts";

type Reader = Pick<CommandContext, "client" | "namespace">;

export function poolsNotServed(): PluginError {
  return new PluginError(
    "the cluster does not serve CocoonPool and CocoonClaim (cocoonset.cocoonstack.io/v1alpha1): apply config/crd (bases/cocoonset.cocoonstack.io_cocoonpools.yaml and _cocoonclaims.yaml) first",
  );
}

/** A 404 is the pool missing, unless the kind itself is: then the CRD is. */
async function kindServed(ctx: Reader): Promise<boolean> {
  try {
    await ctx.client.list(COCOONPOOLS, ctx.namespace, { limit: 1 });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

export async function getPool(ctx: Reader, name: string): Promise<CocoonPool> {
  const pool = await unlessNotFound(() => ctx.client.get<CocoonPool>(COCOONPOOLS, ctx.namespace, name));
  if (pool) return pool;
  if (!(await kindServed(ctx))) throw poolsNotServed();
  throw new PluginError(`cocoonpool "${name}" not found in namespace "${ctx.namespace}"`);
}

export function findClaim(ctx: Reader, name: string): Promise<CocoonClaim | undefined> {
  return unlessNotFound(() => ctx.client.get<CocoonClaim>(COCOONCLAIMS, ctx.namespace, name));
}

export async function getClaim(ctx: Reader, name: string): Promise<CocoonClaim> {
  const claim = await findClaim(ctx, name);
  if (claim) return claim;
  if (!(await kindServed(ctx))) throw poolsNotServed();
  throw new PluginError(`cocoonclaim "${name}" not found in namespace "${ctx.namespace}"`);
}

export type MemberState = "ready" | "starting" | "outdated" | "claimed";

export interface PoolMember {
  name: string;
  state: MemberState;
  phase: string;
  claim?: string;
  created: string;
}

/** The pool's unclaimed members and the sets claimed from it, oldest first. */
export async function poolMembersOf(ctx: Reader, pool: CocoonPool): Promise<PoolMember[]> {
  const name = pool.metadata.name ?? "";
  const [unclaimed, claimed] = await Promise.all(
    [LABEL_POOL, LABEL_CLAIMED_FROM].map(
      async (label) =>
        (await ctx.client.list<CocoonSet>(COCOONSETS, ctx.namespace, { labelSelector: `${label}=${name}` }))
          .items,
    ),
  );
  const hash = templateHash(pool);
  const warmth = warmthOf(pool);
  const member = (cs: CocoonSet, state: MemberState): PoolMember => ({
    name: cs.metadata.name ?? "",
    state,
    phase: cs.metadata.deletionTimestamp ? "Terminating" : (cs.status?.phase ?? "(none)"),
    ...(cs.metadata.labels?.[LABEL_CLAIM] ? { claim: cs.metadata.labels[LABEL_CLAIM] } : {}),
    created: cs.metadata.creationTimestamp ?? "",
  });
  const rows = [
    ...(unclaimed ?? []).map((cs) =>
      member(
        cs,
        cs.metadata.annotations?.[ANN_POOL_TEMPLATE] !== hash
          ? "outdated"
          : memberReady(cs, warmth)
            ? "ready"
            : "starting",
      ),
    ),
    ...(claimed ?? []).map((cs) => member(cs, "claimed")),
  ];
  return rows.sort((a, b) =>
    a.created === b.created ? (a.name < b.name ? -1 : 1) : a.created < b.created ? -1 : 1,
  );
}

const readyCondition = (claim: CocoonClaim) =>
  claim.status?.conditions?.find((c) => c.type === CONDITION_READY);

/** Bound (until = "bound") or Ready (until = "ready"); a claim that is gone fails the wait. */
export function judgeClaim(claim: CocoonClaim | undefined, name: string, until: "bound" | "ready"): Verdict {
  if (!claim) return { kind: "failed", reason: "Deleted", message: `cocoonclaim "${name}" was deleted` };
  const set = claim.status?.cocoonSetRef?.name;
  const ready = readyCondition(claim);
  if (claim.status?.phase !== "Bound" || !set) {
    return {
      kind: "waiting",
      progress: `Pending: ${claim.status?.message ?? "not yet seen by the operator"}`,
    };
  }
  if (until === "bound") return { kind: "done", summary: `bound cocoonset "${set}"` };
  if (ready?.status === "True") return { kind: "done", summary: `cocoonset "${set}" is Running` };
  return { kind: "waiting", progress: `Bound ${set}: ${ready?.message ?? "waiting for it to run"}` };
}
