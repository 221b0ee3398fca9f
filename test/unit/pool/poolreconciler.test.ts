// The CocoonPool reconciler over FakeClient: its finalizer comes before its first member; it fills to
// replicas and waits for its cache to show what it created; a settled pool writes nothing; a delete
// of a member a claim bound meanwhile loses (resourceVersion precondition) and the bound set stays;
// a Suspended pool hibernates booted members by a guarded patch; deleting the pool deletes only its
// unclaimed members.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonPool } from "../../../src/apis/v1alpha1/types.ts";
import {
  AlreadyExistsError,
  ApiError,
  ConflictError,
  InvalidError,
  NotFoundError,
} from "../../../src/controller/errors.ts";
import { COCOONPOOLS, COCOONSETS } from "../../../src/controller/resources.ts";
import { ANN_RESTORE_HOLD, encodeRestoreHold, REASON_SET_HELD } from "../../../src/holds.ts";
import { poolMembers } from "../../../src/metrics/pool.ts";
import { boundMember, REFILL_HOLD_MS } from "../../../src/pool/decide.ts";
import {
  FINALIZER_COCOONPOOL,
  LABEL_CLAIM,
  LABEL_POOL,
  REASON_CREATE_REFUSED,
  REASON_DELETE_REFUSED,
  REASON_SUSPEND_REFUSED,
} from "../../../src/pool/keys.ts";
import { PoolReconciler } from "../../../src/pool/poolreconciler.ts";
import { cocoonClaim, cocoonPool, member, NS, POOL, poolHarness } from "../../support/pool.ts";

function setup() {
  const h = poolHarness();
  const reconciler = new PoolReconciler({
    client: h.client,
    view: h.view,
    expectations: h.expectations,
    events: h.events,
    clock: h.clock,
    log: h.log,
  });
  const reconcile = () => reconciler.reconcile({ namespace: NS, name: POOL });
  const sets = () => h.client.all<CocoonSet>(COCOONSETS, NS);
  const poolNow = () => h.client.peek<CocoonPool>(COCOONPOOLS, NS, POOL) as CocoonPool;
  /** Plays vk-cocoon and the CocoonSet controller: every set Running at its generation. */
  const runAll = () => {
    for (const cs of sets()) {
      h.client.seed(COCOONSETS, {
        ...cs,
        status: {
          phase: "Running",
          observedGeneration: cs.metadata.generation,
          readyAgents: 1,
          desiredAgents: 1,
          readyToolboxes: 0,
          desiredToolboxes: 0,
        },
      });
    }
  };
  return { ...h, reconcile, sets, poolNow, runAll };
}

