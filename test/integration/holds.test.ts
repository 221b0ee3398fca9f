// One holder at a time (docs/checkpoints.md, "One holder at a time") where the features meet, on the
// real API server, registry and vk-cocoon simulator: a claim does not bind a pool member a
// CocoonRestore holds (it waits Pending with reason SetHeld, then binds and wakes the member once the
// restore has let go), and keep-checkpoints does not prune the checkpoint a pool branches its members
// from (the pool still fills from it). A set deleted while a restore copies into it is torn down only
// after the restore has let go, so no copy lands after its tags are collected. Restores have workers
// of their own: one whose copy is slow does not hold up another.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { CocoonPoolSpec } from "../../src/apis/v1alpha1/types.ts";
import { ANN_KEEP_CHECKPOINTS } from "../../src/checkpoint/keys.ts";
import { agentVMName } from "../../src/contract/vmname.ts";
import { ANN_RESTORE_HOLD, REASON_SET_HELD } from "../../src/holds.ts";
import { LABEL_CLAIM } from "../../src/pool/keys.ts";
import { OciClient } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { createCheckpoint, getCheckpoint, waitCheckpointPhase } from "../support/checkpointapi.ts";
import {
  createClaim,
  createPool,
  getClaim,
  poolMembers,
  scalePool,
  waitClaimReady,
  waitPoolReady,
} from "../support/poolapi.ts";
import { refusingRegistry } from "../support/refusingregistry.ts";
import { createRestore, getRestore, waitRestoreDone } from "../support/restoreapi.ts";
import { getSet, objectEvents, patchSetSpec, setsPath } from "../support/setapi.ts";
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
const recording = refusingRegistry(env.registry);
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const nodePool = `holds-${suffix}`;
let ns: string;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "holds", {
    registry: recording.registry,
    nodes: [{ name: `holds-node-${suffix}`, pool: nodePool }],
  });
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

async function checkpointOf(name: string, setName: string): Promise<void> {
  const res = await createCheckpoint(env, ns, name, setName);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  await waitCheckpointPhase(env, ns, name, "Ready");
}

describe("a claim and a restore on one pool member", () => {
  it("the claim does not bind the member the restore holds: it waits SetHeld, then binds and wakes it once the restore let go", {
    timeout: 240_000,
  }, async () => {
    await createPool(env, ns, "cold", spec(1, "Suspended"));
    await waitPoolReady(env, ns, "cold", 1, 120_000);
    const [member] = await poolMembers(env, ns, "cold");
    const memberName = member?.metadata.name ?? "";
    await checkpointOf("member-ck", memberName);

    // The restore takes the member and keeps it: its copy into :hibernate is refused for now.
    const copy = `/${agentVMName(ns, memberName, 0)}/manifests/hibernate`;
    recording.puts.add(copy);
    const res = await createRestore(env, ns, "undo", memberName, "member-ck");
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await waitFor(
      "the restore holding the member, its copy refused",
      async () => ((await getRestore(env, ns, "undo")).status?.reason === "CopyFailed" ? true : undefined),
      60_000,
    );
    assert.ok((await getSet(env, ns, memberName)).metadata.annotations?.[ANN_RESTORE_HOLD]);

    await createClaim(env, ns, "want", "cold");
    const pending = await waitFor(
      "the claim Pending because the member is held",
      async () => {
        const claim = await getClaim(env, ns, "want");
        return claim?.status?.reason === REASON_SET_HELD ? claim : undefined;
      },
      30_000,
    );
    assert.equal(pending.status?.phase, "Pending");
    assert.match(pending.status?.message ?? "", /held by CocoonRestore undo/);
    const held = await getSet(env, ns, memberName);
    assert.equal(held.metadata.labels?.[LABEL_CLAIM], undefined, "the member is not bound");
    assert.equal(held.spec.suspend, true);

    recording.puts.delete(copy);
    const done = await waitRestoreDone(env, ns, "undo", 90_000);
    assert.equal(done.status?.phase, "Restored", JSON.stringify(done.status));
    const ready = await waitClaimReady(env, ns, "want", 120_000);
    assert.equal(ready.status?.cocoonSetRef?.name, memberName, "the claim binds the member once it is free");
    const bound = await getSet(env, ns, memberName);
    assert.equal(bound.status?.phase, "Running");
    assert.equal(bound.metadata.annotations?.[ANN_RESTORE_HOLD], undefined);
  });
});

