// The CocoonClaim reconciler over FakeClient: claims racing for members bind distinct sets by
// compare-and-swap on resourceVersion and the one left over waits Pending with a reason; a claim of an
// unknown pool waits too; a bound claim turns Ready with its set and then writes nothing; deleting a
// claim deletes its set before the claim's finalizer goes.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonClaim } from "../../../src/apis/v1alpha1/types.ts";
import { ApiError, ConflictError, NotFoundError } from "../../../src/controller/errors.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../../../src/controller/resources.ts";
import { ANN_RESTORE_HOLD, encodeRestoreHold, REASON_SET_HELD } from "../../../src/holds.ts";
import { claimReadySeconds, claimsTotal } from "../../../src/metrics/pool.ts";
import { ClaimReconciler } from "../../../src/pool/claimreconciler.ts";
import { boundMember, claimCandidates } from "../../../src/pool/decide.ts";
import {
  FINALIZER_COCOONCLAIM,
  FINALIZER_COCOONPOOL,
  LABEL_CLAIM,
  LABEL_POOL,
  REASON_BIND_REFUSED,
  REASON_NO_READY_MEMBER,
  REASON_POOL_NOT_FOUND,
} from "../../../src/pool/keys.ts";
import {
  cocoonClaim,
  cocoonPool,
  type FakePoolView,
  member,
  NS,
  POOL,
  poolHarness,
} from "../../support/pool.ts";

function setup() {
  const h = poolHarness();
  const reconciler = new ClaimReconciler({
    client: h.client,
    view: h.view,
    events: h.events,
    clock: h.clock,
    log: h.log,
  });
  const claimOf = (name: string) => h.client.peek<CocoonClaim>(COCOONCLAIMS, NS, name);
  return { ...h, reconciler, claimOf };
}