describe("PoolReconciler", () => {
  it("adds its finalizer before its first member, then creates replicas members", async () => {
    const h = setup();
    h.client.seed(COCOONPOOLS, cocoonPool({ replicas: 3 }));
    await h.reconcile();
    const writes = h.client
      .writes()
      .map((c) => `${c.verb} ${c.resource}${c.subresource ? `/${c.subresource}` : ""}`);
    assert.deepEqual(writes, [
      "update cocoonpools",
      "create cocoonsets",
      "create cocoonsets",
      "create cocoonsets",
      "patch cocoonpools/status",
    ]);
    assert.deepEqual(h.poolNow().metadata.finalizers, [FINALIZER_COCOONPOOL]);
    assert.ok(
      h
        .sets()
        .every((cs) => cs.metadata.name?.startsWith(`${POOL}-`) && cs.metadata.labels?.[LABEL_POOL] === POOL),
    );
  });

  it("a filled, ready pool is Ready, and then a pass writes nothing", async () => {
    const h = setup();
    h.client.seed(COCOONPOOLS, cocoonPool({ replicas: 2 }));
    await h.reconcile();
    h.runAll();
    await h.reconcile();
    const status = h.poolNow().status;
    assert.equal(status?.ready, 2);
    assert.equal(status?.conditions?.[0]?.status, "True");
    assert.ok(h.events.reasons().includes("PoolReady"));
    h.client.clearCalls();
    await h.reconcile();
    assert.deepEqual(h.client.writes(), []);
  });

  it("a scale-down delete of a member that a claim bound meanwhile fails its precondition: the bound set stays", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 1 }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "m1", "Running", { created: 1 }));
    // The pool's cache still shows m1 unclaimed; a claim has just bound it.
    const before = h.client.storeChanges.length;
    const m1 = h.client.peek<CocoonSet>(COCOONSETS, NS, "m1") as CocoonSet;
    await h.client.update(COCOONSETS, boundMember(m1, cocoonClaim("c1"), pool, 0));
    h.view.lag = h.client.storeChanges.length - before;
    const result = await h.reconcile();
    assert.ok(
      h.client.calls.some((c) => c.verb === "delete" && c.name === "m1"),
      "it tried",
    );
    assert.equal(h.client.peek<CocoonSet>(COCOONSETS, NS, "m1")?.metadata.labels?.[LABEL_CLAIM], "c1");
    assert.ok((result.requeueAfterMs ?? 0) > 0, "and looks again");
  });

  it("a Suspended pool hibernates a booted member with a patch guarded by its resourceVersion", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 1, warmth: "Suspended" }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    const booted = h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    await h.reconcile();
    const patch = h.client.calls.find((c) => c.verb === "patch" && c.resource === "cocoonsets");
    assert.deepEqual(patch?.body, {
      metadata: { resourceVersion: booted.metadata.resourceVersion },
      spec: { suspend: true },
    });
    assert.equal(h.client.peek<CocoonSet>(COCOONSETS, NS, "m0")?.spec.suspend, true);
  });

  it("while a set claimed from it wakes, the pool creates no member; it refills once that set runs", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 2, warmth: "Suspended" }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Suspended", { suspended: true }));
    const claimed = boundMember(
      member(pool, "m1", "Suspended", { suspended: true }),
      cocoonClaim("c1"),
      pool,
      0,
    );
    h.client.seed(COCOONSETS, { ...claimed, status: { ...claimed.status!, phase: "Waking" } });
    const held = await h.reconcile();
    assert.ok(!h.client.writes().some((c) => c.verb === "create"), "no member created during the wake");
    assert.equal(held.requeueAfterMs, REFILL_HOLD_MS, "looks again when the hold ends at the latest");
    h.clock.advance(1_000);
    h.client.seed(COCOONSETS, { ...claimed, status: { ...claimed.status!, phase: "Running" } });
    h.client.clearCalls();
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.client.writes().filter((c) => c.verb === "create").length, 1, "refilled once it runs");
  });

  it("a claimed set that never comes up holds the refill for REFILL_HOLD_MS, no longer", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 1, warmth: "Suspended" }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    const claimed = boundMember(
      member(pool, "m1", "Suspended", { suspended: true }),
      cocoonClaim("c1"),
      pool,
      0,
    );
    h.client.seed(COCOONSETS, { ...claimed, status: { ...claimed.status!, phase: "Waking" } });
    await h.reconcile();
    h.clock.advance(REFILL_HOLD_MS - 1);
    await h.reconcile();
    assert.ok(!h.client.writes().some((c) => c.verb === "create"), "still held");
    h.clock.advance(1);
    await h.reconcile();
    assert.equal(h.client.writes().filter((c) => c.verb === "create").length, 1, "held no longer");
  });

  it("deleting the pool deletes its unclaimed members, leaves bound sets, then drops its finalizer", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 2 }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    const m1 = h.client.seed(COCOONSETS, member(pool, "m1", "Running"));
    h.client.seed(COCOONSETS, boundMember(m1, cocoonClaim("c1"), pool, 0));
    h.client.seed(COCOONPOOLS, {
      ...h.poolNow(),
      metadata: { ...h.poolNow().metadata, deletionTimestamp: "2026-01-01T00:01:00Z" },
    });
    await h.reconcile();
    await h.reconcile();
    assert.deepEqual(
      h.sets().map((cs) => cs.metadata.name),
      ["m1"],
    );
    assert.equal(h.client.peek(COCOONPOOLS, NS, POOL), undefined, "the finalizer went and the pool with it");
  });
});

