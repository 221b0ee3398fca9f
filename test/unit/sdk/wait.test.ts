// The SDK's waits over a watch the test drives: they judge on each event and read nothing between
// events, resume from the last resourceVersion, re-list on 410 Gone, time out with the last progress
// and the operator's Warning, and stop their watches when aborted.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { GoneError } from "../../../src/controller/errors.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { CocoonError, CocoonOperationError, CocoonTimeoutError } from "../../../src/sdk/index.ts";
import { DEFAULT_WAIT_MS, RECONNECT_MS } from "../../../src/sdk/wait.ts";
import {
  COUNTS,
  env,
  NS,
  seedPod,
  seedSet,
  seedWarning,
  suspendedAt,
  until,
  writeSetStatus,
} from "./harness.ts";

async function suspending() {
  const e = env();
  seedSet(e);
  seedPod(e, "demo-0", { "cocoonset.cocoonstack.io/slot": "0", "cocoonset.cocoonstack.io/role": "main" });
  const group = await e.client.group("demo");
  const progress: string[] = [];
  const controller = new AbortController();
  const done = group.suspend({
    onProgress: (t) => progress.push(t),
    signal: controller.signal,
    timeoutMs: 60_000,
  });
  done.catch(() => {});
  await until(
    () => e.watcher.open(COCOONSETS).length === 1 && e.watcher.open(PODS).length === 1,
    "both watches",
  );
  await until(() => progress.length > 0, "the first judgement");
  return { e, group, done, progress, controller, sets: () => e.watcher.open(COCOONSETS)[0] };
}

const modified = (object: CocoonSet) => ({ type: "MODIFIED" as const, object });