describe("keep-checkpoints and a pool's fromCheckpoint", () => {
  it("does not prune the checkpoint a pool branches from: the pool still fills from it", {
    timeout: 300_000,
  }, async () => {
    await createSet(env, ns, "golden", { nodePool });
    await waitRunning(env, ns, "golden", 1);
    await patchSetSpec(env, ns, "golden", { suspend: true });
    await waitPhase(env, ns, "golden", "Suspended");
    await checkpointOf("gold", "golden");
    await createPool(env, ns, "warm", { ...spec(1, "Running"), fromCheckpoint: "gold" });
    await waitPoolReady(env, ns, "warm", 1, 120_000);

    const annotate = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/golden`,
      { metadata: { annotations: { [ANN_KEEP_CHECKPOINTS]: "1" } } },
      "application/merge-patch+json",
    );
    assert.equal(annotate.status, 200, JSON.stringify(annotate.body));
    await checkpointOf("gold2", "golden");

    // A new member branches from gold after the prune that gold2's Ready ran.
    await scalePool(env, ns, "warm", 2);
    await waitPoolReady(env, ns, "warm", 2, 120_000);
    const gold = await getCheckpoint(env, ns, "gold");
    assert.ok(gold, "gold is there");
    assert.equal(gold.metadata.deletionTimestamp, undefined, "gold is not being deleted");
    assert.equal(gold.status?.phase, "Ready");
  });
});

describe("restores in parallel", () => {
  it("a restore whose copy is slow does not hold up another: the other is Restored meanwhile", {
    timeout: 240_000,
  }, async () => {
    const mainOnly = { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" as const } };
    for (const name of ["slow", "fast"]) {
      await createSet(env, ns, name, mainOnly);
      await waitRunning(env, ns, name, 1);
      await patchSetSpec(env, ns, name, { suspend: true });
      await waitPhase(env, ns, name, "Suspended");
      await checkpointOf(`${name}-ck`, name);
    }
    const release = recording.stall(`/${agentVMName(ns, "slow", 0)}/manifests/hibernate`);
    try {
      assert.equal((await createRestore(env, ns, "r-slow", "slow", "slow-ck")).status, 201);
      await waitFor(
        "the slow restore copying",
        async () => ((await getRestore(env, ns, "r-slow")).status?.reason === "Copying" ? true : undefined),
        60_000,
      );
      assert.equal((await createRestore(env, ns, "r-fast", "fast", "fast-ck")).status, 201);
      const fast = await waitRestoreDone(env, ns, "r-fast", 30_000);
      assert.equal(fast.status?.phase, "Restored", JSON.stringify(fast.status));
      assert.equal(
        (await getRestore(env, ns, "r-slow")).status?.reason,
        "Copying",
        "the slow copy is still held",
      );
    } finally {
      release();
    }
    const slow = await waitRestoreDone(env, ns, "r-slow", 60_000);
    assert.equal(slow.status?.phase, "Restored", JSON.stringify(slow.status));
  });
});

describe("a set deleted while a restore copies into it", () => {
  it("collects its tags only once the restore let go: no :hibernate copy outlives the set", {
    timeout: 240_000,
  }, async () => {
    const mainOnly = { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" as const } };
    await createSet(env, ns, "doomed", mainOnly);
    await waitRunning(env, ns, "doomed", 1);
    await patchSetSpec(env, ns, "doomed", { suspend: true });
    await waitPhase(env, ns, "doomed", "Suspended");
    await checkpointOf("doomed-ck", "doomed");
    const vm = agentVMName(ns, "doomed", 0);
    const release = recording.stall(`/${vm}/manifests/hibernate`);
    try {
      assert.equal((await createRestore(env, ns, "r-doomed", "doomed", "doomed-ck")).status, 201);
      await waitFor(
        "the restore's copy under way",
        async () => ((await getRestore(env, ns, "r-doomed")).status?.reason === "Copying" ? true : undefined),
        60_000,
      );
      const deleted = await apiRequest(env, "DELETE", `${setsPath(ns)}/doomed`);
      assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body));
      await waitFor(
        "the teardown waiting for the restore",
        async () =>
          (await objectEvents(env, ns, "doomed")).some((e) => e.reason === REASON_SET_HELD)
            ? true
            : undefined,
        60_000,
      );
      assert.ok(await hasHibernateTag(oci, vm), "no tag collected while the restore holds the set");
    } finally {
      release();
    }
    await waitFor(
      "the set gone",
      async () =>
        (await apiRequest(env, "GET", `${setsPath(ns)}/doomed`)).status === 404 ? true : undefined,
      90_000,
    );
    assert.equal((await getRestore(env, ns, "r-doomed")).status?.reason, "SetDeletedDuringRestore");
    assert.equal(await hasHibernateTag(oci, vm), false, "the restore's copy was collected with the set");
  });
});
