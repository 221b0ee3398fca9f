import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { Controller, type KubeObject } from "../../../src/controller/controller.ts";
import type { LeaderCallbacks, ManagedLeaderElector } from "../../../src/controller/manager.ts";
import { Manager } from "../../../src/controller/manager.ts";
import { metricsRegistry } from "../../../src/controller/metrics.ts";
import type { Reconciler, Request, Result } from "../../../src/controller/reconciler.ts";
import { FakeInformer, settle } from "./controller-fakeinformer.ts";

const LOCAL = "127.0.0.1:0";

/** Leadership is granted and taken away by the test; aborting run's signal releases the lease. */
class FakeElector implements ManagedLeaderElector {
  callbacks: LeaderCallbacks | undefined;
  released = false;
  private leadership: AbortController | undefined;

  run(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<void> {
    this.callbacks = callbacks;
    return new Promise((resolve) => {
      signal?.addEventListener(
        "abort",
        () => {
          this.released = true;
          if (this.leadership) this.lose();
          resolve();
        },
        { once: true },
      );
    });
  }

  lead(): void {
    this.leadership = new AbortController();
    this.callbacks?.onStartedLeading(this.leadership.signal);
  }

  lose(): void {
    this.leadership?.abort();
    this.leadership = undefined;
    this.callbacks?.onStoppedLeading();
  }
}

/** Reconciles block until the test releases them, so in-flight behaviour can be observed. */
class BlockingReconciler implements Reconciler {
  readonly seen: string[] = [];
  readonly signals: AbortSignal[] = [];
  private readonly pending: (() => void)[] = [];

  reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    this.seen.push(req.name);
    this.signals.push(signal);
    return new Promise((resolve) => {
      this.pending.push(() => resolve({}));
      signal.addEventListener("abort", () => resolve({}), { once: true });
    });
  }

  releaseAll(): void {
    for (const release of this.pending.splice(0)) release();
  }
}

function setup(name: string) {
  const informer = new FakeInformer<KubeObject>();
  const reconciler = new BlockingReconciler();
  const controller = new Controller({ name, reconciler, clock: new FakeClock() }).for(informer);
  return { informer, reconciler, controller };
}

