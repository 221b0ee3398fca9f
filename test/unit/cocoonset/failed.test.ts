// Step 7 (a failed main; docs/cocoonset.md, "7. Failed main").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import { computeStatus } from "../../../src/cocoonset/decide/computestatus.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../src/cocoonset/decide/pods.ts";
import { type CocoonSetDeps, CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { reconcileFailedMain } from "../../../src/cocoonset/steps/failed.ts";
import {
  ANN_DEAD_LETTER,
  ANN_HIBERNATE,
  ANN_LIFECYCLE_STATE,
  ANN_LIFECYCLE_STATE_MESSAGE,
  ANN_REBUILD_HISTORY,
  ANN_VM_ID,
  FINALIZER_COCOONSET,
} from "../../../src/contract/keys.ts";
import { podFailedReason } from "../../../src/contract/pod.ts";
import { COCOONHIBERNATIONS, COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { lifecycleStateFailedObservedTotal } from "../../../src/metrics/cocoon.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { FailedMains } from "../../../src/pass/failedmains.ts";
import { Pass, type StepOutcome } from "../../../src/pass/pass.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { FakeClient, FakeView } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";

const NS = "ns";
const IMAGE = "ghcr.io/cocoonstack/cocoon/ubuntu:24.04";
const START = "2026-01-01T00:00:00Z";
const OWNER = { name: "demo", uid: "test-uid" };
const HANDED_BACK = { done: false };
const PARKED = { done: true, result: {} };

interface SetOptions {
  phase?: CocoonSetPhase;
  image?: string;
  nodeName?: string;
  replicas?: number;
  annotations?: Record<string, string>;
}

function cocoonSet(opts: SetOptions = {}): CocoonSet {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: {
      name: "demo",
      namespace: NS,
      uid: "test-uid",
      generation: 1,
      finalizers: [FINALIZER_COCOONSET],
      annotations: opts.annotations ?? {},
    },
    spec: { agent: { image: opts.image ?? IMAGE, replicas: opts.replicas ?? 0 } },
  };
  if (opts.nodeName) cs.spec.nodeName = opts.nodeName;
  if (opts.phase)
    cs.status = {
      phase: opts.phase,
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    };
  return cs;
}

interface MainOptions {
  lifecycleFailed?: string;
  podFailed?: boolean;
  ready?: boolean;
  hibernate?: boolean;
  node?: string;
}

function mainPod(opts: MainOptions = {}): Pod {
  const pod = buildMainPod(cocoonSet());
  const annotations: Record<string, string> = { ...pod.metadata.annotations, [ANN_VM_ID]: "vm-1" };
  pod.metadata.annotations = annotations;
  pod.spec.nodeName = opts.node ?? "node-a";
  pod.status = { phase: opts.podFailed ? "Failed" : "Running", conditions: [] };
  if (opts.ready) pod.status.conditions = [{ type: "Ready", status: "True" }];
  if (opts.hibernate) annotations[ANN_HIBERNATE] = "true";
  if (opts.lifecycleFailed !== undefined) {
    annotations[ANN_LIFECYCLE_STATE] = "failed";
    if (opts.lifecycleFailed) annotations[ANN_LIFECYCLE_STATE_MESSAGE] = opts.lifecycleFailed;
  }
  return pod;
}

function subPod(hibernate: boolean): Pod {
  const pod = buildSubAgentPod(cocoonSet({ replicas: 1 }), 1, "node-a");
  if (hibernate) pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_HIBERNATE]: "true" };
  return pod;
}

function hibernation(podName: string, desire: "Hibernate" | "Wake", phase?: string): CocoonHibernation {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName, namespace: NS },
    spec: { podRef: { name: podName }, desire },
    ...(phase ? { status: { phase } } : {}),
  } as CocoonHibernation;
}

class Harness {
  readonly client = new FakeClient();
  readonly registry = new FakeSnapshotRegistry();
  readonly events: string[] = [];
  readonly deps: CocoonSetDeps;

  constructor(cs: CocoonSet, pods: Pod[] = [], hibernations: CocoonHibernation[] = []) {
    // A phase as the last status patch wrote it, so an unchanged status is not written again.
    const phase = cs.status?.phase;
    if (phase) cs.status = computeStatus(cs, classifyPods(pods, OWNER), { phase, now: START });
    this.client.seed(COCOONSETS, cs);
    for (const pod of pods) this.client.seed(PODS, pod);
    for (const ch of hibernations) this.client.seed(COCOONHIBERNATIONS, ch);
    this.deps = {
      client: this.client,
      view: new FakeView(this.client),
      registry: this.registry,
      events: { event: (_obj, type, reason, message) => this.events.push(`${type} ${reason} ${message}`) },
      clock: new FakeClock(Date.parse(START)),
      log: silentLogger(),
    };
  }

