// Controller setup: a worker count below 1 is a setup error, before anything runs.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setupCocoonSetController } from "../../../src/cocoonset/setup.ts";
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
});
