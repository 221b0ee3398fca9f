// pool status / claim / release over the in-memory client: what status prints for each member state,
// the claim the command creates and what -o name prints once the operator bound a set, --wait until
// the set runs, refusals (unknown pool, -o name on another command), and release's delete.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonClaim, CocoonPool } from "../../../src/apis/v1alpha1/types.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../../../src/controller/resources.ts";
import { claim } from "../../../src/plugin/commands/claim.ts";
import { pool } from "../../../src/plugin/commands/pool.ts";
import { release } from "../../../src/plugin/commands/release.ts";
import { EXIT_USAGE } from "../../../src/plugin/errors.ts";
import { boundMember } from "../../../src/pool/decide.ts";
import { cocoonClaim, cocoonPool, member } from "../../support/pool.ts";
import { rejection, run, type TestContext, testContext } from "./context.ts";

function seedPool(ctx: TestContext): CocoonPool {
  const p = ctx.fake.seed(COCOONPOOLS, cocoonPool({ replicas: 2 }, { name: "warm" }));
  ctx.fake.seed(COCOONSETS, member(p, "warm-aaaaa", "Running", { created: 0 }));
  ctx.fake.seed(COCOONSETS, member(p, "warm-bbbbb", "Pending", { created: 1 }));
  const old = cocoonPool({ template: { spec: { agent: { image: "old" } } } });
  ctx.fake.seed(COCOONSETS, member(old, "warm-ccccc", "Running", { created: 2 }));
  const taken = member(p, "warm-ddddd", "Running", { created: 3 });
  ctx.fake.seed(COCOONSETS, boundMember(taken, cocoonClaim("mine"), p, 0));
  return p;
}

/** Plays the operator: binds the claim to warm-aaaaa and, with ready, reports the set Running. */
function bind(ctx: TestContext, name: string, ready: boolean): void {
  const c = ctx.fake.peek<CocoonClaim>(COCOONCLAIMS, "ns", name) as CocoonClaim;
  ctx.fake.seed(COCOONCLAIMS, {
    ...c,
    status: {
      phase: "Bound",
      cocoonSetRef: { name: "warm-aaaaa" },
      conditions: [
        {
          type: "Ready",
          status: ready ? "True" : "False",
          reason: ready ? "SetRunning" : "Waking",
          message: "",
          lastTransitionTime: "2026-05-14T12:00:00Z",
        },
      ],
    },
  });
}

describe("pool status", () => {
  it("lists every member with its state and the claim that holds a claimed one", async () => {
    const ctx = testContext();
    seedPool(ctx);
    await run(ctx, pool, ["status", "warm"]);
    const out = ctx.stdout.join("\n");
    assert.match(out, /Warmth:\s+Running/);
    for (const [name, state] of [
      ["warm-aaaaa", "ready"],
      ["warm-bbbbb", "starting"],
      ["warm-ccccc", "outdated"],
      ["warm-ddddd", "claimed"],
    ]) {
      assert.match(out, new RegExp(`${name}\\s+${state}\\s`), `${name} ${state}`);
    }
    assert.match(out, /warm-ddddd\s+claimed\s+Running\s+mine/);
  });

  it("refuses an unknown pool and an unknown action", async () => {
    const ctx = testContext();
    ctx.fake.seed(COCOONPOOLS, cocoonPool({}, { name: "other" }));
    assert.match(
      (await rejection(run(ctx, pool, ["status", "nope"]))).message,
      /cocoonpool "nope" not found/,
    );
    const usage = await rejection(run(ctx, pool, ["scale", "other"]));
    assert.equal(usage.exitCode, EXIT_USAGE);
  });
});

describe("claim", () => {
  it("creates a claim of the pool with the given annotations, and prints it", async () => {
    const ctx = testContext();
    seedPool(ctx);
    await run(ctx, claim, [
      "warm",
      "--name",
      "c1",
      "--annotate",
      "cocoonset.cocoonstack.io/suspend-after-idle=30m",
    ]);
    const created = ctx.fake.peek<CocoonClaim>(COCOONCLAIMS, "ns", "c1");
    assert.deepEqual(created?.spec, { poolRef: { name: "warm" } });
    assert.deepEqual(created?.metadata.annotations, { "cocoonset.cocoonstack.io/suspend-after-idle": "30m" });
    assert.deepEqual(ctx.stdout, ["cocoonclaim.cocoonset.cocoonstack.io/c1 created"]);
  });

  it("--wait -o name prints only the bound set, once it runs", async () => {
    const ctx = testContext({ output: "name" });
    seedPool(ctx);
    let polls = 0;
    ctx.onSleep = () => {
      polls++;
      if (polls === 1) bind(ctx, "c1", false);
      if (polls === 3) bind(ctx, "c1", true);
    };
    await run(ctx, claim, ["warm", "--name", "c1", "--wait"]);
    assert.deepEqual(ctx.stdout, ["cocoonset.cocoonset.cocoonstack.io/warm-aaaaa"]);
    assert.ok(polls >= 3, "it waited past Bound for Ready");
  });

  it("a generated name starts with the pool's", async () => {
    const ctx = testContext();
    seedPool(ctx);
    await run(ctx, claim, ["warm"]);
    const [created] = ctx.fake.all<CocoonClaim>(COCOONCLAIMS, "ns");
    assert.match(created?.metadata.name ?? "", /^warm-[a-z0-9]{5}$/);
  });

  it("refuses an unknown pool before creating anything", async () => {
    const ctx = testContext();
    ctx.fake.seed(COCOONPOOLS, cocoonPool({}, { name: "other" }));
    await rejection(run(ctx, claim, ["nope"]));
    assert.deepEqual(ctx.fake.all(COCOONCLAIMS, "ns"), []);
  });
});

describe("release", () => {
  it("deletes the claim and says its set goes with it", async () => {
    const ctx = testContext();
    seedPool(ctx);
    ctx.fake.seed(COCOONCLAIMS, {
      ...cocoonClaim("mine"),
      status: { phase: "Bound", cocoonSetRef: { name: "warm-ddddd" } },
    });
    await run(ctx, release, ["mine"]);
    assert.equal(ctx.fake.peek(COCOONCLAIMS, "ns", "mine"), undefined);
    assert.deepEqual(ctx.stdout, [
      'cocoonclaim.cocoonset.cocoonstack.io/mine released (cocoonset "warm-ddddd" is deleted with it)',
    ]);
    assert.ok(
      ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "warm-ddddd"),
      "the plugin leaves the set to the operator",
    );
  });
});
