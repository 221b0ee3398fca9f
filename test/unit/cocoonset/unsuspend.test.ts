import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { reconcileUnsuspend } from "../../../src/cocoonset/steps/unsuspend.ts";
import { ANN_HIBERNATE, ANN_HIBERNATE_RECLAIM, ANN_VM_NAME } from "../../../src/contract/keys.ts";
import { REASON_FOREIGN_VM_NAME_IGNORED } from "../../../src/contract/vmname.ts";
import { COCOONHIBERNATIONS, PODS } from "../../../src/controller/resources.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { holdCalls, settle } from "../../support/hold.ts";
import { IMAGE, ready, type ScalingHarness, scalingHarness, scalingSet } from "../../support/scaling.ts";
import { annotate, hibernated, storedReclaim, timeline, woken } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";
const VM2 = "vk-ns-demo-2";
const VMTB = "vk-ns-demo-tb";
const GEN = 4;
const CONTINUED = { done: false };

/** An unsuspended set at generation 4 with 2 sub-agents and the reclaim record `record` (if any). */
function unsuspendedSet(record?: object, toolboxes = false): CocoonSet {
  const cs = scalingSet(
    {
      agent: { image: IMAGE, replicas: 2 },
      ...(toolboxes ? { toolboxes: [{ name: "tb", image: "tb" }] } : {}),
    },
    GEN,
  );
  if (record) cs.metadata.annotations = { [ANN_HIBERNATE_RECLAIM]: JSON.stringify(record) };
  return cs;
}

function sub(cs: CocoonSet, slot: number): Pod {
  return buildSubAgentPod(cs, slot, "node-a");
}

function hibernation(podName: string, desire: "Hibernate" | "Wake", phase?: string): CocoonHibernation {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName, namespace: "ns" },
    spec: { podRef: { name: podName }, desire },
    ...(phase ? { status: { phase: phase as "Hibernating" } } : {}),
  };
}

/** Annotation cleared, but vk-cocoon has not brought the VM back yet. */
function notWokenYet(pod: Pod): Pod {
  return annotate(hibernated(pod, GEN), { [ANN_HIBERNATE]: null });
}

function run(h: ScalingHarness) {
  return reconcileUnsuspend(h.pass());
}

/** A whole pass, every step. */
function reconcileSet(h: ScalingHarness) {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: "ns", name: "demo" },
    new AbortController().signal,
  );
}

/** Main and sub 1 woken at the record's generation, both recorded with their tags in the registry. */
function bothWoken(): ScalingHarness & { digests: string[] } {
  const h = scalingHarness(unsuspendedSet({ generation: GEN, vms: [VM0, VM1] }), (cs) => [
    woken(buildMainPod(cs), GEN),
    woken(sub(cs, 1), GEN),
  ]);
  const digests = [VM0, VM1].map((vm) => h.registry.put(vm, "hibernate", IMAGE));
  return Object.assign(h, { digests });
}

function hibernateFlag(h: ScalingHarness, name: string): string | undefined {
  return h.pod(name)?.metadata.annotations?.[ANN_HIBERNATE];
}

