// The pure pool decisions: how many members a pool creates and which it deletes (scale, a gradual
// template roll that never drops below replicas - 1 ready), which booted members a Suspended pool
// hibernates, the order a claim tries members in, and the member as a new one and as a bind writes it.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonPool } from "../../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT } from "../../../src/checkpoint/keys.ts";
import { ANN_RESTORE_HOLD, encodeRestoreHold } from "../../../src/holds.ts";
import { ANN_EXPIRE_AT, ANN_LAST_ACTIVITY, ANN_SUSPEND_AFTER_IDLE } from "../../../src/idle/policy.ts";
import {
  boundMember,
  claimCandidates,
  MAX_STARTING,
  memberReady,
  newMember,
  planPool,
  poolStatus,
  ROLL_SURGE,
  refillHold,
  templateHash,
  withoutFinalizer,
} from "../../../src/pool/decide.ts";
import {
  ANN_POOL_TEMPLATE,
  FINALIZER_COCOONPOOL,
  LABEL_CLAIM,
  LABEL_CLAIMED_FROM,
  LABEL_POOL,
} from "../../../src/pool/keys.ts";
import { cocoonClaim, cocoonPool, member } from "../../support/pool.ts";

const names = (sets: readonly CocoonSet[]) => sets.map((cs) => cs.metadata.name);
const running = (pool: CocoonPool, count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => member(pool, `m${from + i}`, "Running", { created: from + i }));

describe("planPool", () => {
  it("creates replicas members for an empty pool and nothing once they exist", () => {
    const pool = cocoonPool({ replicas: 3 });
    assert.deepEqual(planPool(pool, []), { create: 3, delete: [], suspend: [], held: [] });
    assert.deepEqual(planPool(pool, [member(pool, "a", undefined), ...running(pool, 2)]), {
      create: 0,
      delete: [],
      suspend: [],
      held: [],
    });
  });

  it(`starts at most ${MAX_STARTING} members at a time: a large pool fills in rounds`, () => {
    const pool = cocoonPool({ replicas: 20 });
    assert.equal(planPool(pool, []).create, MAX_STARTING);
    const booting = Array.from({ length: MAX_STARTING - 3 }, (_, i) => member(pool, `b${i}`, "Pending"));
    assert.equal(planPool(pool, [...booting, ...running(pool, 4)]).create, 3);
  });

  it("scales down by deleting members that are not ready first, then the newest", () => {
    const pool = cocoonPool({ replicas: 1 });
    const members = [...running(pool, 2), member(pool, "booting", "Pending", { created: 5 })];
    const plan = planPool(pool, members);
    assert.equal(plan.create, 0);
    assert.deepEqual(names(plan.delete), ["booting", "m1"]);
  });

  it("ignores members being deleted", () => {
    const pool = cocoonPool({ replicas: 2 });
    const going = member(pool, "going", "Running");
    going.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    assert.equal(planPool(pool, [going, ...running(pool, 1)]).create, 1);
  });

  it("deletes an outdated member that is not ready at once", () => {
    const old = cocoonPool({ replicas: 1 });
    const pool = cocoonPool({ replicas: 1, template: { spec: { agent: { image: "debian" } } } });
    const plan = planPool(pool, [member(old, "old", "Pending")]);
    assert.deepEqual(names(plan.delete), ["old"]);
    assert.equal(plan.create, 1);
  });

  for (const replicas of [1, 3, 5]) {
    it(`rolls ${replicas} members to a new template gradually: never below replicas - 1 ready, never above replicas + surge`, () => {
      const old = cocoonPool({ replicas });
      const pool = cocoonPool({ replicas, template: { spec: { agent: { image: "debian" } } } });
      let members = running(old, replicas);
      let created = 100;
      for (let step = 0; step < 4 * replicas + 4; step++) {
        const plan = planPool(pool, members);
        members = members.filter((cs) => !plan.delete.includes(cs));
        const ready = members.filter((cs) => memberReady(cs, "Running")).length;
        assert.ok(ready >= replicas - 1, `step ${step}: ${ready} ready`);
        // The new members boot within a step; the next plan sees them Running.
        members = members.map((cs) =>
          cs.status ? cs : member(pool, cs.metadata.name ?? "", "Running", { created: created++ }),
        );
        for (let i = 0; i < plan.create; i++)
          members.push(member(pool, `n${created}`, undefined, { created: created++ }));
        assert.ok(members.length <= replicas + ROLL_SURGE, `step ${step}: ${members.length} members`);
      }
      const hash = templateHash(pool);
      assert.equal(members.length, replicas);
      assert.ok(
        members.every(
          (cs) => cs.metadata.annotations?.[ANN_POOL_TEMPLATE] === hash && memberReady(cs, "Running"),
        ),
      );
    });
  }

  it("a Suspended pool hibernates its booted current members and counts Suspended ones ready", () => {
    const pool = cocoonPool({ replicas: 2, warmth: "Suspended" });
    const booted = member(pool, "booted", "Running");
    const asleep = member(pool, "asleep", "Suspended", { suspended: true });
    const plan = planPool(pool, [booted, asleep]);
    assert.deepEqual(names(plan.suspend), ["booted"]);
    assert.equal(plan.create, 0);
    assert.equal(memberReady(asleep, "Suspended"), true);
    assert.equal(memberReady(booted, "Suspended"), false);
    assert.equal(memberReady(asleep, "Running"), false);
  });

  it("neither deletes nor hibernates a member a CocoonRestore holds, and says which it left alone", () => {
    const held = (cs: CocoonSet) => {
      cs.metadata.annotations = {
        ...cs.metadata.annotations,
        [ANN_RESTORE_HOLD]: encodeRestoreHold({
          restore: "undo",
          uid: "u",
          checkpoint: "ck",
          suspend: false,
        }),
      };
      return cs;
    };
    const shrinking = cocoonPool({ replicas: 1 });
    const plan = planPool(shrinking, [
      held(member(shrinking, "newest", "Running", { created: 5 })),
      ...running(shrinking, 1, 1),
    ]);
    assert.deepEqual(names(plan.delete), []);
    assert.deepEqual(
      plan.held.map((h) => [h.member.metadata.name, h.held.holder]),
      [["newest", "restore"]],
    );
    const suspended = cocoonPool({ replicas: 1, warmth: "Suspended" });
    const booted = planPool(suspended, [held(member(suspended, "b", "Running"))]);
    assert.deepEqual(names(booted.suspend), []);
    assert.equal(booted.held.length, 1);
  });

  it("a member whose status is behind its generation is not ready", () => {
    const pool = cocoonPool();
    const cs = member(pool, "a", "Running");
    cs.metadata.generation = 2;
    assert.equal(memberReady(cs, "Running"), false);
  });
});

