// Raw API reads and writes the CocoonSet integration tests share: a set, its live pods, its events.
import assert from "node:assert/strict";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { type ApiConnection, apiRequest } from "../env/testenv.ts";

export interface SetEvent {
  type: string;
  reason: string;
  message: string;
}

export const setsPath = (ns: string): string =>
  `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;

export async function getSet(env: ApiConnection, ns: string, name: string): Promise<CocoonSet> {
  const res = await apiRequest(env, "GET", `${setsPath(ns)}/${name}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonSet;
}

/** Creates a set in `pool` (default: the main agent alone, image ubuntu-dev-base), annotated if asked. */
export async function createPoolSet(
  env: ApiConnection,
  ns: string,
  pool: string,
  name: string,
  spec: Partial<CocoonSetSpec> = {},
  annotations?: Record<string, string>,
): Promise<void> {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: { nodePool: pool, agent: { image: "ubuntu-dev-base", replicas: 0, mode: "clone" }, ...spec },
  };
  const res = await apiRequest(env, "POST", setsPath(ns), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

/** Creates a set of the main agent alone (image ubuntu-dev-base) in `pool`, annotated if asked. */
export function createMainOnlySet(
  env: ApiConnection,
  ns: string,
  pool: string,
  name: string,
  annotations?: Record<string, string>,
): Promise<void> {
  return createPoolSet(env, ns, pool, name, {}, annotations);
}

/** Merge-patches spec fields of the set. */
export async function patchSetSpec(
  env: ApiConnection,
  ns: string,
  name: string,
  spec: Partial<CocoonSetSpec> | Record<string, unknown>,
): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    `${setsPath(ns)}/${name}`,
    { spec },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

/** The set's pods that are not being deleted. */
export async function setPods(env: ApiConnection, ns: string, name: string): Promise<Pod[]> {
  const selector = encodeURIComponent(`cocoonset.cocoonstack.io/name=${name}`);
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${selector}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body.items as Pod[]).filter((pod) => !pod.metadata.deletionTimestamp);
}

/** Events about the object named `name` in the namespace. */
export async function objectEvents(env: ApiConnection, ns: string, name: string): Promise<SetEvent[]> {
  const selector = encodeURIComponent(`involvedObject.name=${name}`);
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/events?fieldSelector=${selector}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.items as SetEvent[];
}

/** Running with every agent and toolbox Ready at the current generation. */
export function isRunning(cs: CocoonSet, agents: number, toolboxes = 0): boolean {
  const s = cs.status;
  return (
    s?.phase === "Running" &&
    s.readyAgents === agents &&
    s.desiredAgents === agents &&
    (s.readyToolboxes ?? 0) === toolboxes &&
    s.observedGeneration === cs.metadata.generation
  );
}
