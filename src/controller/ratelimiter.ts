// Requeue delays with client-go's default controller rate limiter semantics: per-item exponential
// backoff combined (max) with one token bucket shared by all items, so a storm of failures cannot
// exceed the bucket's rate however many distinct keys fail.
import type { Clock } from "../clock.ts";

export interface RateLimiter<T> {
  /** Delay in ms before the item may be retried; each call counts as one more failure. */
  when(item: T): number;
  /** Clears the item's failure history (call on success). */
  forget(item: T): void;
  numRequeues(item: T): number;
}

/** baseMs * 2^failures, capped at maxMs. */
export class ItemExponentialFailureRateLimiter<T> implements RateLimiter<T> {
  private readonly failures = new Map<T, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(baseMs: number, maxMs: number) {
    this.baseMs = baseMs;
    this.maxMs = maxMs;
  }

  when(item: T): number {
    const exponent = this.failures.get(item) ?? 0;
    this.failures.set(item, exponent + 1);
    return Math.min(this.baseMs * 2 ** exponent, this.maxMs);
  }

  forget(item: T): void {
    this.failures.delete(item);
  }

  numRequeues(item: T): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * A token bucket refilled at qps up to burst. Every call reserves one token; when the bucket is in
 * debt the delay is how long the refill takes to pay it back. Items are not tracked.
 */
export class TokenBucketRateLimiter<T> implements RateLimiter<T> {
  private readonly qps: number;
  private readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private lastRefillMs: number;

  constructor(qps: number, burst: number, clock: Clock) {
    this.qps = qps;
    this.burst = burst;
    this.clock = clock;
    this.tokens = burst;
    this.lastRefillMs = clock.now();
  }

  when(_item: T): number {
    const now = this.clock.now();
    const elapsedMs = Math.max(0, now - this.lastRefillMs);
    this.tokens = Math.min(this.burst, this.tokens + (elapsedMs / 1000) * this.qps);
    this.lastRefillMs = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  forget(_item: T): void {}

  numRequeues(_item: T): number {
    return 0;
  }
}

/** The longest delay of all limiters; requeue counts are the largest any limiter reports. */
export class MaxOfRateLimiter<T> implements RateLimiter<T> {
  private readonly limiters: RateLimiter<T>[];

  constructor(...limiters: RateLimiter<T>[]) {
    this.limiters = limiters;
  }

  when(item: T): number {
    let delay = 0;
    for (const limiter of this.limiters) delay = Math.max(delay, limiter.when(item));
    return delay;
  }

  forget(item: T): void {
    for (const limiter of this.limiters) limiter.forget(item);
  }

  numRequeues(item: T): number {
    let count = 0;
    for (const limiter of this.limiters) count = Math.max(count, limiter.numRequeues(item));
    return count;
  }
}

/** client-go's DefaultTypedControllerRateLimiter: 5 ms → 1000 s per item, 10 qps burst 100 overall. */
export function defaultControllerRateLimiter<T>(clock: Clock): RateLimiter<T> {
  return new MaxOfRateLimiter<T>(
    new ItemExponentialFailureRateLimiter<T>(5, 1_000_000),
    new TokenBucketRateLimiter<T>(10, 100, clock),
  );
}