describe("step 10: clearing the hibernate annotations", () => {
  it("annotated main and sub are cleared; the unannotated toolbox is untouched", async () => {
    const h = scalingHarness(unsuspendedSet(undefined, true), (cs) => {
      const tb = cs.spec.toolboxes?.[0];
      return [
        annotate(buildMainPod(cs), { [ANN_HIBERNATE]: "true" }),
        annotate(sub(cs, 1), { [ANN_HIBERNATE]: "true" }),
        ...(tb ? [buildToolboxPod(cs, tb)] : []),
      ];
    });
    const calls = timeline(h);
    assert.deepEqual(await run(h), CONTINUED);
    assert.equal(hibernateFlag(h, "demo-0"), undefined);
    assert.equal(hibernateFlag(h, "demo-1"), undefined);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      ["patch pods/demo-0 hibernate-", "patch pods/demo-1 hibernate-"],
    );
  });

  it("clears the pods together: the second clear goes out while the first is unanswered", async () => {
    const h = scalingHarness(unsuspendedSet(), (cs) => [
      annotate(buildMainPod(cs), { [ANN_HIBERNATE]: "true" }),
      annotate(sub(cs, 1), { [ANN_HIBERNATE]: "true" }),
    ]);
    const { sent, release } = holdCalls(h.client, "patch", "demo-0");
    const step = run(h);
    await settle();
    // The record took the generation and the VMs first; then both clears are out at once.
    assert.deepEqual(sent, ["patch cocoonsets/demo", "patch pods/demo-0", "patch pods/demo-1"]);
    release();
    await step;
    assert.equal(hibernateFlag(h, "demo-0"), undefined);
    assert.equal(hibernateFlag(h, "demo-1"), undefined);
  });

  it("no annotation and no suspended list → no call at all, not even the CocoonHibernation list", async () => {
    const h = scalingHarness(unsuspendedSet(), (cs) => [ready(buildMainPod(cs)), ready(sub(cs, 1))]);
    const calls = timeline(h);
    assert.deepEqual(await run(h), CONTINUED);
    assert.deepEqual(calls, []);
    assert.equal(h.view.hibernationLists, 0);
  });

  it("a pod a desire=Hibernate CocoonHibernation names keeps its annotation", async () => {
    const h = scalingHarness(unsuspendedSet(), (cs) => [
      annotate(buildMainPod(cs), { [ANN_HIBERNATE]: "true" }),
      annotate(sub(cs, 1), { [ANN_HIBERNATE]: "true" }),
    ]);
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Hibernate"));
    await run(h);
    assert.equal(hibernateFlag(h, "demo-0"), "true");
    assert.equal(hibernateFlag(h, "demo-1"), undefined);
    // Only the VM it woke is recorded.
    assert.deepEqual(storedReclaim(h.set()).vms, [VM1]);
  });

  it("a pass whose only annotated pod a desire=Hibernate CR holds makes no write", async () => {
    // A record left by an earlier cycle, at an older generation than the set's.
    const record = { generation: 2, vms: [VM2] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [
      annotate(buildMainPod(cs), { [ANN_HIBERNATE]: "true" }),
    ]);
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Hibernate"));
    const calls = timeline(h);
    assert.deepEqual(await run(h), CONTINUED);
    assert.deepEqual(calls, [], "no write, no uncached read, no registry call");
    assert.equal(storedReclaim(h.set()).generation, 2, "the drop threshold is not restamped");
    assert.equal(hibernateFlag(h, "demo-0"), "true");
  });

  it("a desire=Wake CocoonHibernation still in phase Hibernating keeps it too", async () => {
    const h = scalingHarness(unsuspendedSet(), (cs) => [
      annotate(buildMainPod(cs), { [ANN_HIBERNATE]: "true" }),
    ]);
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Wake", "Hibernating"));
    await run(h);
    assert.equal(hibernateFlag(h, "demo-0"), "true");
  });

  it("a Wake CocoonHibernation that is not hibernating does not hold the annotation", async () => {
    const h = scalingHarness(unsuspendedSet(), (cs) => [
      annotate(buildMainPod(cs), { [ANN_HIBERNATE]: "true" }),
    ]);
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Wake", "Active"));
    await run(h);
    assert.equal(hibernateFlag(h, "demo-0"), undefined);
  });
});

