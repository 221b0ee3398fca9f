// Step 3: the finalizer is added before anything else, and the pass goes on with the updated set.
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
  it("adds the finalizer with an Update first, and the same pass goes on to create the main", async () => {
    const h = harness();
    seedSet(h.client, cocoonSet({}, { finalizers: ["example.com/other"] }));

    await reconcile(h);

    const writes = h.client.writes().map((c) => `${c.verb} ${c.resource}`);
    assert.equal(writes[0], "update cocoonsets", "the finalizer comes before any other write");
    assert.ok(writes.includes("create pods"), `the main is created in the same pass: ${writes.join(", ")}`);
    assert.deepEqual(storedSet(h.client)?.metadata.finalizers, ["example.com/other", FINALIZER_COCOONSET]);
    assert.equal(h.client.all<Pod>(PODS, NS).length, 1);
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
