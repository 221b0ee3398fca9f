// Warm pools end to end (docs/pools.md) on the real API server, registry and vk-cocoon simulator with
// the in-process operator: a Running pool fills and a claim binds a ready member, which turns Ready at
// once and carries the claim's idle policy, while the pool replenishes; a settled pool and a settled
// claim cost no API write and no registry call; claims racing for fewer ready members bind distinct
// sets and the one left over waits Pending; /scale drives the pool; a template change rolls the
// unclaimed members gradually and leaves bound ones alone; deleting a claim deletes its set; and
// kubectl cocoon claim / pool status / release do the same from the command line.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type { CocoonPoolSpec } from "../../src/apis/v1alpha1/types.ts";
import { systemClock } from "../../src/clock.ts";
import { metricsRegistry } from "../../src/controller/metrics.ts";
import { ANN_LAST_ACTIVITY, ANN_SUSPEND_AFTER_IDLE } from "../../src/idle/policy.ts";
import { log } from "../../src/log.ts";
import { EXIT_OK } from "../../src/plugin/errors.ts";
import { ClaimReconciler } from "../../src/pool/claimreconciler.ts";
import { templateHash } from "../../src/pool/decide.ts";
import { MemberExpectations } from "../../src/pool/expectations.ts";
import { ANN_POOL_TEMPLATE, LABEL_CLAIM, LABEL_CLAIMED_FROM, LABEL_POOL } from "../../src/pool/keys.ts";
import { PoolReconciler } from "../../src/pool/poolreconciler.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { expectCode, runCocoon } from "../support/pluginrun.ts";
import {
  createClaim,
  createPool,
  deleteClaim,
  getClaim,
  getPool,
  poolMembers,
  poolsPath,
  scalePool,
  waitClaimReady,
  waitPoolReady,
} from "../support/poolapi.ts";
import { getSet, objectEvents, setPods, setsPath } from "../support/setapi.ts";
import { SettledPassProbe } from "../support/settledpass.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv } from "../support/setwait.ts";

const env = testEnv();
const suffix = randomBytes(3).toString("hex");
const nodePool = `pool-${suffix}`;
let ns: string;
let e2e: SetEnv | undefined;
let probe: SettledPassProbe;

before(async () => {
  probe = new SettledPassProbe(env.registry);
  e2e = await startSetEnv(env, "pool", {
    nodes: [{ name: `pool-node-${suffix}`, pool: nodePool }],
    registry: probe.registry,
  });
  ns = e2e.ns;
  probe.attach(e2e.operator.operator);
  assert.equal(e2e.operator.operator.pools.isAvailable, true, "the test environment serves the pool kinds");
});

after(async () => {
  await e2e?.stop();
});

const spec = (replicas: number): CocoonPoolSpec => ({
  replicas,
  warmth: "Running",
  template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
});

async function claimMetric(result: string, pool: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric("cocoon_operator_claims_total")?.get();
  return (
    metric?.values.find(
      (v) => v.labels.result === result && v.labels.pool === pool && v.labels.namespace === ns,
    )?.value ?? 0
  );
}