  /** Step 7 alone, on a pass read from the cache. */
  step(): Promise<StepOutcome> {
    const cs = this.deps.view.getCocoonSet(NS, "demo");
    assert.ok(cs);
    const pods = classifyPods(this.deps.view.listSetPods(NS, "demo"), OWNER);
    return reconcileFailedMain(new Pass(cs, pods, this.deps, new AbortController().signal));
  }

  /** A full reconcile pass. */
  reconcile() {
    return new CocoonSetReconciler(this.deps).reconcile(
      { namespace: NS, name: "demo" },
      new AbortController().signal,
    );
  }

  writes(): string[] {
    return this.client
      .writes()
      .map((c) => `${c.verb} ${c.resource}${c.subresource ? `/${c.subresource}` : ""} ${c.name}`);
  }

  pod(name = "demo-0"): Pod | undefined {
    return this.client.peek<Pod>(PODS, NS, name);
  }

  set(): CocoonSet | undefined {
    return this.client.peek<CocoonSet>(COCOONSETS, NS, "demo");
  }
}

async function failedObserved(phase: string): Promise<number> {
  const metric = await lifecycleStateFailedObservedTotal.get();
  return metric.values.find((v) => v.labels.phase === phase)?.value ?? 0;
}

describe("step 7: what counts as a failed main", () => {
  it("healthy → none; lifecycle failed → PodLifecycleFailed; phase Failed → MainAgentFailed; both → PodLifecycleFailed", () => {
    assert.equal(podFailedReason(mainPod()), "");
    assert.equal(podFailedReason(mainPod({ lifecycleFailed: "x" })), "PodLifecycleFailed");
    assert.equal(podFailedReason(mainPod({ podFailed: true })), "MainAgentFailed");
    assert.equal(podFailedReason(mainPod({ lifecycleFailed: "x", podFailed: true })), "PodLifecycleFailed");
  });
});

describe("step 7: a failed main that matches its spec", () => {
  it("full reconcile, lifecycle failed 'hibernate push failed' → Phase=Failed, Warning PodLifecycleFailed, metric{phase=Pending}, no requeue", async () => {
    const h = new Harness(cocoonSet(), [mainPod({ lifecycleFailed: "hibernate push failed" })]);
    const before = await failedObserved("Pending");
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.set()?.status?.phase, "Failed");
    assert.deepEqual(h.events, ["Warning PodLifecycleFailed main pod ns/demo-0: hibernate push failed"]);
    assert.equal(await failedObserved("Pending"), before + 1);
    assert.ok(h.pod(), "a failed main that matches its spec is kept");
  });

  it("the metric carries the set's phase when it has one", async () => {
    const h = new Harness(cocoonSet({ phase: "Running" }), [mainPod({ lifecycleFailed: "boom" })]);
    const before = await failedObserved("Running");
    await h.step();
    assert.equal(await failedObserved("Running"), before + 1);
  });

  it("Pod.Phase=Failed → Warning MainAgentFailed naming the pod phase; the metric does not count it", async () => {
    const h = new Harness(cocoonSet({ phase: "Running" }), [mainPod({ podFailed: true })]);
    const before = await failedObserved("Running");
    assert.deepEqual(await h.step(), PARKED);
    assert.deepEqual(h.events, ["Warning MainAgentFailed main pod ns/demo-0: Failed"]);
    assert.equal(await failedObserved("Running"), before);
    assert.deepEqual(h.writes(), ["patch cocoonsets/status demo"]);
    assert.equal(h.set()?.status?.phase, "Failed");
  });

  it("lifecycle failed with no message → the event falls back to the pod phase", async () => {
    const h = new Harness(cocoonSet(), [mainPod({ lifecycleFailed: "" })]);
    await h.step();
    assert.deepEqual(h.events, ["Warning PodLifecycleFailed main pod ns/demo-0: Running"]);
  });

  it("already Failed: the status is not written again; the event repeats", async () => {
    const h = new Harness(cocoonSet({ phase: "Failed" }), [mainPod({ podFailed: true })]);
    assert.deepEqual(await h.step(), PARKED);
    assert.deepEqual(h.writes(), []);
    assert.equal(h.events.length, 1);
  });
});

