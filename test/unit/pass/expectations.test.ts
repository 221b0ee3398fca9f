// Created-pod expectations: a pass over a pod cache that does not show the pods an earlier pass
// created yet creates none of them again and reads nothing for them; it waits (no status patch,
// requeue within the poll). Once the cache shows them the pass is normal; once the TTL passes with
// the pod still missing, it is created again.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { reconcileSubAgents } from "../../../src/cocoonset/steps/subagents.ts";
import { reconcileToolboxes } from "../../../src/cocoonset/steps/toolboxes.ts";
import type { Result } from "../../../src/controller/reconciler.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { CREATE_EXPECTATION_TTL_MS, PodCreateExpectations } from "../../../src/pass/expectations.ts";
import {
  type CachedHibernation,
  type CocoonSetView,
  CREATE_PENDING_POLL_MS,
} from "../../../src/pass/pass.ts";
import type { FakeView } from "../../support/fakeclient.ts";
import { IMAGE, ready, type ScalingHarness, scalingHarness, scalingSet } from "../../support/scaling.ts";

const NS = "ns";

/** The FakeView with some pods left out: an informer cache that has not caught up with creates. */
class StaleView implements CocoonSetView {
  readonly hidden = new Set<string>();
  private readonly inner: FakeView;

  constructor(inner: FakeView) {
    this.inner = inner;
  }

  getCocoonSet(namespace: string, name: string): CocoonSet | undefined {
    return this.inner.getCocoonSet(namespace, name);
  }

  listSetsNamingVM(vm: string): readonly CocoonSet[] {
    return this.inner.listSetsNamingVM(vm);
  }

  listSetPods(namespace: string, setName: string): Pod[] {
    return this.inner
      .listSetPods(namespace, setName)
      .filter((pod) => !this.hidden.has(pod.metadata.name ?? ""));
  }

  listHibernations(namespace: string): readonly CachedHibernation[] {
    return this.inner.listHibernations(namespace);
  }
}

interface Fixture {
  h: ScalingHarness;
  view: StaleView;
  expectations: PodCreateExpectations;
  reconcile(): Promise<Result>;
}

function fixture(h: ScalingHarness): Fixture {
  const view = new StaleView(h.view);
  const expectations = new PodCreateExpectations(h.clock);
  const reconciler = new CocoonSetReconciler({ ...h.deps, view, expectations });
  return {
    h,
    view,
    expectations,
    reconcile: () => reconciler.reconcile({ namespace: NS, name: "demo" }, new AbortController().signal),
  };
}

/** A set with a Ready main and `replicas` sub-agents wanted, none created yet. */
function withReadyMain(replicas: number): Fixture {
  return fixture(
    scalingHarness(scalingSet({ agent: { image: IMAGE, replicas } }), (stored) => [
      ready(buildMainPod(stored)),
    ]),
  );
}

const SUBS = ["demo-1", "demo-2", "demo-3"];

