// The API client and the list-watch cache against a real kube-apiserver: wire format and typed
// errors, label-scoped informers, a watch that survives a kube-apiserver restart, and a real 410
// (a watch resumed from a revision older than the restarted API server's watch cache).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { createInformer, type Informer, stripManagedFields } from "../../src/controller/cache.ts";
import {
  KubeClient,
  kubeConfigFromFile,
  type WatchClient,
  type WatchEvent,
  type WatchOptions,
} from "../../src/controller/client.ts";
import {
  AlreadyExistsError,
  ConflictError,
  GoneError,
  InvalidError,
  NotFoundError,
} from "../../src/controller/errors.ts";
import { PODS, type ResourceType } from "../../src/controller/resources.ts";
import { type ControlPlane, startControlPlane } from "../env/controlplane.ts";
import { createNamespace, testEnv, waitFor } from "../env/testenv.ts";

const SELECTOR_LABEL = "cocoonset.cocoonstack.io/name";

interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    managedFields?: unknown[];
  };
  spec?: { containers: { name: string; image: string }[] };
  status?: { phase?: string; message?: string };
}

const newPod = (name: string, labels: Record<string, string> = { [SELECTOR_LABEL]: "demo" }): Pod => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, labels },
  spec: { containers: [{ name: "main", image: "busybox" }] },
});

function recorder(informer: Informer<Pod>) {
  const events: string[] = [];
  informer.addEventHandler({
    onAdd: (p) => events.push(`add ${p.metadata.name}`),
    onUpdate: (o, n) =>
      events.push(
        `update ${n.metadata.name} ${o.metadata.annotations?.step ?? "-"}->${n.metadata.annotations?.step ?? "-"}`,
      ),
    onDelete: (p) => events.push(`delete ${p.metadata.name}`),
  });
  return events;
}

const has = (events: string[], entry: string) => async () => (events.includes(entry) ? true : undefined);

describe("KubeClient and informer on the shared API server", () => {
  let client: KubeClient;
  let ns: string;
  const abort = new AbortController();

  before(async () => {
    const env = testEnv();
    client = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
    ns = await createNamespace(env, "rtcache");
  });
  after(() => {
    abort.abort();
    client.close();
  });

  it("creates, reads, merge-patches (object and status), updates and deletes, with typed errors", async () => {
    const created = await client.create<Pod>(PODS, ns, newPod("crud"));
    assert.equal(created.metadata.namespace, ns);
    await assert.rejects(client.create(PODS, ns, newPod("crud")), AlreadyExistsError);
    await assert.rejects(client.get(PODS, ns, "missing"), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.status, 404);
      assert.equal(e.reason, "NotFound");
      assert.match(e.message, /"missing" not found/);
      return true;
    });

    const patched = await client.patch<Pod>(PODS, ns, "crud", { metadata: { annotations: { step: "1" } } });
    assert.equal(patched.metadata.annotations?.step, "1");
    const withStatus = await client.patch<Pod>(
      PODS,
      ns,
      "crud",
      { status: { message: "hello" } },
      { subresource: "status" },
    );
    assert.equal(withStatus.status?.message, "hello");

    const stale = { ...created, metadata: { ...created.metadata, annotations: { step: "stale" } } };
    await assert.rejects(client.update(PODS, stale), ConflictError);
    const fresh = await client.get<Pod>(PODS, ns, "crud");
    fresh.metadata.annotations = { step: "2" };
    const updated = await client.update(PODS, fresh);
    assert.equal(updated.metadata.annotations?.step, "2");
    await assert.rejects(client.create(PODS, ns, newPod("Not_Valid")), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.equal(e.status, 422);
      assert.equal(e.details?.name, "Not_Valid");
      return true;
    });

    await client.delete(PODS, ns, "crud", { gracePeriodSeconds: 0, propagationPolicy: "Background" });
    await assert.rejects(client.delete(PODS, ns, "crud"), NotFoundError);

    const counts = client.requestCounts();
    assert.ok((counts.get("create pods") ?? 0) >= 2);
    assert.equal(counts.get("patch pods/status"), 1);
    assert.ok((counts.get("delete pods") ?? 0) >= 2);
  });

  it("reports every request to onRequest listeners", async () => {
    const seen: string[] = [];
    const stop = client.onRequest((r) =>
      seen.push(`${r.verb} ${r.resource} ${r.method} ${r.code} ${r.host}`),
    );
    await assert.rejects(client.get(PODS, ns, "nope"), NotFoundError);
    await client.list(PODS, ns);
    stop();
    await client.list(PODS, ns);
    assert.deepEqual(seen, [`get pods GET 404 ${client.host}`, `list pods GET 200 ${client.host}`]);
  });

  it("an informer scoped by label selector sees adds, updates (old and new) and deletes", async () => {
    await client.create(PODS, ns, newPod("before-start"));
    await client.create(PODS, ns, newPod("unlabelled", {}));
    const informer = createInformer<Pod>(client, PODS, {
      namespace: ns,
      labelSelector: SELECTOR_LABEL,
      transform: stripManagedFields,
    });
    const events = recorder(informer);
    informer.start(abort.signal);
    await informer.waitForSync(abort.signal);
    assert.deepEqual(events, ["add before-start"]);
    assert.equal(informer.get(ns, "before-start")?.kind, "Pod");
    assert.equal(informer.get(ns, "before-start")?.metadata.managedFields, undefined);

    await client.create(PODS, ns, newPod("live"));
    await waitFor("add live", has(events, "add live"));
    await client.patch(PODS, ns, "live", { metadata: { annotations: { step: "a" } } });
    await waitFor("update live", has(events, "update live -->a"));
    await client.delete(PODS, ns, "live", { gracePeriodSeconds: 0 });
    await waitFor("delete live", has(events, "delete live"));
    assert.equal(informer.get(ns, "live"), undefined);
    assert.ok(!events.some((e) => e.includes("unlabelled")));
  });
});

