// A rate-limited, delaying work queue with client-go semantics:
// - dedup: an item already waiting is not queued twice (the dirty set);
// - exclusivity: an item handed out by get() is not handed out again until done() (the processing
//   set); re-added meanwhile, it is queued once more by done();
// - addAfter / addRateLimited hold items back on the injected clock;
// - order: ready items are handed out first-queued first, unless the queue was given an order (a
//   rank per item, compared as strings): then lowest rank first, items without one after those with
//   one, ties first-queued first. A rank is read when the item is queued;
// - coalesce: while items wait for a worker, an add() of an item being processed, processed less than
//   quietMs ago or already held, holds it until quietMs have passed without another add (from the end
//   of its processing at the earliest, maxMs after the hold began at the latest), so the burst of
//   events one pass set off (its own writes' among them) is taken by one more pass, not one each; with
//   no item waiting it is queued at once, and a get() that finds nothing queued takes the held item
//   that ranks first rather than wait, so a hold never leaves a worker idle. addRateLimited under a
//   hold waits the longer of its backoff and the hold (a pass's requeue then reads a cache that shows
//   the pass's writes); addAfter keeps its delay.
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
  /** The rank ready items are handed out by (lowest first); undefined: after every ranked item. */
  order?: (item: T) => string | undefined;
  /** See the header; absent: never held. */
  coalesce?: Coalescing;
}

export interface Coalescing {
  quietMs: number;
  maxMs: number;
}

interface DelayedItem<T> {
  item: T;
  readyAt: number;
  /** A coalescing hold (the held map's), not a timed re-add (the readyAt map's). */
  held: boolean;
}

interface ReadyItem<T> {
  item: T;
  rank: string | undefined;
  /** When it was queued, as a count: first-queued first among equal ranks. */
  seq: number;
}

function handedOutFirst<T>(a: ReadyItem<T>, b: ReadyItem<T>): boolean {
  if (a.rank !== b.rank) {
    if (a.rank === undefined) return false;
    if (b.rank === undefined) return true;
    return a.rank < b.rank;
  }
  return a.seq < b.seq;
}

export class WorkQueue<T> {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<T>;
  private readonly metrics: QueueMetrics | undefined;
  private readonly order: ((item: T) => string | undefined) | undefined;
  private readonly coalesce: Coalescing | undefined;
  /** When each item's processing last ended, oldest first; entries past quietMs are dropped. */
  private readonly lastDone = new Map<T, number>();
  /** Items add()ed while processing, with coalescing on: done() queues or holds them. */
  private readonly addedWhileProcessing = new Set<T>();
  /** Coalescing holds: the release time, and the latest it may move to. */
  private readonly held = new Map<T, { until: number; latest: number }>();

  private readonly queue = new MinHeap<ReadyItem<T>>(handedOutFirst);
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
  private readonly delayHeap = new MinHeap<DelayedItem<T>>((a, b) => a.readyAt < b.readyAt);
  private timer: { at: number; cancel: AbortController } | undefined;

  constructor(options: WorkQueueOptions<T> = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<T>(this.clock);
    this.metrics = options.metrics;
    this.order = options.order;
    this.coalesce = options.coalesce;
    this.metrics?.observeInFlight(() => this.inFlightWork());
  }

