import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { keyOf, Store } from "../../../src/controller/store.ts";

interface Obj {
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: { podRef?: string; owners?: string[] };
}

const obj = (namespace: string | undefined, name: string, rv = "1", spec: Obj["spec"] = {}): Obj => ({
  metadata: { name, namespace, resourceVersion: rv },
  spec,
});
const names = (list: Obj[]) => list.map((o) => o.metadata.name).sort();

describe("Store", () => {
  it("keys namespaced objects as namespace/name and cluster-scoped ones by name", () => {
    assert.equal(keyOf(obj("ns", "a")), "ns/a");
    assert.equal(keyOf(obj(undefined, "node-1")), "node-1");
  });

  it("gets, lists by namespace and removes", () => {
    const store = new Store<Obj>();
    store.upsert(obj("a", "x"));
    store.upsert(obj("a", "y"));
    store.upsert(obj("b", "x"));
    assert.equal(store.get("a", "y")?.metadata.namespace, "a");
    assert.deepEqual(names(store.list("a")), ["x", "y"]);
    assert.equal(store.list().length, 3);
    assert.equal(store.remove("a/x")?.metadata.name, "x");
    assert.deepEqual(names(store.list("a")), ["y"]);
    assert.equal(store.remove("a/x"), undefined);
    assert.deepEqual(store.list("nowhere"), []);
  });

  it("maintains custom indexes across updates and deletes, with multi-valued index functions", () => {
    const store = new Store<Obj>({
      byPodRef: (o) => (o.spec?.podRef ? [o.spec.podRef] : []),
      byOwner: (o) => o.spec?.owners ?? [],
    });
    store.upsert(obj("ns", "h1", "1", { podRef: "pod-a" }));
    store.upsert(obj("ns", "h2", "1", { podRef: "pod-a", owners: ["o1", "o2", "o1"] }));
    assert.deepEqual(names(store.byIndex("byPodRef", "pod-a")), ["h1", "h2"]);
    assert.deepEqual(names(store.byIndex("byOwner", "o2")), ["h2"]);

    const old = store.upsert(obj("ns", "h1", "2", { podRef: "pod-b" }));
    assert.equal(old?.metadata.resourceVersion, "1");
    assert.deepEqual(names(store.byIndex("byPodRef", "pod-a")), ["h2"]);
    assert.deepEqual(names(store.byIndex("byPodRef", "pod-b")), ["h1"]);

    store.remove("ns/h2");
    assert.deepEqual(store.byIndex("byPodRef", "pod-a"), []);
    assert.deepEqual(store.byIndex("byOwner", "o1"), []);
    assert.throws(() => store.byIndex("missing", "x"), /no index named missing/);
  });

  it("replace reports added, changed (old and new) and vanished objects, and ignores unchanged ones", () => {
    const store = new Store<Obj>();
    store.upsert(obj("ns", "kept", "1"));
    store.upsert(obj("ns", "changed", "1"));
    store.upsert(obj("ns", "gone", "1"));
    const diff = store.replace([obj("ns", "kept", "1"), obj("ns", "changed", "5"), obj("ns", "new", "6")]);
    assert.deepEqual(names(diff.added), ["new"]);
    assert.equal(diff.updated.length, 1);
    assert.equal(diff.updated[0]?.[0].metadata.resourceVersion, "1");
    assert.equal(diff.updated[0]?.[1].metadata.resourceVersion, "5");
    assert.deepEqual(names(diff.deleted), ["gone"]);
    assert.deepEqual(names(store.list()), ["changed", "kept", "new"]);
  });
});
