import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { ItemExponentialFailureRateLimiter } from "../../../src/controller/ratelimiter.ts";
import { type InFlightWork, type QueueMetrics, WorkQueue } from "../../../src/controller/workqueue.ts";
import { settle } from "./controller-fakeinformer.ts";

function newQueue(clock = new FakeClock()): WorkQueue<string> {
  return new WorkQueue<string>({ clock });
}

describe("WorkQueue", () => {
  it("de-duplicates an item that is already waiting", async () => {
    const queue = newQueue();
    queue.add("a");
    queue.add("a");
    queue.add("b");
    assert.equal(queue.len(), 2);
    assert.equal(await queue.get(), "a");
    assert.equal(await queue.get(), "b");
    assert.equal(queue.len(), 0);
  });

  it("holds an item re-added while processing until done, then queues it once", async () => {
    const queue = newQueue();
    queue.add("a");
    const item = await queue.get();
    queue.add("a");
    queue.add("a");
    assert.equal(queue.len(), 0, "not handed out again while processing");
    queue.done(item!);
    assert.equal(queue.len(), 1);
    assert.equal(await queue.get(), "a");
    queue.done("a");
    assert.equal(queue.len(), 0);
  });

  it("hands a waiting get() the next added item", async () => {
    const queue = newQueue();
    const pending = queue.get();
    queue.add("x");
    assert.equal(await pending, "x");
  });

  it("never processes one key in two workers at once, and runs a key dirtied mid-process again", async () => {
    const queue = newQueue();
    const keys = ["k0", "k1", "k2", "k3"];
    const active = new Set<string>();
    const lastAddRound = new Map<string, number>();
    const lastStartRound = new Map<string, number>();
    let round = 0;
    let overlaps = 0;

    const worker = async () => {
      for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
        if (active.has(key)) overlaps++;
        active.add(key);
        lastStartRound.set(key, round);
        await settle();
        active.delete(key);
        queue.done(key);
      }
    };
    const workers = Array.from({ length: 8 }, () => worker());

    for (round = 1; round <= 200; round++) {
      const key = keys[round % keys.length]!;
      queue.add(key);
      lastAddRound.set(key, round);
      if (round % 3 === 0) await settle();
    }
    while (queue.len() > 0 || active.size > 0) await settle();
    await queue.shutDownWithDrain();
    await Promise.all(workers);

    assert.equal(overlaps, 0);
    for (const key of keys) {
      // Every add is followed by a processing start that saw it (same round or later).
      assert.ok(lastStartRound.get(key)! >= lastAddRound.get(key)!, `${key} ran after its last add`);
    }
  });

  it("with a rank, hands out the lowest rank first, first-queued first among equals", async () => {
    const ranks: Record<string, number> = { a: 3, b: 1, c: 3, d: 2 };
    const queue = new WorkQueue<string>({ clock: new FakeClock(), rank: (item) => ranks[item] ?? 0 });
    for (const item of ["a", "b", "c", "d"]) queue.add(item);
    const order = [];
    for (let i = 0; i < 4; i++) order.push(await queue.get());
    assert.deepEqual(order, ["b", "d", "a", "c"]);
  });

  it("an add of a waiting item whose rank fell moves it forward, once; a higher rank leaves it", async () => {
    const ranks: Record<string, number> = { a: 1, b: 2, c: 3 };
    const queue = new WorkQueue<string>({ clock: new FakeClock(), rank: (item) => ranks[item] ?? 0 });
    for (const item of ["a", "b", "c"]) queue.add(item);
    ranks.c = 0;
    queue.add("c");
    ranks.a = 9;
    queue.add("a");
    assert.equal(queue.len(), 3, "still one entry each");
    const order = [];
    for (let i = 0; i < 3; i++) order.push(await queue.get());
    assert.deepEqual(order, ["c", "a", "b"]);
    assert.equal(queue.len(), 0);
  });

  it("a ranked item re-added while processing is ranked again when done() queues it", async () => {
    const ranks: Record<string, number> = { a: 1, b: 2 };
    const queue = new WorkQueue<string>({ clock: new FakeClock(), rank: (item) => ranks[item] ?? 0 });
    queue.add("a");
    const item = await queue.get();
    queue.add("a");
    queue.add("b");
    ranks.a = 5;
    queue.done(item!);
    assert.equal(await queue.get(), "b");
    assert.equal(await queue.get(), "a");
  });

  it("hands out no item before its rank's time, and a waiting get() takes it when it comes due", async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const ranks: Record<string, number> = { a: start + 1_000, b: start + 500 };
    const queue = new WorkQueue<string>({ clock, rank: (item) => ranks[item] ?? 0 });
    queue.add("a");
    queue.add("b");
    const next = queue.get();
    let taken: string | undefined;
    void next.then((item) => {
      taken = item;
    });
    await settle();
    assert.equal(taken, undefined, "nothing is due yet");
    clock.advance(500);
    await settle();
    assert.equal(taken, "b");
    ranks.a = start;
    queue.add("a");
    assert.equal(await queue.get(), "a", "moved forward, due now");
  });

  it("an addAfter whose wait ended is due at once, whatever its rank; a rate-limited re-add keeps its rank", async () => {
    const clock = new FakeClock();
    const start = clock.now();
    const queue = new WorkQueue<string>({
      clock,
      rank: () => clock.now() + 5_000,
      rateLimiter: new ItemExponentialFailureRateLimiter(100, 100),
    });
    queue.addAfter("poll", 100);
    queue.addRateLimited("backoff");
    clock.advance(100);
    await settle();
    assert.equal(queue.len(), 2);
    assert.equal(await queue.get(), "poll", "the poll's wait is not lengthened by the rank");
    const next = queue.get();
    let taken: string | undefined;
    void next.then((item) => {
      taken = item;
    });
    clock.advance(4_999);
    await settle();
    assert.equal(taken, undefined, "the backoff waits for its rank");
    clock.advance(1);
    await settle();
    assert.equal(taken, "backoff");
    assert.equal(clock.now(), start + 5_100);
  });

  it("a poll that ends while its item is processing is due at once when done() queues it", async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({ clock, rank: () => clock.now() + 5_000 });
    queue.addAfter("a", 0);
    assert.equal(await queue.get(), "a");
    queue.addAfter("a", 100);
    clock.advance(100);
    await settle();
    queue.done("a");
    assert.equal(await queue.get(), "a");
    queue.done("a");
    queue.add("a");
    let taken: string | undefined;
    void queue.get().then((item) => {
      taken = item;
    });
    await settle();
    assert.equal(taken, undefined, "a plain add after the handed-out poll takes its rank again");
  });

  it("addAfter releases the item when the clock reaches its deadline", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter("a", 1000);
    assert.equal(queue.len(), 0);
    clock.advance(999);
    await settle();
    assert.equal(queue.len(), 0);
    clock.advance(1);
    await settle();
    assert.equal(queue.len(), 1);
    assert.equal(await queue.get(), "a");
  });

  it("addAfter keeps the earlier of two deadlines for one item", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter("a", 500);
    queue.addAfter("a", 100);
    queue.addAfter("a", 800);
    clock.advance(100);
    await settle();
    assert.equal(queue.len(), 1);
    await queue.get();
    queue.done("a");
    clock.advance(1000);
    await settle();
    assert.equal(queue.len(), 0, "the superseded deadlines do not add it again");
  });

  it("addAfter releases several items in deadline order", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addAfter("late", 300);
    queue.addAfter("early", 100);
    queue.addAfter("middle", 200);
    queue.addAfter("now", 0);
    assert.equal(queue.len(), 1);
    clock.advance(150);
    await settle();
    clock.advance(100);
    await settle();
    clock.advance(100);
    await settle();
    const order = [await queue.get(), await queue.get(), await queue.get(), await queue.get()];
    assert.deepEqual(order, ["now", "early", "middle", "late"]);
  });

  it("addRateLimited backs off per item: 5 ms, 10 ms, 20 ms … and forget() resets", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.addRateLimited("a");
    queue.addRateLimited("a");
    assert.equal(queue.numRequeues("a"), 2);
    clock.advance(4);
    await settle();
    assert.equal(queue.len(), 0);
    clock.advance(1);
    await settle();
    assert.equal(queue.len(), 1, "the first backoff (5 ms) wins over the later 10 ms deadline");
    await queue.get();
    queue.done("a");
    queue.forget("a");
    assert.equal(queue.numRequeues("a"), 0);
    queue.addRateLimited("a");
    clock.advance(5);
    await settle();
    assert.equal(queue.len(), 1, "after forget the backoff starts again at 5 ms");
  });

  it("uses the given rate limiter", async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({
      clock,
      rateLimiter: new ItemExponentialFailureRateLimiter(1000, 5000),
    });
    queue.addRateLimited("a");
    clock.advance(999);
    await settle();
    assert.equal(queue.len(), 0);
    clock.advance(1);
    await settle();
    assert.equal(queue.len(), 1);
  });

  it("shutDownWithDrain stops taking work and waits for every in-flight item", async () => {
    const clock = new FakeClock();
    const queue = newQueue(clock);
    queue.add("a");
    queue.add("b");
    queue.add("c");
    queue.addAfter("later", 10);
    const a = await queue.get();
    const b = await queue.get();
    let drained = false;
    const drain = queue.shutDownWithDrain().then(() => {
      drained = true;
    });
    assert.equal(await queue.get(), undefined, "no work is handed out after shutdown");
    queue.add("d");
    queue.addRateLimited("e");
    queue.done(a!);
    await settle();
    assert.equal(drained, false);
    queue.done(b!);
    await drain;
    assert.equal(drained, true);
    clock.advance(100);
    await settle();
    assert.equal(queue.isShuttingDown(), true);
    assert.equal(await queue.get(), undefined);
  });

  it("resolves waiting get() calls with undefined on shutdown", async () => {
    const queue = newQueue();
    const pending = queue.get();
    queue.shutDown();
    assert.equal(await pending, undefined);
    await queue.shutDownWithDrain();
  });

  it("reports adds, depth, latencies, retries and in-flight work to its metrics sink", async () => {
    const clock = new FakeClock();
    const seen = {
      added: 0,
      retried: 0,
      depth: [] as number[],
      latency: [] as number[],
      work: [] as number[],
    };
    let inFlight: (() => InFlightWork) | undefined;
    let released = false;
    const metrics: QueueMetrics = {
      added: () => seen.added++,
      depth: (n) => seen.depth.push(n),
      queueLatency: (s) => seen.latency.push(s),
      workDuration: (s) => seen.work.push(s),
      retried: () => seen.retried++,
      observeInFlight: (report) => {
        inFlight = report;
      },
      release: () => {
        released = true;
      },
    };
    const queue = new WorkQueue<string>({ clock, metrics });
    queue.add("a");
    queue.add("a");
    queue.add("b");
    clock.advance(2000);
    await queue.get();
    clock.advance(1000);
    await queue.get();
    clock.advance(500);
    assert.deepEqual(inFlight?.(), { unfinishedSeconds: 2, longestRunningSeconds: 1.5 });
    queue.done("a");
    queue.addAfter("c", 10);
    assert.equal(seen.added, 2);
    assert.equal(seen.retried, 1);
    assert.deepEqual(seen.depth, [1, 2, 1, 0]);
    assert.deepEqual(seen.latency, [2, 3]);
    assert.deepEqual(seen.work, [1.5]);
    queue.shutDown();
    assert.equal(released, true);
  });
});
