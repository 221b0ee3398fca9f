// The idle and expiry policy in the CocoonSet pass (docs/idle.md), with the injected clock: the API calls
// and events of an idle suspend, an expiry both ways, a last-activity touch or a spec change moving
// the deadline, bad values, and the requeue that wakes the set at its deadline.
import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { computeStatus } from "../../../src/cocoonset/decide/computestatus.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { ANN_HIBERNATE, TRUE } from "../../../src/contract/keys.ts";
import { applyLifecycle } from "../../../src/contract/lifecycle.ts";
import { applyVMRuntime } from "../../../src/contract/vmruntime.ts";
import type { Result } from "../../../src/controller/reconciler.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import {
  ANN_EXPIRE_ACTION,
  ANN_EXPIRE_AT,
  ANN_EXPIRE_DELETE_GRACE,
  ANN_LAST_ACTIVITY,
  ANN_NOTICE_BEFORE,
  ANN_PARKED_AT,
  ANN_SUSPEND_AFTER_IDLE,
} from "../../../src/idle/policy.ts";
import { STALE_SET_RETRY_MS } from "../../../src/idle/step.ts";
import {
  expiredTotal,
  idleSuspendTotal,
  nextDeadlineTimestampSeconds,
  parkedDurationSeconds,
} from "../../../src/metrics/cocoon.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { formatRFC3339Nano } from "../../../src/rfc3339.ts";
import {
  cocoonSet,
  type Harness,
  harness,
  NS,
  SET,
  SET_UID,
  seedSet,
  storedSet,
} from "../../support/cocoonset.ts";
import { counterValue, hibernated } from "../../support/suspend.ts";

const START = Date.parse("2026-01-01T00:00:00Z");
const MIN = 60_000;
const GENERATION = 3;
const MAIN = "demo-0";
const MAIN_VM = "vk-ns-demo-0";
const labels = { namespace: NS, cocoonset: SET };

/** The main as vk-cocoon leaves a booted VM: bound, live, ready at the set's generation. */
function runningMain(cs: CocoonSet): Pod {
  const pod = buildMainPod(cs);
  pod.spec.nodeName = "node-a";
  const annotations = pod.metadata.annotations ?? {};
  applyVMRuntime(annotations, { vmID: "vm-0", ip: "10.0.0.1", vncPort: 0 });
  applyLifecycle(annotations, {
    state: "ready",
    observedGeneration: cs.metadata.generation ?? 0,
    message: "",
  });
  pod.status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: "True" }],
    containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
  } as Pod["status"];
  return pod;
}

/** Notices and the Delete grace off, unless a test sets them: the deadlines alone. */
const NO_NOTICE = { [ANN_NOTICE_BEFORE]: "0s", [ANN_EXPIRE_DELETE_GRACE]: "0s" };

/**
 * A settled main-only set carrying `annotations` (over NO_NOTICE), Running since START as the status
 * writer recorded it (its idle clock started then); the clock at START.
 */
function settledHarness(annotations: Record<string, string>): Harness {
  const h = harness();
  const cs = cocoonSet({}, { generation: GENERATION, annotations: { ...NO_NOTICE, ...annotations } });
  const main = runningMain(cs);
  cs.status = computeStatus(cs, classifyPods([main], { name: SET, uid: SET_UID }), {
    now: formatRFC3339Nano(START),
  });
  seedSet(h.client, cs);
  h.client.seed(PODS, main);
  return h;
}

function reconcile(h: Harness): Promise<Result> {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: NS, name: SET },
    new AbortController().signal,
  );
}

function stored(h: Harness): CocoonSet {
  return storedSet(h.client) ?? assert.fail("set is stored");
}

/** Writes annotations on the stored set the way a gateway or `kubectl annotate` does; not recorded. */
async function annotateSet(h: Harness, annotations: Record<string, string | null>): Promise<void> {
  await h.client.patch(COCOONSETS, NS, SET, { metadata: { annotations } });
  h.client.clearCalls();
}

function setWrites(h: Harness) {
  return h.client.writes().filter((c) => c.resource === "cocoonsets");
}

