// CocoonSet end-to-end helpers the newer integration files share: create a set, wait for a phase or
// for Running with every pod Ready at the current generation, read a `:hibernate` tag and the reclaim
// record, delete a pod and wait until it is gone. Every wait polls the API server.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { type ReclaimRecord, readReclaim } from "../../src/pass/reclaimrecord.ts";
import {
  type OciClient,
  type SimNodeOptions,
  type SimTimings,
  type Simulator,
  startSimulator,
} from "../env/simulator/index.ts";
import {
  type ApiConnection,
  apiRequest,
  createNamespace,
  type TestEnvInfo,
  waitFor,
} from "../env/testenv.ts";
import { startTestOperator, type TestOperator, type TestOperatorOptions } from "./operator.ts";
import { getSet, setPods, setsPath } from "./setapi.ts";

export const E2E_IMAGE = "ubuntu-dev-base";

/**
 * A namespace, the simulator's nodes (by default one, in a pool of its own) and the operator watching
 * the namespace.
 */
export interface SetEnv {
  ns: string;
  /** As SetEnvOptions.pool says. */
  pool: string;
  sim: Simulator;
  /** The running operator: the one startOperator() started last. */
  operator: TestOperator;
  /** Starts another operator with the same options, once the test stopped the last, as `operator`. */
  startOperator(): Promise<TestOperator>;
  /** Stops the operator, then the simulator, deleting its nodes. */
  stop(): Promise<void>;
}

/** The operator's options but its namespace, which is the environment's. */
export type SetEnvOperatorOptions = Omit<TestOperatorOptions, "namespace">;

export interface SetEnvOptions extends SetEnvOperatorOptions {
  /** The handle's pool; default the first node's pool, or without `nodes` a fresh `<prefix>-<6 hex>`. */
  pool?: string;
  /** The simulator's nodes; default one node named after `pool`, in that pool. */
  nodes?: SimNodeOptions[];
  /** The simulator's; default its DEFAULT_TIMINGS. */
  timings?: Partial<SimTimings>;
  /**
   * Runs once the simulator is up, before the operator starts (say, to put a proxy or an invariant
   * checker in front of it); the options it returns are laid over the others.
   */
  beforeOperator?: (
    started: Pick<SetEnv, "ns" | "pool" | "sim">,
  ) => SetEnvOperatorOptions | undefined | Promise<SetEnvOperatorOptions | undefined>;
}

/**
 * Creates a namespace on `env`'s API server (the shared environment's, or a control plane of the
 * test's own), starts the simulator's nodes there, then the in-process operator watching the namespace,
 * by default through `env`'s kubeconfig and registry. A failed operator start stops the simulator again.
 */
export async function startSetEnv(
  env: TestEnvInfo,
  prefix: string,
  opts: SetEnvOptions = {},
): Promise<SetEnv> {
  const { pool: poolOpt, nodes, timings, beforeOperator, ...operatorOpts } = opts;
  const ns = await createNamespace(env, prefix);
  const pool = poolOpt ?? nodes?.[0]?.pool ?? `${prefix}-${randomBytes(3).toString("hex")}`;
  const sim = await startSimulator({
    ...env,
    nodes: nodes ?? [{ name: pool, pool }],
    ...(timings ? { timings } : {}),
  });
  let operatorOptions: TestOperatorOptions;
  let operator: TestOperator;
  try {
    operatorOptions = {
      kubeconfigPath: env.kubeconfigPath,
      registryBase: env.registry,
      ...operatorOpts,
      ...(await beforeOperator?.({ ns, pool, sim })),
      namespace: ns,
    };
    operator = await startTestOperator(operatorOptions);
  } catch (err) {
    await sim.stop({ removeNodes: true });
    throw err;
  }
  const handle: SetEnv = {
    ns,
    pool,
    sim,
    operator,
    startOperator: async () => {
      handle.operator = await startTestOperator(operatorOptions);
      return handle.operator;
    },
    stop: async () => {
      await handle.operator.stop();
      await sim.stop({ removeNodes: true });
    },
  };
  return handle;
}

export async function createSet(
  env: ApiConnection,
  ns: string,
  name: string,
  spec: Partial<CocoonSetSpec>,
): Promise<void> {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns },
    spec: { agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" }, ...spec },
  };
  const res = await apiRequest(env, "POST", setsPath(ns), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

/** The set in `phase`; with `atGeneration`, at its current generation too. */
export function waitPhase(
  env: ApiConnection,
  ns: string,
  name: string,
  phase: string,
  timeoutMs = 90_000,
  atGeneration = false,
): Promise<CocoonSet> {
  return waitFor(
    `${name} ${phase}`,
    async () => {
      const cs = await getSet(env, ns, name);
      const caughtUp = !atGeneration || cs.status?.observedGeneration === cs.metadata.generation;
      return cs.status?.phase === phase && caughtUp ? cs : undefined;
    },
    timeoutMs,
  );
}

/** Running with `agents` agents and `toolboxes` toolboxes Ready at the current generation. */
export function waitRunning(
  env: ApiConnection,
  ns: string,
  name: string,
  agents: number,
  toolboxes = 0,
  timeoutMs = 90_000,
): Promise<CocoonSet> {
  return waitFor(
    `${name} Running with ${agents} agents and ${toolboxes} toolboxes Ready`,
    async () => {
      const cs = await getSet(env, ns, name);
      const s = cs.status;
      return s?.phase === "Running" &&
        s.readyAgents === agents &&
        s.readyToolboxes === toolboxes &&
        s.observedGeneration === cs.metadata.generation
        ? cs
        : undefined;
    },
    timeoutMs,
  );
}

export async function hasHibernateTag(oci: OciClient, vm: string): Promise<boolean> {
  return (await oci.getManifest(oci.repository(vm), TAG_HIBERNATE)) !== null;
}

export function reclaimOf(cs: CocoonSet): ReclaimRecord {
  return readReclaim(cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;
}

/**
 * Deletes the pod (as a user would) and waits until the API server no longer has that pod object
 * (the name may already hold its replacement).
 */
export async function deletePodAndWait(env: ApiConnection, ns: string, name: string): Promise<void> {
  const res = await apiRequest(env, "DELETE", `/api/v1/namespaces/${ns}/pods/${name}`);
  assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
  const uid = (res.body as Pod).metadata.uid;
  await waitFor(
    `${name} (${uid}) gone`,
    async () => {
      const got = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
      return got.status === 404 || (got.body as Pod).metadata.uid !== uid ? true : undefined;
    },
    60_000,
  );
}

/** The set's live pod of that name, or undefined. */
export async function livePod(
  env: ApiConnection,
  ns: string,
  set: string,
  name: string,
): Promise<Pod | undefined> {
  return (await setPods(env, ns, set)).find((pod) => pod.metadata.name === name);
}
