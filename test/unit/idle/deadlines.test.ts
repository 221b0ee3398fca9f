// When the idle and expiry policy acts, and what the status writer shows of it (docs/idle.md), on the
// set as the cache holds it and an injected now.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { computeStatus } from "../../../src/cocoonset/decide/computestatus.ts";
import {
  dueNotices,
  idleStatusFields,
  idleVerdict,
  MAX_DEADLINE_WAIT_MS,
  nextActionAtMs,
  nextDeadlineInMs,
} from "../../../src/idle/deadlines.ts";
import {
  ANN_EXPIRE_ACTION,
  ANN_EXPIRE_AT,
  ANN_EXPIRE_DELETE_GRACE,
  ANN_LAST_ACTIVITY,
  ANN_NOTICE_BEFORE,
  ANN_SUSPEND_AFTER_IDLE,
  readIdlePolicy,
} from "../../../src/idle/policy.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { formatRFC3339Nano } from "../../../src/rfc3339.ts";
import { cocoonSet, SET, SET_UID } from "../../support/cocoonset.ts";

const START = Date.parse("2026-01-01T00:00:00Z");
const MIN = 60_000;

/** A set whose last status says Running at its generation 2, the idle clock started at START. */
function runningSet(
  annotations: Record<string, string>,
  opts: { phase?: CocoonSetPhase; generation?: number; suspend?: boolean; clockStart?: string | null } = {},
): CocoonSet {
  const cs = cocoonSet(opts.suspend ? { suspend: true } : {}, {
    generation: opts.generation ?? 2,
    annotations,
  });
  cs.status = {
    phase: opts.phase ?? "Running",
    observedGeneration: 2,
    readyAgents: 1,
    desiredAgents: 1,
    readyToolboxes: 0,
    desiredToolboxes: 0,
    ...(opts.clockStart === null ? {} : { idleClockStart: opts.clockStart ?? formatRFC3339Nano(START) }),
  };
  return cs;
}

/** Notices off: the deadlines alone (the notices have tests of their own below). */
const NO_NOTICE = { [ANN_NOTICE_BEFORE]: "0s", [ANN_EXPIRE_DELETE_GRACE]: "0s" };
const idle30m = { [ANN_SUSPEND_AFTER_IDLE]: "30m", ...NO_NOTICE };

function verdictAt(cs: CocoonSet, now: number) {
  return idleVerdict(cs, readIdlePolicy(cs.metadata.annotations), now);
}

function deadlineAt(cs: CocoonSet, now: number) {
  return nextDeadlineInMs(cs, readIdlePolicy(cs.metadata.annotations), now);
}