describe("PoolReconciler: an object that cannot move says why", () => {
  it("a member create the API server refuses (a quota) sets Ready=False MemberCreateRefused with its answer, warns, and fails the pass to back off", async () => {
    const h = setup();
    h.client.seed(COCOONPOOLS, cocoonPool({ replicas: 1 }, { finalizers: [FINALIZER_COCOONPOOL] }));
    const quota =
      'cocoonsets.cocoonset.cocoonstack.io "warm-x" is forbidden: exceeded quota: sets, requested: count/cocoonsets.cocoonset.cocoonstack.io=1';
    h.client.failNext("create", "cocoonsets", new ApiError(403, "Forbidden", quota));
    await assert.rejects(h.reconcile(), /exceeded quota/);
    const ready = h.poolNow().status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, REASON_CREATE_REFUSED);
    assert.match(
      ready?.message ?? "",
      /0 of 1 members ready to claim \(Running\); the API server refused to create a member CocoonSet: .*exceeded quota/,
    );
    const warning = h.events.events.find((e) => e.reason === REASON_CREATE_REFUSED);
    assert.equal(warning?.type, "Warning");
  });
  it("a member delete the API server refuses (a policy on deletes) says so in Ready's message and a Warning, keeps the member, and fails the pass", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 0 }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    const denied = 'cocoonsets.cocoonset.cocoonstack.io "m0" is forbidden: deletes are frozen';
    h.client.failNext("delete", "cocoonsets", new ApiError(403, "Forbidden", denied));
    await assert.rejects(h.reconcile(), /deletes are frozen/);
    const ready = h.poolNow().status?.conditions?.find((c) => c.type === "Ready");
    // Claims are served (no member is wanted), so Ready stays True; its message says what is stuck.
    assert.equal(ready?.status, "True");
    assert.match(
      ready?.message ?? "",
      /; the API server refused to delete member CocoonSet m0: .*deletes are frozen/,
    );
    assert.equal(h.events.events.find((e) => e.reason === REASON_DELETE_REFUSED)?.type, "Warning");
    assert.ok(h.client.peek(COCOONSETS, NS, "m0"), "the member stays");
  });

  it("a member suspend the API server refuses says so on Ready and in a Warning, and fails the pass", async () => {
    const h = setup();
    const pool = h.client.seed(
      COCOONPOOLS,
      cocoonPool({ replicas: 1, warmth: "Suspended" }, { finalizers: [FINALIZER_COCOONPOOL] }),
    );
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    const invalid = 'CocoonSet.cocoonset.cocoonstack.io "m0" is invalid: spec: a policy refuses suspend';
    h.client.failNext("patch", "cocoonsets", new InvalidError(422, "Invalid", invalid));
    await assert.rejects(h.reconcile(), /a policy refuses suspend/);
    const ready = h.poolNow().status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.reason, REASON_SUSPEND_REFUSED);
    assert.match(ready?.message ?? "", /the API server refused to suspend member CocoonSet m0: /);
    assert.equal(h.events.events.find((e) => e.reason === REASON_SUSPEND_REFUSED)?.type, "Warning");
    assert.notEqual(h.client.peek<CocoonSet>(COCOONSETS, NS, "m0")?.spec.suspend, true);
  });
});