describe("a Running pool", () => {
  it("fills, binds a claim to a ready member that is Ready at once with the claim's policy, and replenishes", {
    timeout: 120_000,
  }, async () => {
    await createPool(env, ns, "run", spec(2));
    const filled = await waitPoolReady(env, ns, "run", 2);
    assert.equal(filled.status?.selector, `${LABEL_POOL}=run`);
    assert.equal(filled.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    const readyBefore = new Set((await poolMembers(env, ns, "run")).map((cs) => cs.metadata.name));

    await createClaim(env, ns, "c-run", "run", {
      [ANN_SUSPEND_AFTER_IDLE]: "1h",
      "example.com/kept-off": "x",
    });
    const claim = await waitClaimReady(env, ns, "c-run");
    assert.equal(claim.status?.phase, "Bound");
    const setName = claim.status?.cocoonSetRef?.name ?? "";
    assert.ok(readyBefore.has(setName), "the claim took a member that was already ready");
    const cs = await getSet(env, ns, setName);
    assert.equal(cs.metadata.labels?.[LABEL_POOL], undefined);
    assert.equal(cs.metadata.labels?.[LABEL_CLAIM], "c-run");
    assert.equal(cs.metadata.labels?.[LABEL_CLAIMED_FROM], "run");
    assert.deepEqual(
      cs.metadata.ownerReferences?.map((ref) => [ref.kind, ref.name]),
      [["CocoonClaim", "c-run"]],
    );
    assert.equal(cs.metadata.annotations?.[ANN_SUSPEND_AFTER_IDLE], "1h");
    assert.ok(cs.metadata.annotations?.[ANN_LAST_ACTIVITY], "the idle clock starts at the bind");
    assert.equal(cs.metadata.annotations?.["example.com/kept-off"], undefined);
    assert.equal(cs.status?.phase, "Running");
    const reasons = (await objectEvents(env, ns, "c-run")).map((e) => e.reason);
    assert.ok(reasons.includes("Bound") && reasons.includes("ClaimReady"), reasons.join(","));

    const replenished = await waitPoolReady(env, ns, "run", 2);
    assert.equal(replenished.status?.claimed, 1);
    assert.ok(!(await poolMembers(env, ns, "run")).some((m) => m.metadata.name === setName));
  });

  it("once settled, a pool pass and a claim pass make no API write and no registry call", {
    timeout: 60_000,
  }, async () => {
    const operator = e2e?.operator.operator;
    assert.ok(operator);
    await probe.waitForQuiet(3_000);
    const before = probe.totals();
    const poolRun = await probe.run(
      ns,
      ["run"],
      (op, events) =>
        new PoolReconciler({
          client: op.client,
          view: op.pools,
          expectations: new MemberExpectations(systemClock),
          events,
          clock: systemClock,
          log,
        }),
    );
    const claimRun = await probe.run(
      ns,
      ["c-run"],
      (op, events) =>
        new ClaimReconciler({ client: op.client, view: op.pools, events, clock: systemClock, log }),
    );
    for (const run of [poolRun, claimRun]) {
      assert.deepEqual(run.requests, {}, JSON.stringify(run.requests));
      assert.equal(run.writes, 0);
      assert.equal(run.registry, 0);
      assert.equal(run.events, 0);
      assert.deepEqual(run.results, ["{}"]);
    }
    assert.ok(probe.totals().apiRequests >= before.apiRequests, "the counters count");
  });

  it("claims racing for fewer ready members bind distinct sets; the one left over waits Pending, then binds a new member", {
    timeout: 120_000,
  }, async () => {
    await createPool(env, ns, "race", spec(3));
    await waitPoolReady(env, ns, "race", 3);
    const original = new Set((await poolMembers(env, ns, "race")).map((cs) => cs.metadata.name));
    const pendingBefore = await claimMetric("pending", "race");
    const claims = ["r0", "r1", "r2", "r3"];
    await Promise.all(claims.map((name) => createClaim(env, ns, name, "race")));
    const ready = await Promise.all(claims.map((name) => waitClaimReady(env, ns, name, 90_000)));
    const bound = ready.map((claim) => claim.status?.cocoonSetRef?.name ?? "");
    assert.equal(new Set(bound).size, 4, `distinct sets: ${bound.join(", ")}`);
    assert.equal(
      bound.filter((name) => original.has(name)).length,
      3,
      "the three ready members went to three claims",
    );
    for (const [i, name] of bound.entries()) {
      assert.equal(
        (await getSet(env, ns, name)).metadata.labels?.[LABEL_CLAIM],
        claims[i],
        "each set names its one claim",
      );
    }
    assert.ok(
      (await claimMetric("pending", "race")) > pendingBefore,
      "one claim was Pending for want of a member",
    );
  });

  it("scales through /scale, deleting unclaimed members only", { timeout: 120_000 }, async () => {
    await waitPoolReady(env, ns, "race", 3);
    const scale = await apiRequest(env, "GET", `${poolsPath(ns)}/race/scale`);
    assert.equal(scale.status, 200);
    assert.equal(scale.body.status.selector, `${LABEL_POOL}=race`);
    assert.equal(scale.body.status.replicas, 3);
    await scalePool(env, ns, "race", 1);
    await waitPoolReady(env, ns, "race", 1);
    await waitFor("only one unclaimed member left", async () =>
      (await poolMembers(env, ns, "race")).length === 1 ? true : undefined,
    );
    for (const name of ["r0", "r1", "r2", "r3"]) {
      const claim = await getClaim(env, ns, name);
      const cs = await getSet(env, ns, claim?.status?.cocoonSetRef?.name ?? "");
      assert.ok(!cs.metadata.deletionTimestamp, `${name}'s set is untouched`);
    }
    assert.equal((await getPool(env, ns, "race")).status?.claimed, 4);
  });

  it("rolls a template change over the unclaimed members gradually and leaves bound sets alone", {
    timeout: 150_000,
  }, async () => {
    const before = await getPool(env, ns, "run");
    const boundName = (await getClaim(env, ns, "c-run"))?.status?.cocoonSetRef?.name ?? "";
    const boundHash = (await getSet(env, ns, boundName)).metadata.annotations?.[ANN_POOL_TEMPLATE];
    const patched = await apiRequest(
      env,
      "PATCH",
      `${poolsPath(ns)}/run`,
      { spec: { template: { metadata: { labels: { rollout: "2" } } } } },
      "application/merge-patch+json",
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const pool = await getPool(env, ns, "run");
    assert.notEqual(templateHash(pool), templateHash(before));
    let lowest = Number.POSITIVE_INFINITY;
    await waitFor(
      "every unclaimed member on the new template and ready",
      async () => {
        const members = await poolMembers(env, ns, "run");
        lowest = Math.min(lowest, members.filter((cs) => cs.status?.phase === "Running").length);
        const done =
          members.length === 2 &&
          members.every(
            (cs) =>
              cs.metadata.annotations?.[ANN_POOL_TEMPLATE] === templateHash(pool) &&
              cs.metadata.labels?.rollout === "2",
          );
        const status = (await getPool(env, ns, "run")).status;
        return done && status?.ready === 2 && status.outdated === 0 ? true : undefined;
      },
      120_000,
    );
    assert.ok(lowest >= 1, `never below replicas - 1 Running members (lowest seen ${lowest})`);
    const bound = await getSet(env, ns, boundName);
    assert.equal(
      bound.metadata.annotations?.[ANN_POOL_TEMPLATE],
      boundHash,
      "the bound set kept its template",
    );
    assert.equal(bound.metadata.labels?.rollout, undefined);
  });

  it("deleting a claim deletes its set (pods and all) and the pool counts one claimed fewer", {
    timeout: 90_000,
  }, async () => {
    const setName = (await getClaim(env, ns, "c-run"))?.status?.cocoonSetRef?.name ?? "";
    await deleteClaim(env, ns, "c-run");
    await waitFor(
      "the claim gone",
      async () => ((await getClaim(env, ns, "c-run")) ? undefined : true),
      60_000,
    );
    await waitFor(
      "the set and its pods gone",
      async () => {
        const res = await apiRequest(env, "GET", `${setsPath(ns)}/${setName}`);
        return res.status === 404 && (await setPods(env, ns, setName)).length === 0 ? true : undefined;
      },
      60_000,
    );
    await waitFor("the pool counts no claimed member", async () =>
      (await getPool(env, ns, "run")).status?.claimed === 0 ? true : undefined,
    );
    const remaining = (await apiRequest(env, "GET", `${setsPath(ns)}`)).body.items as CocoonSet[];
    assert.ok(
      remaining.some((cs) => cs.metadata.labels?.[LABEL_POOL] === "run"),
      "the pool's members stay",
    );
  });

  it("kubectl cocoon claim --wait -o name prints the Running set; pool status shows it claimed; release --wait removes both", {
    timeout: 90_000,
  }, async () => {
    const claimed = await runCocoon(ns, ["claim", "run", "--name", "plug", "--wait", "-o", "name"]);
    expectCode(claimed, EXIT_OK);
    const setName = claimed.stdout.trim().replace("cocoonset.cocoonset.cocoonstack.io/", "");
    assert.equal((await getClaim(env, ns, "plug"))?.status?.cocoonSetRef?.name, setName);
    assert.equal((await getSet(env, ns, setName)).status?.phase, "Running");
    const status = await runCocoon(ns, ["pool", "status", "run"]);
    expectCode(status, EXIT_OK);
    assert.match(status.stdout, new RegExp(`${setName}\\s+claimed\\s+Running\\s+plug`));
    const released = await runCocoon(ns, ["release", "plug", "--wait=1m"]);
    expectCode(released, EXIT_OK);
    assert.equal(await getClaim(env, ns, "plug"), undefined);
    assert.equal((await apiRequest(env, "GET", `${setsPath(ns)}/${setName}`)).status, 404);
  });
});
