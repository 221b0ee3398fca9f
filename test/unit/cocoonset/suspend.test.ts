import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../src/cocoonset/decide/pods.ts";
import { gatePod, managedVMNames, planSuspendGate } from "../../../src/cocoonset/decide/suspendgate.ts";
import { reconcileSuspend } from "../../../src/cocoonset/steps/suspend.ts";
import {
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_LIFECYCLE_STATE,
  ANN_LIFECYCLE_STATE_MESSAGE,
  ANN_RESTORE_FROM_HIBERNATE,
  ANN_SUSPENDING_SINCE,
  LIFECYCLE_FAILED,
  LIFECYCLE_READY,
} from "../../../src/contract/keys.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { gateFingerprint, SuspendConfirmations } from "../../../src/pass/suspendconfirmations.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import {
  IMAGE,
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";
import { annotate, hibernated, storedReclaim, timeline } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";
const VMTB = "vk-ns-demo-tb";
const T0 = Date.parse("2026-01-01T00:00:00Z");

function suspendedSet(
  opts: { replicas?: number; generation?: number; phase?: CocoonSetPhase; toolboxes?: boolean } = {},
): CocoonSet {
  const cs = scalingSet(
    {
      suspend: true,
      agent: { image: IMAGE, replicas: opts.replicas ?? 1 },
      ...(opts.toolboxes
        ? { toolboxes: [{ name: "tb", mode: "static", staticIP: "10.0.0.1", staticVMID: "q-1" }] }
        : {}),
    },
    opts.generation ?? 0,
  );
  if (opts.phase) {
    cs.status = {
      phase: opts.phase,
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    };
  }
  return cs;
}

/** The main as vk-cocoon runs it (it has reported a lifecycle). */
function mainPod(cs: CocoonSet): Pod {
  return vkReady(buildMainPod(cs));
}

function subPod(cs: CocoonSet, slot = 1): Pod {
  return vkReady(buildSubAgentPod(cs, slot, "node-a"));
}

function vkReady(pod: Pod): Pod {
  return annotate(pod, { [ANN_LIFECYCLE_STATE]: LIFECYCLE_READY });
}

/** Sets annotations on the stored set, as an earlier pass would have left them. */
function annotateSet(h: ScalingHarness, annotations: Record<string, string>): void {
  const stored = h.set();
  stored.metadata.annotations = { ...stored.metadata.annotations, ...annotations };
  h.client.seed(COCOONSETS, stored);
}

function run(h: ScalingHarness) {
  return reconcileSuspend(h.pass());
}

function phase(h: ScalingHarness): string | undefined {
  return h.set().status?.phase;
}

describe("the suspend gate, pod side", () => {
  const cs = suspendedSet({ generation: 3 });

  it("passes a managed pod hibernated at the set's generation on to the manifest probe", () => {
    assert.deepEqual(gatePod(hibernated(mainPod(cs), 3), 3), { verdict: "probe", vm: VM0 });
    assert.deepEqual(gatePod(hibernated(mainPod(cs), 4), 3), { verdict: "probe", vm: VM0 });
  });

  it("waits on a hibernate reported for an older generation (a prior cycle, a lagging cache)", () => {
    assert.equal(gatePod(hibernated(mainPod(cs), 2), 3).verdict, "wait");
  });

  it("waits on a pod without lifecycle hibernated, and on one without a VM name", () => {
    assert.equal(gatePod(mainPod(cs), 3).verdict, "wait");
    assert.equal(
      gatePod(annotate(hibernated(mainPod(cs), 3), { "vm.cocoonstack.io/name": null }), 3).verdict,
      "wait",
    );
  });

  it("skips unmanaged (static toolbox) pods and Phase=Failed pods: no VM to snapshot", () => {
    const toolbox = buildToolboxPod(cs, {
      name: "tb",
      mode: "static",
      staticIP: "10.0.0.1",
      staticVMID: "q",
    });
    assert.deepEqual(gatePod(toolbox, 3), { verdict: "skip" });
    assert.deepEqual(gatePod(phaseFailed(mainPod(cs)), 3), { verdict: "skip" });
  });

  it("waits on a Running pod that only reports lifecycle failed: its VM may be live", () => {
    const pod = annotate(mainPod(cs), {
      [ANN_LIFECYCLE_STATE]: LIFECYCLE_FAILED,
      [ANN_LIFECYCLE_STATE_MESSAGE]: "HibernateUnsupported",
    });
    const gate = gatePod(pod, 3);
    assert.equal(gate.verdict, "wait");
    assert.match(gate.verdict === "wait" ? gate.reason : "", /"failed".*HibernateUnsupported/);
  });

  it("plans probes in pod-name order and reports the first waiting pod", () => {
    const plan = planSuspendGate([hibernated(subPod(cs), 3), hibernated(mainPod(cs), 3)], 3);
    assert.deepEqual(plan, { waitingOn: undefined, probes: [VM0, VM1] });
    const waiting = planSuspendGate([subPod(cs), hibernated(mainPod(cs), 3)], 3);
    assert.match(waiting.waitingOn ?? "", /demo-1/);
  });

  it("the reclaim record takes the managed VMs only, in name order", () => {
    const toolbox = buildToolboxPod(cs, {
      name: "tb",
      mode: "static",
      staticIP: "10.0.0.1",
      staticVMID: "q",
    });
    const managedToolbox = buildToolboxPod(cs, { name: "tc", image: "tb" });
    assert.deepEqual(managedVMNames([managedToolbox, subPod(cs), toolbox, mainPod(cs)]), [
      VM0,
      VM1,
      "vk-ns-demo-tc",
    ]);
  });
});

describe("step 6: suspend (retain)", () => {
  it("writes the reclaim record before the first hibernate annotation, then annotates in name order", async () => {
    const h = scalingHarness(suspendedSet({ phase: "Running" }), (cs) => [subPod(cs), mainPod(cs)]);
    const calls = timeline(h);
    const outcome = await run(h);
    assert.deepEqual(outcome, { done: true, result: { requeueAfterMs: 5000 } });
    assert.deepEqual(calls, [
      `patch cocoonsets/demo hibernate-reclaim={"generation":0,"vms":["${VM0}","${VM1}"],"suspended":["${VM0}","${VM1}"]}`,
      "patch pods/demo-0 hibernate=true",
      "patch pods/demo-1 hibernate=true",
      // Pod side not done: no registry probe.
      "patch cocoonsets/demo suspending-since=2026-01-01T00:00:00Z",
      "patch cocoonsets/demo status phase=Suspending",
    ]);
  });

  it("annotates a pod vk-cocoon has not reported on yet only on the pass its report brings", async () => {
    // vk acts on the hibernate annotation in UpdatePod only: a pod it first sees annotated would be
    // brought up and left running.
    const h = scalingHarness(suspendedSet({ phase: "Running" }), (cs) => [subPod(cs), buildMainPod(cs)]);
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      ["patch pods/demo-1 hibernate=true"],
      "the main, unreported, is left alone",
    );
    assert.equal(phase(h), "Suspending");
    h.seedPods(vkReady(h.pod("demo-0")!));
    calls.length = 0;
    await run(h);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      ["patch pods/demo-0 hibernate=true"],
    );
  });

  it("the first Suspending write turns Ready False and Suspended SuspendInProgress at the new generation", async () => {
    const cs = suspendedSet({ generation: 3 });
    cs.status = {
      phase: "Running",
      observedGeneration: 2,
      readyAgents: 2,
      desiredAgents: 2,
      readyToolboxes: 0,
      desiredToolboxes: 0,
      conditions: [
        {
          type: "Ready",
          status: "True",
          observedGeneration: 2,
          reason: "AllAgentsReady",
          message: "",
          lastTransitionTime: "2025-12-31T00:00:00Z",
        },
      ],
    };
    const h = scalingHarness(cs, (stored) => [ready(subPod(stored)), ready(mainPod(stored))]);
    await run(h);
    const conditions = h.set().status?.conditions ?? [];
    const brief = (type: string) => {
      const c = conditions.find((x) => x.type === type);
      return [c?.status, c?.reason, c?.observedGeneration];
    };
    assert.equal(phase(h), "Suspending");
    assert.deepEqual(
      brief("Ready"),
      ["False", "Suspending", 3],
      "every pod is still Ready, yet Ready is False",
    );
    assert.deepEqual(brief("Suspended"), ["False", "SuspendInProgress", 3]);
  });

  it("merges the record with VMs an earlier cycle left and skips pods already annotated", async () => {
    const h = scalingHarness(suspendedSet({ phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
      subPod(cs),
    ]);
    annotateSet(h, {
      [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 2, vms: [VMTB] }),
      [ANN_SUSPENDING_SINCE]: "2026-01-01T00:00:00Z",
    });
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(storedReclaim(h.set()), {
      generation: 2,
      vms: [VMTB, VM0, VM1],
      restore: [],
      suspended: [VM0, VM1],
    });
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      ["patch pods/demo-1 hibernate=true"],
    );
  });

  it("main and sub hibernated, only the main's tag → Suspending; the sub's tag lands → Suspended", async () => {
    const h = scalingHarness(suspendedSet({ phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
      hibernated(subPod(cs), 0),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: 5000 } });
    assert.equal(phase(h), "Suspending");
    assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`, `${VM1}:hibernate`]);

    h.registry.put(VM1, "hibernate", IMAGE);
    assert.deepEqual(await run(h), { done: true, result: {} });
    assert.equal(phase(h), "Suspended");
  });

  it("a static toolbox without a tag does not hold the suspend once the main passes", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, toolboxes: true, phase: "Suspending" }), (cs) => {
      const tb = cs.spec.toolboxes?.[0];
      return [hibernated(mainPod(cs), 0), ...(tb ? [vkReady(buildToolboxPod(cs, tb))] : [])];
    });
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    assert.equal(phase(h), "Suspended");
    assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`]);
    // The toolbox is annotated too (every owned pod), though the gate skips it.
    assert.equal(h.pod("demo-tb")?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });

  it("a probe error writes Suspending (arming the deadline), then fails the pass", async () => {
    const h = scalingHarness(suspendedSet({ phase: "Running" }), (cs) => [hibernated(mainPod(cs), 0)]);
    h.registry.failOn = () => FakeSnapshotRegistry.error(503);
    await assert.rejects(run(h), /injected failure/);
    assert.equal(phase(h), "Suspending");
    assert.equal(h.set().metadata.annotations?.[ANN_SUSPENDING_SINCE], "2026-01-01T00:00:00Z");
  });

  it("tag without lifecycle → not done; hibernated at 0 → done; set at generation 5 → not done", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Suspending" }), (cs) => [
      annotate(mainPod(cs), { [ANN_HIBERNATE]: "true" }),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    assert.equal(phase(h), "Suspending");
    assert.deepEqual(h.registry.calls, [], "no probe before the pod side passes");

    const pod = h.pod("demo-0");
    assert.ok(pod);
    h.client.seed(PODS, hibernated(pod, 0));
    await run(h);
    assert.equal(phase(h), "Suspended");

    const h5 = scalingHarness(suspendedSet({ replicas: 0, generation: 5, phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
    ]);
    h5.registry.put(VM0, "hibernate", IMAGE);
    await reconcileSuspend(h5.pass());
    assert.equal(h5.set().status?.phase, "Suspending");
  });

  it("a Phase=Failed sub without a tag is skipped by the gate", async () => {
    const h = scalingHarness(suspendedSet({ phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
      phaseFailed(subPod(cs)),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    assert.equal(phase(h), "Suspended");
  });

  it("a Running sub that only reports lifecycle failed keeps the set Suspending: its VM may be live", async () => {
    const h = scalingHarness(suspendedSet({ phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
      annotate(subPod(cs), { [ANN_LIFECYCLE_STATE]: LIFECYCLE_FAILED }),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    h.registry.put(VM1, "hibernate", IMAGE);
    await run(h);
    assert.equal(phase(h), "Suspending");
  });

  it("Suspended clears suspending-since", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    // As an earlier Suspending pass left it.
    annotateSet(h, { [ANN_SUSPENDING_SINCE]: "2026-01-01T00:00:00Z" });
    const calls = timeline(h);
    await run(h);
    assert.deepEqual(calls.slice(-2), [
      "patch cocoonsets/demo status phase=Suspended",
      "patch cocoonsets/demo suspending-since-",
    ]);
  });

  it("times out after 3 minutes in Suspending: Failed + SuspendTimedOut, then re-enters with a fresh deadline", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Running" }), (cs) => [
      annotate(mainPod(cs), {
        [ANN_LIFECYCLE_STATE]: LIFECYCLE_FAILED,
        [ANN_LIFECYCLE_STATE_MESSAGE]: "HibernateUnsupported",
      }),
    ]);
    await run(h);
    assert.equal(phase(h), "Suspending");
    assert.equal(h.set().metadata.annotations?.[ANN_SUSPENDING_SINCE], "2026-01-01T00:00:00Z");

    h.clock.advance(3 * 60 * 1000);
    await run(h);
    assert.equal(phase(h), "Suspending", "exactly 3 minutes is still within the deadline");
    assert.equal(h.events.events.length, 0);

    h.clock.advance(1000);
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: 5000 } });
    assert.equal(phase(h), "Failed");
    assert.equal(h.events.events.length, 1);
    assert.equal(h.events.events[0]?.type, "Warning");
    assert.equal(h.events.events[0]?.reason, "SuspendTimedOut");
    assert.match(
      h.events.events[0]?.message ?? "",
      /^suspend not confirmed within 3m0s: .*HibernateUnsupported/,
    );

    h.clock.advance(5000);
    await run(h);
    assert.equal(phase(h), "Suspending");
    assert.equal(
      h.set().metadata.annotations?.[ANN_SUSPENDING_SINCE],
      new Date(T0 + 3 * 60 * 1000 + 6000).toISOString().replace(/\.\d{3}Z$/, "Z"),
    );
  });

  it("a registry that keeps failing times out too, and the Warning carries the probe error", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Running" }), (cs) => [
      hibernated(mainPod(cs), 0),
    ]);
    h.registry.failOn = () => FakeSnapshotRegistry.error(503);
    await assert.rejects(run(h));
    h.clock.advance(3 * 60 * 1000 + 1);
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: 5000 } });
    assert.equal(phase(h), "Failed");
    assert.match(
      h.events.events[0]?.message ?? "",
      /probe of vk-ns-demo-0:hibernate failed: .*503.*injected failure/,
    );
  });

  it("retain with no main: creates the main restore-marked when its tag exists, and requeues", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Running" }));
    h.registry.put(VM0, "hibernate", IMAGE);
    const calls = timeline(h);
    assert.deepEqual(await run(h), { done: true, result: { requeue: true } });
    assert.deepEqual(calls, [`registry getSnapshot ${VM0}:hibernate`, "create pods/demo-0"]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
  });

  it("retain with no main and no tag: creates it fresh", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Running" }));
    await run(h);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("retain with no main and a refused manifest read: fails the pass, creates nothing", async () => {
    const h = scalingHarness(suspendedSet({ replicas: 0, phase: "Running" }));
    h.registry.failOn = () => FakeSnapshotRegistry.error(500);
    await assert.rejects(run(h));
    assert.deepEqual(h.created(), []);
  });

  it("hands the pass on when the set is not suspended", async () => {
    const h = scalingHarness(scalingSet(), (cs) => [mainPod(cs)]);
    const calls = timeline(h);
    assert.deepEqual(await run(h), { done: false });
    assert.deepEqual(calls, []);
  });
});

