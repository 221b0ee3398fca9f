// The startup probe for an optional kind's API: served, not served (404), not permitted (403), and
// an API server that is not answering yet (retried, not taken as "absent"); and the slow re-probe
// while the kind is absent.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { ApiError, NotFoundError } from "../../../src/controller/errors.ts";
import { COCOONCHECKPOINTS, COCOONCLAIMS, COCOONPOOLS } from "../../../src/controller/resources.ts";
import { KIND_REPROBE_MS, kindsServed, whenKindsServed } from "../../../src/controller/served.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";

const log = silentLogger();

describe("kindsServed", () => {
  it("is true when the list answers, false on 404 or 403", async () => {
    const clock = new FakeClock();
    assert.equal(await kindsServed(new FakeClient(), [COCOONCHECKPOINTS], "ns", { clock, log }), true);
    for (const error of [
      new NotFoundError(404, "NotFound", "404 page not found"),
      new ApiError(403, "Forbidden", "cannot list cocooncheckpoints"),
    ]) {
      const client = new FakeClient();
      client.failNext("list", "cocooncheckpoints", error);
      assert.equal(await kindsServed(client, [COCOONCHECKPOINTS], "ns", { clock, log }), false);
      assert.equal(client.calls.length, 1);
    }
  });

  it("is false when any of the kinds is not served, probing in order and stopping at the first absent", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    client.failNext("list", "cocoonpools", new NotFoundError(404, "NotFound", "404 page not found"));
    assert.equal(
      await kindsServed(client, [COCOONCLAIMS, COCOONPOOLS, COCOONCHECKPOINTS], "ns", { clock, log }),
      false,
    );
    assert.deepEqual(
      client.calls.map((c) => c.resource),
      ["cocoonclaims", "cocoonpools"],
    );
  });

  it("retries other failures with backoff until the API server answers", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    client.failNext("list", "cocooncheckpoints", new ApiError(503, "ServiceUnavailable", "starting"));
    client.failNext("list", "cocooncheckpoints", new ApiError(0, "", "connection refused"));
    const served = kindsServed(client, [COCOONCHECKPOINTS], "ns", { clock, log });
    for (const ms of [500, 1000]) {
      await new Promise((r) => setImmediate(r));
      clock.advance(ms);
    }
    assert.equal(await served, true);
    assert.equal(client.calls.length, 3);
  });
});

describe("whenKindsServed", () => {
  const notServed = () => new NotFoundError(404, "NotFound", "404 page not found");
  const notPermitted = () => new ApiError(403, "Forbidden", "cannot list cocooncheckpoints");
  const settle = () => new Promise((r) => setImmediate(r));
  const probes = (client: FakeClient) => client.calls.filter((c) => c.verb === "list").length;

  it("probes once per interval, never in between, until the kind is served", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    client.failNext("list", "cocooncheckpoints", notServed());
    client.failNext("list", "cocooncheckpoints", notPermitted());
    let served = false;
    const waiting = whenKindsServed(client, [COCOONCHECKPOINTS], "ns", {
      clock,
      log,
      signal: new AbortController().signal,
      intervalMs: KIND_REPROBE_MS,
    }).then(() => {
      served = true;
    });
    const seen: number[] = [];
    for (const ms of [KIND_REPROBE_MS - 1, 1, KIND_REPROBE_MS - 1, 1, KIND_REPROBE_MS]) {
      clock.advance(ms);
      await settle();
      seen.push(probes(client));
    }
    // The caller probed just before: the first look comes one interval later; 404, then 403, then served.
    assert.deepEqual(seen, [0, 1, 1, 2, 3]);
    await waiting;
    assert.equal(served, true);
    assert.ok(client.calls.every((c) => c.verb === "list" && c.resource === "cocooncheckpoints"));
  });

  it("stops probing when the signal aborts", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    client.failNext("list", "cocooncheckpoints", notServed());
    const abort = new AbortController();
    const waiting = whenKindsServed(client, [COCOONCHECKPOINTS], "ns", {
      clock,
      log,
      signal: abort.signal,
      intervalMs: 1_000,
    });
    clock.advance(1_000);
    await settle();
    assert.equal(probes(client), 1);
    abort.abort(new Error("operator stopping"));
    await assert.rejects(waiting, /operator stopping/);
    clock.advance(10_000);
    await settle();
    assert.equal(probes(client), 1, "no probe after the abort");
  });
});