const idle30m = { [ANN_SUSPEND_AFTER_IDLE]: "30m" };

describe("idle suspend in the CocoonSet pass", () => {
  let h: Harness;
  beforeEach(() => {
    h = settledHarness(idle30m);
  });

  it("shows the deadline in the status and the printer column's field", () => {
    assert.equal(stored(h).status?.idleClockStart, formatRFC3339Nano(START));
    assert.equal(stored(h).status?.idleSuspendAt, formatRFC3339Nano(START + 30 * MIN));
  });

  it("before the deadline, a settled set makes no call and requeues at the deadline", async () => {
    h.clock.advance(10 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 20 * MIN });
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.events.events, []);
  });

  it("at the deadline, patches spec.suspend=true on the version it judged, then suspends in the same pass", async () => {
    const before = await counterValue(idleSuspendTotal, labels);
    const version = stored(h).metadata.resourceVersion;
    h.clock.advance(30 * MIN);
    await reconcile(h);

    const [first] = h.client.writes();
    assert.deepEqual(first, {
      verb: "patch",
      resource: "cocoonsets",
      namespace: NS,
      name: SET,
      body: {
        metadata: {
          resourceVersion: version,
          annotations: { [ANN_PARKED_AT]: formatRFC3339Nano(START + 30 * MIN) },
        },
        spec: { suspend: true },
      },
    });
    const set = stored(h);
    assert.equal(set.spec.suspend, true);
    assert.equal(set.metadata.generation, GENERATION + 1);
    // Step 6 ran on the new generation: the main carries it and was asked to hibernate.
    const main = h.client.peek<Pod>(PODS, NS, MAIN);
    assert.equal(main?.metadata.annotations?.[ANN_HIBERNATE], TRUE);
    assert.equal(main?.metadata.annotations?.["cocoonset.cocoonstack.io/generation"], String(GENERATION + 1));
    assert.equal(set.status?.phase, "Suspending");
    assert.equal(set.status?.idleSuspendAt, undefined);
    assert.deepEqual(h.events.events, [
      {
        object: SET,
        type: "Normal",
        reason: "IdleSuspended",
        message: "idle for 30m0s (suspend-after-idle 30m0s): suspending",
      },
    ]);
    assert.equal(await counterValue(idleSuspendTotal, labels), before + 1);
  });

  it("a last-activity touch (no watch event) postpones it: the pass at the old deadline re-arms", async () => {
    h.clock.advance(20 * MIN);
    await annotateSet(h, { [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START + 20 * MIN) });

    h.clock.advance(10 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 20 * MIN });
    // One status write moving the deadline; no spec patch, no event.
    assert.deepEqual(
      setWrites(h).map((c) => c.subresource),
      ["status"],
    );
    assert.equal(stored(h).status?.idleSuspendAt, formatRFC3339Nano(START + 50 * MIN));
    assert.equal(stored(h).spec.suspend, undefined);
    assert.equal(h.events.events.length, 0);

    h.client.clearCalls();
    h.clock.advance(20 * MIN);
    await reconcile(h);
    assert.equal(stored(h).spec.suspend, true);
    assert.match(h.events.events[0]?.message ?? "", /^idle for 30m0s /);
  });

  it("a spec change restarts the idle clock", async () => {
    h.clock.advance(20 * MIN);
    await h.client.patch(COCOONSETS, NS, SET, { spec: { hibernatePolicy: "retain" } });
    h.client.clearCalls();
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 30 * MIN });
    assert.equal(stored(h).status?.idleClockStart, formatRFC3339Nano(START + 20 * MIN));
    assert.equal(stored(h).status?.idleSuspendAt, formatRFC3339Nano(START + 50 * MIN));

    h.clock.advance(10 * MIN);
    await reconcile(h);
    assert.equal(stored(h).spec.suspend, undefined);
    h.clock.advance(20 * MIN);
    await reconcile(h);
    assert.equal(stored(h).spec.suspend, true);
  });

  it("a last-activity a little ahead (clock skew) counts as now", async () => {
    h.clock.advance(20 * MIN);
    await annotateSet(h, { [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START + 22 * MIN) });
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 30 * MIN });
    assert.equal(stored(h).spec.suspend, undefined);
    assert.equal(stored(h).status?.idleSuspendAt, formatRFC3339Nano(START + 50 * MIN));
    assert.deepEqual(h.events.events, []);
  });

  it("a last-activity far in the future is not counted, with a Warning: the set still goes idle", async () => {
    h.clock.advance(20 * MIN);
    const farAhead = formatRFC3339Nano(START + 24 * 60 * MIN);
    await annotateSet(h, { [ANN_LAST_ACTIVITY]: farAhead });
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 10 * MIN });
    assert.deepEqual(h.events.events, [
      {
        object: SET,
        type: "Warning",
        reason: "ActivityInFuture",
        message: `the cocoonset.cocoonstack.io/last-activity annotation reports a use at ${farAhead}, more than 5m0s ahead of the operator's clock: not counted; write the reporter's current time (kubectl cocoon touch uses the API server's)`,
      },
    ]);
    h.clock.advance(10 * MIN);
    await reconcile(h);
    assert.equal(stored(h).spec.suspend, true);
  });

  it("a touch the cache had not shown yet refuses the patch: no suspend, a look again shortly", async () => {
    const judged = stored(h);
    h.view.getCocoonSet = () => structuredClone(judged);
    h.clock.advance(30 * MIN);
    await annotateSet(h, { [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START + 30 * MIN) });
    const before = await counterValue(idleSuspendTotal, labels);

    assert.deepEqual(await reconcile(h), { requeueAfterMs: STALE_SET_RETRY_MS });
    assert.equal(stored(h).spec.suspend, undefined);
    assert.deepEqual(h.events.events, []);
    assert.equal(await counterValue(idleSuspendTotal, labels), before);
  });
});

