// The SDK over the in-memory FakeClient: a watch the test drives event by event (end a stream, fail
// it with 410), a clock that moves only when told, and a seeded CocoonSet with its pods.
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../../src/apis/v1/types.ts";
import type { Clock } from "../../../src/clock.ts";
import type { ListOptions, WatchClient, WatchEvent, WatchOptions } from "../../../src/controller/client.ts";
import { COCOONSETS, EVENTS, PODS, type ResourceType } from "../../../src/controller/resources.ts";
import { CocoonClient } from "../../../src/sdk/index.ts";
import { FakeClient } from "../../support/fakeclient.ts";

export const NS = "ns";

/** One watch request: its options, and the events the test sends down it. */
export class Stream {
  readonly rt: ResourceType;
  readonly opts: WatchOptions;
  /** The watcher stopped reading: it ended, failed or was aborted. */
  closed = false;
  private readonly queue: (WatchEvent<unknown> | { end: true } | { error: Error })[] = [];
  private wake: (() => void) | undefined;

  constructor(rt: ResourceType, opts: WatchOptions) {
    this.rt = rt;
    this.opts = opts;
  }

  push(event: WatchEvent<unknown>): void {
    this.queue.push(event);
    this.wake?.();
  }
  end(): void {
    this.queue.push({ end: true });
    this.wake?.();
  }
  fail(error: Error): void {
    this.queue.push({ error });
    this.wake?.();
  }

  async *events(): AsyncIterable<WatchEvent<unknown>> {
    const signal = this.opts.signal;
    const onAbort = () => this.wake?.();
    signal?.addEventListener("abort", onAbort);
    try {
      for (;;) {
        if (signal?.aborted) return;
        const next = this.queue.shift();
        if (!next) {
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
          continue;
        }
        if ("end" in next) return;
        if ("error" in next) throw next.error;
        yield next;
      }
    } finally {
      this.closed = true;
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

/** Lists from the fake; every watch is a Stream the test drives. */
export class ScriptedWatcher implements WatchClient {
  readonly streams: Stream[] = [];
  readonly fake: FakeClient;
  constructor(fake: FakeClient) {
    this.fake = fake;
  }
  list<T>(rt: ResourceType, namespace: string | undefined, opts?: ListOptions<T>) {
    return this.fake.list<T>(rt, namespace, opts);
  }
  watch<T>(
    rt: ResourceType,
    _namespace: string | undefined,
    opts: WatchOptions,
  ): AsyncIterable<WatchEvent<T>> {
    const stream = new Stream(rt, opts);
    this.streams.push(stream);
    return stream.events() as AsyncIterable<WatchEvent<T>>;
  }
  /** The open streams of a resource. */
  open(rt: ResourceType): Stream[] {
    return this.streams.filter((s) => s.rt === rt && !s.closed && !s.opts.signal?.aborted);
  }
}

/** Time moves only by advance(). */
export class ManualClock implements Clock {
  ms = Date.parse("2026-05-14T12:00:00Z");
  private timers: { at: number; resolve: () => void }[] = [];
  readonly slept: number[] = [];
  now(): number {
    return this.ms;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.slept.push(ms);
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = { at: this.ms + ms, resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        "abort",
        () => {
          this.timers = this.timers.filter((t) => t !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
  advance(ms: number): void {
    this.ms += ms;
    const due = this.timers.filter((t) => t.at <= this.ms);
    this.timers = this.timers.filter((t) => t.at > this.ms);
    for (const t of due) t.resolve();
  }
}

/** Lets pending promises run until `ready` holds (fails after many turns). */
export async function until(ready: () => boolean, what = "the condition"): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (ready()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`never reached: ${what}`);
}

export interface Env {
  fake: FakeClient;
  watcher: ScriptedWatcher;
  clock: ManualClock;
  client: CocoonClient;
}

export function env(): Env {
  const fake = new FakeClient();
  const watcher = new ScriptedWatcher(fake);
  const clock = new ManualClock();
  const client = CocoonClient.fromClient(fake, NS, { watcher, clock, executor: fake });
  return { fake, watcher, clock, client };
}

export function seedSet(
  e: Env,
  spec: Partial<CocoonSetSpec> = {},
  status: CocoonSet["status"] = { ...COUNTS, observedGeneration: 1, phase: "Running" },
  name = "demo",
): CocoonSet {
  return e.fake.seed<CocoonSet>(COCOONSETS, {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: NS, generation: 1 },
    spec: { agent: { image: "img", replicas: 0 }, ...spec },
    status,
  });
}

export function seedPod(e: Env, name: string, labels: Record<string, string> = {}, set = "demo"): Pod {
  return e.fake.seed<Pod>(PODS, {
    metadata: {
      name,
      namespace: NS,
      labels: { "cocoonset.cocoonstack.io/name": set, ...labels },
      annotations: { "vm.cocoonstack.io/ip": "10.0.0.7" },
    },
    spec: { containers: [], nodeName: "node-a" },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  });
}

export function seedWarning(
  e: Env,
  name: string,
  kind: string,
  object: string,
  reason: string,
  message: string,
) {
  e.fake.seed(EVENTS, {
    metadata: { name, namespace: NS },
    involvedObject: { kind, name: object },
    type: "Warning",
    reason,
    message,
    count: 1,
    lastTimestamp: "2026-05-14T12:00:01Z",
  });
}

/** Plays the operator: replaces the set's status as stored; returns the set as a watch would send it. */
export function writeSetStatus(e: Env, status: CocoonSet["status"], name = "demo"): CocoonSet {
  const cs = e.fake.peek<CocoonSet>(COCOONSETS, NS, name) as CocoonSet;
  e.fake.seed(COCOONSETS, { ...cs, status });
  return e.fake.peek<CocoonSet>(COCOONSETS, NS, name) as CocoonSet;
}

export const COUNTS = { readyAgents: 1, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 };

export const suspendedAt = (generation: number): CocoonSet["status"] => ({
  ...COUNTS,
  observedGeneration: generation,
  phase: "Suspended",
  conditions: [
    {
      type: "Suspended",
      status: "True",
      reason: "Suspended",
      message: "",
      observedGeneration: generation,
      lastTransitionTime: "",
    },
  ],
});
