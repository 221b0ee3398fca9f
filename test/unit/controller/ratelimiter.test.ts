import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import {
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
} from "../../../src/controller/ratelimiter.ts";

describe("ItemExponentialFailureRateLimiter", () => {
  it("doubles from the base per failure and caps at the maximum", () => {
    const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1_000_000);
    const delays = Array.from({ length: 20 }, () => limiter.when("a"));
    assert.deepEqual(delays.slice(0, 5), [5, 10, 20, 40, 80]);
    assert.equal(delays[17], 655_360);
    assert.equal(delays[18], 1_000_000);
    assert.equal(delays[19], 1_000_000);
    assert.equal(limiter.numRequeues("a"), 20);
  });

  it("tracks items separately and forgets one without touching others", () => {
    const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1_000_000);
    limiter.when("a");
    limiter.when("a");
    limiter.when("b");
    limiter.forget("a");
    assert.equal(limiter.numRequeues("a"), 0);
    assert.equal(limiter.when("a"), 5);
    assert.equal(limiter.when("b"), 10);
  });
});

describe("TokenBucketRateLimiter", () => {
  it("lets the burst through, then spaces calls at 1/qps and refills with time", () => {
    const clock = new FakeClock();
    const limiter = new TokenBucketRateLimiter<string>(10, 100, clock);
    for (let i = 0; i < 100; i++) assert.equal(limiter.when(`k${i}`), 0);
    assert.equal(limiter.when("x"), 100);
    assert.equal(limiter.when("y"), 200);
    clock.advance(1000);
    // 10 tokens refilled pay back the debt of 2, leaving 8.
    for (let i = 0; i < 8; i++) assert.equal(limiter.when(`z${i}`), 0);
    assert.equal(limiter.when("w"), 100);
  });
});

describe("defaultControllerRateLimiter", () => {
  it("is the per-item backoff (5 ms … 1000 s) as long as the bucket has tokens", () => {
    const limiter = defaultControllerRateLimiter<string>(new FakeClock());
    assert.deepEqual(
      Array.from({ length: 4 }, () => limiter.when("a")),
      [5, 10, 20, 40],
    );
    assert.equal(limiter.numRequeues("a"), 4);
    limiter.forget("a");
    assert.equal(limiter.numRequeues("a"), 0);
    assert.equal(limiter.when("a"), 5);
  });

  it("is the bucket delay when many distinct items fail at once", () => {
    const limiter = defaultControllerRateLimiter<string>(new FakeClock());
    for (let i = 0; i < 100; i++) limiter.when(`k${i}`);
    assert.equal(limiter.when("k100"), 100);
  });
});

describe("MaxOfRateLimiter", () => {
  it("returns the longest delay and the largest requeue count", () => {
    const limiter = new MaxOfRateLimiter<string>(
      new ItemExponentialFailureRateLimiter(5, 1000),
      new ItemExponentialFailureRateLimiter(7, 1000),
    );
    assert.equal(limiter.when("a"), 7);
    assert.equal(limiter.when("a"), 14);
    assert.equal(limiter.numRequeues("a"), 2);
  });
});
