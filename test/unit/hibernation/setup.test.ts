// setupHibernationController: the worker-count guard, the index guard, and the event wiring
// (CR events by key, pod events to every CR targeting the pod, the pod predicate).

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CocoonHibernation } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import type { EventHandler, Informer } from "../../../src/controller/cache.ts";
import type { ManagedInformer } from "../../../src/controller/manager.ts";
import { Manager } from "../../../src/controller/manager.ts";
import { type IndexFunc, Store } from "../../../src/controller/store.ts";
import { NamedPods } from "../../../src/hibernation/podwatch.ts";
import {
  type HibernationControllerOptions,
  setupHibernationController,
} from "../../../src/hibernation/setup.ts";
import { hibernationIndexers } from "../../../src/informers/informers.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { RecordingEvents } from "../../support/events.ts";
import { drain } from "../../support/wiring.ts";
import { PodApi } from "./podapi.ts";
import { hibernationFixture, podFixture, settle } from "./support.ts";

/** An informer over an in-memory store; the test adds, updates and deletes objects by hand. */
class MemoryInformer<T extends { metadata: { name?: string; namespace?: string } }> implements Informer<T> {
  private readonly store: Store<T>;
  private readonly handlers: EventHandler<T>[] = [];

  constructor(indexers?: Record<string, IndexFunc<T>>) {
    this.store = new Store<T>(indexers);
  }

  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
  }
  hasSynced(): boolean {
    return true;
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
  start(): void {}
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

/** A manager that hands the test the informers setup adds, so it can start the named-pod reads. */
class RecordingManager extends Manager {
  readonly added: ManagedInformer[] = [];
  override addInformer(informer: ManagedInformer): void {
    this.added.push(informer);
    super.addInformer(informer);
  }
}

function options(overrides: Partial<HibernationControllerOptions> = {}) {
  const hibernations = new MemoryInformer<CocoonHibernation>(hibernationIndexers);
  const api = new PodApi();
  const manager = new RecordingManager();
  const run = new AbortController();
  return {
    hibernations,
    api,
    manager,
    /** Starts the named-pod reads setup registered and waits for their first reads. */
    async startPods(): Promise<void> {
      const pods = manager.added.find((informer) => informer instanceof NamedPods);
      assert.ok(pods, "setup registers the named-pod reads with the manager");
      pods.start(run.signal);
      await pods.waitForSync();
      await settle();
    },
    stop: () => run.abort(),
    options: {
      client: api,
      informers: { hibernations },
      registry: new FakeSnapshotRegistry(),
      events: new RecordingEvents(),
      clock: new FakeClock(),
      concurrency: 4,
      ...overrides,
    },
  };
}

describe("setupHibernationController", () => {
  test("concurrency 0 or -1 is a setup error", () => {
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
    const { hibernations, api, manager, startPods, stop, options: opts } = options();
    const controller = setupHibernationController(manager, opts);
    hibernations.add(hibernationFixture({ name: "a", podRef: "demo-0" }));
    hibernations.add(hibernationFixture({ name: "b", podRef: "demo-0" }));
    hibernations.add(hibernationFixture({ name: "c", podRef: "demo-1" }));
    hibernations.add({
      ...hibernationFixture({ name: "d", podRef: "demo-0" }),
      metadata: { name: "d", namespace: "other" },
    });
    await startPods();
    await drain(controller);

    const pod = api.put(podFixture({ name: "demo-0" }));
    await settle();
    assert.deepEqual(await drain(controller), ["ns/a", "ns/b"]);

    api.emit("DELETED", { ...pod, metadata: { ...pod.metadata, resourceVersion: String(++api.version) } });
    await settle();
    assert.deepEqual(await drain(controller), ["ns/a", "ns/b"]);
    stop();
  });

  test("pod updates pass only when annotations change", async () => {
    const { hibernations, api, manager, startPods, stop, options: opts } = options();
    const controller = setupHibernationController(manager, opts);
    hibernations.add(hibernationFixture({ name: "a" }));
    const pod = podFixture();
    api.put(pod);
    await startPods();
    await drain(controller);

    api.put({ ...pod, status: { phase: "Running" } });
    await settle();
    assert.deepEqual(await drain(controller), [], "status-only churn is dropped");

    api.put({
      ...pod,
      metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, x: "y" } },
    });
    await settle();
    assert.deepEqual(await drain(controller), ["ns/a"]);
    stop();
  });
});
