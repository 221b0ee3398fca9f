import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { Controller, type KubeObject } from "../../../src/controller/controller.ts";
import { reconcileErrors, reconcileTotal } from "../../../src/controller/metrics.ts";
import type { Reconciler, Request, Result } from "../../../src/controller/reconciler.ts";
import { FakeInformer, settle } from "./controller-fakeinformer.ts";

type Obj = KubeObject & { metadata: { generation?: number } };

function obj(namespace: string, name: string, extra: Partial<Obj["metadata"]> = {}): Obj {
  return { metadata: { namespace, name, ...extra } };
}

/** Records requests; each reconcile returns the next scripted outcome (a Result or an Error). */
class ScriptedReconciler implements Reconciler {
  readonly seen: string[] = [];
  private readonly script: (Result | Error)[];

  constructor(...script: (Result | Error)[]) {
    this.script = script;
  }

  async reconcile(req: Request): Promise<Result> {
    this.seen.push(`${req.namespace}/${req.name}`);
    const next = this.script.shift() ?? {};
    if (next instanceof Error) throw next;
    return next;
  }
}

async function counterValue(
  metric: typeof reconcileTotal | typeof reconcileErrors,
  labels: Record<string, string>,
): Promise<number> {
  const data = await metric.get();
  const match = data.values.find((v) =>
    Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val),
  );
  return match?.value ?? 0;
}

