// The real environment for benchmarks: control plane + registry (test/env), the vk-cocoon simulator,
// and the few API helpers the benchmarks share. Everything started here stops at teardown.

import { randomBytes } from "node:crypto";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { type Environment, startEnvironment } from "../../test/env/environment.ts";
import { type SimTimings, type Simulator, startSimulator } from "../../test/env/simulator/index.ts";
import { type ApiConnection, apiRequest, createNamespace } from "../../test/env/testenv.ts";
import { poolsPath } from "../../test/support/poolapi.ts";
import { isRunning } from "../../test/support/setapi.ts";
import { onTeardown } from "./lifecycle.ts";

export { apiRequest, createNamespace, isRunning };

export interface Cluster {
  env: Environment;
  stop(): Promise<void>;
}

export async function startCluster(): Promise<Cluster> {
  const env = await startEnvironment();
  const stop = onTeardown(() => env.stop());
  return { env, stop };
}

export interface SimulatorHandle {
  sim: Simulator;
  pool: string;
  stop(): Promise<void>;
}

/** `count` simulated nodes of `pods` seats each in a pool of their own. */
export async function startPool(
  conn: Environment["info"],
  count: number,
  opts: { pods?: number; timings?: Partial<SimTimings> } = {},
): Promise<SimulatorHandle> {
  const suffix = randomBytes(3).toString("hex");
  const pool = `bench-${suffix}`;
  const sim = await startSimulator({
    ...conn,
    nodes: Array.from({ length: count }, (_, i) => ({
      name: `bench-${suffix}-${i}`,
      pool,
      pods: opts.pods ?? 110,
    })),
    timings: opts.timings,
  });
  const stop = onTeardown(() => sim.stop({ removeNodes: true }));
  return { sim, pool, stop };
}

export const IMAGE = "ubuntu-dev-base";

export function cocoonSet(namespace: string, name: string, spec: Partial<CocoonSetSpec>): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace },
    spec: { agent: { image: IMAGE, replicas: 0, mode: "clone" }, ...spec },
  };
}

export const setsPath = (ns: string) => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Creates the pods `make(from)` .. `make(to - 1)` in `ns`, 32 requests at a time. */
export async function createPods(
  conn: ApiConnection,
  ns: string,
  from: number,
  to: number,
  make: (i: number) => unknown,
): Promise<void> {
  await mapLimit(
    Array.from({ length: to - from }, (_, k) => from + k),
    32,
    async (i) => {
      const res = await apiRequest(conn, "POST", `/api/v1/namespaces/${ns}/pods`, make(i));
      if (res.status !== 201) throw new Error(`create pod ${i}: ${res.status} ${JSON.stringify(res.body)}`);
    },
  );
}

/** Creates the sets, `limit` requests at a time; returns when each create was answered (performance.now()). */
export async function createSets(
  conn: ApiConnection,
  sets: readonly CocoonSet[],
  limit = 16,
): Promise<number[]> {
  return mapLimit(sets, limit, async (cs) => {
    const res = await apiRequest(conn, "POST", setsPath(cs.metadata.namespace ?? ""), cs);
    if (res.status !== 201)
      throw new Error(`create ${cs.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
    return performance.now();
  });
}

export async function listSets(conn: ApiConnection, ns: string): Promise<CocoonSet[]> {
  const res = await apiRequest(conn, "GET", setsPath(ns));
  if (res.status !== 200) throw new Error(`list cocoonsets: ${res.status}`);
  return res.body.items as CocoonSet[];
}

/** Polls until `done(sets)`; returns the time it first held. */
export async function pollSets(
  conn: ApiConnection,
  ns: string,
  done: (sets: CocoonSet[]) => boolean,
  opts: { intervalMs?: number; timeoutMs?: number; what?: string } = {},
): Promise<number> {
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  for (;;) {
    const sets = await listSets(conn, ns);
    if (done(sets)) return performance.now();
    if (Date.now() > deadline) {
      const phases: Record<string, number> = {};
      for (const cs of sets)
        phases[cs.status?.phase ?? "none"] = (phases[cs.status?.phase ?? "none"] ?? 0) + 1;
      throw new Error(`timed out waiting for ${opts.what ?? "sets"}; phases ${JSON.stringify(phases)}`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 250));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** POSTs `body` to `path`; anything but 201 throws. */
export async function createObject(conn: ApiConnection, path: string, body: unknown): Promise<void> {
  const res = await apiRequest(conn, "POST", path, body);
  if (res.status !== 201) throw new Error(`create ${path}: ${res.status} ${JSON.stringify(res.body)}`);
}

/** The items of a list at `path`; anything but 200 throws. */
export async function listItems<T>(conn: ApiConnection, path: string): Promise<T[]> {
  const res = await apiRequest(conn, "GET", path);
  if (res.status !== 200) throw new Error(`list ${path}: ${res.status}`);
  return res.body.items as T[];
}

/**
 * Lists `path` every `pollMs` until `done` has held for every one of `names`; the time (Date.now())
 * each was first seen done. `hint` ends the timeout's message (say, where the operator's log is).
 */
export async function firstSeen<T extends { metadata: { name?: string } }>(
  conn: ApiConnection,
  what: string,
  path: string,
  names: readonly string[],
  done: (obj: T) => boolean,
  opts: { pollMs: number; timeoutMs?: number; hint?: string },
): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  while (seen.size < names.length) {
    const now = Date.now();
    for (const obj of await listItems<T>(conn, path)) {
      const name = obj.metadata.name ?? "";
      if (!seen.has(name) && names.includes(name) && done(obj)) seen.set(name, now);
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}: ${seen.size}/${names.length}${opts.hint ? `; ${opts.hint}` : ""}`,
      );
    await sleep(opts.pollMs);
  }
  return seen;
}

/** Resolves once the namespace has no CocoonSet left (deletes and teardowns done). */
export async function waitNoSets(
  conn: ApiConnection,
  ns: string,
  hint = "",
  timeoutMs = 300_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await listSets(conn, ns)).length > 0) {
    if (Date.now() > deadline) throw new Error(`sets of ${ns} not gone${hint ? `; ${hint}` : ""}`);
    await sleep(500);
  }
}

/** Resolves once the pool has `replicas` members, every one ready to claim, at its generation. */
export async function waitPoolFilled(
  conn: ApiConnection,
  ns: string,
  name: string,
  replicas: number,
  hint = "",
  timeoutMs = 300_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await apiRequest(conn, "GET", `${poolsPath(ns)}/${name}`);
    const s = res.body?.status;
    if (
      s?.ready === replicas &&
      s.replicas === replicas &&
      s.observedGeneration === res.body.metadata.generation
    )
      return;
    if (Date.now() > deadline)
      throw new Error(`pool ${name} not filled: ${JSON.stringify(s)}${hint ? `; ${hint}` : ""}`);
    await sleep(250);
  }
}