describe("bad policy values", () => {
  for (const [annotations, problem] of [
    [{ [ANN_SUSPEND_AFTER_IDLE]: "30 minutes" }, 'suspend-after-idle="30 minutes": time: unknown unit'],
    [{ [ANN_SUSPEND_AFTER_IDLE]: "0s" }, "the duration must be above zero"],
    [{ [ANN_SUSPEND_AFTER_IDLE]: "-30m" }, "the duration must be above zero"],
    [
      { [ANN_SUSPEND_AFTER_IDLE]: "30m", [ANN_LAST_ACTIVITY]: "now" },
      'last-activity="now" is not an RFC 3339',
    ],
    [{ [ANN_EXPIRE_AT]: "tomorrow" }, 'expire-at="tomorrow" is not an RFC 3339'],
    [
      { [ANN_EXPIRE_AT]: formatRFC3339Nano(START), [ANN_EXPIRE_ACTION]: "Destroy" },
      'expire-action="Destroy" is not one of',
    ],
  ] as const) {
    it(`${JSON.stringify(annotations)}: a Warning event, never a suspend or a delete, no wake-up`, async () => {
      const h = settledHarness({});
      await annotateSet(h, annotations);
      h.clock.advance(24 * 60 * MIN);
      assert.deepEqual(await reconcile(h), {});
      assert.deepEqual(
        setWrites(h).filter((c) => c.subresource !== "status"),
        [],
      );
      assert.equal(stored(h).spec.suspend, undefined);
      assert.equal(stored(h).metadata.deletionTimestamp, undefined);
      assert.equal(h.events.events.length, 1);
      assert.equal(h.events.events[0]?.type, "Warning");
      assert.equal(h.events.events[0]?.reason, "IdlePolicyInvalid");
      assert.ok(h.events.events[0]?.message.includes(problem), h.events.events[0]?.message);
    });
  }
});

