// Controller setup: a worker count below 1 is a setup error, before anything runs; the queue hands
// out the oldest set first.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { creationOrder, setupCocoonSetController } from "../../../src/cocoonset/setup.ts";
import type { WatchClient } from "../../../src/controller/client.ts";
import { Manager } from "../../../src/controller/manager.ts";
import { createOperatorInformers } from "../../../src/informers/informers.ts";
import { harness } from "../../support/cocoonset.ts";

/** Never called: the informers are built but not started. */
const unusedWatchClient: WatchClient = {
  list: () => Promise.reject(new Error("not started")),
  watch: () => {
    throw new Error("not started");
  },
};

describe("setupCocoonSetController", () => {
  for (const concurrency of [0, -1]) {
    it(`rejects concurrency ${concurrency}`, () => {
      const h = harness();
      assert.throws(
        () =>
          setupCocoonSetController(new Manager(), {
            client: h.client,
            informers: createOperatorInformers(unusedWatchClient),
            registry: h.registry,
            events: h.events,
            concurrency,
          }),
        /maxConcurrentReconciles must be an integer >= 1/,
      );
    });
  }

  it("names the controller cocoonset", () => {
    const h = harness();
    const controller = setupCocoonSetController(new Manager(), {
      client: h.client,
      informers: createOperatorInformers(unusedWatchClient),
      registry: h.registry,
      events: h.events,
    });
    assert.equal(controller.name, "cocoonset");
  });

  it("ranks sets by creation time, then namespace and name; a set the cache does not hold ranks after all", () => {
    const set = (namespace: string, name: string, creationTimestamp: string): CocoonSet =>
      ({ metadata: { namespace, name, creationTimestamp } }) as CocoonSet;
    const ranks = [
      creationOrder(set("b", "z", "2026-12-01T10:00:01Z")),
      creationOrder(set("a", "a", "2026-12-01T10:00:02Z")),
      creationOrder(set("b", "a", "2026-12-01T10:00:01Z")),
      creationOrder(set("a", "y", "2026-12-01T10:00:01Z")),
    ];
    assert.deepEqual(
      [...ranks].sort(),
      [ranks[3], ranks[2], ranks[0], ranks[1]],
      "10:00:01 a/y, b/a, b/z, then 10:00:02 a/a",
    );
    assert.equal(creationOrder(undefined), undefined);
  });

  it("hands the passes of older sets to the workers first, whatever order their events came in", async () => {
    const h = harness();
    const informers = createOperatorInformers(unusedWatchClient);
    const created: Record<string, string> = {
      young: "2026-12-01T10:00:09Z",
      middle: "2026-12-01T10:00:05Z",
      old: "2026-12-01T10:00:01Z",
    };
    informers.cocoonSets.get = (namespace, name) =>
      created[name]
        ? ({ metadata: { namespace, name, creationTimestamp: created[name] } } as CocoonSet)
        : undefined;
    const controller = setupCocoonSetController(new Manager(), {
      client: h.client,
      informers,
      registry: h.registry,
      events: h.events,
    });
    for (const name of ["gone", "young", "old", "middle"]) controller.queue.add(`ns/${name}`);
    const order: (string | undefined)[] = [];
    while (controller.queue.len() > 0) order.push(await controller.queue.get());
    assert.deepEqual(order, ["ns/old", "ns/middle", "ns/young", "ns/gone"]);
    controller.queue.shutDown();
  });
});
