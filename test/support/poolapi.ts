// Raw API reads and writes of CocoonPools and CocoonClaims for the pool integration tests and
// bench/pool.ts: create, read, scale through /scale, and the waits on their status.

import assert from "node:assert/strict";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type { CocoonClaim, CocoonPool, CocoonPoolSpec } from "../../src/apis/v1alpha1/types.ts";
import { LABEL_POOL } from "../../src/pool/keys.ts";
import { type ApiConnection, apiRequest, waitFor } from "../env/testenv.ts";
import { setsPath } from "./setapi.ts";

const V1ALPHA1 = "/apis/cocoonset.cocoonstack.io/v1alpha1";
export const poolsPath = (ns: string): string => `${V1ALPHA1}/namespaces/${ns}/cocoonpools`;
export const claimsPath = (ns: string): string => `${V1ALPHA1}/namespaces/${ns}/cocoonclaims`;

export async function createPool(
  env: ApiConnection,
  ns: string,
  name: string,
  spec: CocoonPoolSpec,
): Promise<void> {
  const pool = {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonPool",
    metadata: { name, namespace: ns },
    spec,
  };
  const res = await apiRequest(env, "POST", poolsPath(ns), pool);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

export async function createClaim(
  env: ApiConnection,
  ns: string,
  name: string,
  pool: string,
  annotations?: Record<string, string>,
): Promise<void> {
  const claim = {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonClaim",
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: { poolRef: { name: pool } },
  };
  const res = await apiRequest(env, "POST", claimsPath(ns), claim);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

export async function getPool(env: ApiConnection, ns: string, name: string): Promise<CocoonPool> {
  const res = await apiRequest(env, "GET", `${poolsPath(ns)}/${name}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonPool;
}

/** The claim, or undefined once it is gone. */
export async function getClaim(
  env: ApiConnection,
  ns: string,
  name: string,
): Promise<CocoonClaim | undefined> {
  const res = await apiRequest(env, "GET", `${claimsPath(ns)}/${name}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonClaim;
}

export async function deleteClaim(env: ApiConnection, ns: string, name: string): Promise<void> {
  const res = await apiRequest(env, "DELETE", `${claimsPath(ns)}/${name}`);
  assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
}

export const claimReady = (claim: CocoonClaim | undefined): boolean =>
  claim?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

export function waitClaimReady(
  env: ApiConnection,
  ns: string,
  name: string,
  timeoutMs = 60_000,
): Promise<CocoonClaim> {
  return waitFor(
    `claim ${name} Ready`,
    async () => {
      const claim = await getClaim(env, ns, name);
      return claimReady(claim) ? claim : undefined;
    },
    timeoutMs,
  );
}

/** The pool with `ready` members ready to claim and `replicas` unclaimed at its generation. */
export function waitPoolReady(
  env: ApiConnection,
  ns: string,
  name: string,
  ready: number,
  timeoutMs = 90_000,
): Promise<CocoonPool> {
  return waitFor(
    `pool ${name} with ${ready} ready`,
    async () => {
      const pool = await getPool(env, ns, name);
      const s = pool.status;
      return s?.observedGeneration === pool.metadata.generation && s?.ready === ready && s.replicas === ready
        ? pool
        : undefined;
    },
    timeoutMs,
  );
}

/** The pool's unclaimed members, not being deleted. */
export async function poolMembers(env: ApiConnection, ns: string, pool: string): Promise<CocoonSet[]> {
  const selector = encodeURIComponent(`${LABEL_POOL}=${pool}`);
  const res = await apiRequest(env, "GET", `${setsPath(ns)}?labelSelector=${selector}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body.items as CocoonSet[]).filter((cs) => !cs.metadata.deletionTimestamp);
}

/** `kubectl scale`: a merge patch of the /scale subresource's spec.replicas. */
export async function scalePool(
  env: ApiConnection,
  ns: string,
  name: string,
  replicas: number,
): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    `${poolsPath(ns)}/${name}/scale`,
    { spec: { replicas } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}