describe("poolStatus", () => {
  it("counts members by state and is Ready with replicas members ready", () => {
    const pool = cocoonPool({ replicas: 2 });
    const old = cocoonPool({ replicas: 2, template: { spec: { agent: { image: "old" } } } });
    const status = poolStatus(
      pool,
      [...running(pool, 1), member(pool, "b", "Pending"), member(old, "o", "Running")],
      4,
      0,
    );
    assert.equal(status.replicas, 3);
    assert.equal(status.ready, 2);
    assert.equal(status.starting, 1);
    assert.equal(status.outdated, 1);
    assert.equal(status.claimed, 4);
    assert.equal(status.selector, `${LABEL_POOL}=warm`);
    assert.equal(status.observedGeneration, 1);
    assert.equal(status.conditions?.[0]?.status, "True");
    assert.equal(poolStatus(pool, running(pool, 1), 0, 0).conditions?.[0]?.status, "False");
  });
});

describe("newMember", () => {
  it("carries the pool label, template hash, checkpoint and owner, and holds the idle policy back", () => {
    const pool = cocoonPool({
      fromCheckpoint: "golden",
      template: {
        metadata: { labels: { team: "a" }, annotations: { [ANN_SUSPEND_AFTER_IDLE]: "10m", note: "x" } },
        spec: { agent: { image: "ubuntu" } },
      },
    });
    const cs = newMember(pool, "warm-abcde");
    assert.deepEqual(cs.metadata.labels, { team: "a", [LABEL_POOL]: "warm" });
    assert.deepEqual(cs.metadata.annotations, {
      note: "x",
      [ANN_POOL_TEMPLATE]: templateHash(pool),
      [ANN_FROM_CHECKPOINT]: "golden",
    });
    assert.deepEqual(
      cs.metadata.ownerReferences?.map((ref) => [ref.kind, ref.name, ref.controller]),
      [["CocoonPool", "warm", true]],
    );
    assert.equal(cs.spec.suspend, undefined);
  });

  it("releases a main-only member's seat in a Suspended pool, not a group's", () => {
    assert.equal(newMember(cocoonPool({ warmth: "Suspended" }), "m").spec.hibernatePolicy, "release");
    const group = cocoonPool({
      warmth: "Suspended",
      template: { spec: { agent: { image: "u", replicas: 2 } } },
    });
    assert.equal(newMember(group, "m").spec.hibernatePolicy, undefined);
    assert.equal(newMember(cocoonPool(), "m").spec.hibernatePolicy, undefined);
  });

  it("hashes templates by content, not key order, and warmth and checkpoint count", () => {
    const a = cocoonPool({ template: { spec: { agent: { image: "u", mode: "clone" } } } });
    const b = cocoonPool({ template: { spec: { agent: { mode: "clone", image: "u" } } } });
    assert.equal(templateHash(a), templateHash(b));
    assert.notEqual(templateHash(a), templateHash({ ...a, spec: { ...a.spec, warmth: "Suspended" } }));
    assert.notEqual(templateHash(a), templateHash({ ...a, spec: { ...a.spec, fromCheckpoint: "c" } }));
  });
});

