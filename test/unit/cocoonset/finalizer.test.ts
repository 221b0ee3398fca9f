// Step 3: the finalizer is added before anything else, and that pass does nothing more.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { FINALIZER_COCOONSET } from "../../../src/contract/keys.ts";
import { ConflictError } from "../../../src/controller/errors.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { cocoonSet, type Harness, harness, NS, SET, seedSet, storedSet } from "../../support/cocoonset.ts";

function reconcile(h: Harness) {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: NS, name: SET },
    new AbortController().signal,
  );
}

describe("ensureFinalizer", () => {
  it("adds the finalizer with an Update, requeues at once and does nothing else", async () => {
    const h = harness();
    seedSet(h.client, cocoonSet({}, { finalizers: ["example.com/other"] }));

    assert.deepEqual(await reconcile(h), { requeue: true });

    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}`),
      ["update cocoonsets"],
    );
    assert.deepEqual(storedSet(h.client)?.metadata.finalizers, ["example.com/other", FINALIZER_COCOONSET]);
    assert.deepEqual(h.client.all<Pod>(PODS, NS), [], "no pod is created in the finalizer pass");
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.view.hibernationLists, 0);
  });

  it("makes no call when the finalizer is present", async () => {
    const h = harness();
    seedSet(h.client, cocoonSet());
    await reconcile(h);
    assert.equal(
      h.client.writes().filter((c) => c.verb === "update").length,
      0,
      "no Update of the set when the finalizer is already there",
    );
  });

  it("returns the API error when the Update conflicts, so the pass is retried", async () => {
    const h = harness();
    seedSet(h.client, cocoonSet({}, { finalizers: [] }));
    h.client.failNext("update", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    await assert.rejects(reconcile(h), ConflictError);
    assert.deepEqual(storedSet(h.client)?.metadata.finalizers, []);
  });
});
