// A pool that cannot fill says why (docs/pools.md), on the real API server: a ResourceQuota on
// CocoonSets refuses the member creates beyond it, and the pool's Ready condition turns False with
// reason MemberCreateRefused and the API server's answer, with a Warning event, instead of a pass that
// fails with no reason.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { createPool, getPool } from "../support/poolapi.ts";
import { objectEvents } from "../support/setapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv } from "../support/setwait.ts";

const env = testEnv();
let ns: string;
let nodePool: string;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "prefuse");
  ({ ns, pool: nodePool } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const SETS_COUNT = "count/cocoonsets.cocoonset.cocoonstack.io";

describe("a pool whose member creates a ResourceQuota refuses", () => {
  it("turns Ready False with MemberCreateRefused and the server's answer, and records a Warning", {
    timeout: 120_000,
  }, async () => {
    const quotas = `/api/v1/namespaces/${ns}/resourcequotas`;
    const created = await apiRequest(env, "POST", quotas, {
      apiVersion: "v1",
      kind: "ResourceQuota",
      metadata: { name: "sets", namespace: ns },
      spec: { hard: { [SETS_COUNT]: "1" } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    // No quota controller runs here: the test writes the usage it would have observed.
    const observed = await apiRequest(
      env,
      "PATCH",
      `${quotas}/sets/status`,
      { status: { hard: { [SETS_COUNT]: "1" }, used: { [SETS_COUNT]: "0" } } },
      "application/merge-patch+json",
    );
    assert.equal(observed.status, 200, JSON.stringify(observed.body));

    await createPool(env, ns, "capped", {
      replicas: 2,
      warmth: "Running",
      template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
    });
    const ready = await waitFor(
      "the pool saying why it cannot fill",
      async () => {
        const pool = await getPool(env, ns, "capped");
        const condition = pool.status?.conditions?.find((c) => c.type === "Ready");
        return condition?.reason === "MemberCreateRefused" ? condition : undefined;
      },
      60_000,
    );
    assert.equal(ready.status, "False");
    assert.match(ready.message, /the API server refused to create a member CocoonSet: .*exceeded quota/);
    const events = await objectEvents(env, ns, "capped");
    const warning = events.find((e) => e.reason === "MemberCreateRefused");
    assert.ok(warning, JSON.stringify(events));
    assert.equal(warning.type, "Warning");
  });
});
