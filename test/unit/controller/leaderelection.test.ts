import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import type { Client } from "../../../src/controller/client.ts";
import { AlreadyExistsError, ConflictError, NotFoundError } from "../../../src/controller/errors.ts";
import { DEFAULT_LEASE_NAME, LeaderElector, type Lease } from "../../../src/controller/leaderelection.ts";
import { formatMicroTime } from "../../../src/rfc3339.ts";

/** One in-memory lease store (the "API server") that several electors reach through their own link. */
class LeaseBackend {
  lease: Lease | undefined;
  private rv = 0;
  writes = 0;

  link(): LeaseLink {
    return new LeaseLink(this);
  }

  get(): Lease {
    if (!this.lease) throw new NotFoundError(404, "NotFound", "lease not found");
    return structuredClone(this.lease);
  }

  create(lease: Lease): Lease {
    if (this.lease) throw new AlreadyExistsError(409, "AlreadyExists", "lease exists");
    this.lease = {
      ...structuredClone(lease),
      metadata: { ...lease.metadata, resourceVersion: String(++this.rv) },
    };
    this.writes++;
    return structuredClone(this.lease);
  }

  update(lease: Lease): Lease {
    if (!this.lease) throw new NotFoundError(404, "NotFound", "lease not found");
    if (lease.metadata.resourceVersion !== this.lease.metadata.resourceVersion) {
      throw new ConflictError(409, "Conflict", "the object has been modified");
    }
    this.lease = {
      ...structuredClone(lease),
      metadata: { ...lease.metadata, resourceVersion: String(++this.rv) },
    };
    this.writes++;
    return structuredClone(this.lease);
  }
}

/** A Client for leases only; `down` makes every request fail, as a partitioned or frozen process would. */
class LeaseLink implements Client {
  down = false;
  private readonly backend: LeaseBackend;
  constructor(backend: LeaseBackend) {
    this.backend = backend;
  }
  private check(): void {
    if (this.down) throw new Error("connect ETIMEDOUT");
  }
  async get<T>(): Promise<T> {
    this.check();
    return this.backend.get() as T;
  }
  async create<T>(_rt: unknown, _ns: string, obj: T): Promise<T> {
    this.check();
    return this.backend.create(obj as Lease) as T;
  }
  async update<T>(_rt: unknown, obj: T): Promise<T> {
    this.check();
    return this.backend.update(obj as Lease) as T;
  }
  async list<T>(): Promise<{ items: T[]; resourceVersion: string }> {
    throw new Error("not used");
  }
  async patch<T>(): Promise<T> {
    throw new Error("not used");
  }
  async delete(): Promise<void> {
    throw new Error("not used");
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Advances the fake clock in small steps, letting the electors run in between. */
async function advance(clock: FakeClock, ms: number, step = 250): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await settle();
  }
}

function candidate(backend: LeaseBackend, clock: FakeClock, identity: string) {
  const link = backend.link();
  const elector = new LeaderElector({
    client: link,
    namespace: "cocoon-system",
    identity,
    clock,
    random: () => 0,
  });
  const abort = new AbortController();
  const state = { leading: false, stopped: false, leaderSignal: undefined as AbortSignal | undefined };
  const done = elector.run(
    {
      onStartedLeading: (signal) => {
        state.leading = true;
        state.leaderSignal = signal;
      },
      onStoppedLeading: () => {
        state.stopped = true;
      },
    },
    abort.signal,
  );
  return { elector, link, abort, state, done };
}

