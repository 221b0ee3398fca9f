// A settled pass on the real API server makes no call: sets (main + 2 sub-agents + 1 toolbox) brought
// to Running by the in-process operator on the real control plane, registry and vk-cocoon simulator,
// then, once the operator is quiet, passes through the CocoonSet reconciler over the operator's own
// cached view make no API request, no registry request and list no CocoonHibernation. A set carrying
// an idle policy costs the same: its pass only asks to be run again at its deadline. So does a
// set settled in Phase=Suspended (retain): its gate confirmed every `:hibernate` tag once, and the same
// pods at the same generation are not probed again. A set naming a guest policy, running or suspended,
// costs nothing either, and the guest hooks' passes over its pods make no exec and no write.
// bench/settled.ts measures the same at scale (test/support/settledpass.ts is their shared machinery).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { ANN_GUEST_POLICY, CONDITION_GUEST_HOOKS } from "../../src/guest/keys.ts";
import { ANN_EXPIRE_AT, ANN_SUSPEND_AFTER_IDLE, DEFAULT_NOTICE_BEFORE_MS } from "../../src/idle/policy.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { EVERY_POINT_POLICY, putGuestPolicy } from "../support/guestapi.ts";
import { getSet, isRunning, setPods, setsPath } from "../support/setapi.ts";
import { guestReconcilerOf, SettledPassProbe, suspendSets } from "../support/settledpass.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const env = testEnv();
const suffix = randomBytes(3).toString("hex");
const pool = `pool-${suffix}`;
const IMAGE = "ubuntu-dev-base";
const SETS = ["settled-a", "settled-b"];
const SUSPENDED = "settled-suspended";
const RUNS = 3;
const QUIET_MS = 3_000;
let ns: string;
let e2e: SetEnv | undefined;
let probe: SettledPassProbe;

before(async () => {
  probe = new SettledPassProbe(env.registry);
  e2e = await startSetEnv(env, "settled", {
    nodes: [{ name: `sim-${suffix}`, pool }],
    registry: probe.registry,
  });
  ns = e2e.ns;
  probe.attach(e2e.operator.operator);
});

after(async () => {
  await e2e?.stop();
});

function settledSet(name: string): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns },
    spec: {
      nodePool: pool,
      agent: { image: IMAGE, replicas: 2, mode: "clone" },
      toolboxes: [{ name: "tb", image: IMAGE, mode: "run" }],
    },
  };
}

describe("a settled pass on the real API server", () => {
  it("makes no API request, no registry request and lists no CocoonHibernation", async () => {
    for (const name of [...SETS, SUSPENDED]) {
      const res = await apiRequest(env, "POST", setsPath(ns), settledSet(name));
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    for (const name of [...SETS, SUSPENDED]) {
      await waitFor(
        `${name} Running`,
        async () => (isRunning(await getSet(env, ns, name), 3, 1) ? true : undefined),
        120_000,
      );
    }
    // Every VM hibernated and its tag pushed: the gate probed them all on the way to Suspended.
    await suspendSets(env, ns, [SUSPENDED]);
    // The counters see the bring-up (creates, image-rule manifest reads), so zeros below are real.
    const bringUp = probe.totals();
    assert.ok(bringUp.apiRequests > 0 && bringUp.registryRequests > 0, JSON.stringify(bringUp));
    await probe.waitForQuiet(QUIET_MS);

    for (let r = 0; r < RUNS; r++) {
      const run = await probe.run(ns, [...SETS, SUSPENDED]);
      assert.deepEqual(
        { requests: run.requests, registry: run.registryByMethod, chLists: run.chLists, events: run.events },
        { requests: {}, registry: {}, chLists: 0, events: 0 },
        `run ${r + 1}`,
      );
      assert.deepEqual(run.results, ["{}"]);
    }
  });

  it("with an idle policy pending, makes no request either and asks only for a requeue at the deadline", async () => {
    const [name = ""] = SETS;
    const patched = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/${name}`,
      {
        metadata: {
          annotations: { [ANN_SUSPEND_AFTER_IDLE]: "1h", [ANN_EXPIRE_AT]: "2099-01-01T00:00:00Z" },
        },
      },
      "application/merge-patch+json",
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    await waitFor(`${name} idleSuspendAt`, async () =>
      (await getSet(env, ns, name)).status?.idleSuspendAt ? true : undefined,
    );
    await probe.waitForQuiet(QUIET_MS);
    // Read once quiet: a pass on a cache behind the first status write may restamp the clock.
    const armed = await getSet(env, ns, name);
    const deadline = Date.parse(armed.status?.idleSuspendAt ?? "");
    const runStart = Date.now();
    const run = await probe.run(ns, [name]);
    const runEnd = Date.now();
    assert.deepEqual(
      { requests: run.requests, registry: run.registryByMethod, chLists: run.chLists, events: run.events },
      { requests: {}, registry: {}, chLists: 0, events: 0 },
    );
    // One timer at the IdleSuspendSoon notice, notice-before (10m by default) ahead of the idle
    // deadline an hour away: before the expiry in 2099 and the daily cap.
    assert.equal(run.results.length, 1, JSON.stringify(run.results));
    const { requeueAfterMs = 0 } = JSON.parse(run.results[0] ?? "{}") as { requeueAfterMs?: number };
    const noticeAt = deadline - DEFAULT_NOTICE_BEFORE_MS;
    assert.ok(
      requeueAfterMs >= noticeAt - runEnd && requeueAfterMs <= noticeAt - runStart + 1,
      `requeue after ${requeueAfterMs} ms, idle deadline ${armed.status?.idleSuspendAt}`,
    );
  });

  it("with a guest policy, running or suspended, makes no request and no exec, nor do its pods' guest passes", async () => {
    await putGuestPolicy(env, ns, "settled", EVERY_POINT_POLICY);
    const hooked = ["settled-hooked", "settled-hooked-suspended"];
    for (const name of hooked) {
      const cs = settledSet(name);
      cs.metadata.annotations = { [ANN_GUEST_POLICY]: "settled" };
      const res = await apiRequest(env, "POST", setsPath(ns), cs);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    for (const name of hooked) {
      await waitFor(
        `${name} Running with its hooks done`,
        async () => {
          const cs = await getSet(env, ns, name);
          const hooks = cs.status?.conditions?.find((c) => c.type === CONDITION_GUEST_HOOKS);
          return isRunning(cs, 3, 1) && hooks?.status === "True" ? true : undefined;
        },
        120_000,
      );
    }
    // Its pre-hibernate hooks ran on the way to Suspended.
    await suspendSets(env, ns, ["settled-hooked-suspended"]);
    await probe.waitForQuiet(QUIET_MS);

    const run = await probe.run(ns, hooked);
    assert.deepEqual(
      { requests: run.requests, registry: run.registryByMethod, chLists: run.chLists, events: run.events },
      { requests: {}, registry: {}, chLists: 0, events: 0 },
    );
    assert.deepEqual(run.results, ["{}"]);

    const pods = (
      await Promise.all(
        hooked.map(async (name) => (await setPods(env, ns, name)).map((p) => p.metadata.name ?? "")),
      )
    ).flat();
    assert.equal(pods.length, 8);
    const executions = { count: 0 };
    const guestRun = await probe.run(ns, pods, (operator, events) =>
      guestReconcilerOf(operator, events, executions),
    );
    assert.deepEqual(
      { requests: guestRun.requests, events: guestRun.events, execs: executions.count },
      { requests: {}, events: 0, execs: 0 },
    );
    assert.deepEqual(guestRun.results, ["{}"]);
  });
});
