// Warm pools kept hibernated, and the edges (docs/pools.md), on the real API server, registry and
// vk-cocoon simulator: a Suspended pool boots each member, hibernates it with its seat released (no
// pod left, a `:hibernate` tag in the registry) and counts it ready; a claim wakes one and turns Ready
// once it runs; a claim of an unknown pool waits Pending with a reason; the CRD refuses a template that
// sets suspend; deleting a pool deletes its unclaimed members and leaves bound sets with their claims;
// a pool from a checkpoint restores every member's VM from it.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { CocoonPoolSpec } from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, CONDITION_BRANCHED } from "../../src/checkpoint/keys.ts";
import { agentVMName } from "../../src/contract/vmname.ts";
import { LABEL_CLAIM } from "../../src/pool/keys.ts";
import { OciClient } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  claimsPath,
  createClaim,
  createPool,
  getClaim,
  poolMembers,
  poolsPath,
  waitClaimReady,
  waitPoolReady,
} from "../support/poolapi.ts";
import { getSet, patchSetSpec, setPods } from "../support/setapi.ts";
import {
  createSet,
  E2E_IMAGE,
  hasHibernateTag,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const nodePool = `spool-${suffix}`;
let ns: string;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "spool", { nodes: [{ name: `spool-node-${suffix}`, pool: nodePool }] });
  ns = e2e.ns;
});

after(async () => {
  await e2e?.stop();
});

const spec = (replicas: number, warmth: "Running" | "Suspended"): CocoonPoolSpec => ({
  replicas,
  warmth,
  template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
});

describe("a Suspended pool", () => {
  it("keeps members hibernated with their seats released, and a claim wakes one to Ready", {
    timeout: 150_000,
  }, async () => {
    await createPool(env, ns, "cold", spec(2, "Suspended"));
    await waitPoolReady(env, ns, "cold", 2, 120_000);
    for (const cs of await poolMembers(env, ns, "cold")) {
      const name = cs.metadata.name ?? "";
      assert.equal(cs.status?.phase, "Suspended");
      assert.equal(cs.spec.hibernatePolicy, "release");
      assert.deepEqual(await setPods(env, ns, name), [], `${name} holds no seat`);
      assert.ok(
        await hasHibernateTag(oci, agentVMName(ns, name, 0)),
        `${name}'s VM state is in the registry`,
      );
    }
    await createClaim(env, ns, "wake-me", "cold");
    const waking = await waitFor("the claim Bound", async () => {
      const claim = await getClaim(env, ns, "wake-me");
      return claim?.status?.phase === "Bound" ? claim : undefined;
    });
    const setName = waking.status?.cocoonSetRef?.name ?? "";
    const claim = await waitClaimReady(env, ns, "wake-me", 90_000);
    assert.equal(claim.status?.cocoonSetRef?.name, setName);
    const cs = await getSet(env, ns, setName);
    assert.equal(cs.status?.phase, "Running");
    assert.equal(cs.spec.suspend, false);
    const pods = await setPods(env, ns, setName);
    assert.equal(pods.length, 1, "the woken main runs again");
  });

  it("deleting the pool deletes its unclaimed members and leaves the bound set with its claim", {
    timeout: 90_000,
  }, async () => {
    const setName = (await getClaim(env, ns, "wake-me"))?.status?.cocoonSetRef?.name ?? "";
    const res = await apiRequest(env, "DELETE", `${poolsPath(ns)}/cold`);
    assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
    await waitFor(
      "the pool gone",
      async () => ((await apiRequest(env, "GET", `${poolsPath(ns)}/cold`)).status === 404 ? true : undefined),
      60_000,
    );
    await waitFor(
      "no unclaimed member left",
      async () => ((await poolMembers(env, ns, "cold")).length === 0 ? true : undefined),
      60_000,
    );
    const bound = await getSet(env, ns, setName);
    assert.ok(!bound.metadata.deletionTimestamp);
    assert.equal(bound.metadata.labels?.[LABEL_CLAIM], "wake-me");
    assert.equal((await getClaim(env, ns, "wake-me"))?.status?.phase, "Bound");
  });
});

describe("a pool from a checkpoint", () => {
  it("branches every member from the checkpoint: each member's VM is restored from it, never booted", {
    timeout: 150_000,
  }, async () => {
    await createSet(env, ns, "golden", { nodePool });
    await waitRunning(env, ns, "golden", 1);
    await patchSetSpec(env, ns, "golden", { suspend: true });
    await waitPhase(env, ns, "golden", "Suspended");
    const ck = await apiRequest(
      env,
      "POST",
      `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`,
      {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonCheckpoint",
        metadata: { name: "gold", namespace: ns },
        spec: { cocoonSetRef: { name: "golden" } },
      },
    );
    assert.equal(ck.status, 201, JSON.stringify(ck.body));
    await waitFor(
      "checkpoint gold Ready",
      async () => {
        const got = await apiRequest(
          env,
          "GET",
          `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints/gold`,
        );
        return got.body?.status?.phase === "Ready" ? true : undefined;
      },
      60_000,
    );

    await createPool(env, ns, "branched", { ...spec(2, "Running"), fromCheckpoint: "gold" });
    await waitPoolReady(env, ns, "branched", 2, 120_000);
    for (const cs of await poolMembers(env, ns, "branched")) {
      const name = cs.metadata.name ?? "";
      assert.equal(cs.metadata.annotations?.[ANN_FROM_CHECKPOINT], "gold");
      const branched = cs.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
      assert.equal(branched?.status, "True", `${name} branched`);
      const vm = agentVMName(ns, name, 0);
      assert.equal(
        e2e?.sim.record.events({ kind: "restore", vmName: vm }).length,
        1,
        `${vm} restored from the checkpoint`,
      );
      assert.equal(e2e?.sim.record.events({ kind: "boot", vmName: vm }).length, 0, `${vm} never booted`);
    }
  });
});

describe("pool edges", () => {
  it("a claim of an unknown pool waits Pending with the reason", { timeout: 30_000 }, async () => {
    await createClaim(env, ns, "orphan", "no-such-pool");
    const claim = await waitFor("the claim Pending", async () => {
      const got = await getClaim(env, ns, "orphan");
      return got?.status?.phase === "Pending" ? got : undefined;
    });
    assert.equal(claim.status?.reason, "PoolNotFound");
    assert.match(claim.status?.message ?? "", /no-such-pool/);
  });

  it("the CRD refuses a template that sets suspend, a negative replicas and an unknown warmth", async () => {
    const post = (spec: unknown) =>
      apiRequest(env, "POST", poolsPath(ns), {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonPool",
        metadata: { name: "bad", namespace: ns },
        spec,
      });
    const template = { spec: { agent: { image: E2E_IMAGE } } };
    const suspended = await post({ replicas: 1, template: { spec: { ...template.spec, suspend: true } } });
    assert.equal(suspended.status, 422);
    assert.match(JSON.stringify(suspended.body), /template.spec.suspend is the pool's/);
    assert.equal((await post({ replicas: -1, template })).status, 422);
    assert.equal((await post({ replicas: 1, warmth: "Lukewarm", template })).status, 422);
    const claim = await apiRequest(env, "POST", claimsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonClaim",
      metadata: { name: "bad", namespace: ns },
      spec: {},
    });
    assert.equal(claim.status, 422);
  });
});
