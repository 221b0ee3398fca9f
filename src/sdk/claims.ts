// Pools and claims (docs/pools.md): reading them with errors that say what is missing, a pool's
// members by state, creating a claim, and the judges of the claim and release waits.

import type { CocoonSet } from "../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CocoonClaim,
  type CocoonPool,
  KIND_COCOONCLAIM,
} from "../apis/v1alpha1/types.ts";
import { isAlreadyExists, isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../controller/resources.ts";
import { memberReady, templateHash, warmthOf } from "../pool/decide.ts";
import {
  ANN_POOL_TEMPLATE,
  CONDITION_READY,
  LABEL_CLAIM,
  LABEL_CLAIMED_FROM,
  LABEL_POOL,
} from "../pool/keys.ts";
import { CocoonError, CocoonNotFoundError } from "./errors.ts";
import { WarningWatch } from "./events.ts";
import { type Session, type Verdict, type WaitOptions, type WaitSpec, waitFor } from "./wait.ts";

type Reader = Pick<Session, "client" | "namespace">;

export function poolsNotServed(): CocoonNotFoundError {
  return new CocoonNotFoundError(
    "the cluster does not serve CocoonPool and CocoonClaim (cocoonset.cocoonstack.io/v1alpha1): apply config/crd (bases/cocoonset.cocoonstack.io_cocoonpools.yaml and _cocoonclaims.yaml) first",
    "KindNotServed",
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
  throw new CocoonNotFoundError(`cocoonpool "${name}" not found in namespace "${ctx.namespace}"`);
}

export function findClaim(ctx: Reader, name: string): Promise<CocoonClaim | undefined> {
  return unlessNotFound(() => ctx.client.get<CocoonClaim>(COCOONCLAIMS, ctx.namespace, name));
}

export async function getClaim(ctx: Reader, name: string): Promise<CocoonClaim> {
  const claim = await findClaim(ctx, name);
  if (claim) return claim;
  if (!(await kindServed(ctx))) throw poolsNotServed();
  throw new CocoonNotFoundError(`cocoonclaim "${name}" not found in namespace "${ctx.namespace}"`);
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

/** Creates the CocoonClaim `name` of `pool`, with annotations that pass to the set at bind time. */
export async function createClaim(
  ctx: Reader,
  pool: string,
  name: string,
  annotations: Record<string, string> = {},
  parameters?: Record<string, string>,
): Promise<CocoonClaim> {
  try {
    return await ctx.client.create<CocoonClaim>(COCOONCLAIMS, ctx.namespace, {
      apiVersion: API_VERSION_V1ALPHA1,
      kind: KIND_COCOONCLAIM,
      metadata: {
        name,
        namespace: ctx.namespace,
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      },
      spec: { poolRef: { name: pool }, ...(parameters ? { parameters } : {}) },
    });
  } catch (err) {
    if (isNotFound(err)) throw poolsNotServed();
    if (isAlreadyExists(err)) {
      throw new CocoonError(
        "AlreadyExists",
        `cocoonclaim "${name}" already exists in namespace "${ctx.namespace}": choose another --name`,
      );
    }
    throw err;
  }
}

const readyCondition = (claim: CocoonClaim) =>
  claim.status?.conditions?.find((c) => c.type === CONDITION_READY);

/**
 * Bound (until = "bound") or Ready (until = "ready"); a claim that is gone fails the wait. A Ready
 * condition False with a reason (the operator refused: PoolNotFound, NoReadyMember, BindRefused, …)
 * is reported as it stands while the claim is Pending.
 */
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

/** The wait of a claim until Bound or Ready, over the watched claim. */
export function claimWait(
  name: string,
  until: "bound" | "ready",
  warnings?: WarningWatch,
): WaitSpec<CocoonClaim | undefined> {
  return {
    what: `cocoonclaim "${name}" to ${until === "ready" ? "be Ready" : "be Bound"}`,
    queries: [{ rt: COCOONCLAIMS, name }],
    state: ([claims = []]) => claims[0] as CocoonClaim | undefined,
    judge: (claim) => judgeClaim(claim, name, until),
    notServed: poolsNotServed,
    ...(warnings ? { warnings } : {}),
  };
}

/** The wait of a release: the claim (when there is one) and its set both gone. */
export function goneWait(
  claim: string | undefined,
  set: string | undefined,
  warnings?: WarningWatch,
): WaitSpec<{ claim: boolean; set: boolean }> {
  const parts = [...(claim ? [`cocoonclaim "${claim}"`] : []), ...(set ? [`cocoonset "${set}"`] : [])];
  return {
    what: `${parts.join(" and ")} to be gone`,
    queries: [
      ...(claim ? [{ rt: COCOONCLAIMS, name: claim }] : []),
      ...(set ? [{ rt: COCOONSETS, name: set }] : []),
    ],
    state: (snapshot) => {
      const [first = [], second = []] = snapshot;
      return claim
        ? { claim: first.length > 0, set: second.length > 0 }
        : { claim: false, set: first.length > 0 };
    },
    judge: (s) =>
      !s.claim && !s.set
        ? { kind: "done", summary: "released" }
        : {
            kind: "waiting",
            progress: s.claim ? "the claim is being finalized" : `cocoonset "${set}" is being torn down`,
          },
    ...(warnings ? { warnings } : {}),
  };
}

export interface ClaimRun {
  /** The claim's annotations, passed to the set at bind time. */
  annotations?: Record<string, string>;
  /** Handed to the bound set's PostClaim hooks (docs/guest.md). */
  parameters?: Record<string, string>;
  /** What to wait for (with `wait`): the claim Bound, or Ready (its set Running, guest hooks done). */
  until?: "bound" | "ready";
  wait?: WaitOptions;
  onCreated?: (claim: CocoonClaim) => void;
}

/** Claims a member of `pool` with the CocoonClaim `name`; returns the claim as last seen. */
export async function claimFrom(
  session: Session,
  pool: string,
  name: string,
  run: ClaimRun = {},
): Promise<CocoonClaim> {
  await getPool(session, pool);
  const created = await createClaim(session, pool, name, run.annotations, run.parameters);
  run.onCreated?.(created);
  if (!run.until) return created;
  const warnings = WarningWatch.ofCreated(session, KIND_COCOONCLAIM, created);
  return (await waitFor(session, claimWait(name, run.until, warnings), run.wait)) ?? created;
}

/**
 * Deletes the claim `name` (the operator then deletes its bound set) and, with `wait`, waits until
 * both are gone. Returns the claim as it was before the delete.
 */
export async function releaseClaim(
  session: Session,
  name: string,
  wait: WaitOptions | undefined,
  onDeleted?: (claim: CocoonClaim) => void,
): Promise<CocoonClaim> {
  const claim = await getClaim(session, name);
  const setName = claim.status?.cocoonSetRef?.name;
  const warnings = wait ? await WarningWatch.start(session, KIND_COCOONCLAIM, name) : undefined;
  try {
    await session.client.delete(COCOONCLAIMS, session.namespace, name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  onDeleted?.(claim);
  if (wait) await waitFor(session, goneWait(name, setName, warnings), wait);
  return claim;
}
