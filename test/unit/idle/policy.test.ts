// The idle and expiry policy read from a set's annotations (docs/idle.md): what is valid, and what a bad
// value does (a problem message, that part of the policy off — never a guess).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ANN_EXPIRE_ACTION,
  ANN_EXPIRE_AT,
  ANN_EXPIRE_DELETE_GRACE,
  ANN_LAST_ACTIVITY,
  ANN_NOTICE_BEFORE,
  ANN_SUSPEND_AFTER_IDLE,
  readIdlePolicy,
} from "../../../src/idle/policy.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const TEN_MIN = 10 * 60_000;
const HOUR = 60 * 60_000;

describe("readIdlePolicy", () => {
  it("reads nothing from a set without the annotations", () => {
    assert.deepEqual(readIdlePolicy(undefined), { noticeBeforeMs: TEN_MIN, problems: [] });
    assert.deepEqual(readIdlePolicy({ other: "x" }), { noticeBeforeMs: TEN_MIN, problems: [] });
  });

  it("takes suspend-after-idle as a Go duration, with the last activity", () => {
    for (const [text, ms, after] of [
      ["30m", 1_800_000, "30m0s"],
      ["1h30m", 5_400_000, "1h30m0s"],
      ["1.5h", 5_400_000, "1h30m0s"],
      ["300ms", 300, "300ms"],
    ] as const) {
      const policy = readIdlePolicy({
        [ANN_SUSPEND_AFTER_IDLE]: text,
        [ANN_LAST_ACTIVITY]: "2026-01-01T00:00:00Z",
      });
      assert.deepEqual(
        policy,
        { idle: { afterMs: ms, after, lastActivityMs: T0 }, noticeBeforeMs: TEN_MIN, problems: [] },
        text,
      );
    }
  });

  it("turns idle suspend off for an unparsable, zero or negative duration, naming the value", () => {
    for (const [text, why] of [
      ["30", 'time: missing unit in duration "30"'],
      ["1d", 'time: unknown unit "d" in duration "1d"'],
      ["", 'time: invalid duration ""'],
      ["0", "the duration must be above zero"],
      ["0s", "the duration must be above zero"],
      ["-5m", "the duration must be above zero"],
    ] as const) {
      const policy = readIdlePolicy({ [ANN_SUSPEND_AFTER_IDLE]: text });
      assert.equal(policy.idle, undefined, text);
      assert.deepEqual(policy.problems, [
        `${ANN_SUSPEND_AFTER_IDLE}=${JSON.stringify(text)}: ${why}; idle suspend is off`,
      ]);
    }
  });

  it("turns idle suspend off for an unparsable last-activity", () => {
    const policy = readIdlePolicy({ [ANN_SUSPEND_AFTER_IDLE]: "30m", [ANN_LAST_ACTIVITY]: "yesterday" });
    assert.equal(policy.idle, undefined);
    assert.deepEqual(policy.problems, [
      `${ANN_LAST_ACTIVITY}="yesterday" is not an RFC 3339 time; idle suspend is off`,
    ]);
  });

  it("reads expire-at with Suspend by default, or the given action", () => {
    assert.deepEqual(readIdlePolicy({ [ANN_EXPIRE_AT]: "2026-01-01T00:00:00Z" }), {
      expiry: { atMs: T0, action: "Suspend", deleteGraceMs: HOUR },
      noticeBeforeMs: TEN_MIN,
      problems: [],
    });
    assert.deepEqual(
      readIdlePolicy({ [ANN_EXPIRE_AT]: "2026-01-01T00:00:00Z", [ANN_EXPIRE_ACTION]: "Delete" }).expiry,
      { atMs: T0, action: "Delete", deleteGraceMs: HOUR },
    );
  });

  it("reads notice-before and expire-delete-grace, and keeps the defaults for a bad value", () => {
    const set = readIdlePolicy({
      [ANN_EXPIRE_AT]: "2026-01-01T00:00:00Z",
      [ANN_EXPIRE_ACTION]: "Delete",
      [ANN_NOTICE_BEFORE]: "0s",
      [ANN_EXPIRE_DELETE_GRACE]: "15m",
    });
    assert.equal(set.noticeBeforeMs, 0);
    assert.equal(set.expiry?.deleteGraceMs, 15 * 60_000);
    const bad = readIdlePolicy({
      [ANN_EXPIRE_AT]: "2026-01-01T00:00:00Z",
      [ANN_NOTICE_BEFORE]: "soon",
      [ANN_EXPIRE_DELETE_GRACE]: "-1m",
    });
    assert.equal(bad.noticeBeforeMs, TEN_MIN);
    assert.equal(bad.expiry?.deleteGraceMs, HOUR);
    assert.deepEqual(bad.problems, [
      `${ANN_NOTICE_BEFORE}="soon": time: invalid duration "soon"; using the default 10m0s`,
      `${ANN_EXPIRE_DELETE_GRACE}="-1m": the duration must not be negative; using the default 1h0m0s`,
    ]);
  });

  it("turns expiry off for an unparsable expire-at or an unknown expire-action", () => {
    const badTime = readIdlePolicy({ [ANN_EXPIRE_AT]: "2026-02-30T00:00:00Z" });
    assert.equal(badTime.expiry, undefined);
    assert.deepEqual(badTime.problems, [
      `${ANN_EXPIRE_AT}="2026-02-30T00:00:00Z" is not an RFC 3339 time; expiry is off`,
    ]);
    const badAction = readIdlePolicy({
      [ANN_EXPIRE_AT]: "2026-01-01T00:00:00Z",
      [ANN_EXPIRE_ACTION]: "delete",
    });
    assert.equal(badAction.expiry, undefined);
    assert.deepEqual(badAction.problems, [
      `${ANN_EXPIRE_ACTION}="delete" is not one of Suspend, Delete; expiry is off`,
    ]);
  });

  it("keeps the valid half when only the other half is bad", () => {
    const policy = readIdlePolicy({
      [ANN_SUSPEND_AFTER_IDLE]: "nope",
      [ANN_EXPIRE_AT]: "2026-01-01T00:00:00Z",
    });
    assert.equal(policy.idle, undefined);
    assert.deepEqual(policy.expiry, { atMs: T0, action: "Suspend", deleteGraceMs: HOUR });
    assert.equal(policy.problems.length, 1);
  });
});