describe("step 7: a failed main that drifted takes the rebuild budget", () => {
  it("full reconcile with a changed image → history written FIRST, then demo-0 deleted; not Failed", async () => {
    const h = new Harness(cocoonSet({ image: "ghcr.io/cocoonstack/cocoon/ubuntu:26.04" }), [
      mainPod({ lifecycleFailed: "hibernate push failed" }),
    ]);
    const result = await h.reconcile();
    assert.deepEqual(result, { requeue: true });
    assert.deepEqual(h.writes(), ["patch cocoonsets demo", "delete pods demo-0"]);
    assert.match(h.set()?.metadata.annotations?.[ANN_REBUILD_HISTORY] ?? "", /"demo-0":\{"count":1/);
    assert.notEqual(h.set()?.status?.phase, "Failed");
    assert.ok(!h.events.some((e) => e.includes("PodLifecycleFailed")));
  });

  it("within backoff → waits (requeue after the remaining backoff), no delete, not Failed", async () => {
    const history = JSON.stringify({ "demo-0": { count: 1, lastDeleted: START } });
    const h = new Harness(
      cocoonSet({
        image: "ghcr.io/cocoonstack/cocoon/ubuntu:26.04",
        annotations: { [ANN_REBUILD_HISTORY]: history },
      }),
      [mainPod({ podFailed: true })],
    );
    assert.deepEqual(await h.step(), { done: true, result: { requeueAfterMs: 1_000 } });
    assert.deepEqual(h.writes(), []);
  });

  it("budget spent → the main is dead-lettered and kept, and the set parks Failed", async () => {
    const history = JSON.stringify({ "demo-0": { count: 4, lastDeleted: START } });
    const h = new Harness(
      cocoonSet({
        image: "ghcr.io/cocoonstack/cocoon/ubuntu:26.04",
        annotations: { [ANN_REBUILD_HISTORY]: history },
      }),
      [mainPod({ podFailed: true })],
    );
    assert.deepEqual(await h.step(), PARKED);
    assert.deepEqual(h.writes(), [
      "patch cocoonsets demo",
      "patch pods demo-0",
      "patch cocoonsets/status demo",
    ]);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_DEAD_LETTER], "1");
    assert.equal(h.set()?.status?.phase, "Failed");
  });
});

describe("step 7: recovery", () => {
  it("Phase=Failed and the main Ready again → Normal RecoveredFromFailure, the pass continues", async () => {
    const h = new Harness(cocoonSet({ phase: "Failed" }), [mainPod({ ready: true })]);
    assert.deepEqual(await h.step(), HANDED_BACK);
    assert.deepEqual(h.events, ["Normal RecoveredFromFailure main pod ns/demo-0 is Ready again"]);
    assert.deepEqual(h.writes(), []);
  });

  it("a full pass over a Failed set whose lifted main is not Ready yet keeps it Failed; once Ready, Running with the event", async () => {
    const h = new Harness(cocoonSet({ phase: "Failed" }), [mainPod()]);
    await h.reconcile();
    assert.equal(h.set()?.status?.phase, "Failed", "still Failed while the main comes back");
    assert.deepEqual(h.events, []);
    const recovered = new Harness(cocoonSet({ phase: "Failed" }), [mainPod({ ready: true })]);
    await recovered.reconcile();
    assert.equal(recovered.set()?.status?.phase, "Running");
    assert.deepEqual(recovered.events, ["Normal RecoveredFromFailure main pod ns/demo-0 is Ready again"]);
  });

  it("reports the recovery of a main it put in Failed even over a cache that does not show that Failed yet", async () => {
    const h = new Harness(cocoonSet({ phase: "Running" }), [
      mainPod({ lifecycleFailed: "HibernateUnsupported" }),
    ]);
    const deps = { ...h.deps, failedMains: new FailedMains() };
    const before = h.set();
    assert.ok(before);
    // Each pass reads its own copy of the set as the cache held it before the Failed write.
    const pass = (cs: CocoonSet) =>
      reconcileFailedMain(
        new Pass(
          structuredClone(cs),
          classifyPods(deps.view.listSetPods(NS, "demo"), OWNER),
          deps,
          new AbortController().signal,
        ),
      );
    await pass(before);
    assert.equal(h.set()?.status?.phase, "Failed");
    // vk-cocoon lifts the failure and the main is Ready; the cached set is still the one from before.
    const lifted = mainPod({ ready: true });
    lifted.metadata.uid = h.pod()?.metadata.uid;
    h.client.seed(PODS, lifted);
    assert.deepEqual(await pass(before), HANDED_BACK);
    assert.deepEqual(
      h.events.filter((e) => e.includes("RecoveredFromFailure")),
      ["Normal RecoveredFromFailure main pod ns/demo-0 is Ready again"],
    );
    await pass(before);
    assert.equal(h.events.filter((e) => e.includes("RecoveredFromFailure")).length, 1, "said once");
  });

  it("a Ready main outside Failed, a Failed set whose main is not Ready yet, or no main → nothing", async () => {
    for (const h of [
      new Harness(cocoonSet({ phase: "Running" }), [mainPod({ ready: true })]),
      new Harness(cocoonSet({ phase: "Failed" }), [mainPod()]),
      new Harness(cocoonSet({ phase: "Failed" })),
    ]) {
      assert.deepEqual(await h.step(), HANDED_BACK);
      assert.deepEqual(h.events, []);
      assert.deepEqual(h.writes(), []);
    }
  });
});

