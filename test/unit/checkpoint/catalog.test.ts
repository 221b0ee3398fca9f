// The checkpoint catalog answers "unavailable" until the probe found the kind served.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CheckpointCatalog } from "../../../src/checkpoint/catalog.ts";
import { FakeClient } from "../../support/fakeclient.ts";

describe("CheckpointCatalog", () => {
  it("answers unavailable until the probe marked the kind served", () => {
    // The informer is never started here: a client that cannot watch is enough.
    const client = new FakeClient();
    const catalog = new CheckpointCatalog({
      list: (rt, namespace, opts) => client.list(rt, namespace, opts),
      watch: () => assert.fail("no watch"),
    });
    assert.equal(catalog.getCheckpoint("ns", "ck"), "unavailable");
    assert.deepEqual(catalog.checkpointsOfSet("ns", "demo"), []);
    catalog.markAvailable();
    assert.equal(catalog.getCheckpoint("ns", "ck"), undefined);
  });
});
