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

describe("WorkQueue order", () => {
  /** A queue whose items rank by the table (item → rank); items not in it have none. */
  function rankedQueue(ranks: Record<string, string>, clock = new FakeClock()): WorkQueue<string> {
    return new WorkQueue<string>({ clock, order: (item) => ranks[item] });
  }

  async function drain(queue: WorkQueue<string>): Promise<string[]> {
    const out: string[] = [];
    while (queue.len() > 0) {
      const item = (await queue.get())!;
      out.push(item);
      queue.done(item);
    }
    return out;
  }

  it("hands out the lowest rank first, whatever order the items were queued in", async () => {
    const queue = rankedQueue({ young: "2", middle: "1", old: "0" });
    queue.add("young");
    queue.add("middle");
    queue.add("old");
    assert.deepEqual(await drain(queue), ["old", "middle", "young"]);
  });

  it("hands out equal ranks, and items without a rank after every ranked one, first-queued first", async () => {
    const queue = rankedQueue({ a: "1", b: "1", c: "0" });
    queue.add("x");
    queue.add("b");
    queue.add("y");
    queue.add("a");
    queue.add("c");
    assert.deepEqual(await drain(queue), ["c", "b", "a", "x", "y"]);
  });

  it("runs an item re-added while processing once more after done, ahead of younger items queued meanwhile", async () => {
    const queue = rankedQueue({ old: "0", young1: "1", young2: "2" });
    queue.add("old");
    const first = await queue.get();
    assert.equal(first, "old");
    queue.add("young2");
    queue.add("old");
    queue.add("young1");
    assert.equal(queue.len(), 2, "the processing item is not queued beside itself");
    const next = await queue.get();
    assert.equal(next, "young1", "not handed out again while processing");
    queue.done("old");
    queue.done("young1");
    assert.deepEqual(await drain(queue), ["old", "young2"]);
  });

  it("holds a rate-limited retry of an old item for its backoff, then hands it out before younger items", async () => {
    const clock = new FakeClock();
    const queue = rankedQueue({ old: "0", young1: "1", young2: "2" }, clock);
    queue.addRateLimited("old");
    queue.add("young2");
    assert.equal(await queue.get(), "young2", "the retry waits its 5 ms");
    queue.done("young2");
    queue.add("young1");
    queue.add("young2");
    clock.advance(5);
    await settle();
    assert.deepEqual(await drain(queue), ["old", "young1", "young2"]);
  });

  it("never processes one key in two workers at once when ranked, and runs a key dirtied mid-process again", async () => {
    const keys = ["k0", "k1", "k2", "k3", "k4", "k5"];
    const queue = rankedQueue(Object.fromEntries(keys.map((k, i) => [k, String(keys.length - i)])));
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
    const workers = Array.from({ length: 4 }, () => worker());
    for (round = 1; round <= 300; round++) {
      const key = keys[(round * 7) % keys.length]!;
      queue.add(key);
      lastAddRound.set(key, round);
      if (round % 4 === 0) await settle();
    }
    while (queue.len() > 0 || active.size > 0) await settle();
    await queue.shutDownWithDrain();
    await Promise.all(workers);
    assert.equal(overlaps, 0);
    for (const key of keys) {
      assert.ok(lastStartRound.get(key)! >= lastAddRound.get(key)!, `${key} ran after its last add`);
    }
  });
});