/**
 * Passes list and watch through to the real client. pause() ends the open watch stream and holds
 * the reflector's next watch until resume(), so changes made meanwhile reach it only by a re-list.
 */
class PausableWatch implements WatchClient {
  gone = false;
  held = false;
  private readonly client: KubeClient;
  private current: AbortController | undefined;
  private paused: Promise<void> | undefined;
  private resumeHeld: (() => void) | undefined;

  constructor(client: KubeClient) {
    this.client = client;
  }

  pause(): void {
    this.paused = new Promise((resolve) => {
      this.resumeHeld = resolve;
    });
    this.current?.abort();
  }

  resume(): void {
    this.paused = undefined;
    this.resumeHeld?.();
  }

  list<T>(rt: ResourceType, namespace: string | undefined, opts?: object) {
    return this.client.list<T>(rt, namespace, opts);
  }

  async *watch<T>(
    rt: ResourceType,
    namespace: string | undefined,
    opts: WatchOptions,
  ): AsyncIterable<WatchEvent<T>> {
    const paused = this.paused;
    if (paused !== undefined) {
      this.held = true;
      await paused;
    }
    const stream = new AbortController();
    this.current = stream;
    const signal = opts.signal ? AbortSignal.any([opts.signal, stream.signal]) : stream.signal;
    try {
      for await (const event of this.client.watch<T>(rt, namespace, { ...opts, signal })) {
        if (event.type === "ERROR" && (event.object as { code?: number }).code === 410) this.gone = true;
        yield event;
      }
    } catch (e) {
      if (e instanceof GoneError) this.gone = true;
      throw e;
    }
  }
}

describe("list-watch across kube-apiserver restarts (own control plane)", () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let ns: string;
  const abort = new AbortController();

  before(async () => {
    cp = await startControlPlane({ scheduler: false });
    client = new KubeClient(kubeConfigFromFile(cp.kubeconfigPath));
    ns = await createNamespace(cp, "restart");
  });
  after(async () => {
    abort.abort();
    client.close();
    await cp.stop();
  });

  it("the watch reconnects after a restart and keeps delivering events", { timeout: 120_000 }, async () => {
    const informer = createInformer<Pod>(client, PODS, {
      namespace: ns,
      labelSelector: SELECTOR_LABEL,
      backoff: { initialMs: 200, maxMs: 2000 },
    });
    const events = recorder(informer);
    informer.start(abort.signal);
    await informer.waitForSync(abort.signal);
    await client.create(PODS, ns, newPod("before"));
    await waitFor("add before", has(events, "add before"));

    await cp.restartApiServer();
    await client.create(PODS, ns, newPod("after"));
    await waitFor("add after", has(events, "add after"), 60_000);
    await client.patch(PODS, ns, "before", { metadata: { annotations: { step: "z" } } });
    await waitFor("update before", has(events, "update before -->z"), 60_000);
    assert.equal(events.filter((e) => e === "add before").length, 1, "no duplicate add after reconnect");
  });

  it("a resumed watch that gets a real 410 re-lists and reports what changed meanwhile", {
    timeout: 120_000,
  }, async () => {
    for (const name of ["keep", "change", "vanish"]) await client.create(PODS, ns, newPod(`g-${name}`));
    const gate = new PausableWatch(client);
    const informer = createInformer<Pod>(gate, PODS, {
      namespace: ns,
      labelSelector: SELECTOR_LABEL,
      backoff: { initialMs: 200, maxMs: 2000 },
    });
    const events = recorder(informer);
    informer.start(abort.signal);
    await informer.waitForSync(abort.signal);
    const staleRv = informer.lastSyncResourceVersion();
    gate.pause();
    await waitFor("watch held", async () => (gate.held ? true : undefined));
    await client.create(PODS, ns, newPod("g-appear"));
    await client.patch(PODS, ns, "g-change", { metadata: { annotations: { step: "x" } } });
    await client.delete(PODS, ns, "g-vanish", { gracePeriodSeconds: 0 });
    // A restarted API server's watch cache starts at the current revision: older ones are gone (410).
    await cp.restartApiServer();
    const before = events.length;
    gate.resume();
    await waitFor("relist diff", async () => (events.length >= before + 3 ? true : undefined), 60_000);
    assert.equal(gate.gone, true, `the API server answered 410 for resourceVersion ${staleRv}`);
    assert.deepEqual(events.slice(before).sort(), [
      "add g-appear",
      "delete g-vanish",
      "update g-change -->x",
    ]);
    await client.patch(PODS, ns, "g-keep", { metadata: { annotations: { step: "y" } } });
    await waitFor("watching again", has(events, "update g-keep -->y"), 60_000);
  });
});
