// NamedPods: the pods CocoonHibernations name are read by name and kept current by
// one filtered watch; nothing else of the cluster is held. PodApi plays the API server.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CocoonHibernation } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import type { Informer } from "../../../src/controller/cache.ts";
import { NamedPods } from "../../../src/hibernation/podwatch.ts";
import { PodApi } from "./podapi.ts";
import { hibernationFixture, NS, podFixture, settle } from "./support.ts";

/** A CR informer over an in-memory list; the test adds and deletes CRs through `api`. */
function crInformer(): {
  informer: Informer<CocoonHibernation>;
  add(ch: CocoonHibernation): void;
  remove(ch: CocoonHibernation): void;
} {
  const crs = new Map<string, CocoonHibernation>();
  const handlers: { onAdd?(o: CocoonHibernation): void; onDelete?(o: CocoonHibernation): void }[] = [];
  const informer = {
    addEventHandler: (h: (typeof handlers)[number]) => handlers.push(h),
    hasSynced: () => true,
    waitForSync: async () => {},
    get: (_ns: string, name: string) => crs.get(name),
    list: () => [...crs.values()],
    byIndex: () => [],
    start: () => {},
    lastSyncResourceVersion: () => "1",
  } as unknown as Informer<CocoonHibernation>;
  return {
    informer,
    add(ch) {
      crs.set(ch.metadata.name ?? "", ch);
      for (const h of handlers) h.onAdd?.(ch);
    },
    remove(ch) {
      crs.delete(ch.metadata.name ?? "");
      for (const h of handlers) h.onDelete?.(ch);
    },
  };
}

function harness() {
  const api = new PodApi();
  const crs = crInformer();
  const pods = new NamedPods({
    hibernations: crs.informer,
    client: api,
    namespace: NS,
    clock: new FakeClock(),
  });
  const seen: string[] = [];
  pods.addEventHandler({
    onAdd: (pod) => seen.push(`add ${pod.metadata.name} @${pod.metadata.resourceVersion}`),
    onUpdate: (_old, pod) => seen.push(`update ${pod.metadata.name} @${pod.metadata.resourceVersion}`),
    onDelete: (pod) => seen.push(`delete ${pod.metadata.name}`),
  });
  const run = new AbortController();
  return { api, crs, pods, seen, run, start: () => pods.start(run.signal) };
}

const cr = (podName: string, name = podName) => hibernationFixture({ name, podRef: podName });

describe("NamedPods", () => {
  test("reads each named pod by name and watches the collection once; unrelated pods are never held", async () => {
    const h = harness();
    h.api.put(podFixture({ name: "test-ubuntu" }));
    for (let i = 0; i < 3; i++) h.api.put(podFixture({ name: `unrelated-${i}` }));
    h.crs.add(cr("test-ubuntu"));
    h.crs.add(cr("demo-1"));
    h.start();
    await h.pods.waitForSync();
    await settle();

    assert.deepEqual(h.api.calls, [
      "list metadata.name=test-ubuntu",
      "list metadata.name=demo-1",
      "watch ns from 104",
    ]);
    assert.deepEqual(h.seen, ["add test-ubuntu @101"]);

    h.api.put(podFixture({ name: "unrelated-0", hibernate: true }));
    h.api.put(podFixture({ name: "test-ubuntu", hibernate: true }));
    h.api.put(podFixture({ name: "demo-1" }));
    await settle();
    assert.deepEqual(h.seen, ["add test-ubuntu @101", "update test-ubuntu @106", "add demo-1 @107"]);
    assert.equal((await h.pods.getPod(NS, "test-ubuntu"))?.metadata.resourceVersion, "106");
    assert.deepEqual(h.api.calls.slice(3), [], "reads of a pod already read are served from memory");
    h.run.abort();
  });

  test("a replayed event older than the read never moves the pod back", async () => {
    const h = harness();
    const old = h.api.put(podFixture({ name: "test-ubuntu" }));
    h.api.put(podFixture({ name: "test-ubuntu", hibernate: true }));
    h.crs.add(cr("test-ubuntu"));
    h.start();
    await h.pods.waitForSync();
    await settle();

    h.api.emit("MODIFIED", old);
    await settle();
    assert.deepEqual(h.seen, ["add test-ubuntu @102"]);
    assert.equal((await h.pods.getPod(NS, "test-ubuntu"))?.metadata.resourceVersion, "102");
    h.run.abort();
  });

  test("a pod named while the watch runs is read by name, then follows the watch; a delete is reported", async () => {
    const h = harness();
    h.crs.add(cr("demo-0"));
    h.start();
    await h.pods.waitForSync();
    await settle();
    h.api.put(podFixture({ name: "late" }));

    h.crs.add(cr("late"));
    await settle();
    assert.deepEqual(h.api.calls.slice(-1), ["list metadata.name=late"]);
    assert.deepEqual(h.seen, ["add late @101"]);

    const gone = h.api.pods.get("late");
    assert.ok(gone);
    h.api.emit("DELETED", { ...gone, metadata: { ...gone.metadata, resourceVersion: "120" } });
    await settle();
    assert.deepEqual(h.seen, ["add late @101", "delete late"]);
    assert.equal(await h.pods.getPod(NS, "late"), undefined);
    h.run.abort();
  });

  test("the watch stops with the last CR and restarts, reading again, with the next one", async () => {
    const h = harness();
    const a = cr("demo-0", "a");
    const b = cr("demo-0", "b");
    h.crs.add(a);
    h.crs.add(b);
    h.start();
    await h.pods.waitForSync();
    await settle();
    const first = h.api.streams[0];
    assert.ok(first);

    h.crs.remove(a);
    assert.equal(first.signal.aborted, false, "b still names the pod");
    h.crs.remove(b);
    assert.equal(first.signal.aborted, true, "no named pod: no watch");
    await settle();

    h.crs.add(cr("demo-0", "c"));
    await settle();
    await settle();
    assert.deepEqual(h.api.calls, [
      "list metadata.name=demo-0",
      "watch ns from 100",
      "list metadata.name=demo-0",
      "watch ns from 100",
    ]);
    h.run.abort();
  });

  test("a 410 reads every named pod again before watching", async () => {
    const h = harness();
    h.api.gone = true;
    h.crs.add(cr("demo-0"));
    h.crs.add(cr("demo-1"));
    h.start();
    await h.pods.waitForSync();
    await settle();
    await settle();
    assert.deepEqual(h.api.calls, [
      "list metadata.name=demo-0",
      "list metadata.name=demo-1",
      "watch ns from 100",
      "list metadata.name=demo-0",
      "list metadata.name=demo-1",
      "watch ns from 100",
    ]);
    h.run.abort();
  });

  test("until its first read lands, a named pod is read from the API server", async () => {
    const h = harness();
    h.api.put(podFixture({ name: "test-ubuntu" }));
    h.crs.add(cr("test-ubuntu"));
    assert.equal((await h.pods.getPod(NS, "test-ubuntu"))?.metadata.name, "test-ubuntu");
    assert.equal(await h.pods.getPod(NS, "absent"), undefined, "NotFound reads as no pod");
    assert.deepEqual(h.api.calls, ["get test-ubuntu", "get absent"]);
  });
});
