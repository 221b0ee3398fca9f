// The startup probe for the CocoonCheckpoint API: served, not served (404), not permitted (403), and
// an API server that is not answering yet (retried, not taken as "absent").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { CheckpointCatalog, checkpointKindServed } from "../../../src/checkpoint/catalog.ts";
import { FakeClock } from "../../../src/clock.ts";
import { ApiError, NotFoundError } from "../../../src/controller/errors.ts";
import { FakeClient } from "../../support/fakeclient.ts";

const log = pino({ level: "silent" });

describe("checkpointKindServed", () => {
  it("is true when the list answers, false on 404 or 403", async () => {
    const clock = new FakeClock();
    assert.equal(await checkpointKindServed(new FakeClient(), "ns", { clock, log }), true);
    for (const error of [
      new NotFoundError(404, "NotFound", "404 page not found"),
      new ApiError(403, "Forbidden", "cannot list cocooncheckpoints"),
    ]) {
      const client = new FakeClient();
      client.failNext("list", "cocooncheckpoints", error);
      assert.equal(await checkpointKindServed(client, "ns", { clock, log }), false);
      assert.equal(client.calls.length, 1);
    }
  });

  it("retries other failures with backoff until the API server answers", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    client.failNext("list", "cocooncheckpoints", new ApiError(503, "ServiceUnavailable", "starting"));
    client.failNext("list", "cocooncheckpoints", new ApiError(0, "", "connection refused"));
    const served = checkpointKindServed(client, "ns", { clock, log });
    for (const ms of [500, 1000]) {
      await new Promise((r) => setImmediate(r));
      clock.advance(ms);
    }
    assert.equal(await served, true);
    assert.equal(client.calls.length, 3);
  });
});

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