describe("claimCandidates", () => {
  it("tries ready unclaimed members only, current before outdated", () => {
    const pool = cocoonPool();
    const old = cocoonPool({ template: { spec: { agent: { image: "old" } } } });
    const taken = member(pool, "taken", "Running");
    taken.metadata.labels = { ...taken.metadata.labels, [LABEL_CLAIM]: "other" };
    const candidates = claimCandidates(
      pool,
      [member(old, "outdated", "Running"), member(pool, "booting", "Pending"), taken, ...running(pool, 2)],
      "c1",
    );
    assert.deepEqual(new Set(names(candidates.slice(0, 2))), new Set(["m0", "m1"]));
    assert.deepEqual(names(candidates.slice(2)), ["outdated"]);
  });

  it("spreads claims over the ready members: claims of different names try different members first", () => {
    const pool = cocoonPool();
    const members = running(pool, 8);
    const firsts = new Set(
      Array.from({ length: 16 }, (_, i) => claimCandidates(pool, members, `claim-${i}`)[0]?.metadata.name),
    );
    assert.ok(firsts.size >= 4, `${firsts.size} distinct first choices`);
  });
});

describe("boundMember", () => {
  it("moves the member from the pool to the claim, with the held-back policy, the claim's own, and awake", () => {
    const pool = cocoonPool({
      template: {
        metadata: {
          annotations: { [ANN_SUSPEND_AFTER_IDLE]: "10m", [ANN_EXPIRE_AT]: "2026-02-01T00:00:00Z" },
        },
        spec: { agent: { image: "ubuntu" } },
      },
    });
    const claim = cocoonClaim("c1", {
      annotations: { [ANN_SUSPEND_AFTER_IDLE]: "5m", "example.com/other": "no" },
    });
    const asleep = member(pool, "m", "Suspended", { suspended: true });
    const bound = boundMember(asleep, claim, pool, Date.parse("2026-01-01T01:00:00Z"));
    assert.equal(
      bound.metadata.resourceVersion,
      asleep.metadata.resourceVersion,
      "the compare-and-swap's version",
    );
    assert.equal(bound.metadata.labels?.[LABEL_POOL], undefined);
    assert.equal(bound.metadata.labels?.[LABEL_CLAIM], "c1");
    assert.equal(bound.metadata.labels?.[LABEL_CLAIMED_FROM], "warm");
    assert.deepEqual(
      bound.metadata.ownerReferences?.map((ref) => [ref.kind, ref.name, ref.uid, ref.controller]),
      [["CocoonClaim", "c1", "c1-uid", true]],
    );
    assert.equal(bound.metadata.annotations?.[ANN_SUSPEND_AFTER_IDLE], "5m");
    assert.equal(bound.metadata.annotations?.[ANN_EXPIRE_AT], "2026-02-01T00:00:00Z");
    assert.equal(bound.metadata.annotations?.[ANN_LAST_ACTIVITY], "2026-01-01T01:00:00Z");
    assert.equal(bound.metadata.annotations?.["example.com/other"], undefined);
    assert.equal(bound.spec.suspend, false);
  });

  it("leaves a Running member's spec as it is, so its generation does not move", () => {
    const pool = cocoonPool();
    const awake = member(pool, "m", "Running");
    const bound = boundMember(awake, cocoonClaim("c1"), pool, 0);
    assert.equal(bound.spec, awake.spec);
    assert.equal(bound.metadata.annotations?.[ANN_LAST_ACTIVITY], undefined);
  });
});

