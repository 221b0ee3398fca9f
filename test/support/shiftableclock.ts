// A clock for end-to-end deadline tests: real time for sleeps, while now() can be pushed ahead to
// reach a deadline without waiting for it.

import { type Clock, systemClock } from "../../src/clock.ts";

export class ShiftableClock implements Clock {
  offsetMs = 0;
  now(): number {
    return systemClock.now() + this.offsetMs;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return systemClock.sleep(ms, signal);
  }
}
