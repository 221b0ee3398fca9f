// One manifest read per create attempt (docs/cocoonset.md, "The snapshot image rule"): a whole
// reconcile pass in which the wake of step 9 or the migration recreate of step 8 hands the main over
// to step 11 reads `<vm>:hibernate` once, and the migration's own probe of a missing main is that read.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { readSnapshotOnce } from "../../../src/cocoonset/imagerule.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { ANN_HIBERNATED_ON_NODE, ANN_RESTORE_FROM_HIBERNATE } from "../../../src/contract/keys.ts";
import {
  IMAGE,
  MAIN_VM,
  OTHER_IMAGE,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";

const TAG = `${MAIN_VM}:hibernate`;

function withPhase(cs: CocoonSet, phase: "Migrating" | "Suspended"): CocoonSet {
  cs.status = { phase, readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 };
  return cs;
}

function reconcile(h: ScalingHarness) {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: "ns", name: "demo" },
    new AbortController().signal,
  );
}

function registryCalls(h: ScalingHarness): string[] {
  return h.registry.calls.map((c) => `${c.op} ${c.repo}:${c.ref}`);
}

describe("one manifest read per create attempt", () => {
  it("a migration recreate reads the manifest once (no HEAD before the GET)", async () => {
    const h = scalingHarness(withPhase(scalingSet({ nodeName: "node-b" }), "Migrating"));
    h.registry.put(MAIN_VM, "hibernate", IMAGE);

    await reconcile(h);

    assert.deepEqual(registryCalls(h), [`getSnapshot ${TAG}`]);
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
  });

  it("a migration whose snapshot the image rule drops hands step 11 the read: one GET, the drop, a fresh main", async () => {
    const h = scalingHarness(withPhase(scalingSet({ nodeName: "node-b" }), "Migrating"));
    const digest = h.registry.put(MAIN_VM, "hibernate", OTHER_IMAGE);

    await reconcile(h);

    assert.deepEqual(registryCalls(h), [`getSnapshot ${TAG}`, `deleteTagAt ${MAIN_VM}:hibernate@${digest}`]);
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("a migration with no snapshot and no main: step 11 creates the main on the same read", async () => {
    const h = scalingHarness(withPhase(scalingSet({ nodeName: "node-b" }), "Migrating"));

    await reconcile(h);

    assert.deepEqual(registryCalls(h), [`getSnapshot ${TAG}`]);
    assert.deepEqual(h.created(), ["demo-0"]);
  });

  it("a released wake with nothing to restore clears the hint and step 11 boots the main on the same read", async () => {
    const cs = withPhase(scalingSet({ hibernatePolicy: "release" }), "Suspended");
    cs.metadata.annotations = { [ANN_HIBERNATED_ON_NODE]: "node-a" };
    const h = scalingHarness(cs);

    await reconcile(h);

    assert.deepEqual(registryCalls(h), [`getSnapshot ${TAG}`]);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], undefined);
    assert.deepEqual(h.created(), ["demo-0"]);
  });

  it("a released wake over a snapshot from another image: one GET, the drop, a fresh main", async () => {
    const cs = withPhase(scalingSet({ hibernatePolicy: "release" }), "Suspended");
    cs.metadata.annotations = { [ANN_HIBERNATED_ON_NODE]: "node-a" };
    const h = scalingHarness(cs);
    const digest = h.registry.put(MAIN_VM, "hibernate", OTHER_IMAGE);

    await reconcile(h);

    assert.deepEqual(registryCalls(h), [`getSnapshot ${TAG}`, `deleteTagAt ${MAIN_VM}:hibernate@${digest}`]);
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("a new pass reads again: the memo lives for one pass only", async () => {
    const h = scalingHarness(withPhase(scalingSet({ nodeName: "node-b" }), "Migrating"));
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    const first = h.pass();
    const second = h.pass();
    await readSnapshotOnce(first, h.registry, MAIN_VM);
    await readSnapshotOnce(first, h.registry, MAIN_VM);
    await readSnapshotOnce(second, h.registry, MAIN_VM);
    assert.deepEqual(registryCalls(h), [`getSnapshot ${TAG}`, `getSnapshot ${TAG}`]);
  });
});