describe("created-pod expectations in the reconcile pass", () => {
  it("sub-agents created, cache stale: no create, no registry read, no write; the pass waits", async () => {
    const f = withReadyMain(3);
    assert.deepEqual(await f.reconcile(), { requeue: true });
    assert.deepEqual(f.h.created().sort(), SUBS);
    assert.equal(f.expectations.size, 3);

    for (const name of SUBS) f.view.hidden.add(name);
    f.h.client.clearCalls();
    f.h.registry.calls.length = 0;
    const result = await f.reconcile();
    assert.deepEqual(result, { requeueAfterMs: CREATE_PENDING_POLL_MS });
    assert.deepEqual(f.h.client.calls, []);
    assert.deepEqual(f.h.registry.calls, []);
    assert.equal(f.expectations.size, 3);
  });

  it("once the cache shows them the pass is normal and the expectations are gone", async () => {
    const f = withReadyMain(3);
    await f.reconcile();
    for (const name of SUBS) f.view.hidden.add(name);
    await f.reconcile();

    // One of them shows: the pass still waits for the other two.
    f.view.hidden.delete("demo-2");
    f.h.client.clearCalls();
    assert.deepEqual(await f.reconcile(), { requeueAfterMs: CREATE_PENDING_POLL_MS });
    assert.equal(f.expectations.size, 2);
    assert.deepEqual(f.h.client.calls, []);

    f.view.hidden.clear();
    f.h.client.clearCalls();
    f.h.registry.calls.length = 0;
    await f.reconcile();
    assert.equal(f.expectations.size, 0);
    assert.deepEqual(f.h.created(), []);
    assert.deepEqual(f.h.registry.calls, []);
    // The status now counts the sub-agents (the pass patched it from a current classification).
    assert.equal(f.h.set().status?.agents?.length, 4);
  });

  it("after the TTL with the pod still missing, it is created again", async () => {
    const f = withReadyMain(3);
    await f.reconcile();
    // Deleted before the cache ever saw them.
    for (const name of SUBS) {
      f.view.hidden.add(name);
      f.h.client.finishPodDeletion(NS, name);
    }
    f.h.clock.advance(CREATE_EXPECTATION_TTL_MS - 500);
    f.h.client.clearCalls();
    // Within the TTL: waits, and no longer than the TTL has left.
    assert.deepEqual(await f.reconcile(), { requeueAfterMs: 500 });
    assert.deepEqual(f.h.created(), []);

    f.h.clock.advance(500);
    f.view.hidden.clear();
    f.h.registry.calls.length = 0;
    assert.deepEqual(await f.reconcile(), { requeue: true });
    assert.deepEqual(f.h.created().sort(), SUBS);
    assert.equal(f.h.registry.callsOf("getSnapshot").length, 3);
    assert.equal(f.expectations.size, 3);
  });

  it("a main created, cache stale: no duplicate create, no registry read", async () => {
    const f = fixture(scalingHarness(scalingSet()));
    assert.deepEqual(await f.reconcile(), { requeue: true });
    assert.deepEqual(f.h.created(), ["demo-0"]);

    f.view.hidden.add("demo-0");
    f.h.client.clearCalls();
    f.h.registry.calls.length = 0;
    assert.deepEqual(await f.reconcile(), { requeueAfterMs: CREATE_PENDING_POLL_MS });
    assert.deepEqual(f.h.client.calls, []);
    assert.deepEqual(f.h.registry.calls, []);

    // The cache catches up: the main is there, not Ready yet (Pending), and nothing is created.
    f.view.hidden.clear();
    f.h.client.clearCalls();
    await f.reconcile();
    assert.deepEqual(f.h.created(), []);
    assert.equal(f.expectations.size, 0);
    assert.equal(f.h.set().status?.phase, "Pending");
  });

  it("without expectations a stale cache still gets a second create (409), as before", async () => {
    const h = scalingHarness(scalingSet());
    const view = new StaleView(h.view);
    const { expectations: _none, ...deps } = h.deps;
    const reconciler = new CocoonSetReconciler({ ...deps, view });
    const reconcile = () =>
      reconciler.reconcile({ namespace: NS, name: "demo" }, new AbortController().signal);
    await reconcile();
    view.hidden.add("demo-0");
    h.client.clearCalls();
    await reconcile();
    assert.deepEqual(h.created(), ["demo-0"]);
  });

  it("a pod whose add event lands after the pass listed its pods is still not created by that pass", async () => {
    const h = scalingHarness(scalingSet({ agent: { image: IMAGE, replicas: 2 } }), (stored) => [
      ready(buildMainPod(stored)),
    ]);
    await reconcileSubAgents(h.pass());
    assert.deepEqual(h.created().sort(), ["demo-1", "demo-2"]);

    // The next pass listed before the pods reached the cache...
    const stale = h.pass();
    stale.pods.subAgents.clear();
    for (const name of ["demo-1", "demo-2"]) stale.pods.all.delete(name);
    // ...and their add events end the expectations while it runs (the informer handler).
    for (const name of ["demo-1", "demo-2"]) {
      h.deps.expectations?.observe(h.pod(name) ?? assert.fail(`${name} stored`));
    }
    assert.equal(h.deps.expectations?.size, 0);
    h.client.clearCalls();
    h.registry.calls.length = 0;
    await reconcileSubAgents(stale);
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(stale.awaitingCreates, true);
  });

  it("a pending toolbox is neither created nor read from the API server", async () => {
    const cs = scalingSet({
      agent: { image: IMAGE, replicas: 0 },
      toolboxes: [{ name: "tb", image: IMAGE }],
    });
    const h = scalingHarness(cs, (stored) => [ready(buildMainPod(stored))]);
    const expectations = new PodCreateExpectations(h.clock);
    h.deps.expectations = expectations;
    const first = h.pass();
    await reconcileToolboxes(first);
    assert.deepEqual(h.created(), ["demo-tb"]);

    // A pass built before the cache shows it (the harness's view is current, so drop it from the pass).
    const second = h.pass();
    second.pods.toolboxes.delete("tb");
    second.pods.all.delete("demo-tb");
    h.client.clearCalls();
    await reconcileToolboxes(second);
    assert.deepEqual(h.client.calls, []);
    assert.equal(second.awaitingCreates, true);
    assert.equal(second.changed, false);
  });
});