describe("Controller", () => {
  it("rejects fewer than one worker", () => {
    assert.throws(
      () => new Controller({ name: "bad", reconciler: new ScriptedReconciler(), maxConcurrentReconciles: 0 }),
    );
  });

  it("for(): reconciles the object's own key on add, update and delete", async () => {
    const informer = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler();
    const controller = new Controller({ name: "for-test", reconciler, clock: new FakeClock() }).for(informer);
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    informer.update(obj("ns", "a"), obj("ns", "a", { generation: 2 }));
    await settle();
    informer.delete(obj("ns", "b"));
    await settle();
    assert.deepEqual(reconciler.seen, ["ns/a", "ns/a", "ns/b"]);
    await controller.stop(1000);
  });

  it("applies the predicate per event type", async () => {
    const informer = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler();
    const controller = new Controller({ name: "predicate-test", reconciler, clock: new FakeClock() }).for(
      informer,
      {
        create: () => false,
        update: (o, n) => o.metadata.generation !== n.metadata.generation,
      },
    );
    controller.start();
    informer.add(obj("ns", "created"));
    informer.update(obj("ns", "same", { generation: 1 }), obj("ns", "same", { generation: 1 }));
    informer.update(obj("ns", "bumped", { generation: 1 }), obj("ns", "bumped", { generation: 2 }));
    informer.delete(obj("ns", "deleted"));
    await settle();
    assert.deepEqual(reconciler.seen, ["ns/bumped", "ns/deleted"]);
    await controller.stop(1000);
  });

  it("owns(): maps a child to the owner named by its controller reference of that kind", async () => {
    const pods = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler();
    const controller = new Controller({ name: "owns-test", reconciler, clock: new FakeClock() }).owns(
      pods,
      "CocoonSet",
    );
    controller.start();
    const ref = (kind: string, name: string, isController: boolean) => ({
      kind,
      name,
      controller: isController,
    });
    pods.add(obj("team", "set-a-0", { ownerReferences: [ref("CocoonSet", "set-a", true)] }));
    pods.add(obj("team", "orphan"));
    pods.add(obj("team", "not-controller", { ownerReferences: [ref("CocoonSet", "set-b", false)] }));
    pods.add(obj("team", "other-kind", { ownerReferences: [ref("ReplicaSet", "rs", true)] }));
    pods.add(
      obj("team", "set-c-0", {
        ownerReferences: [ref("ReplicaSet", "rs", false), ref("CocoonSet", "set-c", true)],
      }),
    );
    await settle();
    assert.deepEqual(reconciler.seen, ["team/set-a", "team/set-c"]);
    await controller.stop(1000);
  });

  it("owns(): an update that moves a child between owners reconciles both", async () => {
    const pods = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler();
    const controller = new Controller({ name: "owns-move-test", reconciler, clock: new FakeClock() }).owns(
      pods,
      "CocoonSet",
    );
    const owned = (owner: string) =>
      obj("ns", "p", { ownerReferences: [{ kind: "CocoonSet", name: owner, controller: true }] });
    pods.update(owned("old"), owned("new"));
    controller.start();
    await settle();
    assert.deepEqual(reconciler.seen.sort(), ["ns/new", "ns/old"]);
    await controller.stop(1000);
  });

  it("watches(): reconciles every key the map function returns", async () => {
    const source = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler();
    const controller = new Controller({ name: "watches-test", reconciler, clock: new FakeClock() }).watches(
      source,
      (o) => [
        { namespace: o.metadata.namespace ?? "", name: `${o.metadata.name}-1` },
        { namespace: o.metadata.namespace ?? "", name: `${o.metadata.name}-2` },
      ],
    );
    controller.start();
    source.add(obj("ns", "x"));
    await settle();
    assert.deepEqual(reconciler.seen.sort(), ["ns/x-1", "ns/x-2"]);
    await controller.stop(1000);
  });

  it("retries a throwing reconcile with backoff, counts the error, and resets the backoff on success", async () => {
    const clock = new FakeClock();
    const informer = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler(new Error("boom"), new Error("boom again"), {});
    const controller = new Controller({ name: "error-test", reconciler, clock }).for(informer);
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    assert.equal(reconciler.seen.length, 1);
    assert.equal(controller.queue.numRequeues("ns/a"), 1);
    clock.advance(4);
    await settle();
    assert.equal(reconciler.seen.length, 1, "first retry waits 5 ms");
    clock.advance(1);
    await settle();
    assert.equal(reconciler.seen.length, 2);
    clock.advance(9);
    await settle();
    assert.equal(reconciler.seen.length, 2, "second retry waits 10 ms");
    clock.advance(1);
    await settle();
    assert.equal(reconciler.seen.length, 3);
    assert.equal(controller.queue.numRequeues("ns/a"), 0, "success forgets the backoff");
    assert.equal(await counterValue(reconcileErrors, { controller: "error-test" }), 2);
    assert.equal(await counterValue(reconcileTotal, { controller: "error-test", result: "error" }), 2);
    assert.equal(await counterValue(reconcileTotal, { controller: "error-test", result: "success" }), 1);
    await controller.stop(1000);
  });

  it("requeueAfterMs re-runs the key after that delay, with no backoff history", async () => {
    const clock = new FakeClock();
    const informer = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler(new Error("first"), { requeueAfterMs: 30_000 }, {});
    const controller = new Controller({ name: "requeue-after-test", reconciler, clock }).for(informer);
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    clock.advance(5);
    await settle();
    assert.equal(reconciler.seen.length, 2);
    assert.equal(controller.queue.numRequeues("ns/a"), 0);
    clock.advance(29_999);
    await settle();
    assert.equal(reconciler.seen.length, 2);
    clock.advance(1);
    await settle();
    assert.equal(reconciler.seen.length, 3);
    assert.equal(
      await counterValue(reconcileTotal, { controller: "requeue-after-test", result: "requeue_after" }),
      1,
    );
    await controller.stop(1000);
  });

  it("requeue: true re-runs the key with rate-limited backoff", async () => {
    const clock = new FakeClock();
    const informer = new FakeInformer<Obj>();
    const reconciler = new ScriptedReconciler({ requeue: true }, {});
    const controller = new Controller({ name: "requeue-test", reconciler, clock }).for(informer);
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    assert.equal(controller.queue.numRequeues("ns/a"), 1);
    clock.advance(5);
    await settle();
    assert.equal(reconciler.seen.length, 2);
    assert.equal(await counterValue(reconcileTotal, { controller: "requeue-test", result: "requeue" }), 1);
    await controller.stop(1000);
  });

  it("never reconciles one key concurrently, and runs it once more when it changed meanwhile", async () => {
    const informer = new FakeInformer<Obj>();
    let running = 0;
    let maxRunningSameKey = 0;
    let calls = 0;
    const releases: (() => void)[] = [];
    const reconciler: Reconciler = {
      reconcile: async () => {
        calls++;
        running++;
        maxRunningSameKey = Math.max(maxRunningSameKey, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return {};
      },
    };
    const controller = new Controller({
      name: "exclusive-test",
      reconciler,
      maxConcurrentReconciles: 4,
      clock: new FakeClock(),
    }).for(informer);
    controller.start();
    for (let i = 0; i < 10; i++) informer.add(obj("ns", "same"));
    await settle();
    assert.equal(calls, 1);
    for (let i = 0; i < 10; i++) informer.add(obj("ns", "same"));
    releases.shift()?.();
    await settle();
    assert.equal(calls, 2, "the events during the first pass coalesce into one more pass");
    releases.shift()?.();
    await settle();
    assert.equal(calls, 2);
    assert.equal(maxRunningSameKey, 1);
    await controller.stop(1000);
  });

  it("runs distinct keys in parallel up to maxConcurrentReconciles", async () => {
    const informer = new FakeInformer<Obj>();
    let running = 0;
    let peak = 0;
    const releases: (() => void)[] = [];
    const reconciler: Reconciler = {
      reconcile: async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        return {};
      },
    };
    const controller = new Controller({
      name: "parallel-test",
      reconciler,
      maxConcurrentReconciles: 3,
      clock: new FakeClock(),
    }).for(informer);
    controller.start();
    for (let i = 0; i < 6; i++) informer.add(obj("ns", `k${i}`));
    await settle();
    assert.equal(peak, 3);
    while (releases.length > 0) {
      releases.shift()?.();
      await settle();
    }
    assert.equal(running, 0);
    await controller.stop(1000);
  });

  it("stop() lets an in-flight reconcile finish within the deadline without aborting it", async () => {
    const clock = new FakeClock();
    const informer = new FakeInformer<Obj>();
    let release: () => void = () => {};
    let abortedDuringRun = false;
    const reconciler: Reconciler = {
      reconcile: async (_req, signal) => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        abortedDuringRun = signal.aborted;
        return {};
      },
    };
    const controller = new Controller({ name: "stop-test", reconciler, clock }).for(informer);
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    let stopped = false;
    const stopping = controller.stop(10_000).then(() => {
      stopped = true;
    });
    informer.add(obj("ns", "b"));
    await settle();
    assert.equal(stopped, false);
    release();
    await stopping;
    assert.equal(abortedDuringRun, false);
  });

  it("stop() aborts the signal of a reconcile still running at the deadline", async () => {
    const clock = new FakeClock();
    const informer = new FakeInformer<Obj>();
    let signalSeen: AbortSignal | undefined;
    const reconciler: Reconciler = {
      reconcile: (_req, signal) => {
        signalSeen = signal;
        return new Promise<Result>(() => {});
      },
    };
    const controller = new Controller({ name: "deadline-test", reconciler, clock }).for(informer);
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    const stopping = controller.stop(5000);
    await settle();
    assert.equal(signalSeen?.aborted, false);
    clock.advance(5000);
    await stopping;
    assert.equal(signalSeen?.aborted, true);
  });

  it("stopNow() aborts in-flight reconciles at once and takes no more keys", async () => {
    const informer = new FakeInformer<Obj>();
    const seen: string[] = [];
    let signalSeen: AbortSignal | undefined;
    const reconciler: Reconciler = {
      reconcile: (req, signal) => {
        seen.push(req.name);
        signalSeen = signal;
        return new Promise<Result>((resolve) => signal.addEventListener("abort", () => resolve({})));
      },
    };
    const controller = new Controller({ name: "stopnow-test", reconciler, clock: new FakeClock() }).for(
      informer,
    );
    controller.start();
    informer.add(obj("ns", "a"));
    await settle();
    controller.stopNow(new Error("leader election lost"));
    assert.equal(signalSeen?.aborted, true);
    informer.add(obj("ns", "b"));
    await settle();
    assert.deepEqual(seen, ["a"]);
  });
});
