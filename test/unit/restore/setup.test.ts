// The CocoonRestore controller's wiring: its restores indexed by the set they name; a change of a set
// wakes every restore naming it and the restore its hold names, even one deleted since (that pass lets
// the hold go); the manager runs its informers and its controller, with four workers by default.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonRestore } from "../../../src/apis/v1alpha1/types.ts";
import { ANN_RESTORE_HOLD } from "../../../src/checkpoint/keys.ts";
import { FakeClock } from "../../../src/clock.ts";
import type {
  ListOptions,
  ListResult,
  WatchClient,
  WatchEvent,
  WatchOptions,
} from "../../../src/controller/client.ts";
import type { Controller } from "../../../src/controller/controller.ts";
import { Manager } from "../../../src/controller/manager.ts";
import { maxConcurrentReconciles } from "../../../src/controller/metrics.ts";
import { COCOONRESTORES, COCOONSETS, type ResourceType } from "../../../src/controller/resources.ts";
import { encodeRestoreHold } from "../../../src/holds.ts";
import { createOperatorInformers, type OperatorInformers } from "../../../src/informers/informers.ts";
import { RestoreCatalog } from "../../../src/restore/catalog.ts";
import { REASON_CHECKPOINT_NOT_FOUND } from "../../../src/restore/keys.ts";
import { RESTORE_CONTROLLER, setupRestoreController } from "../../../src/restore/setup.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, NS, SET } from "../../support/cocoonset.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";
import { FakeInformer } from "../controller/controller-fakeinformer.ts";
import { restoreOf } from "./fixture.ts";

const LOCAL = "127.0.0.1:0";

/** Lists from the FakeClient; a watch stays open, with no event, until the informer stops. */
function listOnly(client: FakeClient): WatchClient {
  return {
    list: <T>(
      rt: ResourceType,
      namespace: string | undefined,
      opts?: ListOptions<T>,
    ): Promise<ListResult<T>> => client.list<T>(rt, namespace, opts),
    watch: <T>(_rt: ResourceType, _ns: string | undefined, opts: WatchOptions) =>
      (async function* (): AsyncIterable<WatchEvent<T>> {
        await new Promise((resolve) => opts.signal?.addEventListener("abort", resolve, { once: true }));
      })(),
  };
}

/** The set "demo" carrying a hold of the restore `restore` (uid `uid-<restore>`). */
function heldBy(restore: string): CocoonSet {
  const cs = cocoonSet({}, { uid: "set-uid" });
  cs.metadata.annotations = {
    [ANN_RESTORE_HOLD]: encodeRestoreHold({
      restore,
      uid: `uid-${restore}`,
      checkpoint: "ck",
      suspend: false,
    }),
  };
  return cs;
}

function holdOf(client: FakeClient): string | undefined {
  return client.peek<CocoonSet>(COCOONSETS, NS, SET)?.metadata.annotations?.[ANN_RESTORE_HOLD];
}

function setup(
  manager: Manager,
  client: FakeClient,
  catalog: RestoreCatalog,
  informers: OperatorInformers,
  concurrency?: number,
): Controller {
  return setupRestoreController(manager, {
    client,
    catalog,
    checkpoints: { getCheckpoint: () => undefined },
    informers,
    registry: new FakeCheckpointRegistry([]),
    events: new RecordingEvents(),
    clock: new FakeClock(),
    log: silentLogger(),
    ...(concurrency === undefined ? {} : { concurrency }),
  });
}

/** Runs the operator's manager over `client` until `done` holds (or a bound of turns), then stops it. */
async function runUntil(client: FakeClient, done: () => boolean, concurrency?: number): Promise<Controller> {
  const transport = listOnly(client);
  const manager = new Manager({ metricsBindAddress: LOCAL, healthProbeBindAddress: LOCAL });
  const controller = setup(
    manager,
    client,
    new RestoreCatalog(transport),
    createOperatorInformers(transport),
    concurrency,
  );
  await manager.start();
  for (let turn = 0; turn < 200 && !done(); turn++) await new Promise((resolve) => setImmediate(resolve));
  await manager.stop(1000);
  return controller;
}

