// A set whose VM names are also those another live set keeps is refused before it touches a pod or
// a tag; the earlier set goes on (docs/cocoonset.md, "VM names are the set's own").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { COLLISION_RECHECK_MS, REASON_VM_NAME_COLLISION } from "../../../src/cocoonset/steps/collision.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { cocoonSet, type Harness, harness } from "../../support/cocoonset.ts";

function set(
  namespace: string,
  name: string,
  created: string,
  spec: Partial<CocoonSet["spec"]> = {},
): CocoonSet {
  return cocoonSet(spec, { namespace, name, uid: `${namespace}/${name}`, creationTimestamp: created });
}

function reconcile(h: Harness, namespace: string, name: string) {
  return new CocoonSetReconciler(h.deps).reconcile({ namespace, name }, new AbortController().signal);
}

function podsOf(h: Harness, namespace: string): string[] {
  return h.client.all<Pod>(PODS, namespace).map((pod) => pod.metadata.name ?? "");
}

function stored(h: Harness, namespace: string, name: string): CocoonSet | undefined {
  return h.client.peek<CocoonSet>(COCOONSETS, namespace, name);
}

describe("VM name collisions", () => {
  it("refuses namespace a's set b-c, created after namespace a-b's set c: no pod, no registry call; c goes on", async () => {
    const h = harness();
    h.client.seed(COCOONSETS, set("a-b", "c", "2026-01-01T00:00:00Z"));
    h.client.seed(COCOONSETS, set("a", "b-c", "2026-01-01T00:00:05Z"));

    assert.deepEqual(await reconcile(h, "a", "b-c"), { requeueAfterMs: COLLISION_RECHECK_MS });
    assert.deepEqual(podsOf(h, "a"), []);
    assert.deepEqual(h.registry.calls, []);
    const refused = stored(h, "a", "b-c");
    assert.equal(refused?.status?.phase, "Failed");
    const ready = refused?.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.reason, REASON_VM_NAME_COLLISION);
    assert.ok(ready?.message.includes("vk-a-b-c-0 (CocoonSet a-b/c)"), ready?.message);
    assert.deepEqual(
      h.events.events.map((e) => [e.object, e.type, e.reason]),
      [["b-c", "Warning", REASON_VM_NAME_COLLISION]],
    );

    await reconcile(h, "a-b", "c");
    assert.deepEqual(podsOf(h, "a-b"), ["c-0"], "the earlier set creates its main");
    assert.equal(h.events.events.filter((e) => e.object === "c").length, 0, "the earlier set is not refused");
  });

  it("a refused set's next pass makes no write and no event", async () => {
    const h = harness();
    h.client.seed(COCOONSETS, set("a-b", "c", "2026-01-01T00:00:00Z"));
    h.client.seed(COCOONSETS, set("a", "b-c", "2026-01-01T00:00:05Z"));
    await reconcile(h, "a", "b-c");
    h.client.clearCalls();
    const eventsBefore = h.events.events.length;

    assert.deepEqual(await reconcile(h, "a", "b-c"), { requeueAfterMs: COLLISION_RECHECK_MS });
    assert.deepEqual(h.client.writes(), []);
    assert.equal(h.events.events.length, eventsBefore);
  });

  it("the refused set goes on once the earlier set is gone", async () => {
    const h = harness();
    const earlier = set("a-b", "c", "2026-01-01T00:00:00Z");
    h.client.seed(COCOONSETS, { ...earlier, metadata: { ...earlier.metadata, finalizers: [] } });
    h.client.seed(COCOONSETS, set("a", "b-c", "2026-01-01T00:00:05Z"));
    await reconcile(h, "a", "b-c");
    assert.deepEqual(podsOf(h, "a"), [], "refused while a-b/c lives");
    await h.client.delete(COCOONSETS, "a-b", "c");

    await reconcile(h, "a", "b-c");
    assert.deepEqual(podsOf(h, "a"), ["b-c-0"]);
  });

  it("web-2 runs beside web until web's toolbox 2-0 names web-2's main VM, then is refused", async () => {
    const h = harness();
    const web = set("ns", "web", "2026-01-01T00:00:00Z", { agent: { image: "ubuntu", replicas: 3 } });
    h.client.seed(COCOONSETS, web);
    h.client.seed(
      COCOONSETS,
      set("ns", "web-2", "2026-01-01T00:00:05Z", { agent: { image: "ubuntu", replicas: 1 } }),
    );
    await reconcile(h, "ns", "web-2");
    await reconcile(h, "ns", "web");
    assert.deepEqual(podsOf(h, "ns").sort(), ["web-0", "web-2-0"], "a name prefix alone is no collision");
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === REASON_VM_NAME_COLLISION),
      [],
    );

    const edited = stored(h, "ns", "web");
    if (!edited) throw new Error("web is gone");
    await h.client.update(COCOONSETS, { ...edited, spec: { ...edited.spec, toolboxes: [{ name: "2-0" }] } });
    h.client.clearCalls();
    assert.deepEqual(await reconcile(h, "ns", "web-2"), { requeueAfterMs: COLLISION_RECHECK_MS });
    assert.deepEqual(
      h.client.writes().map((w) => `${w.verb} ${w.resource}`),
      ["patch cocoonsets"],
      "only its own status: web-2-1 is not created",
    );
    assert.ok(
      h.events.events.some(
        (e) => e.object === "web-2" && e.message.includes("vk-ns-web-2-0 (CocoonSet ns/web)"),
      ),
    );
  });
});
