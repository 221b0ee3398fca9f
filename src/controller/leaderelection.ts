// Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics: acquire and renew
// by update with the observed resourceVersion (409 = lost the race), expiry judged by when *we*
// observed the record change (immune to clock skew), leadership dropped — and the leader's signal
// aborted — when renewal fails for the whole renew deadline, and the lease released on shutdown.

import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { type Clock, systemClock } from "../clock.ts";
import { log } from "../log.ts";
import { formatMicroTime } from "../rfc3339.ts";
import type { Client } from "./client.ts";
import { isNotFound } from "./errors.ts";
import { LEASES } from "./resources.ts";

export const DEFAULT_LEASE_NAME = "cocoon-operator.cocoonset.cocoonstack.io";

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion: "coordination.k8s.io/v1";
  kind: "Lease";
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

export interface LeaderElectionConfig {
  client: Client;
  namespace: string;
  name?: string;
  /** Defaults to hostname + "_" + a random UUID, as controller-runtime does. */
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Clear holderIdentity when run()'s signal aborts, so a successor need not wait out the lease. */
  releaseOnCancel?: boolean;
  clock?: Clock;
  random?: () => number;
}

export interface LeaderCallbacks {
  /** Called on acquiring; the signal aborts the moment leadership is lost or run() is cancelled. */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called once when leading ends (lost, or cancelled and released). */
  onStoppedLeading(): void;
  onNewLeader?(identity: string): void;
}