describe("PoolReconciler: the rules of its pass", () => {
  const seedPool = (h: ReturnType<typeof setup>, spec: Parameters<typeof cocoonPool>[0] = {}) =>
    h.client.seed(COCOONPOOLS, cocoonPool(spec, { finalizers: [FINALIZER_COCOONPOOL] }));
  const gauge = async (state: string) =>
    (await poolMembers.get()).values.find(
      (v) => v.labels.namespace === NS && v.labels.pool === POOL && v.labels.state === state,
    )?.value;

  it("while its cache does not show a member it created or deleted, it writes nothing more", async () => {
    const h = setup();
    seedPool(h, { replicas: 2 });
    const before = h.client.storeChanges.length;
    await h.reconcile();
    assert.equal(h.sets().length, 2);
    // The cache shows the pool, not the members its pass created nor its status.
    h.view.lag = h.client.storeChanges.length - before;
    h.client.clearCalls();
    assert.deepEqual(await h.reconcile(), { requeueAfterMs: 30_000 });
    assert.deepEqual(h.client.writes(), []);

    h.view.lag = 0;
    await h.client.patch(COCOONPOOLS, NS, POOL, { spec: { replicas: 1 } });
    const beforeDelete = h.client.storeChanges.length;
    await h.reconcile();
    assert.equal(h.client.writes().filter((c) => c.verb === "delete").length, 1);
    // The cache shows the member it deleted as it was.
    h.view.lag = h.client.storeChanges.length - beforeDelete;
    h.client.clearCalls();
    await h.reconcile();
    assert.deepEqual(h.client.writes(), []);
  });

  it("records a Normal SetHeld event for a member a restore holds, which it leaves as it is", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 0 });
    const held = member(pool, "m0", "Running");
    held.metadata.annotations = {
      ...held.metadata.annotations,
      [ANN_RESTORE_HOLD]: encodeRestoreHold({ restore: "undo", uid: "u", checkpoint: "ck", suspend: false }),
    };
    h.client.seed(COCOONSETS, held);
    await h.reconcile();
    assert.ok(h.client.peek(COCOONSETS, NS, "m0"));
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === REASON_SET_HELD).map((e) => e.type),
      ["Normal"],
    );
  });

  it("a member gone or changed before its suspend: the pass looks again in 100 ms instead of failing", async () => {
    for (const error of [
      new NotFoundError(404, "NotFound", "gone"),
      new ConflictError(409, "Conflict", "modified"),
    ]) {
      const h = setup();
      const pool = seedPool(h, { replicas: 1, warmth: "Suspended" });
      h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
      h.client.failNext("patch", "cocoonsets", error);
      assert.deepEqual(await h.reconcile(), { requeueAfterMs: 100 }, error.message);
    }
  });

  it("a member already gone when it deletes it counts as deleted: the pass goes on", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 0 });
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.failNext("delete", "cocoonsets", new NotFoundError(404, "NotFound", "gone"));
    assert.deepEqual(await h.reconcile(), {});
  });

  it("a generated name taken by chance fails nothing: the next pass draws another", async () => {
    const h = setup();
    seedPool(h, { replicas: 1 });
    h.client.failNext("create", "cocoonsets", new AlreadyExistsError(409, "AlreadyExists", "taken"));
    assert.deepEqual(await h.reconcile(), {});
    assert.equal(h.poolNow().status?.replicas, 0);
  });

  it("records PoolReady when Ready turns True, not again while it stays True", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 1 });
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    await h.reconcile();
    h.client.seed(COCOONSETS, boundMember(member(pool, "b0", "Running"), cocoonClaim("c1"), pool, 0));
    await h.reconcile();
    assert.equal(h.poolNow().status?.claimed, 1, "the status changed");
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === "PoolReady").map((e) => e.type),
      ["Normal"],
    );
  });

  it("the pool_members gauge shows its last pass, and goes with the pool", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 2 });
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    h.client.seed(COCOONSETS, member(pool, "m1", "Pending"));
    const old = cocoonPool({ replicas: 2, template: { spec: { agent: { image: "old" } } } });
    h.client.seed(COCOONSETS, member(old, "o0", "Pending"));
    h.client.seed(COCOONSETS, boundMember(member(pool, "b0", "Running"), cocoonClaim("c1"), pool, 0));
    h.client.failNext("delete", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    await h.reconcile();
    assert.deepEqual(
      [await gauge("ready"), await gauge("starting"), await gauge("outdated"), await gauge("claimed")],
      [1, 2, 1, 1],
    );
    await h.client.delete(COCOONPOOLS, NS, POOL);
    await h.reconcile();
    assert.equal(h.client.peek(COCOONPOOLS, NS, POOL), undefined, "its finalizer went");
    await h.reconcile();
    assert.deepEqual([await gauge("ready"), await gauge("starting")], [undefined, undefined]);
  });

  it("deleting the pool keeps its finalizer while a member's delete lost a race, and an already gone pool fails nothing", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 1 });
    h.client.seed(COCOONSETS, member(pool, "m0", "Running"));
    await h.client.delete(COCOONPOOLS, NS, POOL);
    h.client.failNext("delete", "cocoonsets", new ConflictError(409, "Conflict", "modified"));
    assert.deepEqual(await h.reconcile(), { requeueAfterMs: 100 });
    assert.deepEqual(h.poolNow().metadata.finalizers, [FINALIZER_COCOONPOOL]);
    h.client.failNext("update", "cocoonpools", new NotFoundError(404, "NotFound", "gone"));
    assert.deepEqual(await h.reconcile(), {});
    assert.ok(h.client.calls.some((c) => c.verb === "update" && c.resource === "cocoonpools"));
  });

  it("a finalizer removal that fails otherwise fails the pass, to be retried", async () => {
    const h = setup();
    seedPool(h, { replicas: 0 });
    await h.client.delete(COCOONPOOLS, NS, POOL);
    h.client.failNext("update", "cocoonpools", new ConflictError(409, "Conflict", "modified"));
    await assert.rejects(h.reconcile(), /modified/);
    assert.deepEqual(h.poolNow().metadata.finalizers, [FINALIZER_COCOONPOOL]);
  });

  it("its writes record Normal events and end the pass; an API error that is no refusal fails it as it is", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 1, warmth: "Suspended" });
    h.client.seed(COCOONSETS, member(pool, "booted", "Running", { created: 0 }));
    h.client.seed(COCOONSETS, member(pool, "surplus", "Pending", { created: 1 }));
    assert.deepEqual(await h.reconcile(), {});
    await h.client.patch(COCOONPOOLS, NS, POOL, { spec: { replicas: 2 } });
    await h.reconcile();
    assert.deepEqual(
      h.events.events.filter((e) => e.reason.startsWith("Member")).map((e) => [e.reason, e.type]),
      [
        ["MemberDeleted", "Normal"],
        ["MemberSuspending", "Normal"],
        ["MemberCreated", "Normal"],
      ],
    );
    for (const [verb, replicas] of [
      ["create", 3],
      ["delete", 0],
    ] as const) {
      await h.client.patch(COCOONPOOLS, NS, POOL, { spec: { replicas } });
      h.view.lag = 0;
      h.expectations.forget(`${NS}/${POOL}`);
      h.client.failNext(verb, "cocoonsets", new ApiError(500, "InternalError", "broken"));
      await assert.rejects(h.reconcile(), /broken/);
      assert.doesNotMatch(h.poolNow().status?.conditions?.[0]?.message ?? "", /refused/, verb);
    }
    await h.client.patch(COCOONPOOLS, NS, POOL, { spec: { replicas: 1 } });
    for (const cs of h.sets()) await h.client.delete(COCOONSETS, NS, cs.metadata.name ?? "");
    h.client.seed(COCOONSETS, member(pool, "booted-too", "Running"));
    h.expectations.forget(`${NS}/${POOL}`);
    h.client.failNext("patch", "cocoonsets", new ApiError(500, "InternalError", "broken"));
    await assert.rejects(h.reconcile(), /broken/);
    assert.doesNotMatch(h.poolNow().status?.conditions?.[0]?.message ?? "", /refused/, "suspend");
  });

  it("a refill hold that ended starts afresh when another claimed set comes up later", async () => {
    const h = setup();
    const pool = seedPool(h, { replicas: 1, warmth: "Suspended" });
    const claimed = (name: string, phase: "Waking" | "Running") => {
      const cs = boundMember(
        member(pool, name, "Suspended", { suspended: true }),
        cocoonClaim(name),
        pool,
        0,
      );
      return { ...cs, status: { ...cs.status!, phase } };
    };
    h.client.seed(COCOONSETS, claimed("first", "Waking"));
    await h.reconcile();
    h.client.seed(COCOONSETS, claimed("first", "Running"));
    h.clock.advance(1_000);
    await h.reconcile();
    h.clock.advance(REFILL_HOLD_MS);
    for (const cs of h.sets())
      if (cs.metadata.labels?.[LABEL_POOL]) await h.client.delete(COCOONSETS, NS, cs.metadata.name ?? "");
    h.expectations.forget(`${NS}/${POOL}`);
    h.client.seed(COCOONSETS, claimed("second", "Waking"));
    h.client.clearCalls();
    assert.deepEqual(await h.reconcile(), { requeueAfterMs: REFILL_HOLD_MS });
    assert.ok(!h.client.writes().some((c) => c.verb === "create"), "held again, from now");
  });
});