describe("ClaimReconciler", () => {
  /**
   * Seeds `members` ready members and `members + 1` claims, and reconciles every claim at once, each
   * reading the cache as it was before any bound (a cache behind the writes), through `reconcilerFor`.
   */
  async function race(
    members: number,
    reconcilerFor: (h: ReturnType<typeof setup>, view: FakePoolView) => (claim: string) => ClaimReconciler,
  ) {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool({ replicas: members }));
    for (let i = 0; i < members; i++)
      h.client.seed(COCOONSETS, member(pool, `m${i}`, "Running", { created: i }));
    const claims = Array.from({ length: members + 1 }, (_, i) =>
      h.client.seed(COCOONCLAIMS, cocoonClaim(`c${i}`, { finalizers: [FINALIZER_COCOONCLAIM] })),
    );
    const before = h.client.storeChanges.length;
    const stale = new Proxy(h.view, {
      get(target, prop, receiver) {
        target.lag = h.client.storeChanges.length - before;
        return Reflect.get(target, prop, receiver);
      },
    });
    const reconcilerOf = reconcilerFor(h, stale);
    await Promise.all(
      claims.map((claim) =>
        reconcilerOf(claim.metadata.name ?? "").reconcile({ namespace: NS, name: claim.metadata.name ?? "" }),
      ),
    );

    const sets = h.client.all<CocoonSet>(COCOONSETS, NS);
    const bound = sets.filter((cs) => cs.metadata.labels?.[LABEL_CLAIM] !== undefined);
    assert.equal(bound.length, members, "every member is bound");
    assert.equal(
      new Set(bound.map((cs) => cs.metadata.labels?.[LABEL_CLAIM])).size,
      members,
      "to distinct claims",
    );
    const statuses = claims.map((claim) => h.claimOf(claim.metadata.name ?? "")?.status);
    const pending = statuses.filter((s) => s?.phase === "Pending");
    assert.equal(pending.length, 1);
    assert.equal(pending[0]?.reason, REASON_NO_READY_MEMBER);
    for (const cs of bound) {
      const claim = h.claimOf(cs.metadata.labels?.[LABEL_CLAIM] ?? "");
      assert.equal(claim?.status?.phase, "Bound");
      assert.equal(
        claim?.status?.cocoonSetRef?.name,
        cs.metadata.name,
        "the claim names the set that names it",
      );
    }
    return h.client.calls.filter((c) => c.verb === "update" && c.resource === "cocoonsets").length;
  }

  for (const members of [1, 4]) {
    it(`${members + 1} claims reconciled at once by separate processes on ${members} ready members bind ${members} distinct sets and leave one Pending`, async () => {
      const updates = await race(
        members,
        (h, view) => () =>
          new ClaimReconciler({ client: h.client, view, events: h.events, clock: h.clock, log: h.log }),
      );
      assert.ok(updates > members, `binds lost the compare-and-swap and tried again (${updates} updates)`);
    });
  }

  it("the workers of one process pass over a member another is binding: no compare-and-swap lost to itself", async () => {
    let shared: ClaimReconciler | undefined;
    const updates = await race(4, (h, view) => () => {
      shared ??= new ClaimReconciler({
        client: h.client,
        view,
        events: h.events,
        clock: h.clock,
        log: h.log,
      });
      return shared;
    });
    assert.equal(updates, 4);
  });

  it("a claim of an unknown pool waits Pending with a reason, and binds once the pool has a ready member", async () => {
    const h = setup();
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(h.claimOf("c1")?.status?.phase, "Pending");
    assert.equal(h.claimOf("c1")?.status?.reason, REASON_POOL_NOT_FOUND);
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(h.claimOf("c1")?.status?.phase, "Bound");
  });

  it("adds its finalizer before it binds", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1"));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    const writes = h.client.writes().map((c) => `${c.verb} ${c.resource}`);
    assert.deepEqual(writes.slice(0, 2), ["update cocoonclaims", "update cocoonsets"]);
    assert.deepEqual(h.claimOf("c1")?.metadata.finalizers, [FINALIZER_COCOONCLAIM]);
  });

  it("a bound claim of a Running member is Ready at once, and a settled claim writes nothing", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    const ready = h.claimOf("c1")?.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "True");
    assert.ok(h.events.reasons().includes("ClaimReady"));
    h.client.clearCalls();
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.deepEqual(h.client.writes(), []);
  });

  it("a claim of a Suspended pool wakes its member and turns Ready only when the set is Running", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool({ warmth: "Suspended" }));
    h.client.seed(COCOONSETS, member(pool, "m0", "Suspended", { suspended: true }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    const set = h.client.peek<CocoonSet>(COCOONSETS, NS, "m0");
    assert.equal(set?.spec.suspend, false);
    assert.equal(set?.metadata.generation, 2, "the wake is a spec change");
    assert.equal(h.claimOf("c1")?.status?.conditions?.[0]?.reason, "Waking");
    // The CocoonSet controller wakes it.
    h.client.seed(COCOONSETS, {
      ...set,
      status: { ...set?.status, phase: "Running", observedGeneration: 2 },
    });
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(h.claimOf("c1")?.status?.conditions?.[0]?.status, "True");
  });

  it("a waking claim writes its status twice: bound, then Ready; not again for a cache behind its own write or a set step", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool({ warmth: "Suspended" }));
    h.client.seed(COCOONSETS, member(pool, "m0", "Suspended", { suspended: true }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    const statusWrites = () =>
      h.client.calls.filter((c) => c.resource === "cocoonclaims" && c.subresource === "status").length;
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(statusWrites(), 1);
    // A set event brings the claim while the cache still shows it from before its status write.
    h.view.lag = 1;
    assert.equal(h.view.claim(NS, "c1")?.status, undefined);
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(statusWrites(), 1, "the same status is not written over the stale copy");
    h.view.lag = 0;
    const set = () => h.client.peek<CocoonSet>(COCOONSETS, NS, "m0");
    for (const phase of ["Waking", "Pending"] as const) {
      h.client.seed(COCOONSETS, { ...set(), status: { ...set()?.status, phase, observedGeneration: 2 } });
      await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    }
    assert.equal(statusWrites(), 1, "the set's steps on the way up write nothing");
    assert.equal(h.claimOf("c1")?.status?.conditions?.[0]?.reason, "Waking");
    h.client.seed(COCOONSETS, {
      ...set(),
      status: { ...set()?.status, phase: "Running", observedGeneration: 2 },
    });
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(statusWrites(), 2);
    assert.equal(h.claimOf("c1")?.status?.conditions?.[0]?.status, "True");
  });

  it("deleting a claim deletes its set first, then drops the finalizer; other sets stay", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    const boundName = h.claimOf("c1")?.status?.cocoonSetRef?.name ?? "";
    const claim = h.claimOf("c1") as CocoonClaim;
    h.client.seed(COCOONCLAIMS, {
      ...claim,
      metadata: { ...claim.metadata, deletionTimestamp: "2026-01-01T00:01:00Z" },
    });
    h.client.clearCalls();
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource} ${c.name}`),
      [`delete cocoonsets ${boundName}`, "update cocoonclaims c1"],
    );
    const left = h.client.all<CocoonSet>(COCOONSETS, NS);
    assert.deepEqual(
      left.map((cs) => [cs.metadata.name, cs.metadata.labels?.[LABEL_POOL]]),
      [[boundName === "m0" ? "m1" : "m0", POOL]],
      "the unclaimed member stays in the pool",
    );
  });
});

describe("ClaimReconciler: binds are idempotent and judged by uid", () => {
  const holdOn = (cs: CocoonSet) => {
    cs.metadata.annotations = {
      ...cs.metadata.annotations,
      [ANN_RESTORE_HOLD]: encodeRestoreHold({
        restore: "undo",
        uid: "undo-uid",
        checkpoint: "ck",
        suspend: false,
      }),
    };
    return cs;
  };
  const boundTo = (h: ReturnType<typeof setup>, claim: string) =>
    h.client.all<CocoonSet>(COCOONSETS, NS).filter((cs) => cs.metadata.labels?.[LABEL_CLAIM] === claim);

  it("a bind the API server applied but whose reply was lost binds exactly one set, the one it applied", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    h.client.failAfterNext("update", "cocoonsets", new ApiError(504, "Timeout", "the reply was lost"));
    const before = h.client.storeChanges.length;
    await assert.rejects(h.reconciler.reconcile({ namespace: NS, name: "c1" }), /reply was lost/);
    const applied = boundTo(h, "c1");
    assert.equal(applied.length, 1, "the server applied the bind");
    // The cache has not seen the bind: it still shows both members unclaimed.
    h.view.lag = h.client.storeChanges.length - before;
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    const bound = boundTo(h, "c1");
    assert.deepEqual(
      bound.map((cs) => cs.metadata.name),
      applied.map((cs) => cs.metadata.name),
      "one claim, one set",
    );
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, applied[0]?.metadata.name);
  });

  it("after a lost bind reply, the next pass finds the set the server bound before it tries a member that turned ready since", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Pending", { created: 1 }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.client.patch(COCOONSETS, NS, "m1", { status: { phase: "Running" } }, { subresource: "status" });
    // The first pass's cache does not show m1 Running yet: m0 is the only candidate.
    h.view.lag = 1;
    h.client.failAfterNext("update", "cocoonsets", new ApiError(504, "Timeout", "the reply was lost"));
    await assert.rejects(h.reconciler.reconcile({ namespace: NS, name: "c1" }), /reply was lost/);
    // The next pass's cache shows m1 Running, and not the bind of m0; c1 tries m1 first.
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.deepEqual(
      boundTo(h, "c1").map((cs) => cs.metadata.name),
      ["m0"],
    );
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m0");
  });

  it("a claim created again under a deleted claim's name does not take that claim's dying set", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    const oldClaim = cocoonClaim("c1", { uid: "old-uid" });
    const dying = boundMember(member(pool, "old-set", "Running"), oldClaim, pool, 0);
    dying.metadata.finalizers = ["cocoonset.cocoonstack.io/finalizer"];
    dying.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    h.client.seed(COCOONSETS, dying);
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { uid: "new-uid", finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    const claim = h.claimOf("c1");
    assert.equal(claim?.status?.phase, "Bound");
    assert.equal(claim?.status?.cocoonSetRef?.name, "m0");
    assert.equal(claim?.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    const m0 = h.client.peek<CocoonSet>(COCOONSETS, NS, "m0");
    assert.equal(m0?.metadata.ownerReferences?.find((r) => r.controller)?.uid, "new-uid");
  });

  it("a claim does not bind a member a CocoonRestore holds: it waits Pending with the reason, then binds once the hold goes", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, holdOn(member(pool, "m0", "Running")));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(boundTo(h, "c1").length, 0);
    assert.equal(h.client.calls.filter((c) => c.verb === "update" && c.resource === "cocoonsets").length, 0);
    const claim = h.claimOf("c1");
    assert.equal(claim?.status?.phase, "Pending");
    assert.equal(claim?.status?.reason, REASON_SET_HELD);
    assert.match(claim?.status?.message ?? "", /held by CocoonRestore undo/);
    await h.client.patch(COCOONSETS, NS, "m0", { metadata: { annotations: { [ANN_RESTORE_HOLD]: null } } });
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(h.claimOf("c1")?.status?.phase, "Bound");
  });

  it("a hold the API server has and the cache does not show yet stops the bind: the conflict's re-read judges it", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    const held = holdOn(h.client.peek<CocoonSet>(COCOONSETS, NS, "m0") as CocoonSet);
    await h.client.patch(COCOONSETS, NS, "m0", {
      metadata: { annotations: { [ANN_RESTORE_HOLD]: held.metadata.annotations?.[ANN_RESTORE_HOLD] } },
    });
    h.view.lag = 1;
    await h.reconciler.reconcile({ namespace: NS, name: "c1" });
    assert.equal(boundTo(h, "c1").length, 0);
    assert.equal(h.claimOf("c1")?.status?.phase, "Pending");
  });

  it("a bind the API server refuses (an admission policy) leaves the claim Pending with reason BindRefused and a Warning, tries no other member, and fails the pass to back off", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    const denied =
      "cocoonsets.cocoonset.cocoonstack.io \"m1\" is forbidden: ValidatingAdmissionPolicy 'cocoon-bookkeeping' denied request";
    h.client.failNext("update", "cocoonsets", new ApiError(403, "Forbidden", denied));
    await assert.rejects(h.reconciler.reconcile({ namespace: NS, name: "c1" }), /denied request/);
    assert.equal(h.client.calls.filter((c) => c.verb === "update" && c.resource === "cocoonsets").length, 1);
    const claim = h.claimOf("c1");
    assert.equal(claim?.status?.phase, "Pending");
    assert.equal(claim?.status?.reason, REASON_BIND_REFUSED);
    assert.match(
      claim?.status?.message ?? "",
      /the API server refused the bind of CocoonSet m\d: .*denied request/,
    );
    assert.equal(claim?.status?.conditions?.find((c) => c.type === "Ready")?.reason, REASON_BIND_REFUSED);
    assert.equal(h.events.events.find((e) => e.reason === REASON_BIND_REFUSED)?.type, "Warning");
  });
});

describe("ClaimReconciler: the rules of a bind, its status and its release", () => {
  const updates = (h: ReturnType<typeof setup>) =>
    h.client.calls.filter((c) => c.verb === "update" && c.resource === "cocoonsets");
  const ready = (claim: CocoonClaim | undefined) =>
    claim?.status?.conditions?.find((c) => c.type === "Ready");
  const run = (h: ReturnType<typeof setup>, name = "c1") => h.reconciler.reconcile({ namespace: NS, name });

  it("a pool being deleted binds nothing: the claim waits Pending with reason PoolNotFound", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({}, { finalizers: [FINALIZER_COCOONPOOL], deletionTimestamp: "2026-01-01T00:00:00Z" }),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await run(h);
    assert.deepEqual(updates(h), []);
    assert.deepEqual(
      [h.claimOf("c1")?.status?.phase, h.claimOf("c1")?.status?.reason],
      ["Pending", REASON_POOL_NOT_FOUND],
    );
  });

  it("a bind that conflicts on a member still unclaimed, ready and not held tries that member once more", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    h.client.failNext(
      "update",
      "cocoonsets",
      new ConflictError(409, "Conflict", "the object has been modified"),
    );
    await run(h);
    assert.equal(updates(h).length, 2);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m0");
  });

  for (const [change, edit] of [
    ["is asked to suspend", (cs: CocoonSet) => ({ ...cs, spec: { ...cs.spec, suspend: true } })],
    ["left the pool", (cs: CocoonSet) => ({ ...cs, metadata: { ...cs.metadata, labels: { team: "a" } } })],
  ] as const) {
    it(`a bind that conflicts on a member that meanwhile ${change} moves on without trying it again`, async () => {
      const h = setup();
      const pool = h.client.seed(COCOONPOOLS, cocoonPool());
      h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
      h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
      await h.client.update(COCOONSETS, edit(h.client.peek<CocoonSet>(COCOONSETS, NS, "m0") as CocoonSet));
      h.view.lag = 1;
      h.client.clearCalls();
      await run(h);
      assert.equal(updates(h).length, 1, "the one update that lost the compare-and-swap");
      assert.equal(h.claimOf("c1")?.status?.phase, "Pending");
    });
  }

  it("a member deleted since the cache saw it is passed over for the next", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    h.client.failNext("update", "cocoonsets", new NotFoundError(404, "NotFound", "cocoonsets not found"));
    await run(h);
    assert.equal(updates(h).length, 2);
    assert.equal(h.claimOf("c1")?.status?.phase, "Bound");
  });

  it("after a bind whose answer was unsure, a set labelled with the claim's name that another claim controls is not taken", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(
      COCOONSETS,
      boundMember(member(pool, "foreign", "Running"), cocoonClaim("c1", { uid: "old-uid" }), pool, 0),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    h.client.failNext("update", "cocoonsets", new ApiError(504, "Timeout", "no answer"));
    await assert.rejects(run(h), /no answer/);
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m0");
  });

  it("a claim created again under a name this process bound for holds none of the old claim's bind", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m0");
    // Deleted, its set released, and created again, all before this process saw the delete.
    await h.client.delete(COCOONSETS, NS, "m0");
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { uid: "c1-again", finalizers: [FINALIZER_COCOONCLAIM] }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m1");
  });

  it("a member this process has just bound is not tried by its next claim while the cache does not show the bind", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    const members = [
      member(pool, "m0", "Running", { created: 0 }),
      member(pool, "m1", "Running", { created: 1 }),
    ];
    for (const cs of members) h.client.seed(COCOONSETS, cs);
    // c1 and a claim whose first choice is the member c1 takes.
    const taken = claimCandidates(pool, members, "c1")[0]?.metadata.name;
    const next = Array.from({ length: 20 }, (_, i) => `n${i}`).find(
      (name) => claimCandidates(pool, members, name)[0]?.metadata.name === taken,
    );
    assert.ok(next);
    for (const name of ["c1", next]) {
      h.client.seed(COCOONCLAIMS, cocoonClaim(name, { finalizers: [FINALIZER_COCOONCLAIM] }));
    }
    const before = h.client.storeChanges.length;
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, taken);
    h.view.lag = h.client.storeChanges.length - before;
    h.client.clearCalls();
    await run(h, next);
    assert.deepEqual(
      updates(h).map((c) => c.name),
      members.map((cs) => cs.metadata.name).filter((name) => name !== taken),
    );
  });

  for (const phase of ["Suspending", "Waking"] as const) {
    it(`a bound set found ${phase} makes the claim's reason Waking`, async () => {
      const h = setup();
      const pool = h.client.seed(COCOONPOOLS, cocoonPool({ warmth: "Suspended" }));
      const bound = boundMember(member(pool, "m0", phase, { suspended: true }), cocoonClaim("c1"), pool, 0);
      h.client.seed(COCOONSETS, bound);
      h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
      await run(h);
      assert.deepEqual([ready(h.claimOf("c1"))?.status, ready(h.claimOf("c1"))?.reason], ["False", "Waking"]);
    });
  }

  it("a bound set being deleted does not make its claim Ready", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    const bound = boundMember(member(pool, "m0", "Running"), cocoonClaim("c1"), pool, 0);
    bound.metadata.finalizers = ["cocoonset.cocoonstack.io/finalizer"];
    bound.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    h.client.seed(COCOONSETS, bound);
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await run(h);
    assert.equal(ready(h.claimOf("c1"))?.status, "False");
  });

  it("boundTime stays the bind's time, and ClaimReady is recorded once", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool({ warmth: "Suspended" }));
    h.client.seed(COCOONSETS, member(pool, "m0", "Suspended", { suspended: true }));
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    await run(h);
    const boundTime = h.claimOf("c1")?.status?.boundTime;
    assert.ok(boundTime);
    h.clock.advance(5_000);
    const set = h.client.peek<CocoonSet>(COCOONSETS, NS, "m0") as CocoonSet;
    h.client.seed(COCOONSETS, {
      ...set,
      status: { ...set.status!, phase: "Running", observedGeneration: 2 },
    });
    await run(h);
    await run(h);
    assert.equal(ready(h.claimOf("c1"))?.status, "True");
    assert.equal(h.claimOf("c1")?.status?.boundTime, boundTime);
    assert.equal(h.events.reasons().filter((r) => r === "ClaimReady").length, 1);
  });

  it("a claim waiting for a member counts one pending attempt, not one per pass", async () => {
    const h = setup();
    h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }));
    const pending = async () =>
      (await claimsTotal.get()).values.find((v) => v.labels.pool === POOL && v.labels.result === "pending")
        ?.value ?? 0;
    const before = await pending();
    await run(h);
    assert.equal((await pending()) - before, 1, "counted as it starts waiting");
    await run(h);
    assert.equal((await pending()) - before, 1);
  });

  it("a release deletes only the sets the claim controls, and a set gone meanwhile does not stop it", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, boundMember(member(pool, "mine", "Running"), cocoonClaim("c1"), pool, 0));
    h.client.seed(
      COCOONSETS,
      boundMember(member(pool, "foreign", "Running"), cocoonClaim("c1", { uid: "old-uid" }), pool, 0),
    );
    h.client.seed(
      COCOONCLAIMS,
      cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM], deletionTimestamp: "2026-01-01T00:00:00Z" }),
    );
    h.client.failNext("delete", "cocoonsets", new NotFoundError(404, "NotFound", "already gone"));
    await run(h);
    assert.deepEqual(
      h.client.calls.filter((c) => c.verb === "delete").map((c) => c.name),
      ["mine"],
    );
    assert.ok(h.client.peek(COCOONSETS, NS, "foreign"), "another claim's set stays");
    assert.equal(h.claimOf("c1"), undefined, "the finalizer went in the same pass");
  });

  it("a release whose set delete fails keeps the claim's finalizer: no bound set outlives its claim", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, boundMember(member(pool, "mine", "Running"), cocoonClaim("c1"), pool, 0));
    h.client.seed(
      COCOONCLAIMS,
      cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM], deletionTimestamp: "2026-01-01T00:00:00Z" }),
    );
    h.client.failNext("delete", "cocoonsets", new ApiError(503, "ServiceUnavailable", "try later"));
    await assert.rejects(run(h), /try later/);
    assert.deepEqual(h.claimOf("c1")?.metadata.finalizers, [FINALIZER_COCOONCLAIM]);
    assert.ok(h.client.peek(COCOONSETS, NS, "mine"));
  });
});

