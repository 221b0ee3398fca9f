// The CocoonHibernation pass (docs/hibernation.md): the scenarios of the Go operator's
// hibernation/reconciler_test.go, plus the events, histograms and no-op rules around them. Time is the harness's FakeClock.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ANN_HIBERNATE,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  FINALIZER_COCOONHIBERNATION,
} from "../../../src/contract/keys.ts";
import { REASON_FOREIGN_VM_NAME_IGNORED } from "../../../src/contract/vmname.ts";
import { COCOONHIBERNATIONS, PODS } from "../../../src/controller/resources.ts";
import { hibernatePhaseDurationSeconds, wakePhaseDurationSeconds } from "../../../src/metrics/cocoon.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { Harness, MINUTE, NS, POD, TAG, VM } from "./support.ts";

const REQUEUE_5S = { requeueAfterMs: 5_000 };

async function histogramCount(
  histogram: typeof hibernatePhaseDurationSeconds,
  result: "ok" | "timeout",
): Promise<{ count: number; sum: number }> {
  const values = (await histogram.get()).values;
  const pick = (suffix: string) =>
    values.find((v) => v.metricName?.endsWith(suffix) && v.labels.result === result)?.value ?? 0;
  return { count: pick("_count"), sum: pick("_sum") };
}

describe("finalizer and spec checks", () => {
  test("a CR without the finalizer gets it by Update, requeues, and keeps its status empty", async () => {
    const h = new Harness();
    h.seedHibernation({ finalizer: false });
    h.seedPod();

    const result = await h.reconcile();

    assert.deepEqual(result, { requeue: true });
    assert.deepEqual(h.hibernation()?.metadata.finalizers, [FINALIZER_COCOONHIBERNATION]);
    assert.equal(h.hibernation()?.status?.phase ?? "", "");
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}`),
      ["update cocoonhibernations"],
    );
  });

  test("a missing CR needs nothing", async () => {
    const h = new Harness();
    assert.deepEqual(await h.reconcile("gone"), {});
    assert.deepEqual(h.client.writes(), []);
  });

  test("an empty podRef is Failed once with its message, and not rewritten on the next pass", async () => {
    const h = new Harness();
    h.seedHibernation({ podRef: "" });

    assert.deepEqual(await h.reconcile(), {});
    const ready = h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(h.hibernation()?.status?.phase, "Failed");
    assert.equal(ready?.message, "spec.podRef.name is required");
    assert.equal(ready?.reason, "Failed");

    await h.reconcile();
    assert.equal(h.statusPatches(), 1);
  });

  test("an unknown desire is Failed", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Sleep" });
    h.seedPod();

    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Failed");
    assert.equal(
      h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready")?.message,
      'unknown desire "Sleep"',
    );
    assert.deepEqual(h.podPatches(), []);
  });
});

describe("pending while the pod or its VM name is missing", () => {
  test("pod missing → Pending with its message, requeue in 5 s", async () => {
    const h = new Harness();
    h.seedHibernation();

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Pending");
    assert.equal(
      h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready")?.message,
      "pod ns/demo-0 not yet present",
    );
  });

  test("pod without a VM name → Pending with its message, requeue in 5 s", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ vmName: null });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Pending");
    assert.equal(
      h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready")?.message,
      "pod ns/demo-0 has no vm.cocoonstack.io/name annotation yet",
    );
    assert.deepEqual(h.podPatches(), []);
  });

  test("an unchanged Pending is not patched again", async () => {
    const h = new Harness();
    h.seedHibernation();
    await h.reconcile();
    await h.reconcile();
    assert.equal(h.statusPatches(), 1);
  });

  test("the same Pending message at a newer generation is patched with the new observedGeneration", async () => {
    const h = new Harness();
    h.seedHibernation({
      phase: "Pending",
      readySince: h.ago(MINUTE),
      readyMessage: "pod ns/demo-0 not yet present",
      generation: 4,
      observedGeneration: 3,
    });

    await h.reconcile();

    assert.equal(h.statusPatches(), 1);
    assert.equal(h.hibernation()?.status?.observedGeneration, 4);
  });

  for (const phase of ["Hibernated", "Waking"] as const) {
    for (const [gap, seedPod] of [
      ["pod missing", (_h: Harness) => {}],
      ["pod without a VM name", (h: Harness) => h.seedPod({ vmName: null })],
    ] as const) {
      test(`${phase} is kept through a ${gap} (restore intent), requeue in 5 s`, async () => {
        const h = new Harness();
        h.seedHibernation({ phase, vmName: VM, readySince: h.ago(MINUTE), observedGeneration: 1 });
        seedPod(h);

        assert.deepEqual(await h.reconcile(), REQUEUE_5S);
        assert.equal(h.hibernation()?.status?.phase, phase);
        assert.equal(h.statusPatches(), 0);
      });
    }
  }
});

describe("hibernate", () => {
  test("annotated, no lifecycle, no tag → Hibernating, requeue in 5 s, no probe yet", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
    assert.equal(h.hibernation()?.status?.vmName, VM);
    assert.deepEqual(h.registry.calls, []);
    assert.deepEqual(h.podPatches(), [], "the annotation was already set");
  });

  test("sets the hibernate annotation when unset", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ running: true, vmID: "vmid-1", lifecycle: { state: "ready" } });

    await h.reconcile();

    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.deepEqual(h.podPatches(), [{ metadata: { annotations: { [ANN_HIBERNATE]: "true" } } }]);
  });

  test("a probe error before the deadline is returned, wrapped, with no result", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    const injected = FakeSnapshotRegistry.error(503);
    h.registry.failOn = () => injected;

    await assert.rejects(h.reconcile(), (err: Error) => {
      assert.equal(err.cause, injected);
      assert.match(err.message, /vk-ns-demo-0:hibernate/);
      return true;
    });
  });

  test("a tag without lifecycle hibernated stays Hibernating; once vk reports hibernated → Hibernated", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");

    h.annotatePod({ [ANN_LIFECYCLE_STATE]: "hibernated", [ANN_LIFECYCLE_OBSERVED_GENERATION]: "0" });
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Hibernated");
    assert.deepEqual(h.registry.callsOf("hasManifest"), [TAG]);
  });

  test("lifecycle obsGen below the pod's stamp stays Hibernating; at the stamp → Hibernated", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true, stamp: 3, lifecycle: { state: "hibernated", observedGeneration: 2 } });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");

    h.annotatePod({ [ANN_LIFECYCLE_OBSERVED_GENERATION]: "3" });
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Hibernated");
  });

  test("lifecycle hibernated but no tag yet keeps Hibernating", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
    assert.deepEqual(h.registry.callsOf("hasManifest"), [TAG]);
  });

  test("Hibernated emits Normal Hibernated and observes the hibernate histogram once per transition", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true });
    h.registry.put(VM, "hibernate");
    await h.reconcile(); // enters Hibernating at t0
    const before = await histogramCount(hibernatePhaseDurationSeconds, "ok");

    h.clock.advance(42_000);
    h.annotatePod({ [ANN_LIFECYCLE_STATE]: "hibernated", [ANN_LIFECYCLE_OBSERVED_GENERATION]: "0" });
    const staleCache = h.hibernation();
    await h.reconcile();
    // A lagging cache still shows the Hibernating object: the same exit must not count twice.
    if (staleCache) h.client.seed(COCOONHIBERNATIONS, staleCache);
    await h.reconcile();

    const after = await histogramCount(hibernatePhaseDurationSeconds, "ok");
    assert.equal(after.count - before.count, 1);
    assert.equal(after.sum - before.sum, 42);
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === "Hibernated"),
      [
        {
          object: "hib",
          type: "Normal",
          reason: "Hibernated",
          message: `snapshot ${VM} pushed to the registry`,
        },
      ],
    );
  });

  test("Hibernating for more than 3 min → Failed with Warning HibernateTimedOut", async () => {
    const h = new Harness();
    h.seedHibernation({ phase: "Hibernating", vmName: VM, readySince: h.ago(6 * MINUTE) });
    h.seedPod({ hibernate: true });
    const before = await histogramCount(hibernatePhaseDurationSeconds, "timeout");

    assert.deepEqual(await h.reconcile(), {});

    assert.equal(h.hibernation()?.status?.phase, "Failed");
    const ready = h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.message, "hibernate not confirmed within 3m0s");
    assert.equal(ready?.reason, "Failed");
    assert.deepEqual(h.events.events, [
      {
        object: "hib",
        type: "Warning",
        reason: "HibernateTimedOut",
        message: `snapshot ${VM} not confirmed in the registry within 3m0s`,
      },
    ]);
    const after = await histogramCount(hibernatePhaseDurationSeconds, "timeout");
    assert.equal(after.count - before.count, 1);
    assert.equal(after.sum - before.sum, 360);
  });

  test("the hibernate deadline is exclusive: exactly 3 min in keeps Hibernating", async () => {
    const h = new Harness();
    h.seedHibernation({ phase: "Hibernating", vmName: VM, readySince: h.ago(3 * MINUTE) });
    h.seedPod({ hibernate: true });
    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");

    h.clock.advance(1_000);
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Failed");
  });

  test("a probe that keeps failing past the deadline ends in Failed instead of an error", async () => {
    const h = new Harness();
    h.seedHibernation({ phase: "Hibernating", vmName: VM, readySince: h.ago(4 * MINUTE) });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);

    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Failed");
  });

  test("Failed with desire Hibernate → RetryRequested, Hibernating with a fresh Ready clock", async () => {
    const h = new Harness();
    h.seedHibernation({ phase: "Failed", vmName: VM, readySince: h.ago(10 * MINUTE) });
    h.seedPod({ hibernate: true });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);

    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
    assert.equal(h.readySince(), h.clock.now());
    assert.deepEqual(h.events.events, [
      {
        object: "hib",
        type: "Normal",
        reason: "RetryRequested",
        message: "retrying Hibernate after prior failure",
      },
    ]);
  });

  test("the same phase at a newer generation patches observedGeneration", async () => {
    const h = new Harness();
    h.seedHibernation({
      phase: "Hibernated",
      vmName: VM,
      readySince: h.ago(MINUTE),
      generation: 7,
      observedGeneration: 6,
    });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.put(VM, "hibernate");

    await h.reconcile();

    assert.equal(h.statusPatches(), 1);
    assert.equal(h.hibernation()?.status?.observedGeneration, 7);
    assert.equal(h.hibernation()?.status?.phase, "Hibernated");
  });

  test("a settled Hibernated pass writes nothing", async () => {
    const h = new Harness();
    h.seedHibernation({ phase: "Hibernated", vmName: VM, readySince: h.ago(MINUTE), observedGeneration: 1 });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), {});
    assert.deepEqual(h.client.writes(), []);
  });
});

describe("wake", () => {
  const livePod = { running: true, vmID: "vmid-live", lifecycle: { state: "ready" } };

  test("Waking with a running container, VMID vmid-live and lifecycle ready → Active, annotation cleared, tag dropped", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Waking", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod({ ...livePod, hibernate: true });
    h.registry.put(VM, "hibernate");
    const before = await histogramCount(wakePhaseDurationSeconds, "ok");

    assert.deepEqual(await h.reconcile(), {});

    assert.equal(h.hibernation()?.status?.phase, "Active");
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.deepEqual(h.podPatches(), [{ metadata: { annotations: { [ANN_HIBERNATE]: null } } }]);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [TAG]);
    assert.equal(h.registry.has(VM, "hibernate"), false);
    assert.deepEqual(h.events.events, [
      { object: "hib", type: "Normal", reason: "WokenActive", message: `pod ${NS}/${POD} is running` },
    ]);
    const after = await histogramCount(wakePhaseDurationSeconds, "ok");
    assert.equal(after.count - before.count, 1);
    assert.equal(after.sum - before.sum, 60);
  });

  test("a running container with a VMID is not enough until vk reports ready at the pod's generation", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Waking", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod({
      running: true,
      vmID: "vmid-live",
      stamp: 2,
      lifecycle: { state: "creating", observedGeneration: 2 },
    });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Waking");

    h.annotatePod({ [ANN_LIFECYCLE_STATE]: "ready", [ANN_LIFECYCLE_OBSERVED_GENERATION]: "1" });
    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Waking");
    assert.deepEqual(h.registry.calls, []);

    h.annotatePod({ [ANN_LIFECYCLE_OBSERVED_GENERATION]: "2" });
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Active");
  });

  test("a wake whose VM is not live yet clears the annotation once and waits", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Hibernated", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Waking");
    assert.equal(h.readySince(), h.clock.now());
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);

    h.client.clearCalls();
    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.deepEqual(h.client.writes(), [], "no patch when the annotation is already clear");
  });

  test("a tag drop the registry refuses fails the pass and stays Waking; the retry completes", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Waking", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod(livePod);
    h.registry.put(VM, "hibernate");
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);

    await assert.rejects(h.reconcile(), /injected failure/);
    assert.equal(h.hibernation()?.status?.phase, "Waking", "no Active over a snapshot still in the registry");
    assert.deepEqual(h.events.reasons(), []);

    h.registry.failOn = undefined;
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Active");
    assert.equal(h.registry.has(VM, "hibernate"), false);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [TAG, TAG]);
    assert.deepEqual(h.registry.callsOf("deleteManifest"), [], "every drop probes first");
  });

  test("Waking for 10 min with the VM not live → Failed with Warning WakeTimedOut", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Waking", vmName: VM, readySince: h.ago(10 * MINUTE) });
    h.seedPod({ lifecycle: { state: "hibernated" } });

    assert.deepEqual(await h.reconcile(), {});

    assert.equal(h.hibernation()?.status?.phase, "Failed");
    assert.equal(
      h.hibernation()?.status?.conditions?.find((c) => c.type === "Ready")?.message,
      "wake timed out after 5m0s; vk-cocoon never reported the container running",
    );
    assert.deepEqual(h.events.reasons(), ["WakeTimedOut"]);
    assert.equal(h.events.events[0]?.type, "Warning");
    assert.equal(h.events.events[0]?.message, "vk-cocoon did not report the container running within 5m0s");
    assert.deepEqual(h.registry.calls, []);
  });

  test("Failed with a stale Ready clock and desire Wake → Waking with a fresh clock; a second pass stays Waking", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Failed", vmName: VM, readySince: h.ago(10 * MINUTE) });
    h.seedPod({ lifecycle: { state: "hibernated" } });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Waking");
    assert.equal(h.readySince(), h.clock.now());
    assert.deepEqual(h.events.reasons(), ["RetryRequested"]);
    assert.equal(h.events.events[0]?.message, "retrying Wake after prior failure");

    h.clock.advance(5_000);
    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Waking", "the old deadline must not trip again");
  });

  test("desire Wake while Hibernating past the deadline with a failing probe → Failed, no error", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Hibernating", vmName: VM, readySince: h.ago(6 * MINUTE) });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.failOn = () => FakeSnapshotRegistry.error(503);

    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.hibernation()?.status?.phase, "Failed");
  });
  test("a pod whose vm-name names another namespace's VM wakes, but that VM's tag is left, with a Warning", async () => {
    const foreign = "vk-b-prod-0";
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Waking", vmName: foreign, readySince: h.ago(MINUTE) });
    h.seedPod({ ...livePod, vmName: foreign });
    h.registry.put(foreign, "hibernate");

    assert.deepEqual(await h.reconcile(), {});

    assert.equal(h.hibernation()?.status?.phase, "Active");
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.registry.has(foreign, "hibernate"), true);
    const warning = h.events.events.find((e) => e.reason === REASON_FOREIGN_VM_NAME_IGNORED);
    assert.equal(warning?.type, "Warning");
    assert.ok(warning?.message.includes(foreign), warning?.message);
  });
});

describe("a settled wake leaves the pod to its CocoonSet", () => {
  const settledOpts = {
    desire: "Wake",
    phase: "Active" as const,
    vmName: VM,
    generation: 2,
    observedGeneration: 2,
  };

  test("Active at its generation leaves a pod the set suspended alone: no clear, no tag delete, no phase change", async () => {
    const h = new Harness();
    h.seedHibernation({ ...settledOpts, readySince: h.ago(MINUTE) });
    // The CocoonSet's suspend set the annotation and vk pushed the snapshot.
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), {});

    assert.deepEqual(h.client.writes(), []);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.equal(h.registry.has(VM, "hibernate"), true);
    assert.equal(h.hibernation()?.status?.phase, "Active");
    assert.deepEqual(h.events.events, []);
  });

  test("Active at its generation writes nothing while the pod's VM is down for a recreate", async () => {
    const h = new Harness();
    h.seedHibernation({ ...settledOpts, readySince: h.ago(MINUTE) });
    h.seedPod({ lifecycle: { state: "creating" } });

    assert.deepEqual(await h.reconcile(), {});
    assert.deepEqual(h.client.writes(), [], "no fall back to Waking");
    assert.equal(h.hibernation()?.status?.phase, "Active");
  });

  test("a new generation of the CR acts again: the annotation is cleared and the CR wakes the pod", async () => {
    const h = new Harness();
    h.seedHibernation({ ...settledOpts, generation: 3, readySince: h.ago(MINUTE) });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.deepEqual(h.podPatches(), [{ metadata: { annotations: { [ANN_HIBERNATE]: null } } }]);
    assert.equal(h.hibernation()?.status?.phase, "Waking");
    assert.equal(h.hibernation()?.status?.observedGeneration, 3);
  });

  test("a Hibernate CR is never settled by this rule: Active at its generation still hibernates", async () => {
    const h = new Harness();
    h.seedHibernation({ ...settledOpts, desire: "Hibernate", readySince: h.ago(MINUTE) });
    h.seedPod({ running: true, vmID: "vmid-live", lifecycle: { state: "ready" } });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.deepEqual(h.podPatches(), [{ metadata: { annotations: { [ANN_HIBERNATE]: "true" } } }]);
  });
});

describe("phase exits within one second", () => {
  test("a hibernate and a wake finishing in the same second both announce their exit", async () => {
    const h = new Harness();
    h.seedHibernation();
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernating" } });
    h.registry.put(VM, "hibernate");
    await h.reconcile(); // Hibernating
    h.annotatePod({ [ANN_LIFECYCLE_STATE]: "hibernated" });
    await h.reconcile(); // Hibernated

    const ch = h.hibernation();
    assert.ok(ch);
    h.client.seed(COCOONHIBERNATIONS, { ...ch, spec: { ...ch.spec, desire: "Wake" as const } });
    await h.reconcile(); // Waking, clearing the annotation
    h.annotatePod({
      [ANN_LIFECYCLE_STATE]: "ready",
      "vm.cocoonstack.io/id": "vmid-2",
    });
    h.client.seed(PODS, {
      ...h.pod(),
      status: {
        phase: "Running",
        containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
      },
    });
    await h.reconcile(); // Active

    assert.equal(h.hibernation()?.status?.phase, "Active");
    assert.deepEqual(h.events.reasons(), ["Hibernated", "WokenActive"]);
  });
});

describe("reverse desires finish the running transition first", () => {
  test("desire Hibernate while Waking, VM not live, tag present → stays Waking, no delete", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Hibernate", phase: "Waking", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod({ lifecycle: { state: "hibernated" } });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Waking");
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.deepEqual(h.podPatches(), [], "the hibernate annotation waits for the wake to end");
  });

  test("desire Wake while Hibernating on a stale running pod, no tag → stays Hibernating, no delete", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Hibernating", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod({ running: true, vmID: "vmid-old", hibernate: true, lifecycle: { state: "ready" } });

    assert.deepEqual(await h.reconcile(), REQUEUE_5S);
    assert.equal(h.hibernation()?.status?.phase, "Hibernating");
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });

  test("after the hibernate ends, the flipped Wake desire runs", async () => {
    const h = new Harness();
    h.seedHibernation({ desire: "Wake", phase: "Hibernating", vmName: VM, readySince: h.ago(MINUTE) });
    h.seedPod({ hibernate: true, lifecycle: { state: "hibernated" } });
    h.registry.put(VM, "hibernate");

    await h.reconcile();
    assert.equal(h.hibernation()?.status?.phase, "Hibernated");
    await h.reconcile();
    assert.equal(h.hibernation()?.status?.phase, "Waking");
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
  });
});

describe("deletion", () => {
  test("deleting with status.vmName drops the tag and removes the finalizer", async () => {
    const h = new Harness();
    h.seedHibernation({ deleting: true, vmName: VM, phase: "Hibernated" });
    h.registry.put(VM, "hibernate");

    assert.deepEqual(await h.reconcile(), {});
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [TAG]);
    assert.equal(h.hibernation(), undefined, "the finalizer was the last one, so the CR is gone");
  });

  test("a failing tag delete still removes the finalizer", async () => {
    const h = new Harness();
    h.seedHibernation({ deleting: true, vmName: VM });
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);

    assert.deepEqual(await h.reconcile(), {});
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [TAG]);
    assert.equal(h.hibernation(), undefined);
  });

  test("without status.vmName no tag delete is attempted", async () => {
    const h = new Harness();
    h.seedHibernation({ deleting: true });

    assert.deepEqual(await h.reconcile(), {});
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.hibernation(), undefined);
  });

  test("a fresh CR on the same podRef with no status keeps the tag", async () => {
    const h = new Harness();
    h.seedHibernation({ name: "a", deleting: true, vmName: VM, phase: "Hibernated" });
    h.seedHibernation({ name: "c" });
    h.registry.put(VM, "hibernate");

    await h.reconcile("a");

    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.hibernation("a"), undefined);
  });

  test("the tag outlives a deleted CR while another live CR tracks the VM; the last holder drops it", async () => {
    const h = new Harness();
    h.seedHibernation({ name: "a", deleting: true, vmName: VM, phase: "Hibernated" });
    h.seedHibernation({ name: "b", vmName: VM, phase: "Hibernated", readySince: h.ago(MINUTE) });
    h.registry.put(VM, "hibernate");

    await h.reconcile("a");
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.hibernation("a"), undefined);

    await h.client.delete(COCOONHIBERNATIONS, NS, "b");
    await h.reconcile("b");
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [TAG]);
    assert.equal(h.hibernation("b"), undefined);
  });

  test("a CR being deleted whose finalizer is already gone writes nothing", async () => {
    const h = new Harness();
    // A cache can still show the object after the finalizer's removal.
    h.seedHibernation({ deleting: true, finalizer: false });
    assert.deepEqual(await h.reconcile(), {});
    assert.deepEqual(h.client.writes(), []);
  });
});