export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`;
}

export class LeaderElector {
  readonly identity: string;
  private readonly client: Client;
  private readonly namespace: string;
  private readonly name: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly releaseOnCancel: boolean;
  private readonly clock: Clock;
  private readonly random: () => number;
  private observedLease: Lease | undefined;
  private observedSpecJson = "";
  private observedTime = 0;
  private reportedLeader = "";
  private callbacks: LeaderCallbacks | undefined;

  constructor(config: LeaderElectionConfig) {
    this.client = config.client;
    this.namespace = config.namespace;
    this.name = config.name ?? DEFAULT_LEASE_NAME;
    this.identity = config.identity ?? defaultIdentity();
    this.leaseDurationMs = config.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = config.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = config.retryPeriodMs ?? 2_000;
    this.releaseOnCancel = config.releaseOnCancel ?? true;
    this.clock = config.clock ?? systemClock;
    this.random = config.random ?? Math.random;
    if (this.leaseDurationMs <= this.renewDeadlineMs)
      throw new Error("lease duration must exceed renew deadline");
    if (this.renewDeadlineMs <= this.retryPeriodMs * 1.2) {
      throw new Error("renew deadline must exceed 1.2 × retry period");
    }
  }

  /** Whether the last observed lease names us as holder. */
  isLeader(): boolean {
    return this.observedLease?.spec?.holderIdentity === this.identity;
  }

  /** The holder of the last observed lease ("" when none). */
  getLeader(): string {
    return this.observedLease?.spec?.holderIdentity ?? "";
  }

  /**
   * Campaigns until elected, leads until leadership is lost or the signal aborts, then returns.
   * Returns without leading if the signal aborts first.
   */
  async run(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<void> {
    this.callbacks = callbacks;
    if (!(await this.acquire(signal))) return;
    const leading = new AbortController();
    log.info({ lease: this.name, identity: this.identity }, "acquired leadership");
    Promise.resolve()
      .then(() => callbacks.onStartedLeading(leading.signal))
      .catch((e: unknown) => log.error({ err: String(e) }, "onStartedLeading failed"));
    const outcome = await this.renewUntilLost(signal);
    leading.abort(new Error(outcome === "lost" ? "leadership lost" : "leader election cancelled"));
    if (outcome === "lost") {
      log.error({ lease: this.name, identity: this.identity }, "leadership lost");
    } else if (this.releaseOnCancel) {
      await this.release();
    }
    callbacks.onStoppedLeading();
  }

  private async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) return true;
      const delay = this.retryPeriodMs * (1 + this.random() * 1.2);
      try {
        await this.clock.sleep(delay, signal);
      } catch {
        return false;
      }
    }
    return false;
  }

  /** Every retry period, renew; a renewal that keeps failing for renewDeadline loses the lease. */
  private async renewUntilLost(signal: AbortSignal): Promise<"lost" | "cancelled"> {
    for (;;) {
      try {
        await this.clock.sleep(this.retryPeriodMs, signal);
      } catch {
        return "cancelled";
      }
      const deadline = this.clock.now() + this.renewDeadlineMs;
      for (;;) {
        if (signal.aborted) return "cancelled";
        if (await this.withDeadline(deadline, () => this.tryAcquireOrRenew())) break;
        const left = deadline - this.clock.now();
        if (left <= 0) return "lost";
        try {
          await this.clock.sleep(Math.min(this.retryPeriodMs, left), signal);
        } catch {
          return "cancelled";
        }
        if (this.clock.now() >= deadline) return "lost";
      }
    }
  }

  /** Runs attempt, counting it as failed if it has not succeeded by the deadline (a hung request). */
  private async withDeadline(deadline: number, attempt: () => Promise<boolean>): Promise<boolean> {
    const timer = new AbortController();
    const timedOut = this.clock.sleep(Math.max(0, deadline - this.clock.now()), timer.signal).then(
      () => false,
      () => false,
    );
    try {
      return await Promise.race([attempt(), timedOut]);
    } finally {
      timer.abort();
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    const nowMicro = formatMicroTime(now);
    const durationSeconds = Math.round(this.leaseDurationMs / 1000);

    // Fast path: still leading on an unexpired lease we wrote — update it without reading first.
    const cached = this.observedLease;
    if (this.isLeader() && cached && this.observedTime + this.leaseDurationMs > now) {
      const renewed = await this.write({
        ...cached,
        spec: {
          ...cached.spec,
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSeconds,
          renewTime: nowMicro,
        },
      });
      if (renewed) return true;
    }

    let current: Lease;
    try {
      current = await this.client.get<Lease>(LEASES, this.namespace, this.name);
    } catch (e) {
      if (!isNotFound(e)) {
        log.warn({ lease: this.name, err: String(e) }, "reading leader election lease failed");
        return false;
      }
      return this.createLease({
        holderIdentity: this.identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: nowMicro,
        renewTime: nowMicro,
        leaseTransitions: 0,
      });
    }

    this.observe(current, now);
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const holderDurationMs = (spec.leaseDurationSeconds ?? 0) * 1000;
    if (holder !== "" && holder !== this.identity && this.observedTime + holderDurationMs > now) {
      return false;
    }
    const next: LeaseSpec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: nowMicro,
    };
    if (holder !== this.identity) {
      next.acquireTime = nowMicro;
      next.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    return this.write({ ...current, spec: next });
  }

  private async createLease(spec: LeaseSpec): Promise<boolean> {
    try {
      const created = await this.client.create<Lease>(LEASES, this.namespace, {
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: this.name, namespace: this.namespace },
        spec,
      });
      this.observe(created, this.clock.now());
      return true;
    } catch (e) {
      log.warn({ lease: this.name, err: String(e) }, "creating leader election lease failed");
      return false;
    }
  }

  /** Update with the lease's resourceVersion; a 409 means someone else wrote it first. */
  private async write(lease: Lease): Promise<boolean> {
    try {
      const updated = await this.client.update<Lease>(LEASES, lease);
      this.observe(updated, this.clock.now());
      return true;
    } catch (e) {
      log.warn({ lease: this.name, err: String(e) }, "updating leader election lease failed");
      return false;
    }
  }

  /** Records the lease; observedTime moves only when the record itself changed. */
  private observe(lease: Lease, now: number): void {
    const specJson = JSON.stringify(lease.spec ?? {});
    if (specJson !== this.observedSpecJson) {
      this.observedSpecJson = specJson;
      this.observedTime = now;
    }
    this.observedLease = lease;
    const holder = lease.spec?.holderIdentity ?? "";
    if (holder !== this.reportedLeader) {
      this.reportedLeader = holder;
      if (holder) this.callbacks?.onNewLeader?.(holder);
    }
  }

  /** Hands the lease back: empty holder and a 1 s duration, so a standby takes over at once. */
  private async release(): Promise<void> {
    const lease = this.observedLease;
    if (!lease || !this.isLeader()) return;
    const nowMicro = formatMicroTime(this.clock.now());
    const released = await this.withDeadline(this.clock.now() + this.renewDeadlineMs, () =>
      this.write({
        ...lease,
        spec: {
          holderIdentity: "",
          leaseDurationSeconds: 1,
          acquireTime: nowMicro,
          renewTime: nowMicro,
          leaseTransitions: lease.spec?.leaseTransitions ?? 0,
        },
      }),
    );
    if (released) log.info({ lease: this.name, identity: this.identity }, "released leadership");
  }
}