describe("step 10: the once-only bookkeeping", () => {
  it("writes generation, owed restores, cleared annotations, then the list — each its own call, in that order", async () => {
    // Suspended at generation 2: main, sub 1 and sub 2; sub 2 was deleted while suspended.
    const record = { generation: 2, vms: [VMTB, VM0, VM1, VM2], suspended: [VM0, VM1, VM2] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [
      hibernated(buildMainPod(cs), 2),
      hibernated(sub(cs, 1), 2),
    ]);
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(calls, [
      `patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VMTB}","${VM0}","${VM1}","${VM2}"],"suspended":["${VM0}","${VM1}","${VM2}"]}`,
      `patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VMTB}","${VM0}","${VM1}","${VM2}"],"restore":["${VM2}"],"suspended":["${VM0}","${VM1}","${VM2}"]}`,
      "patch pods/demo-0 hibernate-",
      "patch pods/demo-1 hibernate-",
      `patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VMTB}","${VM0}","${VM1}","${VM2}"],"restore":["${VM2}"]}`,
    ]);
    // An earlier cycle's VM (tb) is not owed a restore.
    assert.deepEqual(storedReclaim(h.set()).restore, [VM2]);
  });

  it("runs on the suspended list alone (a wake handed back with no annotation left), with no CocoonHibernation list", async () => {
    const record = { generation: 2, vms: [VM0], suspended: [VM0] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [ready(buildMainPod(cs))]);
    await run(h);
    assert.deepEqual(storedReclaim(h.set()), { generation: GEN, vms: [VM0], restore: [], suspended: [] });
    assert.equal(h.view.hibernationLists, 0);
  });

  it("a pod still terminating counts as missing: its VM is owed a restore", async () => {
    const record = { generation: 2, vms: [VM0, VM1], suspended: [VM0, VM1] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [
      ready(buildMainPod(cs)),
      { ...sub(cs, 1), metadata: { ...sub(cs, 1).metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } },
    ]);
    await run(h);
    assert.deepEqual(storedReclaim(h.set()).restore, [VM1]);
  });

  it("an annotated pod without a suspended list (older operator, abandoned quiesce) is recorded and cleared", async () => {
    const h = scalingHarness(unsuspendedSet(), (cs) => [
      annotate(ready(buildMainPod(cs)), { [ANN_HIBERNATE]: "true" }),
    ]);
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(calls, [
      `patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VM0}"]}`,
      "patch pods/demo-0 hibernate-",
    ]);
  });

  it("a failed annotation clear leaves the list in place, so the next pass redoes the bookkeeping", async () => {
    const record = { generation: 2, vms: [VM0], suspended: [VM0] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [hibernated(buildMainPod(cs), 2)]);
    h.client.failNext("patch", "pods", new Error("refused"));
    await assert.rejects(run(h), /refused/);
    assert.deepEqual(storedReclaim(h.set()).suspended, [VM0]);
    await run(h);
    assert.deepEqual(storedReclaim(h.set()).suspended, []);
    assert.equal(hibernateFlag(h, "demo-0"), undefined);
  });

  it("makes no registry call", async () => {
    const record = { generation: 2, vms: [VM0, VM1], suspended: [VM0, VM1] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [hibernated(buildMainPod(cs), 2)]);
    await run(h);
    assert.deepEqual(h.registry.calls, []);
  });
});