describe("ClaimReconciler: more rules of a bind and its status", () => {
  const updates = (h: ReturnType<typeof setup>) =>
    h.client.calls.filter((c) => c.verb === "update" && c.resource === "cocoonsets");
  const ready = (claim: CocoonClaim | undefined) =>
    claim?.status?.conditions?.find((c) => c.type === "Ready");
  const run = (h: ReturnType<typeof setup>, name = "c1") => h.reconciler.reconcile({ namespace: NS, name });
  const withClaim = (h: ReturnType<typeof setup>, metadata: Partial<CocoonClaim["metadata"]> = {}) =>
    h.client.seed(COCOONCLAIMS, cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM], ...metadata }));

  it("a request for a claim gone from the cache does nothing", async () => {
    const h = setup();
    assert.deepEqual(await run(h, "gone"), {});
    assert.deepEqual(h.client.calls, []);
  });

  it("adds exactly its finalizer to a claim that has none", async () => {
    const h = setup();
    const claim = cocoonClaim("c1");
    delete claim.metadata.finalizers;
    h.client.seed(COCOONCLAIMS, claim);
    await run(h);
    assert.deepEqual(h.claimOf("c1")?.metadata.finalizers, [FINALIZER_COCOONCLAIM]);
  });

  it("a set bound to it that its status does not name yet (a crash before the status write) is its set: no second bind", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, boundMember(member(pool, "m0", "Running"), cocoonClaim("c1"), pool, 0));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running"));
    withClaim(h);
    await run(h);
    assert.deepEqual(updates(h), []);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m0");
  });

  it("a claim whose status names its set binds no other, though the cache does not show the set as its own", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    withClaim(h);
    await run(h);
    const bound = h.claimOf("c1")?.status?.cocoonSetRef?.name ?? "";
    // Another process, whose cache does not show the bind's label.
    const m = h.client.peek<CocoonSet>(COCOONSETS, NS, bound) as CocoonSet;
    h.client.seed(COCOONSETS, { ...m, metadata: { ...m.metadata, labels: {} } });
    h.client.clearCalls();
    const other = new ClaimReconciler({
      client: h.client,
      view: h.view,
      events: h.events,
      clock: h.clock,
      log: h.log,
    });
    await other.reconcile({ namespace: NS, name: "c1" });
    assert.deepEqual(updates(h), []);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, bound);
  });

  it("binds without asking the API server first, unless its last bind's answer was unsure", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    withClaim(h);
    await run(h);
    assert.deepEqual(
      h.client.calls.filter((c) => c.verb === "list"),
      [],
    );
  });

  it("a member whose bind failed without an answer is tried again by the next pass", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    withClaim(h);
    h.client.failNext("update", "cocoonsets", new ApiError(503, "ServiceUnavailable", "busy"));
    await assert.rejects(run(h), /busy/);
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, "m0");
    assert.equal(h.events.events.find((e) => e.reason === "Bound")?.type, "Normal");
  });

  it("a bind conflicts twice: it tries that member no third time", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    withClaim(h);
    for (let i = 0; i < 3; i++)
      h.client.failNext("update", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    await run(h);
    assert.equal(updates(h).length, 2);
  });

  it("a bind the server applied whose reply was a conflict is recognised by uid: one claim, one set", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    withClaim(h);
    h.client.failAfterNext("update", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    await run(h);
    const bound = h.client
      .all<CocoonSet>(COCOONSETS, NS)
      .filter((cs) => cs.metadata.labels?.[LABEL_CLAIM] === "c1");
    assert.equal(bound.length, 1);
    assert.equal(h.claimOf("c1")?.status?.cocoonSetRef?.name, bound[0]?.metadata.name);
  });

  it("a member gone when the conflict's re-read looks is passed over", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    withClaim(h);
    h.client.failNext("update", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    h.client.failNext("get", "cocoonsets", new NotFoundError(404, "NotFound", "gone"));
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.phase, "Pending");
  });

  it("its set gone, or now another's, the claim says SetGone", async () => {
    for (const gone of ["deleted", "another's"] as const) {
      const h = setup();
      const pool = h.client.seed(COCOONPOOLS, cocoonPool());
      withClaim(h);
      h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
      await run(h);
      const m0 = h.client.peek<CocoonSet>(COCOONSETS, NS, "m0") as CocoonSet;
      if (gone === "deleted") await h.client.delete(COCOONSETS, NS, "m0");
      else h.client.seed(COCOONSETS, boundMember(member(pool, "m0", "Running"), cocoonClaim("c9"), pool, 0));
      assert.ok(m0);
      const fresh = new ClaimReconciler({
        client: h.client,
        view: h.view,
        events: h.events,
        clock: h.clock,
        log: h.log,
      });
      await fresh.reconcile({ namespace: NS, name: "c1" });
      assert.deepEqual(
        [ready(h.claimOf("c1"))?.status, ready(h.claimOf("c1"))?.reason],
        ["False", "SetGone"],
        gone,
      );
    }
  });

  it("a bound set of a Running pool on its way up is Starting, at the claim's generation", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, boundMember(member(pool, "m0", "Pending"), cocoonClaim("c1"), pool, 0));
    withClaim(h, { generation: 2 });
    await run(h);
    const status = h.claimOf("c1")?.status;
    assert.deepEqual([ready(h.claimOf("c1"))?.status, ready(h.claimOf("c1"))?.reason], ["False", "Starting"]);
    assert.deepEqual([status?.observedGeneration, ready(h.claimOf("c1"))?.observedGeneration], [2, 2]);
  });

  it("a Pending claim's Ready condition is False with its reason, at its generation, and only conditions", async () => {
    const h = setup();
    h.client.seed(COCOONPOOLS, cocoonPool());
    withClaim(h, { generation: 3 });
    await run(h);
    const status = h.claimOf("c1")?.status;
    assert.deepEqual(
      status?.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [["Ready", "False", REASON_NO_READY_MEMBER, 3]],
    );
    assert.equal(status?.observedGeneration, 3);
  });

  it("a held member that is not ready leaves the claim waiting for a ready one, not SetHeld", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    const booting = member(pool, "m0", "Pending");
    booting.metadata.annotations = {
      ...booting.metadata.annotations,
      [ANN_RESTORE_HOLD]: encodeRestoreHold({ restore: "undo", uid: "u", checkpoint: "ck", suspend: false }),
    };
    h.client.seed(COCOONSETS, booting);
    withClaim(h);
    await run(h);
    assert.equal(h.claimOf("c1")?.status?.reason, REASON_NO_READY_MEMBER);
  });

  it("a refused bind is said once while it stays the same", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool());
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    withClaim(h);
    for (let i = 0; i < 2; i++) {
      h.client.failNext("update", "cocoonsets", new ApiError(403, "Forbidden", "denied"));
      await assert.rejects(run(h), /denied/);
    }
    assert.equal(h.events.reasons().filter((r) => r === REASON_BIND_REFUSED).length, 1);
  });

  it("a release records a Normal Released event; a finalizer release that fails otherwise than NotFound fails the pass", async () => {
    for (const error of [
      new NotFoundError(404, "NotFound", "gone"),
      new ConflictError(409, "Conflict", "modified"),
    ]) {
      const h = setup();
      const pool = h.client.seed(COCOONPOOLS, cocoonPool());
      h.client.seed(COCOONSETS, boundMember(member(pool, "m0", "Running"), cocoonClaim("c1"), pool, 0));
      withClaim(h, { deletionTimestamp: "2026-01-01T00:00:00Z" });
      h.client.failNext("update", "cocoonclaims", error);
      if (error instanceof NotFoundError) {
        assert.deepEqual(await run(h), {});
        assert.equal(h.events.events.find((e) => e.reason === "Released")?.type, "Normal");
      } else await assert.rejects(run(h), /modified/);
    }
  });

  it("the ready-seconds histogram runs from this process first seeing the claim, not from its creation", async () => {
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool({ warmth: "Suspended" }, { name: "timed" }));
    h.client.seed(COCOONSETS, member(pool, "m0", "Suspended", { suspended: true }));
    h.client.seed(COCOONCLAIMS, {
      ...cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }),
      spec: { poolRef: { name: "timed" } },
    });
    const sum = async () =>
      (await claimReadySeconds.get()).values.find(
        (v) => v.metricName === "cocoon_operator_claim_ready_seconds_sum" && v.labels.pool === "timed",
      )?.value ?? 0;
    const before = await sum();
    h.clock.advance(60_000);
    await run(h);
    h.clock.advance(2_000);
    const set = h.client.peek<CocoonSet>(COCOONSETS, NS, "m0") as CocoonSet;
    h.client.seed(COCOONSETS, {
      ...set,
      status: { ...set.status!, phase: "Running", observedGeneration: 2 },
    });
    await run(h);
    await run(h);
    assert.equal(ready(h.claimOf("c1"))?.status, "True");
    assert.equal((await sum()) - before, 2);
  });

  it("counts its attempts under the documented results, and ClaimReady is a Normal event", async () => {
    const count = async (pool: string, result: string) =>
      (await claimsTotal.get()).values.find((v) => v.labels.pool === pool && v.labels.result === result)
        ?.value ?? 0;
    const h = setup();
    const pool = h.client.seed(COCOONPOOLS, cocoonPool({}, { name: "counted" }));
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONCLAIMS, {
      ...cocoonClaim("c1", { finalizers: [FINALIZER_COCOONCLAIM] }),
      spec: { poolRef: { name: "counted" } },
    });
    h.client.seed(COCOONCLAIMS, {
      ...cocoonClaim("c2", { finalizers: [FINALIZER_COCOONCLAIM] }),
      spec: { poolRef: { name: "missing" } },
    });
    const before = [
      await count("counted", "bound"),
      await count("counted", "conflict"),
      await count("missing", "pool_not_found"),
    ];
    h.client.failNext("update", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    await run(h, "c1");
    await run(h, "c2");
    const after = [
      await count("counted", "bound"),
      await count("counted", "conflict"),
      await count("missing", "pool_not_found"),
    ];
    assert.deepEqual(
      after.map((v, i) => v - (before[i] ?? 0)),
      [1, 1, 1],
    );
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === "ClaimReady").map((e) => e.type),
      ["Normal"],
    );
  });
});
