// The pool and claim controllers' wiring (src/pool/setup.ts) and their cached reads (src/pool/catalog.ts)
// over real informers: a pool's pass runs on every change to one of its member sets or to a set
// claimed from it; a member turning ready or let go, or the pool appearing, wakes every Pending claim
// of the pool; a bound set's change wakes its claim. A pool's members are the sets it controls that
// carry its label; a claim's set is the one it controls that carries the claim's label.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonClaim } from "../../../src/apis/v1alpha1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import { maxConcurrentReconciles } from "../../../src/controller/metrics.ts";
import { COCOONCLAIMS, COCOONPOOLS, COCOONSETS } from "../../../src/controller/resources.ts";
import { createOperatorInformers } from "../../../src/informers/informers.ts";
import { PoolCatalog } from "../../../src/pool/catalog.ts";
import { boundMember } from "../../../src/pool/decide.ts";
import { LABEL_POOL } from "../../../src/pool/keys.ts";
import { setupPoolControllers } from "../../../src/pool/setup.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";
import { cocoonClaim, cocoonPool, member, NS, POOL } from "../../support/pool.ts";
import { drain, ListWatch, RecordingManager, settle } from "../../support/wiring.ts";

const running: ListWatch[] = [];
afterEach(() => {
  for (const lw of running.splice(0)) lw.close();
});

/** The catalog over informers that have listed what `seed` put in the store. */
async function cached(seed: (client: FakeClient) => void, namespace?: string) {
  const client = new FakeClient();
  seed(client);
  const lw = new ListWatch(client);
  running.push(lw);
  const informers = createOperatorInformers(lw, { namespace });
  const catalog = new PoolCatalog(lw, informers.cocoonSets, { namespace });
  assert.equal(catalog.isAvailable, false, "not before the controllers are set up");
  for (const informer of [catalog.pools, catalog.claims, informers.cocoonSets]) informer.start(lw.signal);
  await Promise.all([catalog.pools, catalog.claims, informers.cocoonSets].map((i) => i.waitForSync()));
  return { client, lw, informers, catalog };
}

/** Both controllers set up over the cached store. */
async function wired(seed: (client: FakeClient) => void, claimConcurrency?: number) {
  const c = await cached(seed);
  const manager = new RecordingManager();
  const [pools, claims] = setupPoolControllers(manager, {
    client: c.client,
    catalog: c.catalog,
    informers: c.informers,
    events: new RecordingEvents(),
    clock: new FakeClock(),
    log: silentLogger(),
    ...(claimConcurrency === undefined ? {} : { claimConcurrency }),
  });
  assert.ok(pools && claims);
  // The keys the informers' first objects queued.
  await drain(pools);
  await drain(claims);
  return { ...c, manager, pools, claims };
}

const pool = cocoonPool();
const other = cocoonPool({}, { name: "other", uid: "other-uid" });

/** A member of `pool` bound to the claim `claim` (its labels and controller moved to the claim). */
const boundTo = (claim: string, name: string) =>
  boundMember(member(pool, name, "Running"), cocoonClaim(claim), pool, 0);

