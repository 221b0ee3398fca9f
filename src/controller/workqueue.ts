// A rate-limited, delaying work queue with client-go semantics:
// - dedup: an item already waiting is not queued twice (the dirty set);
// - exclusivity: an item handed out by get() is not handed out again until done() (the processing
//   set); re-added meanwhile, it is queued once more by done();
// - addAfter / addRateLimited hold items back on the injected clock;
// - rank: ready items are handed out first-queued first, unless the queue was given a rank (a time on
//   the queue's clock, per item, read from the caller's state when the item is queued): then lowest
//   rank first, ties first-queued first, and none before its rank's time. An add of an item already
//   waiting moves it forward when its rank is now lower. An addAfter whose wait ended is due at once,
//   whatever its rank: the wait was the caller's poll, and a rank must not lengthen it. A rate-limited
//   re-add is a backoff, not a poll: it takes its rank as any add does.
// Items are compared with SameValueZero (Set semantics), so use strings or other primitives.
// Unlike client-go, get() hands out nothing once shutdown began: shutdown means "take no more work".
import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { MinHeap } from "./heap.ts";
import type { RateLimiter } from "./ratelimiter.ts";
import { defaultControllerRateLimiter } from "./ratelimiter.ts";

/** Work in progress, computed when metrics are scraped. */
export interface InFlightWork {
  unfinishedSeconds: number;
  longestRunningSeconds: number;
}

/** Sink for the workqueue_* metrics of one queue; metrics.ts provides the Prometheus one. */
export interface QueueMetrics {
  added(): void;
  depth(items: number): void;
  queueLatency(seconds: number): void;
  workDuration(seconds: number): void;
  retried(): void;
  /** Called once; report is polled at scrape time until the queue shuts down. */
  observeInFlight(report: () => InFlightWork): void;
  release(): void;
}

export interface WorkQueueOptions<T> {
  clock?: Clock;
  rateLimiter?: RateLimiter<T>;
  metrics?: QueueMetrics;
  /** The rank items are handed out by, lowest first and not before it (epoch ms on the clock); absent: first-queued first, at once. */
  rank?: (item: T) => number;
}

interface DelayedItem<T> {
  item: T;
  readyAt: number;
  /** Queued by addAfter: due at once when the wait ends. */
  poll: boolean;
}

interface ReadyItem<T> {
  item: T;
  rank: number;
  /** When it was queued, as a count: first-queued first among equal ranks. */
  seq: number;
}

const handedOutFirst = <T>(a: ReadyItem<T>, b: ReadyItem<T>): boolean =>
  a.rank !== b.rank ? a.rank < b.rank : a.seq < b.seq;

export class WorkQueue<T> {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<T>;
  private readonly metrics: QueueMetrics | undefined;
  private readonly rank: ((item: T) => number) | undefined;
  /** Hands the first item to waiting get() calls when its rank comes due. */
  private readonly rankAlarm: Alarm;