describe("RestoreCatalog", () => {
  it("finds a namespace's restores by name, and by the set they name", async () => {
    const client = new FakeClient();
    client.seed(COCOONRESTORES, restoreOf("r1"));
    client.seed(COCOONRESTORES, restoreOf("r2", "ck", "other"));
    const elsewhere = restoreOf("r3");
    client.seed(COCOONRESTORES, { ...elsewhere, metadata: { ...elsewhere.metadata, namespace: "ns2" } });
    const catalog = new RestoreCatalog(listOnly(client));
    const stop = new AbortController();
    catalog.informer.start(stop.signal);
    await catalog.informer.waitForSync();
    assert.deepEqual(
      catalog.restoresOfSet(NS, SET).map((r) => r.metadata.name),
      ["r1"],
    );
    assert.deepEqual(
      catalog.restoresOfSet("ns2", SET).map((r) => r.metadata.name),
      ["r3"],
    );
    assert.deepEqual(catalog.restoresOfSet(NS, "nope"), []);
    assert.equal(catalog.getRestore(NS, "r2")?.spec.cocoonSetRef.name, "other");
    assert.deepEqual(
      catalog
        .listRestores(NS)
        .map((r: CocoonRestore) => r.metadata.name)
        .sort(),
      ["r1", "r2"],
    );
    stop.abort();
  });
});

describe("setupRestoreController: what a set's change wakes", () => {
  /** The controller with its restores listed and its sets fed by hand; the queue is read, not worked. */
  async function wired(client: FakeClient) {
    const catalog = new RestoreCatalog(listOnly(client));
    const sets = new FakeInformer<CocoonSet>();
    const informers = { cocoonSets: sets } as unknown as OperatorInformers;
    const controller = setup(new Manager(), client, catalog, informers);
    const stop = new AbortController();
    catalog.informer.start(stop.signal);
    await catalog.informer.waitForSync();
    await queued(controller);
    stop.abort();
    return { sets, controller };
  }

  /** The keys the controller's queue holds, taken out of it. */
  async function queued(controller: Controller): Promise<string[]> {
    const keys: string[] = [];
    while (controller.queue.len() > 0) {
      const key = await controller.queue.get();
      if (key !== undefined) {
        keys.push(key);
        controller.queue.done(key);
      }
    }
    return keys.sort();
  }

  it("wakes the restores naming the set and the one its hold names, though deleted", async () => {
    const client = new FakeClient();
    client.seed(COCOONRESTORES, restoreOf("r1"));
    client.seed(COCOONRESTORES, restoreOf("r2", "ck", "other"));
    const { sets, controller } = await wired(client);
    sets.add(heldBy("gone"));
    assert.deepEqual(await queued(controller), [`${NS}/gone`, `${NS}/r1`]);
  });

  it("a set with no hold, or an unreadable one, wakes only the restores naming it", async () => {
    const client = new FakeClient();
    client.seed(COCOONRESTORES, restoreOf("r2", "ck", "other"));
    const { sets, controller } = await wired(client);
    sets.add(cocoonSet());
    assert.deepEqual(await queued(controller), []);
    const unreadable = cocoonSet();
    unreadable.metadata.annotations = { [ANN_RESTORE_HOLD]: "{" };
    sets.add(unreadable);
    assert.deepEqual(await queued(controller), []);
  });
});

describe("setupRestoreController: run by the manager", () => {
  it("a finished restore's pass lets go of the hold it left on its set", async () => {
    const client = new FakeClient();
    client.seed(COCOONSETS, heldBy("r1"));
    client.seed(COCOONRESTORES, { ...restoreOf("r1"), status: { phase: "Restored" } });
    await runUntil(client, () => holdOf(client) === undefined);
    assert.equal(holdOf(client), undefined);
  });

  it("a set's hold of a restore gone from the API server is let go", async () => {
    const client = new FakeClient();
    client.seed(COCOONSETS, heldBy("gone"));
    await runUntil(client, () => holdOf(client) === undefined);
    assert.equal(holdOf(client), undefined);
  });

  it("a new restore is judged: one of a checkpoint that does not exist is refused", async () => {
    const client = new FakeClient();
    client.seed(COCOONSETS, cocoonSet());
    client.seed(COCOONRESTORES, restoreOf("r1"));
    const phase = () => client.peek<CocoonRestore>(COCOONRESTORES, NS, "r1")?.status;
    await runUntil(client, () => phase()?.phase === "Failed");
    assert.equal(phase()?.phase, "Failed");
    assert.equal(phase()?.reason, REASON_CHECKPOINT_NOT_FOUND);
  });

  it("is named cocoonrestore and runs four restores at once unless configured", async () => {
    for (const [concurrency, workers] of [
      [undefined, 4],
      [2, 2],
    ] as const) {
      const controller = await runUntil(new FakeClient(), () => false, concurrency);
      assert.equal(controller.name, RESTORE_CONTROLLER);
      assert.equal(RESTORE_CONTROLLER, "cocoonrestore");
      const gauge = (await maxConcurrentReconciles.get()).values.find(
        (v) => v.labels.controller === "cocoonrestore",
      );
      assert.equal(gauge?.value, workers);
    }
  });
});
