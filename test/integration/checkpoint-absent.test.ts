// A cluster without the CocoonCheckpoint CRD (set up for the Go operator): the operator logs it and
// runs CocoonSets as before, without a checkpoint informer (nor pool, claim and restore informers,
// whose kinds share the group version), probing again on its (here shortened)
// schedule; a set asking to branch waits and says why. checkpoint-late.test.ts applies the CRD later.
// The API server is reached through a proxy that answers for cocoonset.cocoonstack.io/v1alpha1 as a
// server without that group version does.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { ANN_FROM_CHECKPOINT } from "../../src/checkpoint/keys.ts";
import { testEnv, waitFor } from "../env/testenv.ts";
import { type ApiProxy, startApiProxy } from "../support/faultproxy.ts";
import type { TestOperator } from "../support/operator.ts";
import { createMainOnlySet, getSet, objectEvents, setPods } from "../support/setapi.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const env = testEnv();
const suffix = randomBytes(3).toString("hex");
const pool = `nockpt-${suffix}`;
let ns: string;
let api: ApiProxy;
let e2e: SetEnv | undefined;
let operator: TestOperator;

before(async () => {
  e2e = await startSetEnv(env, "nockpt", {
    nodes: [{ name: `nockpt-node-${suffix}`, pool }],
    checkpointReprobeMs: 200,
    beforeOperator: async ({ ns }) => {
      api = await startApiProxy(env, {
        namespace: ns,
        seed: 1,
        unservedGroupVersions: ["cocoonset.cocoonstack.io/v1alpha1"],
      });
      return { kubeconfigPath: api.kubeconfigPath };
    },
  });
  ({ ns, operator } = e2e);
});

after(async () => {
  await e2e?.stop();
  await api?.stop();
});

describe("operator on a cluster without the CocoonCheckpoint CRD", () => {
  it("runs sets as before, probes again and never watches checkpoints", {
    timeout: 120_000,
  }, async () => {
    assert.equal(operator.operator.checkpoints.isAvailable, false);
    await createMainOnlySet(env, ns, pool, "plain");
    await waitFor(
      "plain Running",
      async () => ((await getSet(env, ns, "plain")).status?.readyAgents === 1 ? true : undefined),
      60_000,
    );
    await waitFor("a probe after the first", async () =>
      (operator.client.requestCounts().get("list cocooncheckpoints") ?? 0) >= 2 ? true : undefined,
    );
    assert.equal(operator.client.requestCounts().get("watch cocooncheckpoints"), undefined);
    assert.equal(operator.operator.checkpoints.isAvailable, false);
  });

  it("runs without pools either: probed at start, never watched", async () => {
    assert.equal(operator.operator.pools.isAvailable, false);
    assert.ok((operator.client.requestCounts().get("list cocoonpools") ?? 0) >= 1, "the probe listed pools");
    assert.equal(operator.client.requestCounts().get("watch cocoonpools"), undefined);
    assert.equal(operator.client.requestCounts().get("watch cocoonclaims"), undefined);
  });

  it("runs without restores: probed again on the checkpoints' schedule, never watched", async () => {
    await waitFor("a restore probe after the first", async () =>
      (operator.client.requestCounts().get("list cocoonrestores") ?? 0) >= 2 ? true : undefined,
    );
    assert.equal(operator.client.requestCounts().get("watch cocoonrestores"), undefined);
  });

  it("a set asking to branch creates nothing and says the API is not served", {
    timeout: 60_000,
  }, async () => {
    await createMainOnlySet(env, ns, pool, "wants-branch", { [ANN_FROM_CHECKPOINT]: "some-checkpoint" });
    const event = await waitFor("BranchWaiting event", async () =>
      (await objectEvents(env, ns, "wants-branch")).find((e) => e.reason === "BranchWaiting"),
    );
    assert.match(event.message, /CocoonCheckpoint API is not served/);
    assert.deepEqual(await setPods(env, ns, "wants-branch"), []);
  });
});
