import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { reconcileWake } from "../../../src/cocoonset/steps/wake.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_RESTORE_FROM_HIBERNATE,
  ANN_VM_NAME,
  LABEL_SNAPSHOT_CPU_CLASS,
} from "../../../src/contract/keys.ts";
import { REASON_FOREIGN_VM_NAME_IGNORED } from "../../../src/contract/vmname.ts";
import { AlreadyExistsError } from "../../../src/controller/errors.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { slotReleaseWakeTotal, slotReleaseWakeUnschedulableTotal } from "../../../src/metrics/cocoon.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { NS, SET } from "../../support/cocoonset.ts";
import {
  IMAGE,
  OTHER_IMAGE,
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";
import { annotate, counterValue, hibernated, timeline } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";
const HINT = { [ANN_HIBERNATED_ON_NODE]: "node-a" };
const LABELS = { namespace: "ns", cocoonset: "demo" };

/** An unsuspended release-policy set (generation 1) in `phase`, with `annotations` (the hint). */
function wakeSet(
  phase: CocoonSetPhase | undefined,
  annotations: Record<string, string> = {},
  spec: Partial<CocoonSet["spec"]> = {},
): CocoonSet {
  const cs = scalingSet({ hibernatePolicy: "release", ...spec }, 1);
  cs.metadata.annotations = annotations;
  if (phase) {
    cs.status = { phase, readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 };
  }
  return cs;
}

function restoreMain(cs: CocoonSet): Pod {
  return buildMainPod(cs, { restore: true, wakeHintNode: "node-a" });
}

function unschedulable(pod: Pod, message: string): Pod {
  pod.status = {
    phase: "Pending",
    conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message }],
  };
  return pod;
}

function run(h: ScalingHarness) {
  return reconcileWake(h.pass());
}

const HANDED_BACK = { done: false };
const POLL = { done: true, result: { requeueAfterMs: 5000 } };

describe("step 9: wake with no main", () => {
  it("Suspended + hint + tag → Waking first, then a restore main preferring the hint node", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT, { snapshotCompatibilityClass: "n2" }));
    h.registry.put(VM0, "hibernate", IMAGE);
    const calls = timeline(h);
    assert.deepEqual(await run(h), POLL);
    assert.deepEqual(calls, [
      `registry getSnapshot ${VM0}:hibernate`,
      "patch cocoonsets/demo status phase=Waking",
      "create pods/demo-0",
    ]);
    const main = h.pod("demo-0");
    assert.ok(main);
    assert.equal(main.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.equal(main.spec.nodeName, undefined);
    assert.equal(main.spec.nodeSelector?.[LABEL_SNAPSHOT_CPU_CLASS], "n2");
    const affinity = main.spec.affinity?.nodeAffinity;
    assert.equal(affinity?.requiredDuringSchedulingIgnoredDuringExecution, undefined);
    assert.deepEqual(affinity?.preferredDuringSchedulingIgnoredDuringExecution, [
      {
        weight: 100,
        preference: {
          matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-a"] }],
        },
      },
    ]);
    assert.equal(h.set().status?.phase, "Waking");
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
  });

  it("a spec.nodeName pin makes the hostname term required", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT, { nodeName: "node-b" }));
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    const affinity = h.pod("demo-0")?.spec.affinity?.nodeAffinity;
    assert.deepEqual(affinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms, [
      { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-b"] }] },
    ]);
    assert.equal(affinity?.preferredDuringSchedulingIgnoredDuringExecution, undefined);
  });

  it("Suspending + hint, no pods → restore pod created, Waking", async () => {
    const h = scalingHarness(wakeSet("Suspending", HINT));
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), POLL);
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.equal(h.set().status?.phase, "Waking");
  });

  it("Suspending without a hint does not engage, even with a failing registry", async () => {
    const h = scalingHarness(wakeSet("Suspending"));
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.registry.calls, []);
  });

  it("Suspended without a tag → hands back, clearing the hint so the main boots fresh", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT));
    const calls = timeline(h);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(calls, [
      `registry getSnapshot ${VM0}:hibernate`,
      "patch cocoonsets/demo hibernated-on-node-",
    ]);
    assert.deepEqual(h.created(), []);
  });

  it("Suspended with a refused probe → the pass fails, nothing created", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT));
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);
    await assert.rejects(run(h), /injected failure/);
    assert.deepEqual(h.client.writes(), []);
  });

  it("a snapshot from another image is dropped by the image rule; the hint goes and the main boots fresh later", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT));
    const digest = h.registry.put(VM0, "hibernate", OTHER_IMAGE);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`${VM0}:hibernate@${digest}`]);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], undefined);
    assert.deepEqual(h.created(), []);
  });

  it("waits while the released main is still being deleted, without a registry call", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT), (cs) => [
      {
        ...hibernated(buildMainPod(cs), 1),
        metadata: { ...buildMainPod(cs).metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
      },
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), POLL);
    assert.deepEqual(h.registry.calls, []);
    assert.deepEqual(h.client.writes(), []);
  });

  it("a create that finds the main already there requeues in 5 s", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT));
    h.registry.put(VM0, "hibernate", IMAGE);
    h.client.failNext("create", "pods", new AlreadyExistsError(409, "AlreadyExists", "exists"));
    assert.deepEqual(await run(h), POLL);
  });

  it("no registry → the wake never engages", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT), () => [], { withRegistry: false });
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.client.writes(), []);
  });
});