describe("PoolCatalog", () => {
  it("a pool's members are the sets it controls that carry its label; a claim's set likewise; claimed sets by their label", async () => {
    const unlabelled = member(pool, "unlabelled", "Running");
    delete unlabelled.metadata.labels;
    const notControlled = member(pool, "not-controlled", "Running");
    notControlled.metadata.ownerReferences = notControlled.metadata.ownerReferences?.map((ref) => ({
      ...ref,
      controller: false,
    }));
    const c = await cached((client) => {
      client.seed(COCOONPOOLS, pool);
      client.seed(COCOONSETS, member(pool, "m0", "Running"));
      client.seed(COCOONSETS, member(other, "o0", "Running"));
      client.seed(COCOONSETS, unlabelled);
      client.seed(COCOONSETS, notControlled);
      client.seed(COCOONSETS, boundTo("c1", "b1"));
      client.seed(COCOONSETS, boundMember(member(other, "b2", "Running"), cocoonClaim("c2"), other, 0));
      client.seed(COCOONCLAIMS, cocoonClaim("c1"));
      client.seed(COCOONCLAIMS, { ...cocoonClaim("c3"), spec: { poolRef: { name: "other" } } });
    });
    const names = (sets: readonly CocoonSet[]) => sets.map((cs) => cs.metadata.name).sort();
    assert.deepEqual(names(c.catalog.members(NS, POOL)), ["m0"]);
    assert.deepEqual(names(c.catalog.members("elsewhere", POOL)), []);
    assert.equal(c.catalog.boundSet(NS, "c1")?.metadata.name, "b1");
    assert.equal(c.catalog.boundSet(NS, "c3"), undefined);
    assert.deepEqual(names(c.catalog.claimed(NS, POOL)), ["b1"]);
    assert.deepEqual(names(c.catalog.claimed(NS, "other")), ["b2"]);
    assert.equal(c.catalog.pool(NS, POOL)?.metadata.name, POOL);
    assert.equal(c.catalog.claim(NS, "c1")?.metadata.name, "c1");
    assert.equal(c.catalog.set(NS, "m0")?.metadata.name, "m0");
    assert.deepEqual(
      c.catalog.claimsOfPool(NS, POOL).map((claim) => claim.metadata.name),
      ["c1"],
    );
  });

  it("with a watch namespace, holds the pools, claims and sets of that namespace alone", async () => {
    const elsewhere = { namespace: "elsewhere" };
    const c = await cached((client) => {
      client.seed(COCOONPOOLS, pool);
      client.seed(COCOONPOOLS, cocoonPool({}, elsewhere));
      client.seed(COCOONCLAIMS, cocoonClaim("c1", elsewhere));
    }, NS);
    assert.ok(c.catalog.pool(NS, POOL));
    assert.equal(c.catalog.pool("elsewhere", POOL), undefined);
    assert.equal(c.catalog.claim("elsewhere", "c1"), undefined);
  });

  it("a claim's set needs both: not one its label names but another controls, nor one it controls without its label", async () => {
    const c = await cached((client) => {
      const foreign = boundTo("c1", "b1");
      foreign.metadata.ownerReferences = [{ ...foreign.metadata.ownerReferences![0]!, name: "someone-else" }];
      client.seed(COCOONSETS, foreign);
      const unlabelled = boundTo("c2", "b2");
      delete unlabelled.metadata.labels;
      client.seed(COCOONSETS, unlabelled);
    });
    assert.equal(c.catalog.boundSet(NS, "c1"), undefined);
    assert.equal(c.catalog.boundSet(NS, "c2"), undefined);
  });
});

