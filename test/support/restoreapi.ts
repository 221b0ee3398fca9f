// Raw reads and writes of CocoonRestores on the real API server, for integration tests.
import assert from "node:assert/strict";
import type { CocoonRestore } from "../../src/apis/v1alpha1/types.ts";
import { type ApiConnection, apiRequest, waitFor } from "../env/testenv.ts";

export const restoresPath = (ns: string): string =>
  `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocoonrestores`;

/** POSTs a restore of `setName` to `checkpointName`; returns the API server's answer. */
export function createRestore(
  env: ApiConnection,
  ns: string,
  name: string,
  setName: string,
  checkpointName: string,
) {
  return apiRequest(env, "POST", restoresPath(ns), {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonRestore",
    metadata: { name, namespace: ns },
    spec: { cocoonSetRef: { name: setName }, checkpointRef: { name: checkpointName } },
  });
}

export async function getRestore(env: ApiConnection, ns: string, name: string): Promise<CocoonRestore> {
  const res = await apiRequest(env, "GET", `${restoresPath(ns)}/${name}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonRestore;
}

/** The restore once it is Restored or Failed. */
export function waitRestoreDone(
  env: ApiConnection,
  ns: string,
  name: string,
  timeoutMs = 120_000,
): Promise<CocoonRestore> {
  return waitFor(
    `restore ${name} Restored or Failed`,
    async () => {
      const r = await getRestore(env, ns, name);
      return r.status?.phase === "Restored" || r.status?.phase === "Failed" ? r : undefined;
    },
    timeoutMs,
  );
}