describe("pool rules a member's state decides", () => {
  it("a Running pool's member asked to suspend is not ready to claim, nor a Suspended pool's member asked to wake", () => {
    const pool = cocoonPool();
    const suspending = member(pool, "a", "Running", { suspended: true });
    assert.equal(memberReady(suspending, "Running"), false);
    const waking = member(pool, "b", "Suspended");
    assert.equal(memberReady(waking, "Suspended"), false);
  });

  it("a Suspended pool hibernates only members booted at their generation and not yet asked to", () => {
    const pool = cocoonPool({ replicas: 3, warmth: "Suspended" });
    const behind = member(pool, "behind", "Running", { created: 1 });
    behind.metadata.generation = 2;
    const asked = member(pool, "asked", "Running", { created: 2, suspended: true });
    const booted = member(pool, "booted", "Running", { created: 3 });
    assert.deepEqual(names(planPool(pool, [behind, asked, booted]).suspend), ["booted"]);
  });

  it("a member's template spec.suspend is dropped: every member boots first", () => {
    const pool = cocoonPool({
      warmth: "Suspended",
      template: { spec: { agent: { image: "ubuntu" }, suspend: true } },
    });
    assert.equal(newMember(pool, "m").spec.suspend, undefined);
  });

  it("a template with toolboxes is a group: its member keeps the template's hibernatePolicy", () => {
    const pool = cocoonPool({
      warmth: "Suspended",
      template: { spec: { agent: { image: "u" }, toolboxes: [{ name: "tb", image: "u" }] } },
    });
    assert.equal(newMember(pool, "m").spec.hibernatePolicy, undefined);
  });

  it("the status counts no member being deleted, and its Ready condition is for the pool's generation", () => {
    const pool = cocoonPool({ replicas: 2 }, { generation: 4 });
    const going = member(pool, "going", "Running");
    going.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    const status = poolStatus(pool, [going, ...running(pool, 1), member(pool, "b", "Pending")], 0, 0);
    assert.deepEqual([status.replicas, status.ready, status.starting], [2, 1, 1]);
    assert.equal(status.conditions?.[0]?.observedGeneration, 4);
  });

  it("a bind replaces only the controller reference: other owner references stay", () => {
    const pool = cocoonPool();
    const m = member(pool, "m", "Running");
    const other = { apiVersion: "v1", kind: "ConfigMap", name: "keep", uid: "cm-uid" };
    m.metadata.ownerReferences = [...(m.metadata.ownerReferences ?? []), other];
    const bound = boundMember(m, cocoonClaim("c1"), pool, 0);
    assert.deepEqual(
      bound.metadata.ownerReferences?.map((ref) => [ref.kind, ref.name, ref.controller ?? false]),
      [
        ["ConfigMap", "keep", false],
        ["CocoonClaim", "c1", true],
      ],
    );
  });

  it("a claimed set being deleted holds no refill: it will never run", () => {
    const pool = cocoonPool({ warmth: "Suspended" });
    const claimed = boundMember(member(pool, "m", "Waking"), cocoonClaim("c1"), pool, 0);
    assert.notEqual(refillHold([claimed], undefined, 0).until, undefined, "a wake holds the refill");
    claimed.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    assert.deepEqual(refillHold([claimed], undefined, 0), { since: undefined, until: undefined });
  });

  it("removing its finalizer leaves every other finalizer in place", () => {
    const pool = cocoonPool(
      {},
      { finalizers: ["foregroundDeletion", FINALIZER_COCOONPOOL, "example.com/keep"] },
    );
    assert.deepEqual(withoutFinalizer(pool, FINALIZER_COCOONPOOL).metadata.finalizers, [
      "foregroundDeletion",
      "example.com/keep",
    ]);
  });
});