describe("setupPoolControllers", () => {
  it("a set wakes the pool it is a member of, was claimed from, or that controls it; nothing else", async () => {
    const ownedOnly = member(pool, "owned-only", "Running");
    delete ownedOnly.metadata.labels?.[LABEL_POOL];
    const notController = member(other, "not-controller", "Running");
    delete notController.metadata.labels?.[LABEL_POOL];
    notController.metadata.ownerReferences = notController.metadata.ownerReferences?.map((ref) => ({
      ...ref,
      controller: false,
    }));
    const w = await wired((client) => {
      client.seed(COCOONPOOLS, pool);
      client.seed(COCOONSETS, member(pool, "m0", "Running"));
      client.seed(COCOONSETS, boundTo("c1", "b1"));
      client.seed(COCOONSETS, ownedOnly);
      client.seed(COCOONSETS, notController);
      client.seed(COCOONSETS, {
        ...member(pool, "plain", "Running"),
        metadata: { name: "plain", namespace: NS },
      });
    });
    for (const [set, pools] of [
      ["m0", [`${NS}/${POOL}`]],
      ["b1", [`${NS}/${POOL}`]],
      ["owned-only", [`${NS}/${POOL}`]],
      ["not-controller", []],
      ["plain", []],
    ] as const) {
      await w.lw.modified(COCOONSETS, NS, set);
      assert.deepEqual(await drain(w.pools), pools, set);
      await drain(w.claims);
    }
  });

  it("a pool's change and an unclaimed member's change wake the pool's Pending claims; a bound set's change wakes its claim", async () => {
    const w = await wired((client) => {
      client.seed(COCOONPOOLS, pool);
      client.seed(COCOONPOOLS, other);
      client.seed(COCOONSETS, member(pool, "m0", "Running"));
      client.seed(COCOONSETS, boundTo("c-bound", "b1"));
      client.seed(COCOONSETS, {
        ...member(pool, "plain", "Running"),
        metadata: { name: "plain", namespace: NS },
      });
      client.seed(COCOONCLAIMS, cocoonClaim("c-new"));
      client.seed(COCOONCLAIMS, { ...cocoonClaim("c-pending"), status: { phase: "Pending" } } as CocoonClaim);
      client.seed(COCOONCLAIMS, { ...cocoonClaim("c-bound"), status: { phase: "Bound" } } as CocoonClaim);
      client.seed(COCOONCLAIMS, { ...cocoonClaim("c-other"), spec: { poolRef: { name: "other" } } });
    });
    const waiting = [`${NS}/c-new`, `${NS}/c-pending`];
    await w.lw.modified(COCOONPOOLS, NS, POOL);
    assert.deepEqual(await drain(w.claims), waiting, "the pool appearing or changing");
    await w.lw.modified(COCOONSETS, NS, "m0");
    assert.deepEqual(await drain(w.claims), waiting, "a member turning ready or let go");
    await w.lw.modified(COCOONSETS, NS, "b1");
    assert.deepEqual(await drain(w.claims), [`${NS}/c-bound`], "the bound set's own claim alone");
    await w.lw.modified(COCOONSETS, NS, "plain");
    assert.deepEqual(await drain(w.claims), [], "a set of no pool or claim");
    await w.lw.modified(COCOONCLAIMS, NS, "c-bound");
    assert.deepEqual(await drain(w.claims), [`${NS}/c-bound`], "a claim by its own key");
    assert.equal(w.catalog.isAvailable, true, "the catalog answers once the controllers are set up");
  });

  it("hands the manager both controllers and the pool, claim and set informers they read", async () => {
    const w = await wired(() => {});
    assert.deepEqual(w.manager.controllersToStart, [w.pools, w.claims]);
    assert.deepEqual(w.manager.informersToStart, [w.catalog.pools, w.catalog.claims, w.informers.cocoonSets]);
  });

  it("each controller runs its reconciler over the catalog: the pool fills up, a claim binds its ready member", async () => {
    const w = await wired((client) => {
      client.seed(COCOONPOOLS, cocoonPool({ replicas: 2 }));
      client.seed(COCOONSETS, member(pool, "m0", "Running"));
      client.seed(COCOONCLAIMS, cocoonClaim("c1"));
    });
    w.pools.queue.add(`${NS}/${POOL}`);
    w.claims.queue.add(`${NS}/c1`);
    w.pools.start();
    w.claims.start();
    const claim = () => w.client.peek<CocoonClaim>(COCOONCLAIMS, NS, "c1");
    const sets = () => w.client.all<CocoonSet>(COCOONSETS, NS).map((cs) => cs.metadata.name ?? "");
    for (let i = 0; i < 100 && !(claim()?.status?.phase === "Bound" && sets().length === 2); i++)
      await settle();
    w.pools.stopNow(new Error("test over"));
    w.claims.stopNow(new Error("test over"));
    assert.equal(claim()?.status?.cocoonSetRef?.name, "m0");
    assert.deepEqual(
      sets().map((name) => (name === "m0" ? name : name.replace(/-[a-z0-9]{5}$/, "-<generated>"))),
      ["m0", `${POOL}-<generated>`],
      "the pool created the member it lacked",
    );
  });

  it("runs 2 pool workers and 64 claim workers unless told otherwise", async () => {
    const workers = async () => {
      const { values } = await maxConcurrentReconciles.get();
      return Object.fromEntries(values.map((v) => [v.labels.controller, v.value]));
    };
    const w = await wired(() => {});
    w.pools.start();
    w.claims.start();
    assert.deepEqual(await workers().then((all) => [all.cocoonpool, all.cocoonclaim]), [2, 64]);
    w.pools.stopNow(new Error("test over"));
    w.claims.stopNow(new Error("test over"));
    const configured = await wired(() => {}, 3);
    configured.claims.start();
    assert.equal((await workers()).cocoonclaim, 3);
    configured.claims.stopNow(new Error("test over"));
  });
});
