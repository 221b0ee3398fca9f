// The informer (reflector + store + handlers) driven by a scripted list/watch transport.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { createInformer, stripManagedFields } from "../../../src/controller/cache.ts";
import type {
  ListOptions,
  ListResult,
  WatchClient,
  WatchEvent,
  WatchOptions,
} from "../../../src/controller/client.ts";
import { ApiError, GoneError } from "../../../src/controller/errors.ts";
import { PODS, type ResourceType } from "../../../src/controller/resources.ts";

interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    managedFields?: unknown[];
  };
  spec?: { nodeName?: string };
}

const pod = (name: string, rv: string, nodeName = "n1"): Pod => ({
  metadata: { name, namespace: "ns", resourceVersion: rv },
  spec: { nodeName },
});
const added = (p: Pod): WatchEvent<Pod> => ({ type: "ADDED", object: p });
const modified = (p: Pod): WatchEvent<Pod> => ({ type: "MODIFIED", object: p });
const deleted = (p: Pod): WatchEvent<Pod> => ({ type: "DELETED", object: p });
const bookmark = (rv: string): WatchEvent<Pod> => ({
  type: "BOOKMARK",
  object: { metadata: { name: "", namespace: "", resourceVersion: rv } },
});
const expired = (): WatchEvent<Pod> => ({
  type: "ERROR",
  object: { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" } as never,
});

/** What a watch call does: stream events, then end, fail, or stay open until aborted. */
type WatchScript = Error | { events: WatchEvent<Pod>[]; finally?: "end" | "hang" | Error };

/** A list/watch transport that replays scripts in order; with no script left, calls hang until aborted. */
class ScriptedTransport implements WatchClient {
  lists: (ListResult<Pod> | Error)[] = [];
  watches: WatchScript[] = [];
  readonly calls: { verb: "list" | "watch"; rv?: string; opts: ListOptions | WatchOptions }[] = [];
  private wake: (() => void) | undefined;

  /** Adds scripts and wakes a call waiting for one. */
  push(scripts: { lists?: (ListResult<Pod> | Error)[]; watches?: WatchScript[] }): void {
    this.lists.push(...(scripts.lists ?? []));
    this.watches.push(...(scripts.watches ?? []));
    this.wake?.();
  }

  async list<T>(
    _rt: ResourceType,
    _ns: string | undefined,
    opts: ListOptions<T> = {},
  ): Promise<ListResult<T>> {
    this.calls.push({ verb: "list", rv: opts.resourceVersion, opts });
    const next = this.lists.shift() ?? (await this.waitFor(() => this.lists.shift()));
    if (next instanceof Error) throw next;
    // As KubeClient does: the transform runs on each item as it is decoded.
    const result = structuredClone(next) as unknown as ListResult<T>;
    return { ...result, items: result.items.map((item) => (opts.transform ? opts.transform(item) : item)) };
  }

  async *watch<T>(
    _rt: ResourceType,
    _ns: string | undefined,
    opts: WatchOptions,
  ): AsyncIterable<WatchEvent<T>> {
    this.calls.push({ verb: "watch", rv: opts.resourceVersion, opts });
    const script = this.watches.shift() ?? (await this.waitFor(() => this.watches.shift(), opts.signal));
    if (script === undefined) return;
    if (script instanceof Error) throw script;
    for (const event of script.events) yield structuredClone(event) as unknown as WatchEvent<T>;
    if (script.finally instanceof Error) throw script.finally;
    if (script.finally === "hang") await this.waitFor(() => undefined, opts.signal);
  }

  private async waitFor<S>(take: () => S | undefined, signal?: AbortSignal): Promise<S | undefined> {
    for (;;) {
      const got = take();
      if (got !== undefined || signal?.aborted) return got;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        signal?.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }
}

/** A FakeClock that also records what the code under test slept for. */
class RecordingClock extends FakeClock {
  readonly sleeps: number[] = [];
  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return super.sleep(ms, signal);
  }
}

/** Lets the background list-watch loop run until cond holds (it only waits on I/O-free promises). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000; i++) {
    if (cond()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail("condition never became true");
}

function recordHandler() {
  const log: string[] = [];
  return {
    log,
    handler: {
      onAdd: (p: Pod) => log.push(`add ${p.metadata.name}@${p.metadata.resourceVersion}`),
      onUpdate: (o: Pod, n: Pod) =>
        log.push(`update ${n.metadata.name}@${o.metadata.resourceVersion}->${n.metadata.resourceVersion}`),
      onDelete: (p: Pod) => log.push(`delete ${p.metadata.name}@${p.metadata.resourceVersion}`),
    },
  };
}

function setup(opts: Parameters<typeof createInformer<Pod>>[2] = {}) {
  const transport = new ScriptedTransport();
  const clock = new RecordingClock();
  const informer = createInformer<Pod>(transport, PODS, { clock, backoff: { jitter: 0 }, ...opts });
  const abort = new AbortController();
  const { log, handler } = recordHandler();
  informer.addEventHandler(handler);
  return { transport, clock, informer, abort, log };
}

describe("informer", () => {
  it("lists, syncs, then applies watch events with old and new objects and follows bookmarks", async (t) => {
    const { transport, informer, abort, log } = setup({ labelSelector: "cocoonset.cocoonstack.io/name" });
    t.after(() => abort.abort());
    transport.push({
      lists: [{ items: [pod("a", "10"), pod("b", "11")], resourceVersion: "12" }],
      watches: [
        {
          events: [added(pod("c", "13")), modified(pod("a", "14")), deleted(pod("b", "15")), bookmark("20")],
          finally: "hang",
        },
      ],
    });
    assert.equal(informer.hasSynced(), false);
    informer.start(abort.signal);
    await informer.waitForSync();
    assert.equal(informer.hasSynced(), true);
    await until(() => informer.lastSyncResourceVersion() === "20");
    assert.deepEqual(log, ["add a@10", "add b@11", "add c@13", "update a@10->14", "delete b@15"]);
    assert.deepEqual(
      informer
        .list("ns")
        .map((p) => p.metadata.name)
        .sort(),
      ["a", "c"],
    );
    assert.equal(informer.get("ns", "a")?.metadata.resourceVersion, "14");
    const listCall = transport.calls[0];
    assert.equal(listCall?.opts.labelSelector, "cocoonset.cocoonstack.io/name");
    const watchCall = transport.calls[1];
    assert.equal(watchCall?.rv, "12");
    const watchOpts = watchCall?.opts as WatchOptions;
    assert.equal(watchOpts.allowWatchBookmarks, true);
    assert.equal(watchOpts.labelSelector, "cocoonset.cocoonstack.io/name");
    assert.ok((watchOpts.timeoutSeconds ?? 0) >= 300 && (watchOpts.timeoutSeconds ?? 0) < 600);
  });

  it("fills kind and apiVersion on listed objects", async (t) => {
    const { transport, informer, abort } = setup();
    t.after(() => abort.abort());
    transport.push({ lists: [{ items: [pod("a", "1")], resourceVersion: "1" }] });
    informer.start(abort.signal);
    await informer.waitForSync();
    assert.equal(informer.get("ns", "a")?.kind, "Pod");
    assert.equal(informer.get("ns", "a")?.apiVersion, "v1");
  });

  it("on a 410 ERROR event re-lists at once and reports the diff", async (t) => {
    const { transport, informer, abort, log, clock } = setup();
    t.after(() => abort.abort());
    transport.push({
      lists: [
        { items: [pod("a", "1"), pod("b", "2"), pod("c", "3")], resourceVersion: "3" },
        { items: [pod("a", "1"), pod("b", "9"), pod("d", "8")], resourceVersion: "10" },
      ],
      watches: [{ events: [expired()] }],
    });
    informer.start(abort.signal);
    await until(() => transport.calls.filter((c) => c.verb === "watch").length === 2);
    assert.deepEqual(log, ["add a@1", "add b@2", "add c@3", "add d@8", "update b@2->9", "delete c@3"]);
    assert.deepEqual(
      transport.calls.map((c) => `${c.verb}${c.rv !== undefined ? ` ${c.rv}` : ""}`),
      ["list 0", "watch 3", "list 3", "watch 10"],
    );
    assert.deepEqual(clock.sleeps, [], "the first 410 re-lists without waiting");
  });

  it('lists from the watch cache as client-go does: "0" paged at first, the last version unpaged on a re-list', async (t) => {
    const { transport, informer, abort } = setup();
    t.after(() => abort.abort());
    transport.push({
      lists: [
        { items: [pod("a", "1")], resourceVersion: "3" },
        { items: [pod("a", "1")], resourceVersion: "10" },
      ],
      watches: [{ events: [bookmark("7"), expired()] }],
    });
    informer.start(abort.signal);
    await until(() => transport.calls.filter((c) => c.verb === "list").length === 2);
    const [first, relist] = transport.calls
      .filter((c) => c.verb === "list")
      .map((c) => c.opts as ListOptions);
    assert.deepEqual([first?.resourceVersion, first?.limit], ["0", 500]);
    assert.deepEqual([relist?.resourceVersion, relist?.limit], ["7", undefined]);
  });

  it("a re-list whose version is gone, or ahead of the server, falls back at once to a consistent paged read", async (t) => {
    const { transport, informer, abort, clock } = setup();
    t.after(() => abort.abort());
    const tooLarge = new ApiError(504, "Timeout", "Too large resource version", {
      causes: [{ type: "ResourceVersionTooLarge", message: "Too large resource version" }],
    });
    transport.push({
      lists: [
        { items: [pod("a", "1")], resourceVersion: "3" },
        new GoneError(410, "Expired", "too old resource version: 3 (40)"),
        { items: [pod("a", "1")], resourceVersion: "41" },
        tooLarge,
        { items: [pod("a", "1")], resourceVersion: "42" },
      ],
      watches: [{ events: [expired()] }, { events: [expired()] }],
    });
    informer.start(abort.signal);
    // The second 410 in a row backs off once, like any repeated failure.
    await until(() => clock.sleeps.length === 1);
    clock.advance(clock.sleeps[0] ?? 0);
    await until(() => transport.calls.filter((c) => c.verb === "watch").length === 3);
    assert.deepEqual(
      transport.calls.map((c) => `${c.verb} ${c.rv}${(c.opts as ListOptions).limit ? " paged" : ""}`),
      ["list 0 paged", "watch 3", "list 3", "list  paged", "watch 41", "list 41", "list  paged", "watch 42"],
    );
  });

  it("on a 410 answer to the watch request re-lists too", async (t) => {
    const { transport, informer, abort, log } = setup();
    t.after(() => abort.abort());
    transport.push({
      lists: [
        { items: [pod("a", "1")], resourceVersion: "5" },
        { items: [], resourceVersion: "50" },
      ],
      watches: [new GoneError(410, "Expired", "too old resource version: 5 (40)")],
    });
    informer.start(abort.signal);
    await until(() => transport.calls.length === 4);
    assert.deepEqual(log, ["add a@1", "delete a@1"]);
    assert.equal(transport.calls[3]?.rv, "50");
  });

  it("retries failing lists and watches with growing backoff, resuming from the last resourceVersion", async (t) => {
    const { transport, informer, abort, clock, log } = setup();
    t.after(() => abort.abort());
    const refused = () => new Error("connect ECONNREFUSED 127.0.0.1:6443");
    transport.push({
      lists: [refused(), refused(), { items: [pod("a", "1")], resourceVersion: "7" }],
      watches: [refused(), refused(), { events: [modified(pod("a", "8"))], finally: "hang" }],
    });
    informer.start(abort.signal);
    for (const expected of [800, 1600]) {
      await until(() => clock.sleeps.length > 0);
      assert.equal(clock.sleeps.shift(), expected);
      clock.advance(expected);
    }
    await informer.waitForSync();
    for (const expected of [3200, 6400]) {
      await until(() => clock.sleeps.length > 0);
      assert.equal(clock.sleeps.shift(), expected);
      clock.advance(expected);
    }
    await until(() => log.length === 2);
    assert.deepEqual(log, ["add a@1", "update a@1->8"]);
    const watches = transport.calls.filter((c) => c.verb === "watch").map((c) => c.rv);
    assert.deepEqual(watches, ["7", "7", "7"]);
  });

  it("re-watches at once after a healthy stream ends, and backs off after an empty one", async (t) => {
    const { transport, informer, abort, clock } = setup();
    t.after(() => abort.abort());
    transport.push({
      lists: [{ items: [], resourceVersion: "1" }],
      watches: [
        { events: [added(pod("a", "2"))], finally: "end" },
        { events: [], finally: "end" },
      ],
    });
    informer.start(abort.signal);
    await until(() => clock.sleeps.length === 1);
    assert.deepEqual(clock.sleeps, [800]);
    assert.deepEqual(
      transport.calls.filter((c) => c.verb === "watch").map((c) => c.rv),
      ["1", "2"],
    );
  });

  it("a stream that broke after delivering events retries after the initial backoff", async (t) => {
    const { transport, informer, abort, clock } = setup();
    t.after(() => abort.abort());
    transport.push({
      lists: [new Error("boom"), new Error("boom"), { items: [], resourceVersion: "1" }],
      watches: [{ events: [added(pod("a", "2"))], finally: new Error("connection reset") }],
    });
    informer.start(abort.signal);
    for (const expected of [800, 1600]) {
      await until(() => clock.sleeps.length > 0);
      assert.equal(clock.sleeps.shift(), expected);
      clock.advance(expected);
    }
    await until(() => clock.sleeps.length > 0);
    assert.equal(clock.sleeps.shift(), 800);
  });

  it("indexes objects, applies the transform, and replays the cache to late handlers", async (t) => {
    const { transport, informer, abort } = setup({
      indexers: { byNode: (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []) },
      transform: stripManagedFields,
    });
    t.after(() => abort.abort());
    const withFields = {
      ...pod("a", "1", "n1"),
      metadata: { ...pod("a", "1").metadata, managedFields: [{}] },
    };
    transport.push({
      lists: [{ items: [withFields, pod("b", "2", "n2")], resourceVersion: "2" }],
      watches: [{ events: [modified(pod("b", "3", "n1"))], finally: "hang" }],
    });
    informer.start(abort.signal);
    await informer.waitForSync();
    await until(() => informer.lastSyncResourceVersion() === "3");
    assert.deepEqual(
      informer
        .byIndex("byNode", "n1")
        .map((p) => p.metadata.name)
        .sort(),
      ["a", "b"],
    );
    assert.deepEqual(informer.byIndex("byNode", "n2"), []);
    assert.equal("managedFields" in (informer.get("ns", "a")?.metadata ?? {}), false);
    const late = recordHandler();
    informer.addEventHandler(late.handler);
    assert.deepEqual(late.log.sort(), ["add a@1", "add b@3"]);
  });

  it("a throwing handler does not stop other handlers or the informer", async (t) => {
    const { transport, informer, abort, log } = setup();
    t.after(() => abort.abort());
    informer.addEventHandler({
      onAdd: () => {
        throw new Error("handler bug");
      },
    });
    transport.push({
      lists: [{ items: [pod("a", "1")], resourceVersion: "1" }],
      watches: [{ events: [added(pod("b", "2"))], finally: "hang" }],
    });
    informer.start(abort.signal);
    await until(() => log.length === 2);
    assert.deepEqual(log, ["add a@1", "add b@2"]);
  });

  it("waitForSync rejects when its signal aborts first", async () => {
    const { informer } = setup();
    const abort = new AbortController();
    const waiting = informer.waitForSync(abort.signal);
    abort.abort(new Error("shutdown"));
    await assert.rejects(waiting, /shutdown/);
  });
});
