import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonHibernation } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { reconcileMain } from "../../../src/cocoonset/steps/main.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ANN_REBUILD_HISTORY,
  ANN_RESTORE_FROM_HIBERNATE,
} from "../../../src/contract/keys.ts";
import { COCOONHIBERNATIONS } from "../../../src/controller/resources.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import {
  IMAGE,
  MAIN_VM,
  OTHER_IMAGE,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";

function hibernated(podName: string): CocoonHibernation {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName, namespace: "ns" },
    spec: { podRef: { name: podName }, desire: "Hibernate" },
    status: { phase: "Hibernated" },
  };
}

function reconcile(h: ScalingHarness) {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: "ns", name: "demo" },
    new AbortController().signal,
  );
}

function podWrites(h: ScalingHarness): string[] {
  return h.client
    .writes()
    .filter((c) => c.resource === "pods")
    .map((c) => `${c.verb} ${c.name}`);
}

describe("step 11: main agent", () => {
  it("creates a missing main and requeues at once, after one manifest read", async () => {
    const h = scalingHarness(scalingSet());
    const outcome = await reconcileMain(h.pass());
    assert.deepEqual(outcome, { done: true, result: { requeue: true } });
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.deepEqual(h.registry.callsOf("getSnapshot"), [`${MAIN_VM}:hibernate`]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("waits 5 s when the old main still holds the name (AlreadyExists)", async () => {
    const h = scalingHarness(scalingSet(), (cs) => [
      {
        ...buildMainPod(cs),
        metadata: { ...buildMainPod(cs).metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
      },
    ]);
    const outcome = await reconcileMain(h.pass());
    assert.deepEqual(outcome, { done: true, result: { requeueAfterMs: 5_000 } });
  });

  it("restore-marks the main a Hibernated CocoonHibernation names, when its tag exists", async () => {
    const h = scalingHarness(scalingSet());
    h.client.seed(COCOONHIBERNATIONS, hibernated("demo-0"));
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    await reconcileMain(h.pass());
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
  });

  it("restore-marks a main the reclaim record owes a restore", async () => {
    const cs = scalingSet();
    cs.metadata.annotations = {
      [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: [MAIN_VM], restore: [MAIN_VM] }),
    };
    const h = scalingHarness(cs);
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    await reconcileMain(h.pass());
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
  });

  it("image rule: a tag from another image is deleted before the main is created fresh", async () => {
    const h = scalingHarness(scalingSet());
    h.client.seed(COCOONHIBERNATIONS, hibernated("demo-0"));
    const digest = h.registry.put(MAIN_VM, "hibernate", OTHER_IMAGE);
    await reconcileMain(h.pass());
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`${MAIN_VM}:hibernate@${digest}`]);
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("a manifest read the registry refuses fails the pass and creates nothing", async () => {
    const h = scalingHarness(scalingSet());
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);
    await assert.rejects(reconcileMain(h.pass()));
    assert.deepEqual(h.client.writes(), []);
  });

  it("a main dead-lettered at this generation and then gone is not recreated: phase Failed", async () => {
    const cs = scalingSet({}, 3);
    cs.metadata.annotations = {
      [ANN_REBUILD_HISTORY]: JSON.stringify({
        "demo-0": { count: 4, lastDeleted: "2026-01-01T00:00:00Z", deadLetter: 3 },
      }),
    };
    const h = scalingHarness(cs);
    const outcome = await reconcileMain(h.pass());
    assert.deepEqual(outcome, { done: true, result: {} });
    assert.deepEqual(h.created(), []);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.set().status?.phase, "Failed");
  });

  it("a drifted main is deleted for rebuild within the budget, history first", async () => {
    const h = scalingHarness(scalingSet(), (cs) => [
      ready(buildMainPod({ ...cs, spec: { ...cs.spec, agent: { ...cs.spec.agent, image: OTHER_IMAGE } } })),
    ]);
    const outcome = await reconcileMain(h.pass());
    assert.deepEqual(outcome, { done: true, result: { requeue: true } });
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}/${c.name}`),
      ["patch cocoonsets/demo", "delete pods/demo-0"],
    );
    assert.equal(h.events.events[0]?.message, "demo-0 attempt 1/4");
  });

  it("a main not Ready reports Pending and polls in 5 s; nothing else scales", async () => {
    const h = scalingHarness(scalingSet({ agent: { image: IMAGE, replicas: 2 } }), (cs) => [
      buildMainPod(cs),
    ]);
    const outcome = await reconcileMain(h.pass());
    assert.deepEqual(outcome, { done: true, result: { requeueAfterMs: 5_000 } });
    assert.equal(h.set().status?.phase, "Pending");
    assert.deepEqual(h.created(), []);
    h.client.clearCalls();
    await reconcileMain(h.pass());
    assert.deepEqual(h.client.writes(), [], "an unchanged Pending status is not written again");
  });

  it("a Ready main that matches its spec hands on without a call", async () => {
    const h = scalingHarness(scalingSet(), (cs) => [ready(buildMainPod(cs))]);
    assert.deepEqual(await reconcileMain(h.pass()), { done: false });
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.registry.calls, []);
  });
});

describe("whole passes through steps 11–13", () => {
  it("a steady set lists no CocoonHibernations, reads no manifest and deletes nothing", async () => {
    const h = scalingHarness(
      scalingSet({ agent: { image: IMAGE, replicas: 1 }, toolboxes: [{ name: "tb", image: IMAGE }] }),
      (cs) => [
        ready(buildMainPod(cs)),
        ready(buildSubAgentPod(cs, 1, "cocoonset-node-2", { mainVMName: MAIN_VM })),
        ready(buildToolboxPod(cs, { name: "tb", image: IMAGE })),
      ],
    );
    await reconcile(h);
    assert.equal(h.view.hibernationLists, 0);
    assert.deepEqual(h.registry.calls, []);
    assert.deepEqual(podWrites(h), []);
  });

  it("replicas 2 and a toolbox with only the main Ready: exactly one CocoonHibernation list", async () => {
    const h = scalingHarness(
      scalingSet({ agent: { image: IMAGE, replicas: 2 }, toolboxes: [{ name: "tb", image: IMAGE }] }),
      (cs) => [ready(buildMainPod(cs))],
    );
    const result = await reconcile(h);
    assert.equal(h.view.hibernationLists, 1);
    assert.deepEqual(h.created().sort(), ["demo-1", "demo-2", "demo-tb"]);
    assert.deepEqual(result, { requeue: true });
  });

  it("the image rule costs one manifest read per create attempt", async () => {
    const h = scalingHarness(
      scalingSet({ agent: { image: IMAGE, replicas: 2 }, toolboxes: [{ name: "tb", image: IMAGE }] }),
      (cs) => [ready(buildMainPod(cs))],
    );
    await reconcile(h);
    assert.deepEqual(h.registry.callsOf("getSnapshot").sort(), [
      "vk-ns-demo-1:hibernate",
      "vk-ns-demo-2:hibernate",
      "vk-ns-demo-tb:hibernate",
    ]);
  });
});