describe("step 10: dropping the tags of woken VMs", () => {
  it("drops the tag of a VM woken at the record's generation, then the VM leaves the record", async () => {
    const record = { generation: GEN, vms: [VM0, VM1] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [
      woken(buildMainPod(cs), GEN),
      notWokenYet(sub(cs, 1)),
    ]);
    const digest = h.registry.put(VM0, "hibernate", IMAGE);
    h.registry.put(VM1, "hibernate", IMAGE);
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(calls.slice(0, 4), [
      "get pods/demo-0",
      `registry headManifest ${VM0}:hibernate`,
      `registry deleteTagAt ${VM0}:hibernate@${digest}`,
      `patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VM1}"]}`,
    ]);
    assert.equal(h.registry.has(VM0, "hibernate"), false);
    assert.equal(h.registry.has(VM1, "hibernate"), true, "a VM not yet woken keeps its snapshot");
  });

  it("a recorded name that is not the set's own leaves the record with a Warning, its tag untouched", async () => {
    // A sub-agent pod whose vm-name was edited to another namespace's VM, recorded by the unsuspend.
    const foreign = "vk-b-prod-0";
    const record = { generation: GEN, vms: [VM0, foreign] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [
      woken(buildMainPod(cs), GEN),
      annotate(woken(sub(cs, 1), GEN), { [ANN_VM_NAME]: foreign }),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    h.registry.put(foreign, "hibernate", IMAGE);
    await run(h);
    assert.equal(h.registry.has(foreign, "hibernate"), true);
    assert.deepEqual(
      h.registry.calls.filter((c) => c.repo === foreign),
      [],
      "not even probed",
    );
    assert.equal(h.registry.has(VM0, "hibernate"), false, "the set's own woken VM still drops its tag");
    assert.deepEqual(storedReclaim(h.set()).vms, [], "both left the record");
    const warning = h.events.events.find((e) => e.reason === REASON_FOREIGN_VM_NAME_IGNORED);
    assert.equal(warning?.type, "Warning");
    assert.ok(warning?.message.includes(foreign), warning?.message);
  });

  it("a recorded VM whose tag is already gone is probed, never sent a DELETE, and leaves the record", async () => {
    // A repeat of a drop whose record write was lost (a restart between the two).
    const record = { generation: GEN, vms: [VM0] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [woken(buildMainPod(cs), GEN)]);
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(calls.slice(0, 3), [
      "get pods/demo-0",
      `registry headManifest ${VM0}:hibernate`,
      "patch cocoonsets/demo hibernate-reclaim-",
    ]);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
  });

  it("judges every woken VM at once, then one record write drops them all", async () => {
    const record = { generation: GEN, vms: [VM0, VM1, VM2] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [
      woken(buildMainPod(cs), GEN),
      woken(sub(cs, 1), GEN),
      notWokenYet(sub(cs, 2)),
    ]);
    const [digest0, digest1] = [VM0, VM1, VM2].map((vm) => h.registry.put(vm, "hibernate", IMAGE));
    const calls = timeline(h);
    await run(h);
    // Both server reads and probes go out before either delete: the VMs are judged together.
    assert.deepEqual(calls, [
      "get pods/demo-0",
      `registry headManifest ${VM0}:hibernate`,
      "get pods/demo-1",
      `registry headManifest ${VM1}:hibernate`,
      `registry deleteTagAt ${VM0}:hibernate@${digest0}`,
      `registry deleteTagAt ${VM1}:hibernate@${digest1}`,
      `patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VM2}"]}`,
    ]);
    assert.equal(h.registry.has(VM2, "hibernate"), true, "a VM not yet woken keeps its snapshot");
  });

  it("a VM's tag is probed beside the server read of its pod, but deleted only after that read has answered", async () => {
    const h = bothWoken();
    const calls = timeline(h);
    const { release } = holdCalls(h.client, "get", "demo-0", calls);
    const pass = run(h);
    // demo-0's probe is answered while its read is still out; its DELETE waits for the read.
    await settle();
    assert.deepEqual(h.registry.callsOf("headManifest"), [`${VM0}:hibernate`, `${VM1}:hibernate`]);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`${VM1}:hibernate@${h.digests[1]}`]);
    assert.equal(h.registry.has(VM0, "hibernate"), true);
    release();
    await pass;
    const answered = calls.indexOf("get pods/demo-0 answered");
    const deleted = calls.indexOf(`registry deleteTagAt ${VM0}:hibernate@${h.digests[0]}`);
    assert.ok(answered >= 0 && deleted > answered, calls.join("\n"));
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined);
  });

  it("deletes the tag at the digest the probe saw, with no second probe", async () => {
    const h = bothWoken();
    await run(h);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [
      `${VM0}:hibernate@${h.digests[0]}`,
      `${VM1}:hibernate@${h.digests[1]}`,
    ]);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [], "no probe-and-delete of its own");
  });

  it("on a registry that deletes by digest, a snapshot pushed under the tag after the probe is not deleted", async () => {
    const h = bothWoken();
    const probe = h.registry.headManifest.bind(h.registry);
    let newer = "";
    h.registry.headManifest = async (repo, ref) => {
      const seen = await probe(repo, ref);
      if (repo === VM0) newer = h.registry.put(VM0, "hibernate", IMAGE);
      return seen;
    };
    await run(h);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [
      `${VM0}:hibernate@${h.digests[0]}`,
      `${VM1}:hibernate@${h.digests[1]}`,
    ]);
    assert.notEqual(newer, h.digests[0]);
    assert.equal(h.registry.has(VM0, "hibernate"), true, "the newer snapshot is still under the tag");
  });

  it("a VM whose server copy has not woken keeps its tag while the others drop theirs", async () => {
    // The cache shows both woken; the server already holds demo-1 under a new hibernate request.
    const h = bothWoken();
    const pass = h.pass();
    const server = h.pod("demo-1");
    assert.ok(server);
    h.client.seed(PODS, annotate(server, { [ANN_HIBERNATE]: "true" }));
    await reconcileUnsuspend(pass);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`${VM0}:hibernate@${h.digests[0]}`]);
    assert.equal(h.registry.has(VM1, "hibernate"), true);
    assert.deepEqual(storedReclaim(h.set()).vms, [VM1]);
  });

  it("the annotation goes with the last VM", async () => {
    const record = { generation: GEN, vms: [VM0] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [woken(buildMainPod(cs), GEN + 1)]);
    await run(h);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined);
  });

  it("keeps the tag while the pod is not woken: annotated (cleared only this pass), no live VM, not ready, or ready for an older generation", async () => {
    const record = { generation: GEN, vms: [VM0] };
    const notWoken: ((cs: CocoonSet) => Pod)[] = [
      (cs) => annotate(woken(buildMainPod(cs), GEN), { [ANN_HIBERNATE]: "true" }),
      (cs) => annotate(woken(buildMainPod(cs), GEN), { "vm.cocoonstack.io/id": null }),
      (cs) => annotate(woken(buildMainPod(cs), GEN), { "vm.cocoonstack.io/lifecycle-state": "creating" }),
      (cs) => woken(buildMainPod(cs), GEN - 1),
    ];
    for (const pod of notWoken) {
      const h = scalingHarness(unsuspendedSet(record), (cs) => [pod(cs)]);
      h.registry.put(VM0, "hibernate", IMAGE);
      await run(h);
      assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
      assert.deepEqual(storedReclaim(h.set()).vms, [VM0]);
    }
  });

  it("a VM whose pod is missing stays recorded", async () => {
    const h = scalingHarness(unsuspendedSet({ generation: GEN, vms: [VM2], restore: [VM2] }));
    await run(h);
    assert.deepEqual(h.registry.calls, []);
    assert.deepEqual(storedReclaim(h.set()).vms, [VM2]);
  });

  it("a refused probe or tag delete keeps the VM and its tag recorded and fails the pass", async () => {
    const record = { generation: GEN, vms: [VM0] };
    for (const refused of ["headManifest", "deleteTagAt"] as const) {
      const h = scalingHarness(unsuspendedSet(record), (cs) => [woken(buildMainPod(cs), GEN)]);
      h.registry.put(VM0, "hibernate", IMAGE);
      h.registry.failOn = (call) => (call.op === refused ? FakeSnapshotRegistry.error(503) : undefined);
      await assert.rejects(run(h), /injected failure/);
      assert.deepEqual(storedReclaim(h.set()).vms, [VM0], refused);
      assert.equal(h.registry.has(VM0, "hibernate"), true, refused);
      if (refused === "headManifest") assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
    }
  });

  it("a refused delete: the VMs dropped alongside leave the record in one write, the refused one stays, the pass fails", async () => {
    const h = bothWoken();
    h.registry.failOn = (call) =>
      call.repo === VM1 && call.op === "deleteTagAt" ? FakeSnapshotRegistry.error(500) : undefined;
    const calls = timeline(h);
    await assert.rejects(run(h), /injected failure/);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch ")),
      [`patch cocoonsets/demo hibernate-reclaim={"generation":4,"vms":["${VM1}"]}`],
    );
    assert.equal(h.registry.has(VM0, "hibernate"), false);
    assert.equal(h.registry.has(VM1, "hibernate"), true);
  });

  it("a refused delete ends the whole pass before scaling and the status patch", async () => {
    // Sub 2 is missing (scaling would create it) and the status would change: neither happens.
    const h = bothWoken();
    h.registry.failOn = (call) =>
      call.repo === VM1 && call.op === "deleteTagAt" ? FakeSnapshotRegistry.error(500) : undefined;
    const calls = timeline(h);
    await assert.rejects(reconcileSet(h), /injected failure/);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("create ") || c.includes("status phase=")),
      [],
    );
    assert.deepEqual(storedReclaim(h.set()).vms, [VM1]);
    // The retry, once the registry answers, drops the one left and goes on to scale and report.
    h.registry.failOn = undefined;
    await reconcileSet(h);
    assert.equal(h.registry.has(VM1, "hibernate"), false);
    assert.ok(calls.includes("create pods/demo-2"), calls.join("\n"));
  });

  it("the first unsuspend pass clears, and a later pass drops once vk reports the VM ready", async () => {
    const record = { generation: 2, vms: [VM0], suspended: [VM0] };
    const h = scalingHarness(unsuspendedSet(record), (cs) => [hibernated(buildMainPod(cs), 2)]);
    const digest = h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [], "still hibernated: the tag stays");
    const pod = h.pod("demo-0");
    assert.ok(pod);
    h.seedPods(woken(pod, GEN));
    await run(h);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`${VM0}:hibernate@${digest}`]);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined);
  });
});

