// The checkpoint catalog answers "unavailable" until the probe found the kind served, and then from
// its cache: a checkpoint by name, and the checkpoints naming a set.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import type { CocoonCheckpoint } from "../../../src/apis/v1alpha1/types.ts";
import { CheckpointCatalog } from "../../../src/checkpoint/catalog.ts";
import { COCOONCHECKPOINTS } from "../../../src/controller/resources.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { ListWatch } from "../../support/wiring.ts";

const running: ListWatch[] = [];
afterEach(() => {
  for (const lw of running.splice(0)) lw.close();
});

function checkpoint(namespace: string, name: string, setName: string): CocoonCheckpoint {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name, namespace },
    spec: { cocoonSetRef: { name: setName } },
  };
}

describe("CheckpointCatalog", () => {
  it("answers unavailable until the probe marked the kind served", () => {
    // The informer is never started here: a client that cannot watch is enough.
    const client = new FakeClient();
    const catalog = new CheckpointCatalog({
      list: (rt, namespace, opts) => client.list(rt, namespace, opts),
      watch: () => assert.fail("no watch"),
    });
    assert.equal(catalog.isAvailable, false);
    assert.equal(catalog.getCheckpoint("ns", "ck"), "unavailable");
    assert.deepEqual(catalog.checkpointsOfSet("ns", "demo"), []);
    catalog.markAvailable();
    assert.equal(catalog.isAvailable, true);
    assert.equal(catalog.getCheckpoint("ns", "ck"), undefined);
  });

  it("once served, finds a checkpoint by name and the checkpoints naming a set, in the watch namespace alone", async () => {
    const client = new FakeClient();
    client.seed(COCOONCHECKPOINTS, checkpoint("ns", "a", "demo"));
    client.seed(COCOONCHECKPOINTS, checkpoint("ns", "b", "demo"));
    client.seed(COCOONCHECKPOINTS, checkpoint("ns", "c", "other"));
    client.seed(COCOONCHECKPOINTS, checkpoint("elsewhere", "d", "demo"));
    const lw = new ListWatch(client);
    running.push(lw);
    const catalog = new CheckpointCatalog(lw, { namespace: "ns" });
    catalog.informer.start(lw.signal);
    await catalog.informer.waitForSync();
    assert.deepEqual(catalog.checkpointsOfSet("ns", "demo"), [], "nothing before the probe");
    catalog.markAvailable();
    const found = catalog.getCheckpoint("ns", "a");
    assert.equal(typeof found === "object" ? found.spec.cocoonSetRef.name : found, "demo");
    assert.deepEqual(
      catalog
        .checkpointsOfSet("ns", "demo")
        .map((ck) => ck.metadata.name)
        .sort(),
      ["a", "b"],
    );
    assert.equal(catalog.getCheckpoint("elsewhere", "d"), undefined, "outside the watch namespace");
  });
});
