import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { Backoff, TokenBucket } from "../../../src/controller/ratelimit.ts";

describe("Backoff", () => {
  it("doubles from 800 ms up to the 30 s cap, and reset starts over", () => {
    const backoff = new Backoff({ random: () => 0 });
    const delays = Array.from({ length: 8 }, () => backoff.next());
    assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    backoff.reset();
    assert.equal(backoff.next(), 800);
  });

  it("stretches each delay by the jitter fraction, never past the cap", () => {
    const backoff = new Backoff({ initialMs: 1000, maxMs: 3000, random: () => 0.5 });
    assert.deepEqual([backoff.next(), backoff.next(), backoff.next()], [1500, 3000, 3000]);
  });
});

describe("TokenBucket", () => {
  it("allows a burst, then one token per 1/qps seconds", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(2, 3, clock);
    assert.ok(bucket.tryTake());
    assert.ok(bucket.tryTake());
    assert.ok(bucket.tryTake());
    assert.equal(bucket.tryTake(), false);
    clock.advance(500);
    assert.ok(bucket.tryTake());
    assert.equal(bucket.tryTake(), false);
  });

  it("take() waits for the caller's token, serving waiters in order", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    await bucket.take();
    const order: number[] = [];
    const first = bucket.take().then(() => order.push(1));
    const second = bucket.take().then(() => order.push(2));
    clock.advance(1000);
    await first;
    assert.deepEqual(order, [1]);
    clock.advance(1000);
    await second;
    assert.deepEqual(order, [1, 2]);
  });

  it("take() rejects when aborted and returns the reserved token", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket(1, 1, clock);
    await bucket.take();
    const abort = new AbortController();
    const waiting = bucket.take(abort.signal);
    abort.abort(new Error("stop"));
    await assert.rejects(waiting, /stop/);
    clock.advance(1000);
    assert.ok(bucket.tryTake());
  });
});