describe("the SDK's wait", () => {
  it("judges each watch event and reads nothing between events", async () => {
    const { e, done, progress, sets } = await suspending();
    assert.match(progress[0] ?? "", /waiting for the operator to observe generation 2/);
    e.fake.clearCalls();
    sets()?.push(modified(writeSetStatus(e, { ...COUNTS, observedGeneration: 2, phase: "Suspending" })));
    await until(() => progress.length === 2, "the second judgement");
    assert.match(progress[1] ?? "", /^phase Suspending/);
    sets()?.push(modified(writeSetStatus(e, suspendedAt(2))));
    await done;
    assert.match(progress.at(-1) ?? "", /cocoonset "demo" is Suspended \(generation 2\)/);
    const reads = e.fake.calls.filter((c) => c.verb === "get" || c.verb === "list");
    assert.deepEqual(reads, [], "no read of the set or its pods between events");
    assert.equal(e.watcher.open(COCOONSETS).length, 0, "the watches are closed");
    assert.equal(e.watcher.open(PODS).length, 0);
  });

  it("leaves no listener on the caller's signal once it ends", async () => {
    const { e, done, sets, controller } = await suspending();
    sets()?.push(modified(writeSetStatus(e, suspendedAt(2))));
    await done;
    assert.equal(getEventListeners(controller.signal, "abort").length, 0);
  });

  it("resumes a stream that ended from the last resourceVersion, after a pause", async () => {
    const { e, done, sets } = await suspending();
    const first = sets();
    const seen = writeSetStatus(e, { ...COUNTS, observedGeneration: 2, phase: "Suspending" });
    first?.push(modified(seen));
    first?.end();
    await until(() => e.clock.slept.includes(RECONNECT_MS), "the reconnect pause");
    assert.equal(e.watcher.open(COCOONSETS).length, 0, "no new stream before the pause");
    e.clock.advance(RECONNECT_MS);
    await until(() => e.watcher.open(COCOONSETS).length === 1, "the resumed stream");
    assert.equal(sets()?.opts.resourceVersion, seen.metadata.resourceVersion);
    assert.equal(sets()?.opts.fieldSelector, "metadata.name=demo");
    sets()?.push(modified(writeSetStatus(e, suspendedAt(2))));
    await done;
  });

  it("re-lists on 410 Gone and watches from the new list", async () => {
    const { e, done, sets } = await suspending();
    e.fake.clearCalls();
    writeSetStatus(e, suspendedAt(2));
    sets()?.fail(new GoneError(410, "Expired", "too old resource version"));
    // The re-list sees the Suspended set: no event needed.
    await done;
    const lists = e.fake.calls.filter((c) => c.verb === "list" && c.resource === "cocoonsets");
    assert.equal(lists.length, 1, "one re-list of the set");
  });

  it("times out with the last progress and the operator's latest Warning", async () => {
    const { e, done, sets, progress } = await suspending();
    sets()?.push(modified(writeSetStatus(e, { ...COUNTS, observedGeneration: 2, phase: "Suspending" })));
    await until(() => progress.length === 2, "the second judgement");
    seedWarning(
      e,
      "w1",
      "CocoonSet",
      "demo",
      "SuspendTimedOut",
      "vk-ns-demo-0:hibernate is not in the registry yet",
    );
    e.clock.advance(60_000);
    const err = await done.then(
      () => assert.fail("resolved"),
      (x: unknown) => x,
    );
    assert.ok(err instanceof CocoonTimeoutError, String(err));
    assert.equal(err.reason, "Timeout");
    assert.match(err.progress, /^phase Suspending/);
    assert.deepEqual(err.warning, {
      reason: "SuspendTimedOut",
      message: "vk-ns-demo-0:hibernate is not in the registry yet",
    });
    assert.match(
      err.message,
      /^timed out after 1m0s waiting for cocoonset "demo" to suspend \(phase Suspending/,
    );
  });

  it("rejects with the signal's reason when aborted, and stops its watches", async () => {
    const { e, done, controller } = await suspending();
    const why = new Error("episode over");
    controller.abort(why);
    await assert.rejects(done, (err) => err === why);
    await until(() => e.watcher.open(COCOONSETS).length === 0 && e.watcher.open(PODS).length === 0, "closed");
  });

  it("rejects an already aborted signal with an AbortError before writing", async () => {
    const e = env();
    seedSet(e);
    const group = await e.client.group("demo");
    e.fake.clearCalls();
    const controller = new AbortController();
    controller.abort();
    await assert.rejects(
      group.suspend({ signal: controller.signal }),
      (err: Error) => err.name === "AbortError",
    );
  });

  it("fails with the operator's reason: its Warning event, else the judge's", async () => {
    const { e, done, sets } = await suspending();
    seedWarning(e, "w2", "CocoonSet", "demo", "PodLifecycleFailed", "main pod ns/demo-0: VM gone");
    sets()?.push(modified(writeSetStatus(e, { ...COUNTS, observedGeneration: 2, phase: "Failed" })));
    const err = await done.then(
      () => assert.fail("resolved"),
      (x: unknown) => x,
    );
    assert.ok(err instanceof CocoonOperationError);
    assert.ok(err instanceof CocoonError);
    assert.equal(err.reason, "PodLifecycleFailed");
    assert.equal(err.detail, "main pod ns/demo-0: VM gone");
    assert.equal(err.what, 'cocoonset "demo" to suspend');
  });

  it("waits DEFAULT_WAIT_MS when no timeout is given", async () => {
    const e = env();
    seedSet(e);
    const group = await e.client.group("demo");
    const done = group.resume();
    await until(() => e.clock.slept.length > 0);
    assert.equal(e.clock.slept[0], DEFAULT_WAIT_MS);
    writeSetStatus(e, {
      ...COUNTS,
      observedGeneration: 2,
      phase: "Running",
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "",
          message: "",
          observedGeneration: 2,
          lastTransitionTime: "",
        },
      ],
    });
    e.watcher.open(COCOONSETS)[0]?.push(modified(e.fake.peek(COCOONSETS, NS, "demo") as CocoonSet));
    await done;
  });
});