describe("pool rules of the plan's order and the template hash", () => {
  it("scale-down takes members that are not ready first, oldest of them included, then the newest ready ones", () => {
    const pool = cocoonPool({ replicas: 1 });
    const members = [
      member(pool, "booting", "Pending", { created: 0 }),
      member(pool, "z-old", "Running", { created: 1 }),
      member(pool, "a-new", "Running", { created: 2 }),
    ];
    assert.deepEqual(names(planPool(pool, members).delete), ["booting", "a-new"]);
  });

  it("a Suspended pool hibernates none of the members its scale-down deletes", () => {
    const pool = cocoonPool({ replicas: 1, warmth: "Suspended" });
    const plan = planPool(pool, [
      member(pool, "old", "Running", { created: 0 }),
      member(pool, "new", "Running", { created: 1 }),
    ]);
    assert.deepEqual([names(plan.delete), names(plan.suspend)], [["new"], ["old"]]);
  });

  it("a member still booting is not hibernated, and one asked to hibernate is not ready in a Suspended pool", () => {
    const pool = cocoonPool({ replicas: 1, warmth: "Suspended" });
    assert.deepEqual(names(planPool(pool, [member(pool, "booting", "Pending")]).suspend), []);
    assert.equal(memberReady(member(pool, "asked", "Running", { suspended: true }), "Suspended"), false);
  });

  it("a change of toolboxes or of fromCheckpoint changes the hash (the pool rolls); key order does not", () => {
    const base = cocoonPool({
      template: { spec: { agent: { image: "u" }, toolboxes: [{ name: "a", image: "u" }] } },
    });
    const other = cocoonPool({
      template: { spec: { agent: { image: "u" }, toolboxes: [{ name: "b", image: "u" }] } },
    });
    assert.notEqual(templateHash(base), templateHash(other));
    assert.notEqual(
      templateHash({ ...base, spec: { ...base.spec, fromCheckpoint: "c1" } }),
      templateHash({ ...base, spec: { ...base.spec, fromCheckpoint: "c2" } }),
    );
    const spec = {
      agent: { image: "u", mode: "clone" as const, replicas: 1, backend: "firecracker" },
      suspend: false,
    };
    const reversed = Object.fromEntries(Object.entries(spec).reverse()) as typeof spec;
    reversed.agent = Object.fromEntries(Object.entries(spec.agent).reverse()) as typeof spec.agent;
    assert.equal(
      templateHash(cocoonPool({ template: { spec } })),
      templateHash(cocoonPool({ template: { spec: reversed } })),
    );
  });
});

describe("claimCandidates order", () => {
  it("each group is oldest first, rotated, whatever order the cache lists members in", () => {
    const pool = cocoonPool();
    const old = cocoonPool({ template: { spec: { agent: { image: "old" } } } });
    const newestFirst = [
      member(pool, "c3", "Running", { created: 3 }),
      member(pool, "c2", "Running", { created: 2 }),
      member(pool, "c1", "Running", { created: 1 }),
      member(old, "o3", "Running", { created: 6 }),
      member(old, "o2", "Running", { created: 5 }),
      member(old, "o1", "Running", { created: 4 }),
    ];
    const rotations = (items: string[]) =>
      items.map((_, i) => [...items.slice(i), ...items.slice(0, i)].join(","));
    for (const claim of ["a", "b", "c", "d"]) {
      const order = names(claimCandidates(pool, newestFirst, claim)) as string[];
      assert.ok(rotations(["c1", "c2", "c3"]).includes(order.slice(0, 3).join(",")), `${claim}: ${order}`);
      assert.ok(rotations(["o1", "o2", "o3"]).includes(order.slice(3).join(",")), `${claim}: ${order}`);
    }
  });
});