describe("idleVerdict: idle suspend", () => {
  it("suspends a Running set exactly when it has been idle for suspend-after-idle", () => {
    const cs = runningSet(idle30m);
    assert.deepEqual(verdictAt(cs, START + 30 * MIN - 1), { action: "none" });
    assert.equal(deadlineAt(cs, START + 30 * MIN - 1), 1);
    const verdict = verdictAt(cs, START + 30 * MIN);
    assert.equal(verdict.action, "idle-suspend");
    assert.equal(verdict.action === "idle-suspend" && verdict.idleForMs, 30 * MIN);
    assert.equal(verdict.action === "idle-suspend" && verdict.idle.after, "30m0s");
  });

  it("counts from a later last-activity: a touch postpones the suspend", () => {
    const cs = runningSet({ ...idle30m, [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START + 10 * MIN) });
    assert.deepEqual(verdictAt(cs, START + 30 * MIN), { action: "none" });
    assert.equal(deadlineAt(cs, START + 30 * MIN), 10 * MIN);
    assert.equal(verdictAt(cs, START + 40 * MIN).action, "idle-suspend");
  });

  it("ignores a last-activity older than the idle clock's start", () => {
    const cs = runningSet({ ...idle30m, [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START - 60 * MIN) });
    assert.deepEqual(verdictAt(cs, START + 29 * MIN), { action: "none" });
    assert.equal(verdictAt(cs, START + 30 * MIN).action, "idle-suspend");
  });

  it("counts a last-activity up to 5m ahead as now, and one further ahead as none", () => {
    const now = START + 40 * MIN;
    const cs = runningSet({ ...idle30m, [ANN_LAST_ACTIVITY]: formatRFC3339Nano(now + 5 * MIN) });
    assert.deepEqual(verdictAt(cs, now), { action: "none" });
    assert.equal(deadlineAt(cs, now), 30 * MIN);
    const fields = idleStatusFields(cs, readIdlePolicy(cs.metadata.annotations), "Running", now);
    assert.equal(fields.idleSuspendAt, formatRFC3339Nano(now + 30 * MIN));
    const far = runningSet({ ...idle30m, [ANN_LAST_ACTIVITY]: formatRFC3339Nano(now + 5 * MIN + 1) });
    assert.equal(verdictAt(far, now).action, "idle-suspend");
  });

  it("takes the later of the annotation and the activity Lease's renewal", () => {
    const now = START + 40 * MIN;
    const cs = runningSet({ ...idle30m, [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START + 5 * MIN) });
    const withLease = readIdlePolicy(cs.metadata.annotations, START + 25 * MIN);
    assert.equal(nextDeadlineInMs(cs, withLease, now), 15 * MIN);
    assert.deepEqual(idleVerdict(cs, withLease, now), { action: "none" });
    assert.equal(verdictAt(cs, now).action, "idle-suspend");
  });

  it("does nothing to a set not Running at its generation, already suspended, or being deleted", () => {
    const late = START + 60 * MIN;
    for (const cs of [
      runningSet(idle30m, { phase: "Scaling" }),
      runningSet(idle30m, { phase: "Suspended" }),
      runningSet(idle30m, { suspend: true }),
      runningSet(idle30m, { generation: 3 }),
      runningSet(idle30m, { clockStart: null }),
      runningSet({ [ANN_SUSPEND_AFTER_IDLE]: "0s" }),
    ]) {
      assert.deepEqual(verdictAt(cs, late), { action: "none" });
      assert.equal(deadlineAt(cs, late), undefined);
    }
    const deleting = runningSet(idle30m);
    deleting.metadata.deletionTimestamp = formatRFC3339Nano(START);
    assert.deepEqual(verdictAt(deleting, late), { action: "none" });
  });

  it("takes sub-second durations to the millisecond", () => {
    const cs = runningSet({ [ANN_SUSPEND_AFTER_IDLE]: "1.5s" });
    assert.deepEqual(verdictAt(cs, START + 1499), { action: "none" });
    assert.equal(verdictAt(cs, START + 1500).action, "idle-suspend");
  });
});

describe("idleVerdict: expiry", () => {
  const at = START + 90 * MIN;
  const expiring = (action?: string, opts: { suspend?: boolean } = {}) =>
    runningSet(
      {
        [ANN_EXPIRE_AT]: formatRFC3339Nano(at),
        ...(action ? { [ANN_EXPIRE_ACTION]: action } : {}),
        ...NO_NOTICE,
      },
      opts,
    );

  it("suspends at expire-at by default", () => {
    assert.deepEqual(verdictAt(expiring(), at - 1), { action: "none" });
    assert.equal(deadlineAt(expiring(), at - 1), 1);
    assert.deepEqual(verdictAt(expiring(), at), {
      action: "expire",
      expiry: { atMs: at, action: "Suspend", deleteGraceMs: 0 },
    });
  });

  it("deletes at expire-at with expire-action Delete, suspended or not", () => {
    assert.deepEqual(verdictAt(expiring("Delete"), at), {
      action: "expire",
      expiry: { atMs: at, action: "Delete", deleteGraceMs: 0 },
    });
    assert.deepEqual(verdictAt(expiring("Delete", { suspend: true }), at).action, "expire");
    assert.equal(deadlineAt(expiring("Delete", { suspend: true }), at - 10), 10);
  });

  it("has nothing left to do for a Suspend expiry of a set already suspended", () => {
    assert.deepEqual(verdictAt(expiring("Suspend", { suspend: true }), at + MIN), { action: "none" });
    assert.equal(deadlineAt(expiring("Suspend", { suspend: true }), at - MIN), undefined);
  });

  it("wins over idleness when both are due, and the earlier deadline is the wake-up", () => {
    const both = runningSet({
      ...idle30m,
      [ANN_EXPIRE_AT]: formatRFC3339Nano(at),
      [ANN_EXPIRE_ACTION]: "Delete",
    });
    assert.equal(deadlineAt(both, START), 30 * MIN);
    assert.equal(verdictAt(both, at).action, "expire");
    assert.equal(verdictAt(both, at - 1).action, "idle-suspend");
  });

  it("waits at most a day for a deadline further away (longer Node timers fire at once)", () => {
    const far = runningSet({ [ANN_EXPIRE_AT]: formatRFC3339Nano(START + 365 * 24 * 60 * MIN) });
    assert.equal(deadlineAt(far, START), MAX_DEADLINE_WAIT_MS);
    assert.ok(MAX_DEADLINE_WAIT_MS < 2 ** 31 - 1);
  });

  it("wakes for nothing once expire-at has passed without effect", () => {
    const cs = runningSet({ [ANN_EXPIRE_AT]: formatRFC3339Nano(at), [ANN_EXPIRE_ACTION]: "bogus" });
    assert.deepEqual(verdictAt(cs, at + 1), { action: "none" });
    assert.equal(deadlineAt(cs, at - 1), undefined);
  });
});

