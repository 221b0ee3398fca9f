// The operator's Warning events a wait reports: for an object the call created, only events about
// that very object (by uid) count, with no read up front; for one that existed, only events new since
// the wait began.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { EVENTS } from "../../../src/controller/resources.ts";
import { WarningWatch } from "../../../src/sdk/events.ts";
import { env, NS } from "./harness.ts";

function seed(e: ReturnType<typeof env>, name: string, uid: string, reason: string, time: string) {
  e.fake.seed(EVENTS, {
    metadata: { name, namespace: NS },
    involvedObject: { kind: "CocoonClaim", name: "c1", uid },
    type: "Warning",
    reason,
    message: `${reason} happened`,
    count: 1,
    lastTimestamp: time,
  });
}

describe("WarningWatch", () => {
  it("of a created object: reads nothing up front, and reports only events about its uid", async () => {
    const e = env();
    seed(e, "old", "uid-of-an-earlier-c1", "BindRefused", "2026-05-14T12:00:01Z");
    e.fake.clearCalls();
    const watch = WarningWatch.ofCreated({ client: e.fake, namespace: NS }, "CocoonClaim", {
      metadata: { name: "c1", uid: "uid-new" },
    });
    assert.deepEqual(e.fake.calls, [], "no read when the watch starts");
    assert.equal(await watch.latest(true), undefined, "an earlier object's warning is not this one's");
    seed(e, "new", "uid-new", "NoReadyMember", "2026-05-14T12:00:02Z");
    assert.deepEqual(await watch.latest(), { reason: "NoReadyMember", message: "NoReadyMember happened" });
  });

  it("of an existing object: only warnings new since the start", async () => {
    const e = env();
    seed(e, "old", "uid-1", "BindRefused", "2026-05-14T12:00:01Z");
    const watch = await WarningWatch.start({ client: e.fake, namespace: NS }, "CocoonClaim", "c1");
    assert.equal(await watch.latest(), undefined);
    assert.equal((await watch.latest(true))?.reason, "BindRefused", "the earlier one, when asked for");
    seed(e, "new", "uid-1", "NoReadyMember", "2026-05-14T12:00:02Z");
    assert.equal((await watch.latest())?.reason, "NoReadyMember");
  });
});
