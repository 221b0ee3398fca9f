// A rate-limited, delaying work queue with client-go semantics:
// - dedup: an item already waiting is not queued twice (the dirty set);
// - exclusivity: an item handed out by get() is not handed out again until done() (the processing
//   set); re-added meanwhile, it is queued once more by done();
// - addAfter / addRateLimited hold items back on the injected clock.
// Items are compared with SameValueZero (Set semantics), so use strings or other primitives.
// Unlike client-go, get() hands out nothing once shutdown began: shutdown means "take no more work".
import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
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
}

interface DelayedItem<T> {
  item: T;
  readyAt: number;
}

export class WorkQueue<T> {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<T>;
  private readonly metrics: QueueMetrics | undefined;

  private readonly queue: T[] = [];
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
  private readonly delayHeap: DelayedItem<T>[] = [];
  private timer: { at: number; cancel: AbortController } | undefined;

  constructor(options: WorkQueueOptions<T> = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<T>(this.clock);
    this.metrics = options.metrics;
    this.metrics?.observeInFlight(() => this.inFlightWork());
  }

  add(item: T): void {
    if (this.shuttingDown || this.dirty.has(item)) return;
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
    if (delayMs <= 0) {
      this.add(item);
      return;
    }
    const at = this.clock.now() + delayMs;
    const current = this.readyAt.get(item);
    if (current !== undefined && current <= at) return;
    this.readyAt.set(item, at);
    heapPush(this.delayHeap, { item, readyAt: at });
    this.scheduleTimer();
  }

  addRateLimited(item: T): void {
    this.addAfter(item, this.rateLimiter.when(item));
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
    return this.queue.length;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** The next item, marked as processing; undefined once the queue shuts down. */
  get(): Promise<T | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const item = this.queue.shift();
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
    this.queue.push(item);
    this.metrics?.depth(this.queue.length);
    if (this.getters.length > 0 && !this.handOffScheduled) {
      // Hand off on a microtask, not synchronously, so adds made in one go (an event mapped to the
      // same key twice, a burst of updates) coalesce before a waiting worker takes the item.
      this.handOffScheduled = true;
      queueMicrotask(() => this.handOffToGetters());
    }
  }

  private handOffToGetters(): void {
    this.handOffScheduled = false;
    while (!this.shuttingDown && this.getters.length > 0 && this.queue.length > 0) {
      this.getters.shift()!(this.handOut(this.queue.shift()!));
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
    this.metrics?.depth(this.queue.length);
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
      heapPop(this.delayHeap);
      this.readyAt.delete(next.item);
      this.add(next.item);
    }
    this.scheduleTimer();
  }

  /** The earliest live delayed entry, discarding stale ones. */
  private peekDelayed(): DelayedItem<T> | undefined {
    for (let top = this.delayHeap[0]; top; top = this.delayHeap[0]) {
      if (this.readyAt.get(top.item) === top.readyAt) return top;
      heapPop(this.delayHeap);
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

function heapPush<T>(heap: DelayedItem<T>[], entry: DelayedItem<T>): void {
  heap.push(entry);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]!.readyAt <= heap[i]!.readyAt) break;
    [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
    i = parent;
  }
}

function heapPop<T>(heap: DelayedItem<T>[]): void {
  const last = heap.pop();
  if (last === undefined || heap.length === 0) return;
  heap[0] = last;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let smallest = i;
    if (left < heap.length && heap[left]!.readyAt < heap[smallest]!.readyAt) smallest = left;
    if (right < heap.length && heap[right]!.readyAt < heap[smallest]!.readyAt) smallest = right;
    if (smallest === i) return;
    [heap[smallest], heap[i]] = [heap[i]!, heap[smallest]!];
    i = smallest;
  }
}