async function readyz(manager: Manager): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${manager.ports().probes}/readyz`);
  await response.text();
  return response.status;
}

async function leaderGauge(name: string): Promise<number | undefined> {
  const metric = await metricsRegistry.getSingleMetric("leader_election_master_status")?.get();
  return metric?.values.find((v) => v.labels.name === name)?.value;
}

describe("Manager", () => {
  it("starts informers, reports ready after sync, and starts controllers only then", async () => {
    const { informer, reconciler, controller } = setup("manager-sync-test");
    const manager = new Manager({ metricsBindAddress: LOCAL, healthProbeBindAddress: LOCAL });
    manager.addInformer(informer);
    manager.addInformer(informer);
    manager.addController(controller);
    await manager.start();
    assert.ok(informer.startedWith, "informer started");
    assert.ok(manager.ports().metrics! > 0);
    assert.equal(await readyz(manager), 500);

    informer.add({ metadata: { namespace: "ns", name: "a" } });
    await settle();
    assert.deepEqual(reconciler.seen, [], "no reconcile before the caches sync");

    informer.markSynced();
    await settle();
    assert.deepEqual(reconciler.seen, ["a"]);
    assert.equal(await readyz(manager), 200);

    reconciler.releaseAll();
    await manager.stop(1000);
    assert.equal(informer.startedWith?.aborted, true, "informers stopped");
    await assert.rejects(fetch(`http://127.0.0.1:${manager.ports().probes}/healthz`));
  });

  it("with leader election, reconciles only while leading and aborts everything on lost leadership", async () => {
    const { informer, reconciler, controller } = setup("manager-leader-test");
    const elector = new FakeElector();
    let lost = 0;
    const manager = new Manager({
      metricsBindAddress: "0",
      healthProbeBindAddress: LOCAL,
      leaderElector: elector,
      leaderElectionId: "lease-leader-test",
      onLeadershipLost: () => lost++,
    });
    manager.addInformer(informer);
    manager.addController(controller);
    await manager.start();
    informer.markSynced();
    informer.add({ metadata: { namespace: "ns", name: "a" } });
    await settle();
    assert.deepEqual(reconciler.seen, [], "a standby does not reconcile");
    assert.equal(await readyz(manager), 200, "a synced standby is ready");

    elector.lead();
    await settle();
    assert.deepEqual(reconciler.seen, ["a"]);
    assert.equal(await leaderGauge("lease-leader-test"), 1);

    elector.lose();
    assert.equal(reconciler.signals[0]?.aborted, true, "the in-flight reconcile is aborted at once");
    assert.equal(lost, 1);
    assert.equal(await leaderGauge("lease-leader-test"), 0);
    informer.add({ metadata: { namespace: "ns", name: "b" } });
    await settle();
    assert.deepEqual(reconciler.seen, ["a"], "no more reconciles after losing leadership");
    await manager.stop(1000);
  });

  it("stop() finishes in-flight reconciles, then releases the lease without treating it as a loss", async () => {
    const { informer, reconciler, controller } = setup("manager-stop-test");
    const elector = new FakeElector();
    let lost = 0;
    const manager = new Manager({
      metricsBindAddress: "0",
      healthProbeBindAddress: "0",
      leaderElector: elector,
      leaderElectionId: "lease-stop-test",
      onLeadershipLost: () => lost++,
    });
    manager.addInformer(informer);
    manager.addController(controller);
    await manager.start();
    elector.lead();
    informer.markSynced();
    informer.add({ metadata: { namespace: "ns", name: "a" } });
    await settle();
    assert.deepEqual(reconciler.seen, ["a"]);

    let stopped = false;
    const stopping = manager.stop(30_000).then(() => {
      stopped = true;
    });
    await settle();
    assert.equal(stopped, false, "waits for the in-flight reconcile");
    assert.equal(elector.released, false, "the lease is held until reconciles end");
    reconciler.releaseAll();
    await stopping;
    assert.equal(reconciler.signals[0]?.aborted, true, "signals end with the controller");
    assert.equal(elector.released, true);
    assert.equal(lost, 0);
    assert.equal(await leaderGauge("lease-stop-test"), 0);
  });

  it("starts an informer added after start() at once, and its controller only once it has synced", async () => {
    const first = setup("manager-late-first");
    const manager = new Manager({ metricsBindAddress: "0", healthProbeBindAddress: LOCAL });
    manager.addInformer(first.informer);
    manager.addController(first.controller);
    await manager.start();
    first.informer.markSynced();
    await settle();

    const late = setup("manager-late-added");
    manager.addInformer(late.informer);
    manager.addController(late.controller);
    assert.ok(late.informer.startedWith, "the late informer started at once");
    late.informer.add({ metadata: { namespace: "ns", name: "x" } });
    await settle();
    assert.deepEqual(late.reconciler.seen, [], "no reconcile before the late cache syncs");
    assert.equal(await readyz(manager), 500, "not ready while the late cache syncs");

    late.informer.markSynced();
    await settle();
    assert.deepEqual(late.reconciler.seen, ["x"]);
    assert.equal(await readyz(manager), 200);

    late.reconciler.releaseAll();
    await manager.stop(1000);
    assert.equal(late.informer.startedWith?.aborted, true, "the late informer stops with the manager");
  });

  it("with leader election, a controller added late starts only under the lease", async () => {
    const elector = new FakeElector();
    const manager = new Manager({
      metricsBindAddress: "0",
      healthProbeBindAddress: "0",
      leaderElector: elector,
      leaderElectionId: "lease-late-test",
      onLeadershipLost: () => {},
    });
    await manager.start();
    const onStandby = setup("manager-late-standby");
    manager.addInformer(onStandby.informer);
    manager.addController(onStandby.controller);
    onStandby.informer.markSynced();
    onStandby.informer.add({ metadata: { namespace: "ns", name: "a" } });
    await settle();
    assert.deepEqual(onStandby.reconciler.seen, [], "a standby does not reconcile a late controller");

    elector.lead();
    await settle();
    assert.deepEqual(onStandby.reconciler.seen, ["a"]);

    const whileLeading = setup("manager-late-leading");
    manager.addInformer(whileLeading.informer);
    manager.addController(whileLeading.controller);
    whileLeading.informer.add({ metadata: { namespace: "ns", name: "b" } });
    await settle();
    assert.deepEqual(whileLeading.reconciler.seen, [], "waits for its cache even while leading");
    whileLeading.informer.markSynced();
    await settle();
    assert.deepEqual(whileLeading.reconciler.seen, ["b"]);

    onStandby.reconciler.releaseAll();
    whileLeading.reconciler.releaseAll();
    await manager.stop(1000);
  });
});
