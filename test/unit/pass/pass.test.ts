// The pass's waits for pods an earlier pass created: a pod the cache does not show yet is not created
// again while its expectation holds, the pass requeues within the poll (or when the expectation
// lapses, if sooner), and once it lapses the pod may be created again. A pass with several waits
// requeues after the soonest.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { reconcileSuspend } from "../../../src/cocoonset/steps/suspend.ts";
import { CREATE_EXPECTATION_TTL_MS, PodCreateExpectations } from "../../../src/pass/expectations.ts";
import { CREATE_PENDING_POLL_MS, finish } from "../../../src/pass/pass.ts";
import { type ScalingHarness, scalingHarness, scalingSet } from "../../support/scaling.ts";

const NS = "ns";

/** A set with no pods in the cache, and this process's expectations wired in. */
function withExpectations(spec = {}): { h: ScalingHarness; expectations: PodCreateExpectations } {
  const h = scalingHarness(scalingSet(spec));
  const expectations = new PodCreateExpectations(h.clock);
  h.deps.expectations = expectations;
  return { h, expectations };
}

describe("a pass awaiting a pod an earlier pass created", () => {
  it("waits for it, requeuing within the poll while the expectation holds longer", () => {
    const { h, expectations } = withExpectations();
    expectations.created(NS, "demo-0", "u0", "demo");
    const pass = h.pass();
    assert.equal(pass.awaitingCreate("demo-0"), true);
    assert.equal(pass.awaitingCreates, true);
    assert.equal(pass.requeueAfterMs, CREATE_PENDING_POLL_MS);
    assert.equal(pass.awaitingCreate("demo-1"), false, "never created here");
  });

  it("requeues when the expectation lapses, if that is sooner than the poll", () => {
    const { h, expectations } = withExpectations();
    expectations.created(NS, "demo-0", "u0", "demo");
    h.clock.advance(CREATE_EXPECTATION_TTL_MS - 300);
    const pass = h.pass();
    assert.equal(pass.awaitingCreate("demo-0"), true);
    assert.equal(pass.requeueAfterMs, 300);
  });

  it("does not wait once the expectation lapses during the pass: the pod may be created again", () => {
    const { h, expectations } = withExpectations();
    expectations.created(NS, "demo-0", "u0", "demo");
    const pass = h.pass();
    // Exactly at the lapse, as the expectations themselves count it (pendingMs needs time left).
    h.clock.advance(CREATE_EXPECTATION_TTL_MS);
    assert.equal(expectations.pendingMs(NS, "demo-0"), undefined);
    assert.equal(pass.awaitingCreate("demo-0"), false);
    assert.equal(pass.awaitingCreates, false);
    assert.equal(pass.requeueAfterMs, undefined);
  });

  it("awaitingAnyCreate holds while any pod of the set is expected, and not once all lapsed", () => {
    const { h, expectations } = withExpectations();
    expectations.created(NS, "demo-1", "u1", "demo");
    h.clock.advance(CREATE_EXPECTATION_TTL_MS - 200);
    expectations.created(NS, "demo-0", "u0", "demo");
    const pass = h.pass();
    // demo-1 lapses first: demo-0 is still awaited.
    h.clock.advance(200);
    assert.equal(pass.awaitingAnyCreate(), true);
    assert.equal(pass.awaitingCreates, true);
    assert.equal(pass.requeueAfterMs, CREATE_PENDING_POLL_MS);

    h.clock.advance(CREATE_EXPECTATION_TTL_MS);
    const late = h.pass();
    assert.equal(late.awaitingAnyCreate(), false);
    assert.equal(late.awaitingCreates, false);
    assert.equal(late.requeueAfterMs, undefined);
  });

  it("awaitingAnyCreate is false for a set that created nothing", () => {
    const { h, expectations } = withExpectations();
    expectations.created(NS, "other-0", "u0", "other");
    const pass = h.pass();
    assert.equal(pass.awaitingAnyCreate(), false);
    assert.equal(pass.awaitingCreates, false);
  });

  it("a release suspend with no pod cached but one still expected waits, writing nothing", async () => {
    const { h, expectations } = withExpectations({ suspend: true, hibernatePolicy: "release" });
    expectations.created(NS, "demo-0", "u0", "demo");
    h.client.clearCalls();
    assert.deepEqual(await reconcileSuspend(h.pass()), finish({ requeueAfterMs: CREATE_PENDING_POLL_MS }));
    assert.deepEqual(h.client.calls, []);
    assert.equal(h.set().status?.phase, undefined);

    // Once the expectation lapses, the set with no pods settles Suspended.
    h.clock.advance(CREATE_EXPECTATION_TTL_MS);
    assert.deepEqual(await reconcileSuspend(h.pass()), finish());
    assert.equal(h.set().status?.phase, "Suspended");
  });
});

describe("the pass's requeue-after", () => {
  it("is the soonest of the waits asked for, whatever their order", () => {
    const { h } = withExpectations();
    const pass = h.pass();
    pass.requeueWithin(5_000);
    pass.requeueWithin(1_000);
    pass.requeueWithin(3_000);
    assert.equal(pass.requeueAfterMs, 1_000);
  });
});
