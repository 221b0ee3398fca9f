// setupHibernationController: the worker-count guard (H29), the index guard, and the event wiring
// (CR events by key, pod events to every CR targeting the pod, the pod predicate).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import type { EventHandler, Informer } from "../../../src/controller/cache.ts";
import type { Controller } from "../../../src/controller/controller.ts";
import { Manager } from "../../../src/controller/manager.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { type IndexFunc, Store } from "../../../src/controller/store.ts";
import { NamedPodWatches } from "../../../src/hibernation/podwatch.ts";
import {
  type HibernationControllerOptions,
  setupHibernationController,
} from "../../../src/hibernation/setup.ts";
import { hibernationIndexers } from "../../../src/hibernation/view.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { hibernationFixture, NS, podFixture, RecordingEvents } from "./support.ts";

/** An informer over an in-memory store; the test adds, updates and deletes objects by hand. */
class MemoryInformer<T extends { metadata: { name?: string; namespace?: string } }> implements Informer<T> {
  private readonly store: Store<T>;
  private readonly handlers: EventHandler<T>[] = [];
  /** The signal start() was given; undefined until started. */
  startedWith: AbortSignal | undefined;
  synced = true;

  constructor(indexers?: Record<string, IndexFunc<T>>) {
    this.store = new Store<T>(indexers);
  }

  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
  }
  hasSynced(): boolean {
    return this.synced;
  }
  async waitForSync(): Promise<void> {}
  get(namespace: string, name: string): T | undefined {
    return this.store.get(namespace, name);
  }
  list(namespace?: string): T[] {
    return this.store.list(namespace);
  }
  byIndex(index: string, value: string): T[] {
    return this.store.byIndex(index, value);
  }
  start(signal: AbortSignal): void {
    this.startedWith = signal;
  }
  lastSyncResourceVersion(): string {
    return "1";
  }

  add(obj: T): void {
    this.store.upsert(obj);
    for (const h of this.handlers) h.onAdd?.(obj);
  }
  update(obj: T): void {
    const old = this.store.upsert(obj);
    for (const h of this.handlers) if (old) h.onUpdate?.(old, obj);
  }
  delete(obj: T): void {
    this.store.remove(`${obj.metadata.namespace}/${obj.metadata.name}`);
    for (const h of this.handlers) h.onDelete?.(obj);
  }
}

function options(overrides: Partial<HibernationControllerOptions> = {}) {
  const hibernations = new MemoryInformer<CocoonHibernation>(hibernationIndexers);
  /** Every pod watch opened, by `namespace/name`, in opening order (a reopened one replaces). */
  const podWatches = new Map<string, MemoryInformer<Pod>>();
  const opened: string[] = [];
  const openPodWatch = (namespace: string, name: string) => {
    const watch = new MemoryInformer<Pod>();
    podWatches.set(`${namespace}/${name}`, watch);
    opened.push(`${namespace}/${name}`);
    return watch;
  };
  /** The watch of the pod's name; the test feeds it as the API server's watch would. */
  const pods = (pod: Pod): MemoryInformer<Pod> => {
    const watch = podWatches.get(`${pod.metadata.namespace}/${pod.metadata.name}`);
    if (!watch) throw new Error(`no watch for ${pod.metadata.name}`);
    return watch;
  };
  const client = new FakeClient();
  return {
    hibernations,
    pods,
    podWatches,
    opened,
    client,
    options: {
      client,
      informers: { hibernations },
      openPodWatch,
      registry: new FakeSnapshotRegistry(),
      events: new RecordingEvents(),
      clock: new FakeClock(),
      concurrency: 4,
      ...overrides,
    },
  };
}

/** Every key waiting in the controller's queue, drained. */
async function drain(controller: Controller): Promise<string[]> {
  const keys: string[] = [];
  while (controller.queue.len() > 0) {
    const key = await controller.queue.get();
    if (key === undefined) break;
    keys.push(key);
    controller.queue.done(key);
  }
  return keys.sort();
}

