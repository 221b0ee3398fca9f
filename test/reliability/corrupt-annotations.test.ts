// Bad input. Specs the CRD's CEL rules reject are covered, message by message, in
// test/integration/crd-validation.test.ts (cases in test/fixtures/cel-cases.ts); not repeated here.
// This file: a set whose operator annotations are corrupt (rebuild-history, hibernate-reclaim,
// delete-vm-names, suspending-since, and a pod's generation stamp) is read as empty with a warning,
// never crashes the operator process, and still runs, suspends, wakes and is torn down.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_DELETE_VM_NAMES,
  ANN_HIBERNATE_RECLAIM,
  ANN_REBUILD_HISTORY,
  ANN_SUSPENDING_SINCE,
} from "../../src/contract/keys.ts";
import { type Simulator, startSimulator } from "../env/simulator/index.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import {
  type ApiProxy,
  type RegistryProxy,
  startApiProxy,
  startRegistryProxy,
} from "../support/faultproxy.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { OperatorProcess } from "./operatorprocess.ts";

const env = testEnv();
const suffix = randomBytes(3).toString("hex");
const pool = `bad-${suffix}`;
const CORRUPT: Record<string, string> = {
  [ANN_REBUILD_HISTORY]: "{not json",
  [ANN_HIBERNATE_RECLAIM]: '{"vms": 7, "suspended": "x"}',
  [ANN_DELETE_VM_NAMES]: "[[[",
  [ANN_SUSPENDING_SINCE]: "the day before yesterday",
};
let ns: string;
let sim: Simulator;
let registry: RegistryProxy;
let api: ApiProxy;
let operator: OperatorProcess;
let checker: InvariantChecker;
const lines: string[] = [];

before(async () => {
  ns = await createNamespace(env, "corrupt");
  sim = await startSimulator({ ...env, nodes: [{ name: `bad-a-${suffix}`, pool }] });
  registry = await startRegistryProxy(env.registry);
  api = await startApiProxy(env, { namespace: ns, seed: 1 });
  checker = new InvariantChecker({ record: sim.record, registry });
  operator = new OperatorProcess({
    kubeconfigPath: api.kubeconfigPath,
    registry: registry.host,
    onLine: (_, line) => lines.push(line),
  });
  operator.start();
});

after(async () => {
  await operator?.stop();
  await api?.stop();
  await registry?.stop();
  await sim?.stop({ removeNodes: true });
});

const setPath = (name = "") =>
  `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets${name && `/${name}`}`;

async function getSet(): Promise<CocoonSet | undefined> {
  const res = await apiRequest(env, "GET", setPath("bad"));
  return res.status === 404 ? undefined : (res.body as CocoonSet);
}
async function annotate(changes: Record<string, string | null>): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    setPath("bad"),
    { metadata: { annotations: changes } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}
async function suspend(on: boolean): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    setPath("bad"),
    { spec: { suspend: on } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}
const phase = (want: string, extra: (cs: CocoonSet) => boolean = () => true) =>
  waitFor(
    `bad ${want}`,
    async () => {
      const cs = await getSet();
      return cs?.status?.phase === want &&
        cs.status.observedGeneration === cs.metadata.generation &&
        extra(cs)
        ? cs
        : undefined;
    },
    60_000,
  );
const warned = (fragment: string) => lines.some((l) => /"level":"warn"/.test(l) && l.includes(fragment));

it("reads corrupt operator annotations as empty with a warning and keeps working", {
  timeout: 150_000,
}, async () => {
  const res = await apiRequest(env, "POST", setPath(), {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "bad", namespace: ns, annotations: CORRUPT },
    spec: { nodePool: pool, agent: { image: "ubuntu-dev-base", replicas: 1, mode: "clone" } },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  await phase("Running", (cs) => cs.status?.readyAgents === 2);
  await waitFor("the hibernate-reclaim warning", async () =>
    warned("hibernate-reclaim") ? true : undefined,
  );

  // A pod's generation stamp corrupted: restamped.
  const podRes = await apiRequest(
    env,
    "PATCH",
    `/api/v1/namespaces/${ns}/pods/bad-0`,
    {
      metadata: { annotations: { [ANN_COCOONSET_GENERATION]: "NaN-ish" } },
    },
    "application/merge-patch+json",
  );
  assert.equal(podRes.status, 200);
  await waitFor("generation restamped", async () => {
    const pod = (await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/bad-0`)).body as Pod;
    const cs = await getSet();
    return pod.metadata.annotations?.[ANN_COCOONSET_GENERATION] === String(cs?.metadata.generation)
      ? true
      : undefined;
  });

  // Suspend and wake through corrupt values written again mid-flight.
  await suspend(true);
  await phase("Suspended");
  await annotate({ [ANN_REBUILD_HISTORY]: "[1,2", [ANN_DELETE_VM_NAMES]: '{"a":1}' });
  await suspend(false);
  await phase("Running", (cs) => cs.status?.readyAgents === 2);
  await annotate({ [ANN_SUSPENDING_SINCE]: "soon", [ANN_HIBERNATE_RECLAIM]: "nope" });
  await suspend(true);
  await phase("Suspended");
  await suspend(false);
  await phase(
    "Running",
    (cs) => cs.status?.readyAgents === 2 && cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] === undefined,
  );

  // Teardown with a corrupt delete-vm-names still collects and drops the finalizer.
  await annotate({ [ANN_DELETE_VM_NAMES]: "<<corrupt>>" });
  checker.teardown(`vk-${ns}-bad-`);
  await apiRequest(env, "DELETE", setPath("bad"));
  await waitFor("bad gone", async () => ((await getSet()) === undefined ? true : undefined), 60_000);

  checker.check();
  assert.deepEqual(operator.unexpectedExits, [], "the operator process never exited");
  assert.equal(operator.incarnation, 1, "no restart was needed");
});