describe("step 9: a main in the cache while Suspended/Suspending with a hint", () => {
  for (const phase of ["Suspended", "Suspending"] as const) {
    it(`${phase}: a stale cached main the API no longer has → wait; next pass restores`, async () => {
      const h = scalingHarness(wakeSet(phase, HINT), (cs) => [hibernated(buildMainPod(cs), 1)]);
      h.registry.put(VM0, "hibernate", IMAGE);
      const stale = h.pass();
      h.client.finishPodDeletion("ns", "demo-0");
      const calls = timeline(h);
      assert.deepEqual(await reconcileWake(stale), POLL);
      assert.deepEqual(calls, ["get pods/demo-0"]);
      assert.deepEqual(h.created(), []);

      assert.deepEqual(await run(h), POLL);
      assert.deepEqual(h.created(), ["demo-0"]);
    });
  }

  it("Suspending + hint, main really alive → hands back", async () => {
    const h = scalingHarness(wakeSet("Suspending", HINT), (cs) => [ready(buildMainPod(cs), "node-a")]);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.client.writes(), []);
  });

  it("a main the API shows terminating → wait", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT), (cs) => [hibernated(buildMainPod(cs), 1, "node-a")]);
    const stale = h.pass();
    await h.client.delete(PODS, "ns", "demo-0");
    assert.deepEqual(await reconcileWake(stale), POLL);
  });

  it("a terminal main → hands back without a read", async () => {
    const h = scalingHarness(wakeSet("Suspended", HINT), (cs) => [phaseFailed(buildMainPod(cs))]);
    const calls = timeline(h);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(calls, []);
  });

  it("Suspended, no hint, hibernated main present (retain) → hands back", async () => {
    const h = scalingHarness(wakeSet("Suspended"), (cs) => [hibernated(buildMainPod(cs), 1)]);
    const calls = timeline(h);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(calls, []);
  });
});