describe("step 6: a settled Suspended set asks the registry nothing", () => {
  /** Main and sub hibernated at generation 0, both tags in the registry, and a controller's memory. */
  function settling(): ScalingHarness & { confirmations: SuspendConfirmations } {
    const h = scalingHarness(suspendedSet({ phase: "Suspending" }), (cs) => [
      hibernated(mainPod(cs), 0),
      hibernated(subPod(cs), 0),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    h.registry.put(VM1, "hibernate", IMAGE);
    const confirmations = new SuspendConfirmations();
    h.deps.suspendConfirmations = confirmations;
    return Object.assign(h, { confirmations });
  }

  it("probes once; a later pass over the same pods at the same generation makes no call at all", async () => {
    const h = settling();
    await run(h);
    assert.equal(phase(h), "Suspended");
    assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`, `${VM1}:hibernate`]);
    const calls = timeline(h);
    for (let pass = 0; pass < 3; pass++) {
      assert.deepEqual(await run(h), { done: true, result: {} });
    }
    assert.deepEqual(calls, [], "no API call, no registry call");
    assert.equal(phase(h), "Suspended");
  });

  it("a changed pod is probed again, and a tag found gone sends the set back to Suspending", async () => {
    const h = settling();
    await run(h);
    const sub = h.pod("demo-1");
    assert.ok(sub);
    h.seedPods(annotate(sub, { "vm.cocoonstack.io/lifecycle-state-message": "re-reported" }));
    await h.registry.deleteManifest(VM1, "hibernate");
    h.registry.calls.length = 0;
    await run(h);
    assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`, `${VM1}:hibernate`]);
    assert.equal(phase(h), "Suspending");
    // Not remembered while not confirmed: the next pass asks again.
    h.registry.calls.length = 0;
    await run(h);
    assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`, `${VM1}:hibernate`]);
  });

  it("a new pod, a new generation, or a restart (no memory) is probed again", async () => {
    const changes: ((h: ScalingHarness & { confirmations: SuspendConfirmations }) => void)[] = [
      (h) => {
        h.client.finishPodDeletion("ns", "demo-1");
        h.seedPods(hibernated(subPod(h.set()), 0));
      },
      (h) => {
        const stored = h.set();
        stored.metadata.generation = 1;
        h.client.seed(COCOONSETS, stored);
        for (const name of ["demo-0", "demo-1"]) {
          const pod = h.pod(name);
          assert.ok(pod);
          h.seedPods(hibernated(pod, 1));
        }
      },
      (h) => {
        h.deps.suspendConfirmations = new SuspendConfirmations();
      },
    ];
    for (const change of changes) {
      const h = settling();
      await run(h);
      change(h);
      h.registry.calls.length = 0;
      await run(h);
      assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`, `${VM1}:hibernate`]);
      assert.equal(phase(h), "Suspended");
    }
  });

  it("under hibernatePolicy release the gate always asks the registry: it licenses the pod deletes", async () => {
    const cs = scalingSet({ suspend: true, hibernatePolicy: "release" }, 0);
    const h = scalingHarness(cs, (stored) => [hibernated(mainPod(stored), 0)]);
    h.registry.put(VM0, "hibernate", IMAGE);
    const confirmations = new SuspendConfirmations();
    h.deps.suspendConfirmations = confirmations;
    // As if this very pod had been confirmed before.
    confirmations.confirm("ns/demo", gateFingerprint(h.set(), h.pass().pods.all.values()));
    await run(h);
    assert.deepEqual(h.registry.callsOf("hasManifest"), [`${VM0}:hibernate`]);
  });

  it("an unsuspend forgets the confirmation", async () => {
    const h = settling();
    await run(h);
    const fingerprint = gateFingerprint(h.set(), h.pass().pods.all.values());
    assert.equal(h.confirmations.holds("ns/demo", fingerprint), true);
    const stored = h.set();
    stored.spec.suspend = false;
    h.client.seed(COCOONSETS, stored);
    assert.deepEqual(await run(h), { done: false });
    assert.equal(h.confirmations.holds("ns/demo", fingerprint), false);
  });
});
