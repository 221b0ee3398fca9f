// Raw reads and writes of CocoonCheckpoints on the real API server, for integration tests.
import assert from "node:assert/strict";
import type { CocoonCheckpoint } from "../../src/apis/v1alpha1/types.ts";
import type { OciClient } from "../env/simulator/index.ts";
import { type ApiConnection, apiRequest, waitFor } from "../env/testenv.ts";

export const checkpointsPath = (ns: string): string =>
  `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`;

/** POSTs a checkpoint of `setName`; returns the API server's answer (a test of bad input reads it). */
export function createCheckpoint(
  env: ApiConnection,
  ns: string,
  name: string,
  setName: string,
  extra: { spec?: Partial<CocoonCheckpoint["spec"]>; annotations?: Record<string, string> } = {},
) {
  return apiRequest(env, "POST", checkpointsPath(ns), {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name, namespace: ns, ...(extra.annotations ? { annotations: extra.annotations } : {}) },
    spec: { cocoonSetRef: { name: setName }, ...extra.spec },
  });
}

export async function getCheckpoint(
  env: ApiConnection,
  ns: string,
  name: string,
): Promise<CocoonCheckpoint | undefined> {
  const res = await apiRequest(env, "GET", `${checkpointsPath(ns)}/${name}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonCheckpoint;
}

export function waitCheckpointPhase(
  env: ApiConnection,
  ns: string,
  name: string,
  phase: string,
  timeoutMs = 60_000,
): Promise<CocoonCheckpoint> {
  return waitFor(
    `checkpoint ${name} ${phase}`,
    async () => {
      const ck = await getCheckpoint(env, ns, name);
      return ck?.status?.phase === phase ? ck : undefined;
    },
    timeoutMs,
  );
}

export function waitCheckpointGone(env: ApiConnection, ns: string, name: string, timeoutMs = 30_000) {
  return waitFor(
    `checkpoint ${name} gone`,
    async () => ((await getCheckpoint(env, ns, name)) === undefined ? true : undefined),
    timeoutMs,
  );
}

export async function tagDigest(oci: OciClient, vm: string, tag: string): Promise<string | undefined> {
  return (await oci.getManifest(oci.repository(vm), tag))?.digest;
}

export function conditionOf<T extends { status?: { conditions?: { type: string }[] } }>(
  obj: T | undefined,
  type: string,
) {
  return obj?.status?.conditions?.find((c) => c.type === type) as
    | { type: string; status: string; reason: string; message: string; observedGeneration?: number }
    | undefined;
}