describe("step 9: Waking", () => {
  it("main unscheduled without a VM → handled, no deletes", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [restoreMain(cs)]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), POLL);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.events.events.length, 0);
  });

  it("Unschedulable → slot_release_wake_unschedulable_total and WakeNoCapacity with the scheduler's message", async () => {
    const message = "0/3 nodes are available: 3 Insufficient cpu.";
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [unschedulable(restoreMain(cs), message)]);
    h.registry.put(VM0, "hibernate", IMAGE);
    const before = await counterValue(slotReleaseWakeUnschedulableTotal, LABELS);
    assert.deepEqual(await run(h), POLL);
    assert.equal(await counterValue(slotReleaseWakeUnschedulableTotal, LABELS), before + 1);
    assert.deepEqual(h.events.events, [
      {
        object: "demo",
        type: "Warning",
        reason: "WakeNoCapacity",
        message: `main pod demo-0 unschedulable: ${message}`,
      },
    ]);
    assert.equal(h.set().status?.phase, "Waking");
    assert.ok(h.registry.has(VM0, "hibernate"));
  });

  it("main live on node-c → tag deleted after the VM runs, hint removed, scored pool", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [ready(restoreMain(cs), "node-c")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    const pool = await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "pool" });
    const calls = timeline(h);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(calls, [
      "get pods/demo-0",
      `registry deleteIfPresent ${VM0}:hibernate`,
      "patch cocoonsets/demo hibernated-on-node-",
    ]);
    assert.equal(await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "pool" }), pool + 1);
    assert.equal(h.registry.has(VM0, "hibernate"), false);
  });

  it("the pass that completes the wake goes on to its status: Running in that pass, no pass after it", async () => {
    const record = JSON.stringify({ generation: 1, vms: [VM0], suspended: [VM0] });
    const h = scalingHarness(wakeSet("Waking", { ...HINT, [ANN_HIBERNATE_RECLAIM]: record }), (cs) => [
      ready(restoreMain(cs), "node-a"),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    const calls = timeline(h);
    const result = await new CocoonSetReconciler(h.deps).reconcile(
      { namespace: NS, name: SET },
      new AbortController().signal,
    );
    assert.deepEqual(result, {});
    // The woken VM leaves the record in the hint's write, so step 10 has no bookkeeping and no tag
    // left to probe: the record goes with its last VM.
    assert.deepEqual(calls, [
      "get pods/demo-0",
      `registry deleteIfPresent ${VM0}:hibernate`,
      "patch cocoonsets/demo hibernated-on-node- hibernate-reclaim-",
      "patch cocoonsets/demo status phase=Running",
    ]);
  });

  it("the snapshot dropped, its VM and what it was taken under leave the record in the hint's write", async () => {
    const record = (releasedUnder?: object) =>
      JSON.stringify({ generation: 1, vms: [VM0, VM1], ...(releasedUnder ? { releasedUnder } : {}) });
    const taken = { backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" };
    const h = scalingHarness(
      wakeSet("Waking", { ...HINT, [ANN_HIBERNATE_RECLAIM]: record({ [VM0]: taken }) }),
      (cs) => [ready(restoreMain(cs), "node-a")],
    );
    h.registry.put(VM0, "hibernate", IMAGE);
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(calls.slice(0, 3), [
      "get pods/demo-0",
      `registry deleteIfPresent ${VM0}:hibernate`,
      // A VM an earlier cycle recorded stays; only the woken one leaves.
      `patch cocoonsets/demo hibernated-on-node- hibernate-reclaim=${JSON.stringify({ generation: 1, vms: [VM1] })}`,
    ]);
  });

  it("a tag already gone is probed, never sent a DELETE; the wake completes", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [ready(restoreMain(cs), "node-c")]);
    const calls = timeline(h);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(calls.slice(0, 3), [
      "get pods/demo-0",
      `registry deleteIfPresent ${VM0}:hibernate`,
      "patch cocoonsets/demo hibernated-on-node-",
    ]);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
  });

  it("landing on the hint node scores hint-node once; a hint-less re-entry never scores again", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [ready(restoreMain(cs), "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    const hintNode = await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "hint-node" });
    const pool = await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "pool" });
    await run(h);
    assert.equal(
      await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "hint-node" }),
      hintNode + 1,
    );

    const rerun = h.pass();
    assert.equal(rerun.cs.metadata.annotations?.[ANN_HIBERNATED_ON_NODE], undefined);
    rerun.cs.status = {
      phase: "Waking",
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    };
    await reconcileWake(rerun);
    assert.equal(
      await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "hint-node" }),
      hintNode + 1,
    );
    assert.equal(await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "pool" }), pool);
  });

  it("a refused tag delete fails the pass: hint kept, nothing scored", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [ready(restoreMain(cs), "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    h.registry.failOn = (call) =>
      call.op === "deleteIfPresent" ? FakeSnapshotRegistry.error(500) : undefined;
    const hintNode = await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "hint-node" });
    await assert.rejects(run(h), /injected failure/);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], "node-a");
    assert.equal(await counterValue(slotReleaseWakeTotal, { ...LABELS, placement: "hint-node" }), hintNode);
  });

  it("a live main asked to hibernate again keeps its snapshot", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [
      annotate(ready(restoreMain(cs), "node-a"), { "vm.cocoonstack.io/hibernate": "true" }),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), POLL);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
  });

  it("a main a withdrawn suspend left hibernated is handed to step 10, which clears the request", async () => {
    const h = scalingHarness(wakeSet("Waking", HINT), (cs) => [hibernated(restoreMain(cs), 1)]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.registry.calls, [], "no registry call, no tag delete");
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], "node-a", "the hint stays");
  });
});

describe("step 9: an unfinished wake whose Waking was overwritten", () => {
  it("Pending + hint + restore-marked live main → tag deleted, hint cleared", async () => {
    const h = scalingHarness(wakeSet("Pending", HINT), (cs) => [ready(restoreMain(cs), "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [`${VM0}:hibernate`]);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], undefined);
  });

  it("a main whose vm-name names another set's VM: that tag is left, with a Warning; the hint still goes", async () => {
    const foreign = "vk-b-prod-0";
    const h = scalingHarness(wakeSet("Pending", HINT), (cs) => [
      ready(annotate(restoreMain(cs), { [ANN_VM_NAME]: foreign }), "node-a"),
    ]);
    h.registry.put(foreign, "hibernate", IMAGE);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.registry.has(foreign, "hibernate"), true);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], undefined);
    const warning = h.events.events.find((e) => e.reason === REASON_FOREIGN_VM_NAME_IGNORED);
    assert.ok(warning?.message.includes(foreign), warning?.message);
  });

  it("the same main not live yet → handled, no delete", async () => {
    const h = scalingHarness(wakeSet("Pending", HINT), (cs) => [restoreMain(cs)]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), POLL);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
  });

  it("Running with a failing registry → hands back", async () => {
    const h = scalingHarness(wakeSet("Running"), (cs) => [ready(buildMainPod(cs), "node-a")]);
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);
    assert.deepEqual(await run(h), HANDED_BACK);
  });

  it("Running, no hint, restore-marked live main, failing registry → hands back", async () => {
    const h = scalingHarness(wakeSet("Running"), (cs) => [ready(restoreMain(cs), "node-a")]);
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);
    assert.deepEqual(await run(h), HANDED_BACK);
    assert.deepEqual(h.registry.calls, []);
  });
});
