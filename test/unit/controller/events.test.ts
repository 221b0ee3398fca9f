import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import type { Client } from "../../../src/controller/client.ts";
import { NotFoundError } from "../../../src/controller/errors.ts";
import { KubeEventRecorder } from "../../../src/controller/events.ts";

interface Call {
  verb: "create" | "patch";
  namespace: string;
  name: string;
  body: Record<string, unknown>;
}

/** Records event writes; `failWith` makes writes throw, `patchFailsWith` only patches. */
class EventSink implements Client {
  readonly calls: Call[] = [];
  failWith: Error | undefined;
  patchFailsWith: Error | undefined;
  async create<T>(_rt: unknown, namespace: string, obj: T): Promise<T> {
    if (this.failWith) throw this.failWith;
    const body = obj as { metadata: { name: string } };
    this.calls.push({ verb: "create", namespace, name: body.metadata.name, body: body as never });
    return obj;
  }
  async patch<T>(_rt: unknown, namespace: string, name: string, patch: unknown): Promise<T> {
    if (this.failWith ?? this.patchFailsWith) throw this.failWith ?? this.patchFailsWith;
    this.calls.push({ verb: "patch", namespace, name, body: patch as never });
    return {} as T;
  }
  async get<T>(): Promise<T> {
    throw new Error("not used");
  }
  async list<T>(): Promise<{ items: T[]; resourceVersion: string }> {
    throw new Error("not used");
  }
  async update<T>(): Promise<T> {
    throw new Error("not used");
  }
  async delete(): Promise<void> {
    throw new Error("not used");
  }
}

const cocoonSet = {
  apiVersion: "cocoonset.cocoonstack.io/v1",
  kind: "CocoonSet",
  metadata: { name: "demo", namespace: "team", uid: "uid-1", resourceVersion: "42" },
};

function setup() {
  const client = new EventSink();
  const clock = new FakeClock(Date.parse("2026-03-04T05:06:07.089Z"));
  const recorder = new KubeEventRecorder({ client, clock, host: "op-host" });
  return { client, clock, recorder };
}

describe("KubeEventRecorder", () => {
  it("creates a core/v1 Event named <object>.<hex nanoseconds> with source cocoon-operator", async () => {
    const { client, clock, recorder } = setup();
    recorder.event(cocoonSet, "Warning", "MainAgentFailed", "main agent pod failed");
    await recorder.flush();
    assert.equal(client.calls.length, 1);
    const call = client.calls[0]!;
    assert.equal(call.verb, "create");
    assert.equal(call.namespace, "team");
    const nanos = BigInt(clock.now()) * 1_000_000n;
    assert.equal(call.name, `demo.${nanos.toString(16)}`);
    assert.deepEqual(call.body.involvedObject, {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonSet",
      name: "demo",
      namespace: "team",
      uid: "uid-1",
      resourceVersion: "42",
    });
    assert.equal(call.body.type, "Warning");
    assert.equal(call.body.reason, "MainAgentFailed");
    assert.equal(call.body.message, "main agent pod failed");
    assert.deepEqual(call.body.source, { component: "cocoon-operator", host: "op-host" });
    assert.equal(call.body.reportingComponent, "cocoon-operator");
    assert.equal(call.body.reportingInstance, "op-host");
    assert.equal(call.body.count, 1);
    assert.equal(call.body.firstTimestamp, "2026-03-04T05:06:07Z");
    assert.equal(call.body.lastTimestamp, "2026-03-04T05:06:07Z");
  });

  it("folds a repeat within 10 minutes into the existing Event (count and lastTimestamp)", async () => {
    const { client, clock, recorder } = setup();
    recorder.event(cocoonSet, "Normal", "Hibernated", "pod hibernated");
    await recorder.flush();
    clock.advance(60_000);
    recorder.event(cocoonSet, "Normal", "Hibernated", "pod hibernated");
    clock.advance(60_000);
    recorder.event(cocoonSet, "Normal", "Hibernated", "pod hibernated");
    await recorder.flush();
    assert.deepEqual(
      client.calls.map((c) => c.verb),
      ["create", "patch", "patch"],
    );
    const first = client.calls[0]!;
    assert.equal(client.calls[1]?.name, first.name);
    assert.deepEqual(client.calls[2]?.body, {
      count: 3,
      lastTimestamp: "2026-03-04T05:08:07Z",
      message: "pod hibernated",
    });
  });

  it("creates separate Events for a different message, reason, type or object", async () => {
    const { client, recorder } = setup();
    recorder.event(cocoonSet, "Normal", "Hibernated", "one");
    recorder.event(cocoonSet, "Normal", "Hibernated", "two");
    recorder.event(cocoonSet, "Normal", "WokenActive", "one");
    recorder.event(cocoonSet, "Warning", "Hibernated", "one");
    recorder.event(
      { ...cocoonSet, metadata: { ...cocoonSet.metadata, name: "other" } },
      "Normal",
      "Hibernated",
      "one",
    );
    await recorder.flush();
    assert.deepEqual(
      client.calls.map((c) => c.verb),
      ["create", "create", "create", "create", "create"],
    );
    assert.equal(new Set(client.calls.map((c) => c.name)).size, 5);
  });

  it("starts a new Event after the 10-minute window, or when the old one has expired", async () => {
    const { client, clock, recorder } = setup();
    recorder.event(cocoonSet, "Normal", "Hibernated", "x");
    await recorder.flush();
    clock.advance(10 * 60_000);
    recorder.event(cocoonSet, "Normal", "Hibernated", "x");
    await recorder.flush();
    clock.advance(1000);
    client.patchFailsWith = new NotFoundError(404, "NotFound", "event not found");
    recorder.event(cocoonSet, "Normal", "Hibernated", "x");
    await recorder.flush();
    client.patchFailsWith = undefined;
    recorder.event(cocoonSet, "Normal", "Hibernated", "x");
    await recorder.flush();
    assert.deepEqual(
      client.calls.map((c) => c.verb),
      ["create", "create", "create", "patch"],
    );
    assert.equal(client.calls[3]?.name, client.calls[2]?.name, "the replacement Event takes the repeats");
  });

  it("never throws into the caller: write failures and bad objects are logged", async () => {
    const { client, recorder } = setup();
    client.failWith = new Error("connection refused");
    assert.doesNotThrow(() => recorder.event(cocoonSet, "Warning", "WakeTimedOut", "x"));
    assert.doesNotThrow(() => recorder.event({ metadata: {} }, "Warning", "WakeTimedOut", "x"));
    await recorder.flush();
    assert.equal(client.calls.length, 0);
  });

  it("drops a flood from one object after a burst of 25, refilling one per 5 minutes", async () => {
    const { client, clock, recorder } = setup();
    for (let i = 0; i < 30; i++) recorder.event(cocoonSet, "Normal", "Hibernated", `message ${i}`);
    await recorder.flush();
    assert.equal(client.calls.length, 25);
    clock.advance(5 * 60_000);
    recorder.event(cocoonSet, "Normal", "Hibernated", "after refill");
    recorder.event(cocoonSet, "Normal", "Hibernated", "still flooding");
    await recorder.flush();
    assert.equal(client.calls.length, 26);
    assert.equal(client.calls[25]?.body.message, "after refill");
  });
});