  add(item: T): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    if (this.coalesce && this.processing.has(item)) {
      this.addedWhileProcessing.add(item);
      return;
    }
    if (this.holds(item)) this.hold(item, 0);
    else this.addNow(item);
  }

  private addNow(item: T): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
    this.held.delete(item);
    this.dirty.add(item);
    this.addedAt.set(item, this.clock.now());
    this.metrics?.added();
    if (this.processing.has(item)) return;
    this.enqueue(item);
  }

  /** Adds the item once delayMs has passed; an earlier pending deadline for it is kept. */
  addAfter(item: T, delayMs: number): void {
    if (this.shuttingDown) return;
    this.metrics?.retried();
    if (delayMs <= 0) this.addNow(item);
    else this.delay(item, delayMs);
  }

  /** Whether an add of the item is held: others wait, and it is processing, just processed or held. */
  private holds(item: T): boolean {
    if (!this.coalesce || this.queue.size === 0) return false;
    if (this.processing.has(item) || this.held.has(item)) return true;
    const done = this.lastDone.get(item);
    return done !== undefined && done > this.clock.now() - this.coalesce.quietMs;
  }

  /** Holds the item quietMs from now (no later than its hold's latest), and atLeastMs at the least. */
  private hold(item: T, atLeastMs: number): void {
    const { quietMs, maxMs } = this.coalesce!;
    const now = this.clock.now();
    const current = this.held.get(item);
    const latest = current?.latest ?? now + maxMs;
    const until = Math.max(current?.until ?? 0, Math.min(now + quietMs, latest), now + atLeastMs);
    if (current?.until === until) return;
    this.held.set(item, { until, latest });
    this.delayHeap.push({ item, readyAt: until, held: true });
    this.scheduleTimer();
  }

  private delay(item: T, delayMs: number): void {
    const at = this.clock.now() + delayMs;
    const current = this.readyAt.get(item);
    if (current !== undefined && current <= at) return;
    this.readyAt.set(item, at);
    this.delayHeap.push({ item, readyAt: at, held: false });
    this.scheduleTimer();
  }

  addRateLimited(item: T): void {
    const backoffMs = this.rateLimiter.when(item);
    if (this.shuttingDown || !this.holds(item)) {
      this.addAfter(item, backoffMs);
      return;
    }
    this.metrics?.retried();
    this.hold(item, backoffMs);
  }

  /** Ends the item's backoff history; call it when the item was processed successfully. */
  forget(item: T): void {
    this.rateLimiter.forget(item);
  }

  numRequeues(item: T): number {
    return this.rateLimiter.numRequeues(item);
  }

  /** Number of items ready to be handed out. */
  len(): number {
    return this.queue.size;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** The next item, marked as processing; undefined once the queue shuts down. */
  get(): Promise<T | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    if (this.queue.size === 0) this.releaseFirstHeld();
    const next = this.queue.pop();
    if (next !== undefined) return Promise.resolve(this.handOut(next.item));
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Marks the item as processed; if it was added meanwhile it is queued again. */
  done(item: T): void {
    const started = this.startedAt.get(item);
    if (started !== undefined) this.metrics?.workDuration((this.clock.now() - started) / 1000);
    this.startedAt.delete(item);
    this.processing.delete(item);
    if (this.coalesce) this.noteDone(item, this.coalesce.quietMs);
    if (this.dirty.has(item) && !this.shuttingDown) this.enqueue(item);
    else if (this.addedWhileProcessing.has(item)) this.add(item);
    this.addedWhileProcessing.delete(item);
    if (this.processing.size === 0) {
      for (const resolve of this.drainWaiters.splice(0)) resolve();
    }
  }

  private noteDone(item: T, quietMs: number): void {
    const now = this.clock.now();
    this.lastDone.delete(item);
    this.lastDone.set(item, now);
    for (const [oldest, at] of this.lastDone) {
      if (at > now - quietMs) break;
      this.lastDone.delete(oldest);
    }
  }

  /** Stops accepting and handing out items; waiting get() calls resolve to undefined. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.timer?.cancel.abort();
    this.timer = undefined;
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
    this.queue.push({ item, rank: this.order?.(item), seq: this.queued++ });
    this.metrics?.depth(this.queue.size);
    if (this.getters.length > 0 && !this.handOffScheduled) {
      // Hand off on a microtask, not synchronously, so adds made in one go (an event mapped to the
      // same key twice, a burst of updates) coalesce before a waiting worker takes the item.
      this.handOffScheduled = true;
      queueMicrotask(() => this.handOffToGetters());
    }
  }

  private handOffToGetters(): void {
    this.handOffScheduled = false;
    while (!this.shuttingDown && this.getters.length > 0 && this.queue.size > 0) {
      this.getters.shift()!(this.handOut(this.queue.pop()!.item));
    }
  }

  private handOut(item: T): T {
    const now = this.clock.now();
    const added = this.addedAt.get(item);
    if (added !== undefined) this.metrics?.queueLatency((now - added) / 1000);
    this.addedAt.delete(item);
    this.startedAt.set(item, now);
    this.processing.add(item);
    this.dirty.delete(item);
    this.metrics?.depth(this.queue.size);
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

  /** Queues the held item that ranks first (its hold ends early: a worker would wait otherwise). */
  private releaseFirstHeld(): void {
    let first: ReadyItem<T> | undefined;
    for (const [item, { until }] of this.held) {
      if (this.processing.has(item)) continue;
      const candidate = { item, rank: this.order?.(item), seq: until };
      if (!first || handedOutFirst(candidate, first)) first = candidate;
    }
    if (first) this.addNow(first.item);
  }

  /** Queues every delayed item whose deadline has passed, then re-arms the timer. */
  private releaseDueItems(): void {
    const now = this.clock.now();
    for (let next = this.peekDelayed(); next && next.readyAt <= now; next = this.peekDelayed()) {
      this.delayHeap.pop();
      if (next.held) this.held.delete(next.item);
      else this.readyAt.delete(next.item);
      this.addNow(next.item);
    }
    this.scheduleTimer();
  }

  /** The earliest live delayed entry, discarding stale ones. */
  private peekDelayed(): DelayedItem<T> | undefined {
    for (let top = this.delayHeap.peek(); top; top = this.delayHeap.peek()) {
      const live = top.held ? this.held.get(top.item)?.until : this.readyAt.get(top.item);
      if (live === top.readyAt) return top;
      this.delayHeap.pop();
    }
    return undefined;
  }

  private scheduleTimer(): void {
    if (this.shuttingDown) return;
    const next = this.peekDelayed();
    if (this.timer && next && this.timer.at <= next.readyAt) return;
    this.timer?.cancel.abort();
    this.timer = undefined;
    if (!next) return;
    const waitMs = next.readyAt - this.clock.now();
    if (waitMs <= 0) {
      this.releaseDueItems();
      return;
    }
    const timer = { at: next.readyAt, cancel: new AbortController() };
    this.timer = timer;
    this.clock.sleep(waitMs, timer.cancel.signal).then(
      () => {
        if (this.timer === timer) this.timer = undefined;
        this.releaseDueItems();
      },
      () => {}, // cancelled: a sooner deadline or shutdown replaced this timer
    );
  }
}