describe("WorkQueue coalescing", () => {
  function coalescingQueue(clock: FakeClock): WorkQueue<string> {
    return new WorkQueue<string>({
      clock,
      coalesce: { quietMs: 100, maxMs: 250 },
      order: (item) => ({ a: "0", b: "1", c: "2" })[item],
    });
  }

  async function process(queue: WorkQueue<string>, expected: string): Promise<void> {
    assert.equal(await queue.get(), expected);
    queue.done(expected);
  }

  it("holds the adds of an item done just now while others wait until they pause, then runs it once, by its rank", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    await process(queue, "a");
    queue.add("c");
    queue.add("a");
    clock.advance(40);
    queue.add("b");
    queue.add("a");
    assert.equal(queue.len(), 2, "a is held");
    clock.advance(99);
    await settle();
    assert.equal(queue.len(), 2, "until 100 ms without an add");
    clock.advance(1);
    await settle();
    assert.equal(queue.len(), 3);
    assert.equal(await queue.get(), "a", "held, then ahead of the younger b and c");
    queue.done("a");
    assert.equal(await queue.get(), "b");
    assert.equal(await queue.get(), "c");
    assert.equal(queue.len(), 0, "the four adds of a were one pass");
  });

  it("holds an item added while it was processing for the window after done while others wait; else queues it at done", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    assert.equal(await queue.get(), "a");
    queue.add("a");
    queue.add("c");
    queue.add("a");
    clock.advance(30);
    queue.done("a");
    assert.equal(queue.len(), 1, "a waits 100 ms from its end, c waits for a worker");
    clock.advance(99);
    await settle();
    assert.equal(queue.len(), 1);
    clock.advance(1);
    await settle();
    assert.equal(await queue.get(), "a", "then once, ahead of the younger c");
    queue.add("a");
    queue.done("a");
    assert.equal(await queue.get(), "c");
    queue.done("c");
    assert.equal(queue.len(), 0, "a is held: c waited for a worker when a's pass ended");
    clock.advance(100);
    await settle();
    assert.equal(await queue.get(), "a");
    queue.add("a");
    queue.done("a");
    assert.equal(queue.len(), 1, "nothing waits: queued at done");
  });

  it("releases a hold whose adds never pause at its latest, maxMs after it began", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    await process(queue, "a");
    queue.add("c");
    for (let t = 0; t < 240; t += 60) {
      queue.add("a");
      clock.advance(60);
      await settle();
    }
    assert.equal(queue.len(), 1, "held at 240 ms");
    queue.add("a");
    clock.advance(10);
    await settle();
    assert.equal(queue.len(), 2, "released at 250 ms");
  });

  it("hands a worker that finds nothing queued the held item ranked first, so a hold never leaves it idle", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    for (const item of ["b", "a"]) {
      queue.add(item);
      assert.equal(await queue.get(), item);
    }
    queue.add("c");
    queue.add("b");
    queue.add("a");
    queue.done("b");
    queue.done("a");
    assert.equal(queue.len(), 1, "a and b held while c waits");
    assert.equal(await queue.get(), "c");
    assert.equal(await queue.get(), "a", "nothing queued: the held a, ranked before b, at once");
    assert.equal(await queue.get(), "b");
    queue.done("c");
    queue.done("a");
    queue.done("b");
    clock.advance(1000);
    await settle();
    assert.equal(queue.len(), 0, "each ran once");
  });

  it("queues an add at once when nothing waits for a worker, however recent the item's processing", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    await process(queue, "a");
    queue.add("a");
    assert.equal(queue.len(), 1);
    await process(queue, "a");
  });

  it("holds a rate-limited re-add asked for during processing for the window while others wait, never below its backoff", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    assert.equal(await queue.get(), "a");
    queue.add("c");
    queue.addRateLimited("a");
    queue.done("a");
    clock.advance(99);
    await settle();
    assert.equal(queue.len(), 1, "held past its 5 ms backoff");
    clock.advance(1);
    await settle();
    assert.equal(await queue.get(), "a", "then ahead of the younger c");
    queue.done("a");
    assert.equal(await queue.get(), "c");
  });

  it("holds a rate-limited re-add for its backoff when that is the longer", async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue<string>({
      clock,
      coalesce: { quietMs: 100, maxMs: 250 },
      rateLimiter: new ItemExponentialFailureRateLimiter(300, 5000),
    });
    queue.add("a");
    assert.equal(await queue.get(), "a");
    queue.add("c");
    queue.addRateLimited("a");
    queue.done("a");
    clock.advance(299);
    await settle();
    assert.equal(queue.len(), 1, "not at the 100 ms window");
    clock.advance(1);
    await settle();
    assert.equal(queue.len(), 2, "at its 300 ms backoff");
  });

  it("keeps an addAfter's own delay while others wait", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    assert.equal(await queue.get(), "a");
    queue.add("c");
    queue.addAfter("a", 10);
    queue.done("a");
    clock.advance(10);
    await settle();
    assert.equal(queue.len(), 2);
    assert.equal(await queue.get(), "a");
  });

  it("holds no item whose processing ended a window ago or more", async () => {
    const clock = new FakeClock();
    const queue = coalescingQueue(clock);
    queue.add("a");
    await process(queue, "a");
    clock.advance(100);
    queue.add("c");
    queue.add("a");
    assert.equal(queue.len(), 2);
  });
});