describe("setupHibernationController", () => {
  test("H29: concurrency 0 or -1 is a setup error", () => {
    for (const concurrency of [0, -1]) {
      assert.throws(
        () => setupHibernationController(new Manager(), options({ concurrency }).options),
        new RegExp(`hibernation concurrency must be at least 1, got ${concurrency}`),
      );
    }
  });

  test("a CR informer without the podRef index is a setup error", () => {
    const { options: opts } = options();
    const bare = new MemoryInformer<CocoonHibernation>();
    assert.throws(
      () =>
        setupHibernationController(new Manager(), {
          ...opts,
          informers: { ...opts.informers, hibernations: bare },
        }),
      /needs the index "spec.podRef.name"/,
    );
  });

  test("registers a controller named cocoonhibernation that reconciles CR events by key", async () => {
    const { hibernations, options: opts } = options();
    const controller = setupHibernationController(new Manager(), opts);
    assert.equal(controller.name, "cocoonhibernation");

    const ch = hibernationFixture({ name: "demo-0" });
    hibernations.add(ch);
    hibernations.update({ ...ch, status: { phase: "Pending" } });
    assert.deepEqual(await drain(controller), ["ns/demo-0"]);
  });

  test("a pod event maps to every CR in its namespace whose podRef names it", async () => {
    const { hibernations, pods, options: opts } = options();
    const controller = setupHibernationController(new Manager(), opts);
    hibernations.add(hibernationFixture({ name: "a", podRef: "demo-0" }));
    hibernations.add(hibernationFixture({ name: "b", podRef: "demo-0" }));
    hibernations.add(hibernationFixture({ name: "c", podRef: "demo-1" }));
    hibernations.add({
      ...hibernationFixture({ name: "d", podRef: "demo-0" }),
      metadata: { name: "d", namespace: "other" },
    });
    await drain(controller);

    pods(podFixture({ name: "demo-0" })).add(podFixture({ name: "demo-0" }));
    assert.deepEqual(await drain(controller), ["ns/a", "ns/b"]);

    pods(podFixture({ name: "demo-0" })).delete(podFixture({ name: "demo-0" }));
    assert.deepEqual(await drain(controller), ["ns/a", "ns/b"]);
  });

  test("pod updates pass only when annotations change", async () => {
    const { hibernations, pods, options: opts } = options();
    const controller = setupHibernationController(new Manager(), opts);
    hibernations.add(hibernationFixture({ name: "a" }));
    const pod = podFixture();
    pods(pod).add(pod);
    await drain(controller);

    pods(pod).update({ ...pod, status: { phase: "Running" } });
    assert.deepEqual(await drain(controller), [], "status-only churn is dropped");

    pods(pod).update({
      ...pod,
      metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, x: "y" } },
    });
    assert.deepEqual(await drain(controller), ["ns/a"]);
  });
});

describe("the pods CRs name (issue 15, item 2)", () => {
  test("one watch per named pod, whatever its labels; none for pods no CR names", async () => {
    const { hibernations, opened, podWatches, options: opts } = options();
    setupHibernationController(new Manager(), opts);
    hibernations.add(hibernationFixture({ name: "a", podRef: "test-ubuntu" }));
    hibernations.add(hibernationFixture({ name: "b", podRef: "test-ubuntu" }));
    hibernations.add(hibernationFixture({ name: "c", podRef: "demo-1" }));

    assert.deepEqual(opened, ["ns/test-ubuntu", "ns/demo-1"], "two CRs on one pod share its watch");
    assert.equal(podWatches.size, 2);
  });

  test("a watch closes when the last CR naming its pod goes, and reopens for a new one", () => {
    const { hibernations, opened, podWatches, client, options: opts } = options();
    const watches = new NamedPodWatches(hibernations, opts.openPodWatch, client);
    const a = hibernationFixture({ name: "a", podRef: "test-ubuntu" });
    const b = hibernationFixture({ name: "b", podRef: "test-ubuntu" });
    hibernations.add(a);
    hibernations.add(b);
    const run = new AbortController();
    watches.start(run.signal);
    const watch = podWatches.get("ns/test-ubuntu");
    assert.ok(watch?.startedWith, "started with the manager");

    hibernations.delete(a);
    assert.equal(watch.startedWith.aborted, false, "b still names the pod");
    hibernations.delete(b);
    assert.equal(watch.startedWith.aborted, true);

    hibernations.add(hibernationFixture({ name: "c", podRef: "test-ubuntu" }));
    assert.deepEqual(opened, ["ns/test-ubuntu", "ns/test-ubuntu"]);
    assert.equal(podWatches.get("ns/test-ubuntu")?.startedWith?.aborted, false, "opened and started");
    run.abort();
  });

  test("reads come from the watch once it has listed, from the API server before", async () => {
    const { hibernations, podWatches, client, options: opts } = options();
    const watches = new NamedPodWatches(hibernations, opts.openPodWatch, client);
    hibernations.add(hibernationFixture({ name: "test-ubuntu", podRef: "test-ubuntu" }));
    const watch = podWatches.get("ns/test-ubuntu");
    assert.ok(watch);
    client.seed(PODS, podFixture({ name: "test-ubuntu" }));

    watch.synced = false;
    assert.equal((await watches.getPod(NS, "test-ubuntu"))?.metadata.name, "test-ubuntu");
    assert.equal(await watches.getPod(NS, "absent"), undefined, "NotFound reads as no pod");
    assert.deepEqual(
      client.calls.map((c) => `${c.verb} ${c.name}`),
      ["get test-ubuntu", "get absent"],
    );

    watch.synced = true;
    client.clearCalls();
    assert.equal(await watches.getPod(NS, "test-ubuntu"), undefined, "the watch has not seen it yet");
    watch.add(podFixture({ name: "test-ubuntu" }));
    assert.equal((await watches.getPod(NS, "test-ubuntu"))?.metadata.name, "test-ubuntu");
    assert.deepEqual(client.calls, []);
  });

  test("events of a closed watch reach no CR", async () => {
    const { hibernations, podWatches, options: opts } = options();
    const controller = setupHibernationController(new Manager(), opts);
    const a = hibernationFixture({ name: "a", podRef: "test-ubuntu" });
    hibernations.add(a);
    const watch = podWatches.get("ns/test-ubuntu");
    assert.ok(watch);
    hibernations.delete(a);
    await drain(controller);

    watch.add(podFixture({ name: "test-ubuntu" }));
    assert.deepEqual(await drain(controller), []);
  });
});
