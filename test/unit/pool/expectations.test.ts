// The pool's expectations (src/pool/expectations.ts): a create is met once the cache shows the member,
// a delete once the cache shows it gone or being deleted (a member's own finalizer keeps it a while),
// and an expectation the cache never meets ends after 30 s.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { MEMBER_EXPECTATION_TTL_MS, MemberExpectations } from "../../../src/pool/expectations.ts";
import { cocoonPool, member } from "../../support/pool.ts";

const KEY = "ns/warm";
const pool = cocoonPool();

describe("MemberExpectations", () => {
  it("a delete is met once the cache shows the member being deleted", () => {
    const expectations = new MemberExpectations(new FakeClock());
    const m0 = member(pool, "m0", "Running");
    expectations.deleted(KEY, "m0");
    assert.equal(expectations.pending(KEY, [m0]), true);
    const going = { ...m0, metadata: { ...m0.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } };
    assert.equal(expectations.pending(KEY, [going]), false);
  });

  it(`an expectation the cache never meets ends ${MEMBER_EXPECTATION_TTL_MS} ms after the write`, () => {
    const clock = new FakeClock();
    const expectations = new MemberExpectations(clock);
    expectations.created(KEY, "never-seen");
    clock.advance(MEMBER_EXPECTATION_TTL_MS - 1);
    assert.equal(expectations.pending(KEY, []), true);
    clock.advance(1);
    assert.equal(expectations.pending(KEY, []), false);
  });
});

describe("MemberExpectations: each write is expected on its own", () => {
  it("a create is pending until the cache shows that member, whatever other members it shows", () => {
    const expectations = new MemberExpectations(new FakeClock());
    expectations.created(KEY, "a");
    expectations.created(KEY, "b");
    const b = member(pool, "b", undefined);
    assert.equal(expectations.pending(KEY, [b]), true, "a is not shown yet");
    assert.equal(expectations.pending(KEY, [b]), true, "and still not");
    assert.equal(expectations.pending(KEY, [member(pool, "a", undefined), b]), false);
  });

  it("a pool forgotten (deleted) expects nothing of its name again", () => {
    const expectations = new MemberExpectations(new FakeClock());
    expectations.created(KEY, "a");
    expectations.forget(KEY);
    assert.equal(expectations.pending(KEY, []), false);
  });
});
