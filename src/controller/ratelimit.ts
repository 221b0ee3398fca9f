// Client-side token bucket and jittered exponential backoff, both driven by an injected Clock.

import { type Clock, systemClock } from "../clock.ts";

/**
 * Token bucket: `qps` tokens per second, at most `burst` banked. take() waits for a token; callers are
 * served in arrival order because each one reserves its token (possibly into debt) before sleeping.
 */
export class TokenBucket {
  private readonly qps: number;
  private readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private last: number;

  constructor(qps: number, burst: number, clock: Clock = systemClock) {
    if (qps <= 0) throw new Error("TokenBucket needs qps > 0");
    this.qps = qps;
    this.burst = Math.max(1, burst);
    this.clock = clock;
    this.tokens = this.burst;
    this.last = clock.now();
  }

  /** Takes a token now if one is banked; returns false (taking nothing) otherwise. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Resolves when the caller's token is due; rejects with the signal's reason when aborted first. */
  async take(signal?: AbortSignal): Promise<void> {
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= 0) return;
    const waitMs = Math.ceil((-this.tokens / this.qps) * 1000);
    try {
      await this.clock.sleep(waitMs, signal);
    } catch (e) {
      this.tokens += 1;
      throw e;
    }
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }
}

export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  /** Each delay is stretched by up to this fraction at random, so many clients do not retry in step. */
  jitter?: number;
  random?: () => number;
}

/** Exponential backoff: initialMs, doubling per attempt, capped at maxMs (client-go reflector: 800 ms → 30 s). */
export class Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly jitter: number;
  private readonly random: () => number;
  private attempt = 0;

  constructor(opts: BackoffOptions = {}) {
    this.initialMs = opts.initialMs ?? 800;
    this.maxMs = opts.maxMs ?? 30_000;
    this.jitter = opts.jitter ?? 1;
    this.random = opts.random ?? Math.random;
  }

  /** The delay before the next retry; each call doubles the base delay up to the cap. */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    if (base < this.maxMs) this.attempt++;
    return Math.min(this.maxMs, Math.round(base * (1 + this.random() * this.jitter)));
  }

  reset(): void {
    this.attempt = 0;
  }
}