describe("PodCreateExpectations", () => {
  function pod(name: string, uid: string, terminating = false): Pod {
    return {
      metadata: {
        name,
        namespace: NS,
        uid,
        ...(terminating ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
      },
      spec: { containers: [] },
    };
  }

  it("ends on the created pod or any live pod of the name, not on an older terminating one", () => {
    const e = new PodCreateExpectations(new FakeClock());
    e.created(NS, "a", "new", "demo");
    e.observe(pod("a", "old", true));
    assert.notEqual(e.pendingMs(NS, "a"), undefined);
    e.observe(pod("a", "new", true));
    assert.equal(e.pendingMs(NS, "a"), undefined);

    e.created(NS, "b", "new", "demo");
    e.observe(pod("b", "someone-else"));
    assert.equal(e.pendingMs(NS, "b"), undefined);
  });

  it("a delete of the created pod ends it; the delete of an older pod does not", () => {
    const e = new PodCreateExpectations(new FakeClock());
    e.created(NS, "a", "new", "demo");
    e.observeDeleted(pod("a", "old"));
    assert.notEqual(e.pendingMs(NS, "a"), undefined);
    e.observeDeleted(pod("a", "new"));
    assert.equal(e.pendingMs(NS, "a"), undefined);
  });

  it("a create answered without a uid ends on the delete of any pod of that name", () => {
    const e = new PodCreateExpectations(new FakeClock());
    e.created(NS, "a", undefined, "demo");
    e.observe(pod("a", "whichever", true));
    assert.notEqual(e.pendingMs(NS, "a"), undefined, "a terminating pod of the name is not the created one");
    e.observeDeleted(pod("a", "whichever"));
    assert.equal(e.pendingMs(NS, "a"), undefined);
    assert.equal(e.awaitsCreates(NS, "demo"), false);
  });

  it("awaitsCreates holds while any pod of the set is expected, though another one lapsed", () => {
    const clock = new FakeClock();
    const e = new PodCreateExpectations(clock, 1_000);
    e.created(NS, "demo-0", "u0", "demo");
    clock.advance(600);
    e.created(NS, "demo-1", "u1", "demo");
    clock.advance(400);
    assert.equal(e.pendingMs(NS, "demo-1"), 600);
    assert.equal(e.awaitsCreates(NS, "demo"), true, "demo-1 is still expected");
  });

  it("the sweep drops the lapsed expectations only: one still pending keeps the pod from a second create", () => {
    const clock = new FakeClock();
    const e = new PodCreateExpectations(clock, 1_000);
    e.created(NS, "demo-0", "u0", "demo");
    clock.advance(900);
    e.created(NS, "demo-1", "u1", "demo");
    clock.advance(100);
    // A TTL after the last sweep: this create sweeps, and demo-0 has lapsed, demo-1 has not.
    e.created(NS, "other-0", "u2", "other");
    assert.equal(e.size, 2);
    assert.equal(e.pendingMs(NS, "demo-1"), 900);
    assert.deepEqual([...e.pendingForSet(NS, "demo")], [["demo-1", clock.now() + 900]]);
  });

  it("a pod created again for another set is expected of that set alone", () => {
    const e = new PodCreateExpectations(new FakeClock());
    e.created(NS, "a-b-0", "u0", "a");
    e.created(NS, "a-b-0", "u1", "a-b");
    assert.equal(e.pendingForSet(NS, "a").size, 0);
    assert.equal(e.awaitsCreates(NS, "a"), false);
    assert.deepEqual([...e.pendingForSet(NS, "a-b").keys()], ["a-b-0"]);
  });

  it("awaitsCreates answers per set while a create is expected, and not once it is seen or lapses", () => {
    const clock = new FakeClock();
    const e = new PodCreateExpectations(clock, 1_000);
    e.created(NS, "demo-0", "u0", "demo");
    e.created(NS, "demo-1", "u1", "demo");
    assert.equal(e.awaitsCreates(NS, "demo"), true);
    assert.equal(e.awaitsCreates(NS, "other"), false);
    e.observe(pod("demo-0", "u0"));
    assert.equal(e.awaitsCreates(NS, "demo"), true, "demo-1 is still expected");
    clock.advance(1_000);
    assert.equal(e.awaitsCreates(NS, "demo"), false, "lapsed");
  });

  it("expires after the TTL, is per set, and sweeps expired entries of sets never looked at again", () => {
    const clock = new FakeClock();
    const e = new PodCreateExpectations(clock, 1_000);
    e.created(NS, "demo-1", "u1", "demo");
    e.created(NS, "other-1", "u2", "other");
    assert.deepEqual([...e.pendingForSet(NS, "demo").keys()], ["demo-1"]);
    assert.equal(e.pendingForSet(NS, "nope").size, 0);
    assert.equal(e.pendingForSet("ns2", "demo").size, 0);
    clock.advance(400);
    assert.equal(e.pendingMs(NS, "demo-1"), 600);
    clock.advance(600);
    assert.equal(e.pendingMs(NS, "demo-1"), undefined);
    assert.equal(e.size, 1);
    e.created(NS, "demo-2", "u3", "demo");
    // The sweep on that create dropped other-1 (expired, never looked up).
    assert.equal(e.size, 1);
    assert.equal(e.pendingForSet(NS, "other").size, 0);
  });
});

describe("a settled set with expectations wired", () => {
  it("still makes no call", async () => {
    const f = fixture(
      scalingHarness(scalingSet({ agent: { image: IMAGE, replicas: 1 } }), (stored) => [
        ready(buildMainPod(stored)),
      ]),
    );
    await f.reconcile();
    await f.reconcile();
    f.h.client.clearCalls();
    f.h.registry.calls.length = 0;
    const result = await f.reconcile();
    assert.deepEqual(result, {});
    assert.deepEqual(f.h.client.calls, []);
    assert.deepEqual(f.h.registry.calls, []);
    assert.ok(f.h.client.peek<Pod>(PODS, NS, "demo-1"));
  });
});