describe("step 7: a leftover hibernate annotation", () => {
  it("unsuspended, failed main and a sub both annotated → both cleared BEFORE the Failed status", async () => {
    const h = new Harness(cocoonSet({ replicas: 1 }), [
      mainPod({ lifecycleFailed: "HibernateUnsupported", hibernate: true }),
      subPod(true),
    ]);
    assert.deepEqual(await h.step(), PARKED);
    const writes = h.writes();
    assert.ok(writes.indexOf("patch pods demo-0") < writes.indexOf("patch cocoonsets/status demo"));
    assert.ok(writes.indexOf("patch pods demo-1") < writes.indexOf("patch cocoonsets/status demo"));
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.equal(h.pod("demo-1")?.metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.equal(h.set()?.status?.phase, "Failed");
  });

  it("pods a desire=Hibernate CR (or a CR still Hibernating) owns keep theirs", async () => {
    const h = new Harness(
      cocoonSet({ replicas: 1 }),
      [mainPod({ podFailed: true, hibernate: true }), subPod(true)],
      [hibernation("demo-1", "Hibernate"), hibernation("demo-0", "Wake", "Hibernating")],
    );
    await h.step();
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.equal(h.pod("demo-1")?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });

  it("a migration pending (pinned to node-b, main on node-a) keeps the quiesce; the set parks Failed", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ lifecycleFailed: "hibernate push failed", hibernate: true, node: "node-a" }),
    ]);
    assert.deepEqual(await h.step(), PARKED);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.deepEqual(h.writes(), ["patch cocoonsets/status demo"]);
    assert.equal(h.set()?.status?.phase, "Failed");
  });

  it("pinned and the main already on its pin → no migration pending: cleared", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-a" }), [
      mainPod({ lifecycleFailed: "HibernateUnsupported", hibernate: true, node: "node-a" }),
    ]);
    await h.step();
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
  });

  it("a healthy main's annotation is not this step's business (no clear on every pass)", async () => {
    const h = new Harness(cocoonSet({ phase: "Running" }), [mainPod({ hibernate: true, ready: true })]);
    assert.deepEqual(await h.step(), HANDED_BACK);
    assert.deepEqual(h.writes(), []);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });
});

describe("step 7: sub-agents and toolboxes are not this step's", () => {
  it("a failed sub-agent with a healthy main → hands back untouched (step 12 rebuilds it)", async () => {
    const sub = subPod(false);
    sub.metadata.annotations = { ...sub.metadata.annotations, [ANN_LIFECYCLE_STATE]: "failed" };
    const h = new Harness(cocoonSet({ replicas: 1, phase: "Running" }), [mainPod({ ready: true }), sub]);
    assert.deepEqual(await h.step(), HANDED_BACK);
    assert.deepEqual(h.writes(), []);
  });

  it("full reconcile, sub Running with lifecycle failed → deleted (rebuild budget)", async () => {
    const sub = subPod(false);
    sub.metadata.annotations = { ...sub.metadata.annotations, [ANN_LIFECYCLE_STATE]: "failed" };
    const h = new Harness(cocoonSet({ replicas: 1, phase: "Running" }), [mainPod({ ready: true }), sub]);
    await h.reconcile();
    assert.ok(h.writes().includes("delete pods demo-1"));
    assert.ok(!h.writes().includes("delete pods demo-0"));
  });

  it("full reconcile, toolbox with Pod.Phase=Failed → deleted (rebuild budget)", async () => {
    const cs = cocoonSet({ phase: "Running" });
    cs.spec.toolboxes = [{ name: "tb", image: IMAGE }];
    const toolbox = buildToolboxPod(cs, { name: "tb", image: IMAGE });
    toolbox.status = { phase: "Failed" };
    const h = new Harness(cs, [mainPod({ ready: true }), toolbox]);
    await h.reconcile();
    assert.ok(h.writes().includes("delete pods demo-tb"));
    assert.ok(!h.writes().includes("delete pods demo-0"));
  });
});