describe("the status writer's idle fields", () => {
  const now = START + 20 * MIN;
  const status = (cs: CocoonSet, phase: CocoonSetPhase = "Running") =>
    computeStatus(cs, classifyPods([], { name: SET, uid: SET_UID }), { phase, now: formatRFC3339Nano(now) });

  it("keeps the clock's start while the set stays Running at the same generation", () => {
    const next = status(runningSet(idle30m));
    assert.equal(next.idleClockStart, formatRFC3339Nano(START));
    assert.equal(next.idleSuspendAt, formatRFC3339Nano(START + 30 * MIN));
  });

  it("restarts the clock on a spec change (a generation the last status had not seen)", () => {
    const next = status(runningSet(idle30m, { generation: 3 }));
    assert.equal(next.idleClockStart, formatRFC3339Nano(now));
    assert.equal(next.idleSuspendAt, formatRFC3339Nano(now + 30 * MIN));
  });

  it("restarts the clock when the set becomes Running", () => {
    const next = status(runningSet(idle30m, { phase: "Scaling" }));
    assert.equal(next.idleClockStart, formatRFC3339Nano(now));
    assert.equal(next.idleSuspendAt, formatRFC3339Nano(now + 30 * MIN));
  });

  it("starts the clock when it first sees the policy", () => {
    assert.equal(status(runningSet(idle30m, { clockStart: null })).idleClockStart, formatRFC3339Nano(now));
  });

  it("shows no idle suspend while the set is not Running or is suspended, and keeps the start", () => {
    const scaling = status(runningSet(idle30m), "Scaling");
    assert.equal(scaling.idleSuspendAt, undefined);
    assert.equal(scaling.idleClockStart, formatRFC3339Nano(START));
    assert.equal(status(runningSet(idle30m, { suspend: true })).idleSuspendAt, undefined);
  });

  it("echoes a valid expire-at and nothing for a set without a policy", () => {
    assert.equal(
      status(runningSet({ [ANN_EXPIRE_AT]: "2026-01-01T03:00:00+02:00" })).expireAt,
      "2026-01-01T01:00:00Z",
    );
    const plain = status(runningSet({}, { clockStart: null }));
    assert.deepEqual(
      [plain.idleClockStart, plain.idleSuspendAt, plain.expireAt],
      [undefined, undefined, undefined],
    );
  });

  it("drops the idle fields once the policy is removed or made invalid", () => {
    const removed = status(runningSet({}));
    assert.equal(removed.idleClockStart, undefined);
    const invalid = status(runningSet({ [ANN_SUSPEND_AFTER_IDLE]: "-1m" }));
    assert.equal(invalid.idleClockStart, undefined);
    assert.equal(invalid.idleSuspendAt, undefined);
  });
});

