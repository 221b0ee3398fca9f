// Time is injected everywhere a deadline, backoff or requeue is computed, so tests can run
// 3-minute deadlines and 30 s backoffs in milliseconds.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after ms, or rejects with the signal's reason when aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/** A clock moved only by the test: sleepers wake when advance() passes their deadline. */
export class FakeClock implements Clock {
  private current: number;
  private sleepers: { at: number; resolve: () => void }[] = [];

  constructor(start = Date.parse("2026-01-01T00:00:00Z")) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const sleeper = { at: this.current + Math.max(0, ms), resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        "abort",
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Moves time forward and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.current += ms;
    const due = this.sleepers.filter((s) => s.at <= this.current);
    this.sleepers = this.sleepers.filter((s) => s.at > this.current);
    for (const s of due) s.resolve();
  }
}