describe("LeaderElector", () => {
  it("formats MicroTime with six fractional digits", () => {
    assert.equal(formatMicroTime(Date.parse("2026-01-02T03:04:05.678Z")), "2026-01-02T03:04:05.678000Z");
  });

  it("creates the lease when there is none and renews it every retry period", async () => {
    const backend = new LeaseBackend();
    const clock = new FakeClock();
    const a = candidate(backend, clock, "a");
    await settle();
    assert.equal(a.state.leading, true);
    assert.equal(a.elector.isLeader(), true);
    const spec = backend.lease?.spec;
    assert.equal(backend.lease?.metadata.name, DEFAULT_LEASE_NAME);
    assert.equal(backend.lease?.metadata.namespace, "cocoon-system");
    assert.equal(spec?.holderIdentity, "a");
    assert.equal(spec?.leaseDurationSeconds, 15);
    assert.equal(spec?.leaseTransitions, 0);
    assert.equal(spec?.acquireTime, formatMicroTime(clock.now()));
    const acquired = spec?.acquireTime;
    await advance(clock, 2000);
    assert.equal(backend.lease?.spec?.renewTime, formatMicroTime(clock.now()));
    assert.equal(backend.lease?.spec?.acquireTime, acquired);
    a.abort.abort();
    await a.done;
  });

  it("elects exactly one of two candidates; the other takes over once the leader stops renewing", async () => {
    const backend = new LeaseBackend();
    const clock = new FakeClock();
    const a = candidate(backend, clock, "a");
    await settle();
    const b = candidate(backend, clock, "b");
    await advance(clock, 10_000);
    assert.equal(a.state.leading, true);
    assert.equal(b.state.leading, false);
    assert.equal(b.elector.getLeader(), "a");

    // a freezes: its requests fail. It must give up (and abort its signal) within retry + renew deadline...
    a.link.down = true;
    const frozenAt = clock.now();
    await advance(clock, 12_000);
    assert.equal(a.state.leaderSignal?.aborted, true);
    assert.equal(a.state.stopped, true);
    await a.done;
    assert.equal(b.state.leading, false, "b must wait out the lease duration");
    // ...and b takes over once the lease has not changed for a lease duration (plus one retry).
    await advance(clock, 6_000);
    assert.equal(b.state.leading, true);
    assert.ok(clock.now() - frozenAt <= 15_000 + 2 * 2_000 + 2_000);
    assert.equal(backend.lease?.spec?.holderIdentity, "b");
    assert.equal(backend.lease?.spec?.leaseTransitions, 1);
    assert.equal(backend.lease?.spec?.acquireTime, backend.lease?.spec?.renewTime);
    b.abort.abort();
    await b.done;
  });

  it("releases the lease on shutdown so a standby takes over at its next retry", async () => {
    const backend = new LeaseBackend();
    const clock = new FakeClock();
    const a = candidate(backend, clock, "a");
    await settle();
    const b = candidate(backend, clock, "b");
    await advance(clock, 4000);
    a.abort.abort();
    await a.done;
    assert.equal(a.state.stopped, true);
    assert.equal(a.state.leaderSignal?.aborted, true);
    assert.equal(backend.lease?.spec?.holderIdentity, "");
    assert.equal(backend.lease?.spec?.leaseDurationSeconds, 1);
    await advance(clock, 2500);
    assert.equal(b.state.leading, true);
    assert.equal(backend.lease?.spec?.leaseTransitions, 1);
    b.abort.abort();
    await b.done;
  });

  it("keeps leading through failures shorter than the renew deadline", async () => {
    const backend = new LeaseBackend();
    const clock = new FakeClock();
    const a = candidate(backend, clock, "a");
    await settle();
    a.link.down = true;
    await advance(clock, 8000);
    a.link.down = false;
    await advance(clock, 4000);
    assert.equal(a.state.leaderSignal?.aborted, false);
    assert.equal(backend.lease?.spec?.renewTime, formatMicroTime(clock.now()));
    a.abort.abort();
    await a.done;
  });

  it("loses leadership when another holder took the lease (writes conflict)", async () => {
    const backend = new LeaseBackend();
    const clock = new FakeClock();
    const a = candidate(backend, clock, "a");
    await settle();
    // Someone else force-writes the lease (e.g. an operator with a skewed view).
    const lease = backend.get();
    backend.update({
      ...lease,
      spec: { ...lease.spec, holderIdentity: "intruder", renewTime: formatMicroTime(0) },
    });
    await advance(clock, 2000 + 10_000 + 500);
    assert.equal(a.state.leaderSignal?.aborted, true);
    assert.equal(a.state.stopped, true);
    await a.done;
    assert.equal(backend.lease?.spec?.holderIdentity, "intruder", "a lost leader does not release");
  });

  it("returns without leading when cancelled while campaigning", async () => {
    const backend = new LeaseBackend();
    const clock = new FakeClock();
    const a = candidate(backend, clock, "a");
    await settle();
    const b = candidate(backend, clock, "b");
    await settle();
    b.abort.abort();
    await b.done;
    assert.equal(b.state.leading, false);
    assert.equal(b.state.stopped, false);
    a.abort.abort();
    await a.done;
  });

  it("refuses timings where the renew deadline does not fit in the lease", () => {
    const client = new LeaseBackend().link();
    assert.throws(
      () => new LeaderElector({ client, namespace: "x", leaseDurationMs: 5000, renewDeadlineMs: 5000 }),
      /lease duration must exceed renew deadline/,
    );
  });
});