describe("notices and the Delete grace", () => {
  const at = START + 90 * MIN;
  const deleting = (annotations: Record<string, string> = {}) =>
    runningSet({ [ANN_EXPIRE_AT]: formatRFC3339Nano(at), [ANN_EXPIRE_ACTION]: "Delete", ...annotations });
  const policyOf = (cs: CocoonSet) => readIdlePolicy(cs.metadata.annotations);
  /** The set as the next pass reads it: the status the pass at `now` wrote. */
  const afterStatusAt = (cs: CocoonSet, now: number): CocoonSet => ({
    ...cs,
    status: {
      ...(cs.status as NonNullable<CocoonSet["status"]>),
      ...idleStatusFields(cs, policyOf(cs), "Running", now),
    },
  });

  it("gives ExpiringSoon notice-before (default 10m) ahead, once, and wakes for it", () => {
    const cs = deleting({ [ANN_EXPIRE_DELETE_GRACE]: "5m" });
    assert.equal(deadlineAt(cs, at - 20 * MIN), 10 * MIN);
    assert.deepEqual(dueNotices(cs, policyOf(cs), at - 10 * MIN - 1), []);
    const notices = dueNotices(cs, policyOf(cs), at - 10 * MIN);
    assert.deepEqual(
      notices.map((n) => [n.kind, n.kind === "expiry" && n.actsAtMs]),
      [["expiry", at]],
    );
    const noticed = afterStatusAt(cs, at - 10 * MIN);
    assert.equal(noticed.status?.expiryNoticedAt, formatRFC3339Nano(at - 10 * MIN));
    assert.deepEqual(dueNotices(noticed, policyOf(noticed), at - 5 * MIN), []);
    // The grace (5m) is within the notice (10m): the delete comes at expire-at.
    assert.equal(verdictAt(noticed, at).action, "expire");
  });

  it("an expire-at already past when written deletes only the grace (default 1h) after its notice", () => {
    const cs = deleting();
    const firstSeen = at + 3 * MIN;
    assert.deepEqual(verdictAt(cs, firstSeen), { action: "none" });
    const [notice] = dueNotices(cs, policyOf(cs), firstSeen);
    assert.equal(notice?.kind === "expiry" && notice.actsAtMs, firstSeen + 60 * MIN);
    const noticed = afterStatusAt(cs, firstSeen);
    assert.equal(deadlineAt(noticed, firstSeen), 60 * MIN);
    assert.deepEqual(verdictAt(noticed, firstSeen + 60 * MIN - 1), { action: "none" });
    assert.equal(verdictAt(noticed, firstSeen + 60 * MIN).action, "expire");
    // A pass whose cache does not show the notice yet deletes nothing either.
    assert.deepEqual(verdictAt(cs, firstSeen + 60 * MIN), { action: "none" });
  });

  it("a new expire-at needs a notice of its own", () => {
    const noticed = afterStatusAt(deleting(), at - 10 * MIN);
    const moved: CocoonSet = {
      ...noticed,
      metadata: {
        ...noticed.metadata,
        annotations: { ...noticed.metadata.annotations, [ANN_EXPIRE_AT]: formatRFC3339Nano(at - 20 * MIN) },
      },
    };
    assert.deepEqual(verdictAt(moved, at - 5 * MIN), { action: "none" });
    assert.equal(dueNotices(moved, policyOf(moved), at - 5 * MIN).length, 1);
  });

  it("gives IdleSuspendSoon once per deadline, and a touch that moves the deadline earns a new one", () => {
    const cs = runningSet({ [ANN_SUSPEND_AFTER_IDLE]: "30m" });
    assert.equal(deadlineAt(cs, START), 20 * MIN);
    assert.deepEqual(dueNotices(cs, policyOf(cs), START + 20 * MIN - 1), []);
    const [notice] = dueNotices(cs, policyOf(cs), START + 20 * MIN);
    assert.equal(notice?.kind === "idle-suspend" && notice.atMs, START + 30 * MIN);
    const noticed = afterStatusAt(cs, START + 20 * MIN);
    assert.equal(noticed.status?.idleSuspendNoticedFor, formatRFC3339Nano(START + 30 * MIN));
    assert.deepEqual(dueNotices(noticed, policyOf(noticed), START + 25 * MIN), []);
    const touched: CocoonSet = {
      ...noticed,
      metadata: {
        ...noticed.metadata,
        annotations: {
          ...noticed.metadata.annotations,
          [ANN_LAST_ACTIVITY]: formatRFC3339Nano(START + 25 * MIN),
        },
      },
    };
    assert.deepEqual(dueNotices(touched, policyOf(touched), START + 26 * MIN), []);
    assert.equal(dueNotices(touched, policyOf(touched), START + 45 * MIN).length, 1);
  });

  it("notice-before 0s gives no idle notice", () => {
    const cs = runningSet({ [ANN_SUSPEND_AFTER_IDLE]: "30m", [ANN_NOTICE_BEFORE]: "0s" });
    assert.deepEqual(dueNotices(cs, policyOf(cs), START + 29 * MIN), []);
  });

  it("the gauge's next action is the earlier of the idle suspend and the expiry's act", () => {
    const cs = runningSet({ [ANN_SUSPEND_AFTER_IDLE]: "30m", [ANN_EXPIRE_AT]: formatRFC3339Nano(at) });
    assert.equal(nextActionAtMs(cs, policyOf(cs), START), START + 30 * MIN);
    const suspended = runningSet({ [ANN_EXPIRE_AT]: formatRFC3339Nano(at) }, { suspend: true });
    assert.equal(nextActionAtMs(suspended, policyOf(suspended), START), undefined);
  });
});