describe("step 10: a pod that drifted from the spec while suspended", () => {
  it("keeps its annotation (it is rebuilt, not woken) and its VM is owed a restore; the others wake", async () => {
    const cs = unsuspendedSet({ generation: 0, vms: [VM0, VM1], suspended: [VM0, VM1] });
    const h = scalingHarness(cs, (stored) => {
      const before = { ...stored, spec: { ...stored.spec, agent: { ...stored.spec.agent, image: "old" } } };
      return [hibernated(buildMainPod(before), GEN), hibernated(sub(stored, 1), GEN)];
    });
    const calls = timeline(h);
    assert.deepEqual(await run(h), CONTINUED);
    assert.equal(hibernateFlag(h, "demo-0"), "true", "the drifted main is not woken");
    assert.equal(hibernateFlag(h, "demo-1"), undefined, "the matching sub-agent is");
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      ["patch pods/demo-1 hibernate-"],
    );
    const record = storedReclaim(h.set());
    assert.deepEqual(record.restore, [VM0], "the rebuilt main restores unless the image rule drops its tag");
    assert.deepEqual(record.suspended, []);
  });

  it("a pass whose only annotated pod drifted, after the bookkeeping, makes no call, not even the CocoonHibernation list", async () => {
    const h = scalingHarness(unsuspendedSet({ generation: GEN, vms: [VM0], restore: [VM0] }), (stored) => {
      const before = { ...stored, spec: { ...stored.spec, agent: { ...stored.spec.agent, image: "old" } } };
      return [hibernated(buildMainPod(before), GEN)];
    });
    const calls = timeline(h);
    assert.deepEqual(await run(h), CONTINUED);
    assert.deepEqual(calls, []);
    assert.equal(h.view.hibernationLists, 0);
  });
});