  // Ready items: the map holds each waiting item's current entry; the heap may hold stale entries
  // (an item moved forward), skipped when they surface.
  private readonly queue = new MinHeap<ReadyItem<T>>(handedOutFirst);
  private readonly waiting = new Map<T, ReadyItem<T>>();
  private queued = 0;
  private readonly dirty = new Set<T>();
  private readonly processing = new Set<T>();
  private readonly getters: ((item: T | undefined) => void)[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private shuttingDown = false;
  private handOffScheduled = false;

  private readonly addedAt = new Map<T, number>();
  private readonly startedAt = new Map<T, number>();

  // Delayed items: the map holds each item's current deadline; the heap may hold stale entries,
  // skipped when they surface.
  private readonly readyAt = new Map<T, number>();
  /** Items whose addAfter wait ended and that were not handed out since: ranked no later than now. */
  private readonly pollsDue = new Set<T>();
  private readonly delayHeap = new MinHeap<DelayedItem<T>>((a, b) => a.readyAt < b.readyAt);
  /** Releases the delayed items when the earliest deadline comes. */
  private readonly delayAlarm: Alarm;

  constructor(options: WorkQueueOptions<T> = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<T>(this.clock);
    this.metrics = options.metrics;
    this.rank = options.rank;
    this.rankAlarm = new Alarm(this.clock, () => this.handOffToGetters());
    this.delayAlarm = new Alarm(this.clock, () => this.releaseDueItems());
    this.metrics?.observeInFlight(() => this.inFlightWork());
  }

  add(item: T): void {
    if (this.shuttingDown) return;
    if (this.dirty.has(item)) {
      this.moveForward(item);
      return;
    }
    this.dirty.add(item);
    this.addedAt.set(item, this.clock.now());
    this.metrics?.added();
    if (this.processing.has(item)) return;
    this.enqueue(item);
  }

  /** Adds the item once delayMs has passed, due at once then; an earlier pending deadline for it is kept. */
  addAfter(item: T, delayMs: number): void {
    this.delay(item, delayMs, true);
  }

  private delay(item: T, delayMs: number, poll: boolean): void {
    if (this.shuttingDown) return;
    this.metrics?.retried();
    if (delayMs <= 0) {
      if (poll) this.pollsDue.add(item);
      this.add(item);
      return;
    }
    const at = this.clock.now() + delayMs;
    const current = this.readyAt.get(item);
    if (current !== undefined && current <= at) return;
    this.readyAt.set(item, at);
    this.delayHeap.push({ item, readyAt: at, poll });
    this.scheduleTimer();
  }

  /** The item's rank now: the caller's, no later than now for a poll whose wait ended. */
  private rankOf(item: T): number {
    const rank = this.rank?.(item) ?? 0;
    return this.pollsDue.has(item) ? Math.min(rank, this.clock.now()) : rank;
  }

  /** A waiting item whose rank is now lower takes its new place; its wait is counted from its add. */
  private moveForward(item: T): void {
    const entry = this.waiting.get(item);
    if (!entry || !this.rank) return;
    const rank = this.rankOf(item);
    if (rank >= entry.rank) return;
    const moved = { item, rank, seq: entry.seq };
    this.waiting.set(item, moved);
    this.queue.push(moved);
    this.scheduleHandOff();
  }

  addRateLimited(item: T): void {
    this.delay(item, this.rateLimiter.when(item), false);
  }

  /** Ends the item's backoff history; call it when the item was processed successfully. */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }

  /** Number of items waiting to be handed out (with a rank, due or not). */
  len(): number {
    return this.waiting.size;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** The next item, marked as processing; undefined once the queue shuts down. */
  get(): Promise<T | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const item = this.takeNext();
    if (item !== undefined) return Promise.resolve(this.handOut(item));
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Marks the item as processed; if it was added meanwhile it is queued again. */
  done(item: T): void {
    const started = this.startedAt.get(item);
    if (started !== undefined) this.metrics?.workDuration((this.clock.now() - started) / 1000);
    this.startedAt.delete(item);
    this.processing.delete(item);
    if (this.dirty.has(item) && !this.shuttingDown) this.enqueue(item);
    if (this.processing.size === 0) {
      for (const resolve of this.drainWaiters.splice(0)) resolve();
    }
  }

  /** Stops accepting and handing out items; waiting get() calls resolve to undefined. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.delayAlarm.cancel();
    this.rankAlarm.cancel();
    for (const resolve of this.getters.splice(0)) resolve(undefined);
    this.metrics?.release();
  }

  /** shutDown(), then resolves once every item handed out has been marked done. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private enqueue(item: T): void {
    const entry = { item, rank: this.rankOf(item), seq: this.queued++ };
    this.waiting.set(item, entry);
    this.queue.push(entry);
    this.metrics?.depth(this.waiting.size);
    this.scheduleHandOff();
  }

  private scheduleHandOff(): void {
    if (this.getters.length > 0 && !this.handOffScheduled) {
      // Hand off on a microtask, not synchronously, so adds made in one go (an event mapped to the
      // same key twice, a burst of updates) coalesce before a waiting worker takes the item.
      this.handOffScheduled = true;
      queueMicrotask(() => this.handOffToGetters());
    }
  }

  private handOffToGetters(): void {
    this.handOffScheduled = false;
    while (!this.shuttingDown && this.getters.length > 0) {
      const item = this.takeNext();
      if (item === undefined) return;
      this.getters.shift()!(this.handOut(item));
    }
  }

  /**
   * The first waiting item whose rank is due, discarding stale heap entries; when the first is not
   * due yet, none, and a timer hands it out when it is.
   */
  private takeNext(): T | undefined {
    for (let top = this.queue.peek(); top; top = this.queue.peek()) {
      if (this.waiting.get(top.item) !== top) {
        this.queue.pop();
        continue;
      }
      if (top.rank > this.clock.now()) {
        if (!this.shuttingDown) this.rankAlarm.arm(top.rank);
        return undefined;
      }
      this.queue.pop();
      this.waiting.delete(top.item);
      return top.item;
    }
    return undefined;
  }

  private handOut(item: T): T {
    const now = this.clock.now();
    const added = this.addedAt.get(item);
    if (added !== undefined) this.metrics?.queueLatency((now - added) / 1000);
    this.addedAt.delete(item);
    this.startedAt.set(item, now);
    this.processing.add(item);
    this.dirty.delete(item);
    this.pollsDue.delete(item);
    this.metrics?.depth(this.waiting.size);
    return item;
  }

  private inFlightWork(): InFlightWork {
    const now = this.clock.now();
    let unfinishedSeconds = 0;
    let longestRunningSeconds = 0;
    for (const started of this.startedAt.values()) {
      const seconds = (now - started) / 1000;
      unfinishedSeconds += seconds;
      longestRunningSeconds = Math.max(longestRunningSeconds, seconds);
    }
    return { unfinishedSeconds, longestRunningSeconds };
  }

  /** Queues every delayed item whose deadline has passed, then re-arms the timer. */
  private releaseDueItems(): void {
    const now = this.clock.now();
    for (let next = this.peekDelayed(); next && next.readyAt <= now; next = this.peekDelayed()) {
      this.delayHeap.pop();
      this.readyAt.delete(next.item);
      if (next.poll) this.pollsDue.add(next.item);
      this.add(next.item);
    }
    this.scheduleTimer();
  }

  /** The earliest live delayed entry, discarding stale ones. */
  private peekDelayed(): DelayedItem<T> | undefined {
    for (let top = this.delayHeap.peek(); top; top = this.delayHeap.peek()) {
      if (this.readyAt.get(top.item) === top.readyAt) return top;
      this.delayHeap.pop();
    }
    return undefined;
  }

  private scheduleTimer(): void {
    if (this.shuttingDown) return;
    const next = this.peekDelayed();
    if (!next) {
      this.delayAlarm.cancel();
      return;
    }
    if (this.delayAlarm.setFor(next.readyAt)) return;
    if (next.readyAt <= this.clock.now()) {
      this.delayAlarm.cancel();
      this.releaseDueItems();
      return;
    }
    this.delayAlarm.arm(next.readyAt);
  }
}

/** One pending wake-up on the clock: armed for a sooner time it replaces a later one, never the reverse. */
class Alarm {
  private readonly clock: Clock;
  private readonly fire: () => void;
  private pending: { at: number; cancel: AbortController } | undefined;

  constructor(clock: Clock, fire: () => void) {
    this.clock = clock;
    this.fire = fire;
  }

  /** Whether it is set to go off at `at` or sooner. */
  setFor(at: number): boolean {
    return this.pending !== undefined && this.pending.at <= at;
  }

  arm(at: number): void {
    if (this.setFor(at)) return;
    this.cancel();
    const pending = { at, cancel: new AbortController() };
    this.pending = pending;
    this.clock.sleep(at - this.clock.now(), pending.cancel.signal).then(
      () => {
        if (this.pending === pending) this.pending = undefined;
        this.fire();
      },
      () => {}, // cancelled: a sooner time or shutdown replaced it
    );
  }

  cancel(): void {
    this.pending?.cancel.abort();
    this.pending = undefined;
  }
}