describe("expiry in the CocoonSet pass", () => {
  const at = START + 90 * MIN;

  it("Suspend (the default): spec.suspend=true at expire-at with an Expired event", async () => {
    const h = settledHarness({ [ANN_EXPIRE_AT]: formatRFC3339Nano(at) });
    assert.equal(stored(h).status?.expireAt, formatRFC3339Nano(at));
    h.clock.advance(30 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 60 * MIN });
    assert.deepEqual(h.client.calls, []);

    const before = await counterValue(expiredTotal, { ...labels, action: "Suspend" });
    h.clock.advance(60 * MIN);
    await reconcile(h);
    assert.equal(stored(h).spec.suspend, true);
    assert.equal(stored(h).metadata.deletionTimestamp, undefined);
    assert.deepEqual(h.events.events[0], {
      object: SET,
      type: "Normal",
      reason: "Expired",
      message: `expire-at ${formatRFC3339Nano(at)} reached: suspending`,
    });
    assert.equal(await counterValue(expiredTotal, { ...labels, action: "Suspend" }), before + 1);
  });

  it("Delete: the set is deleted at expire-at (the finalizer keeps it for teardown), with an Expired event", async () => {
    const h = settledHarness({ [ANN_EXPIRE_AT]: formatRFC3339Nano(at), [ANN_EXPIRE_ACTION]: "Delete" });
    const before = await counterValue(expiredTotal, { ...labels, action: "Delete" });
    h.clock.advance(90 * MIN);
    assert.deepEqual(await reconcile(h), {});
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}`),
      ["delete cocoonsets"],
    );
    assert.ok(stored(h).metadata.deletionTimestamp);
    assert.deepEqual(h.events.events[0], {
      object: SET,
      type: "Normal",
      reason: "Expired",
      message: `expire-at ${formatRFC3339Nano(at)} reached: deleting`,
    });
    assert.equal(await counterValue(expiredTotal, { ...labels, action: "Delete" }), before + 1);
  });

  it("Delete refuses to act on a set changed since the cache's copy (expire-at extended)", async () => {
    const h = settledHarness({ [ANN_EXPIRE_AT]: formatRFC3339Nano(at), [ANN_EXPIRE_ACTION]: "Delete" });
    const judged = stored(h);
    h.view.getCocoonSet = () => structuredClone(judged);
    await annotateSet(h, { [ANN_EXPIRE_AT]: formatRFC3339Nano(at + 60 * MIN) });
    h.clock.advance(90 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: STALE_SET_RETRY_MS });
    assert.equal(stored(h).metadata.deletionTimestamp, undefined);
    assert.deepEqual(h.events.events, []);
  });

  it("a parked set keeps the suspend's sooner poll, then wakes for its Delete expiry once Suspended", async () => {
    const h = settledHarness({
      ...idle30m,
      [ANN_EXPIRE_AT]: formatRFC3339Nano(at),
      [ANN_EXPIRE_ACTION]: "Delete",
    });
    h.clock.advance(30 * MIN);
    // Suspending polls every 5 s; the expiry is an hour away.
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 5_000 });
    // vk-cocoon hibernates the VM and pushes its snapshot; the next pass sees Suspended, which ends
    // with no requeue of its own.
    const main = h.client.peek<Pod>(PODS, NS, MAIN) ?? assert.fail("main exists");
    h.client.seed(PODS, hibernated(main, GENERATION + 1));
    h.registry.put(MAIN_VM, "hibernate");
    h.clock.advance(5 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 55 * MIN });
    assert.equal(stored(h).status?.phase, "Suspended");

    h.client.clearCalls();
    h.clock.advance(55 * MIN);
    await reconcile(h);
    assert.ok(stored(h).metadata.deletionTimestamp);
    assert.equal(h.events.events.at(-1)?.reason, "Expired");
  });

  it("a deadline sooner than the pass's own requeue wins", async () => {
    const h = settledHarness({
      ...idle30m,
      [ANN_EXPIRE_AT]: formatRFC3339Nano(START + 30 * MIN + 2_000),
      [ANN_EXPIRE_ACTION]: "Delete",
    });
    h.clock.advance(30 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 2_000 });
  });
});

describe("seconds parked", () => {
  it("are observed when a parked set is resumed, and the parking record goes", async () => {
    const h = settledHarness(idle30m);
    h.clock.advance(30 * MIN);
    await reconcile(h);
    const parkedAt = stored(h).metadata.annotations?.[ANN_PARKED_AT];
    assert.equal(parkedAt, formatRFC3339Nano(START + 30 * MIN));

    const before =
      (await parkedDurationSeconds.get()).values.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
    h.clock.advance(2 * 60 * MIN);
    await h.client.patch(COCOONSETS, NS, SET, { spec: { suspend: false } });
    h.client.clearCalls();
    await reconcile(h);
    assert.equal(stored(h).metadata.annotations?.[ANN_PARKED_AT], undefined);
    const after =
      (await parkedDurationSeconds.get()).values.find((v) => v.metricName?.endsWith("_sum"))?.value ?? 0;
    assert.equal(after - before, 2 * 60 * 60);
  });
});

describe("notices and the Delete grace in the CocoonSet pass", () => {
  const at = START + 90 * MIN;

  it("ExpiringSoon comes notice-before ahead as a Warning, once; the next pass makes no call", async () => {
    const h = settledHarness({
      [ANN_EXPIRE_AT]: formatRFC3339Nano(at),
      [ANN_NOTICE_BEFORE]: "10m",
      [ANN_EXPIRE_DELETE_GRACE]: "5m",
      [ANN_EXPIRE_ACTION]: "Delete",
    });
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 80 * MIN });
    h.clock.advance(80 * MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 10 * MIN });
    assert.deepEqual(h.events.events, [
      {
        object: SET,
        type: "Warning",
        reason: "ExpiringSoon",
        message: `expire-at ${formatRFC3339Nano(at)}: deleting the set at ${formatRFC3339Nano(at)} (in 10m0s), no sooner than expire-delete-grace 5m0s after this notice; move or remove cocoonset.cocoonstack.io/expire-at to keep it`,
      },
    ]);
    assert.equal(stored(h).status?.expiryNoticedAt, formatRFC3339Nano(at - 10 * MIN));
    h.client.clearCalls();
    h.clock.advance(MIN);
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 9 * MIN });
    assert.deepEqual(
      h.client.calls.filter((c) => c.verb !== "get" && c.verb !== "list"),
      [],
    );
    assert.equal(h.events.events.length, 1);
  });

  it("an expire-at already past when written, with Delete, deletes only the grace (1h by default) later", async () => {
    const h = settledHarness({ [ANN_EXPIRE_ACTION]: "Delete", [ANN_EXPIRE_DELETE_GRACE]: "1h" });
    h.clock.advance(10 * MIN);
    await annotateSet(h, { [ANN_EXPIRE_AT]: formatRFC3339Nano(START) });
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 60 * MIN });
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}${c.subresource ? `/${c.subresource}` : ""}`),
      ["patch cocoonsets/status"],
    );
    assert.equal(h.events.events[0]?.reason, "ExpiringSoon");
    assert.equal(await gaugeValue(), (START + 70 * MIN) / 1000, "the gauge shows when the delete will come");
    h.clock.advance(60 * MIN - 1);
    await reconcile(h);
    assert.equal(stored(h).metadata.deletionTimestamp, undefined);
    h.clock.advance(1);
    await reconcile(h);
    assert.ok(stored(h).metadata.deletionTimestamp, "deleted once the grace is over");
  });

  it("IdleSuspendSoon comes notice-before ahead of the idle suspend", async () => {
    const h = settledHarness({ [ANN_SUSPEND_AFTER_IDLE]: "30m", [ANN_NOTICE_BEFORE]: "5m" });
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 25 * MIN });
    h.clock.advance(25 * MIN);
    await reconcile(h);
    assert.deepEqual(
      h.events.events.map((e) => [e.type, e.reason]),
      [["Warning", "IdleSuspendSoon"]],
    );
    assert.match(
      h.events.events[0]?.message ?? "",
      /suspending at .* \(in 5m0s\) unless it is used; record a use with kubectl cocoon touch demo/,
    );
    assert.equal(stored(h).status?.idleSuspendNoticedFor, formatRFC3339Nano(START + 30 * MIN));
  });
});

async function gaugeValue(): Promise<number | undefined> {
  const { values } = await nextDeadlineTimestampSeconds.get();
  return values.find((v) => v.labels.namespace === NS && v.labels.cocoonset === SET)?.value;
}
