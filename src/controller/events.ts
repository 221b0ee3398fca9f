// core/v1 Event recorder with client-go's correlation: an identical event (same object, type,
// reason, message, source) seen again within 10 minutes bumps count and lastTimestamp on the
// existing Event instead of creating another; a per-object token bucket (burst 25, one per 5 min)
// drops floods. event() only queues: writes happen in the background and failures are logged.

import { hostname } from "node:os";
import { type Clock, systemClock } from "../clock.ts";
import { log } from "../log.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import type { Client } from "./client.ts";
import { isNotFound } from "./errors.ts";
import { TokenBucket } from "./ratelimit.ts";
import { EVENTS } from "./resources.ts";

export type EventType = "Normal" | "Warning";

export interface InvolvedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

export interface EventRecorder {
  /** Queues an Event about obj; never throws and never waits on the API server. */
  event(obj: InvolvedObject, type: EventType, reason: string, message: string): void;
}

export interface EventRecorderConfig {
  client: Client;
  component?: string;
  host?: string;
  clock?: Clock;
  /** Events beyond this many waiting are dropped (and logged). */
  maxQueue?: number;
}

interface CoreEvent {
  apiVersion: "v1";
  kind: "Event";
  metadata: { name: string; namespace: string };
  involvedObject: {
    apiVersion?: string;
    kind?: string;
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
  };
  reason: string;
  message: string;
  type: EventType;
  source: { component: string; host?: string };
  reportingComponent: string;
  reportingInstance: string;
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
}

interface Seen {
  name: string;
  namespace: string;
  count: number;
  firstTimestamp: string;
  lastSeenMs: number;
}

const DEDUP_WINDOW_MS = 10 * 60_000;
const CACHE_SIZE = 4096;
const SPAM_BURST = 25;
const SPAM_QPS = 1 / 300;
const MAX_MESSAGE = 1024;

export class KubeEventRecorder implements EventRecorder {
  private readonly client: Client;
  private readonly component: string;
  private readonly host: string;
  private readonly clock: Clock;
  private readonly maxQueue: number;
  private readonly queue: CoreEvent[] = [];
  private readonly seen = new Map<string, Seen>();
  private readonly spam = new Map<string, TokenBucket>();
  private draining: Promise<void> | undefined;
  private sequence = 0;

  constructor(config: EventRecorderConfig) {
    this.client = config.client;
    this.component = config.component ?? "cocoon-operator";
    this.host = config.host ?? hostname();
    this.clock = config.clock ?? systemClock;
    this.maxQueue = config.maxQueue ?? 1000;
  }

  event(obj: InvolvedObject, type: EventType, reason: string, message: string): void {
    try {
      const record = this.build(obj, type, reason, message);
      if (!this.allow(record)) {
        log.debug({ reason, object: record.involvedObject.name }, "event dropped by flood control");
        return;
      }
      if (this.queue.length >= this.maxQueue) {
        log.warn({ reason, object: record.involvedObject.name }, "event queue full, dropping event");
        return;
      }
      this.queue.push(record);
      this.draining ??= this.drain().finally(() => {
        this.draining = undefined;
      });
    } catch (e) {
      log.warn({ reason, err: String(e) }, "could not record event");
    }
  }

  /** Resolves once every queued event has been written (or failed); for tests and shutdown. */
  async flush(): Promise<void> {
    for (let current = this.draining; current !== undefined; current = this.draining) await current;
  }

  private build(obj: InvolvedObject, type: EventType, reason: string, message: string): CoreEvent {
    const meta = obj.metadata ?? {};
    if (!meta.name) throw new Error("involved object has no metadata.name");
    const now = this.clock.now();
    // client-go names events "<object>.<unix nanoseconds in hex>"; the sequence keeps same-ms names apart.
    const nanos = BigInt(now) * 1_000_000n + BigInt(this.sequence++ % 1_000_000);
    const timestamp = formatRFC3339(now);
    return {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${meta.name}.${nanos.toString(16)}`, namespace: meta.namespace || "default" },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
      reason,
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message,
      type,
      source: { component: this.component, host: this.host },
      reportingComponent: this.component,
      reportingInstance: this.host,
      firstTimestamp: timestamp,
      lastTimestamp: timestamp,
      count: 1,
    };
  }

  /** Per-object flood control, keyed like client-go's spam filter (source + involved object). */
  private allow(record: CoreEvent): boolean {
    const o = record.involvedObject;
    const key = [this.component, this.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion].join("\0");
    let bucket = this.spam.get(key);
    if (bucket) {
      this.spam.delete(key);
    } else {
      bucket = new TokenBucket(SPAM_QPS, SPAM_BURST, this.clock);
      if (this.spam.size >= CACHE_SIZE) this.spam.delete(this.spam.keys().next().value!);
    }
    this.spam.set(key, bucket);
    return bucket.tryTake();
  }

  private async drain(): Promise<void> {
    for (let record = this.queue.shift(); record; record = this.queue.shift()) {
      try {
        await this.write(record);
      } catch (e) {
        log.warn(
          { reason: record.reason, object: record.involvedObject.name, err: String(e) },
          "writing event failed",
        );
      }
    }
  }

  private async write(record: CoreEvent): Promise<void> {
    const o = record.involvedObject;
    const key = [
      this.component,
      this.host,
      o.kind,
      o.namespace,
      o.name,
      o.uid,
      o.apiVersion,
      record.type,
      record.reason,
      record.message,
    ].join("\0");
    const now = this.clock.now();
    const previous = this.seen.get(key);
    if (previous && now - previous.lastSeenMs < DEDUP_WINDOW_MS) {
      const count = previous.count + 1;
      try {
        await this.client.patch(EVENTS, previous.namespace, previous.name, {
          count,
          lastTimestamp: record.lastTimestamp,
          message: record.message,
        });
        this.remember(key, { ...previous, count, lastSeenMs: now });
        return;
      } catch (e) {
        // The Event expired server-side (1 h TTL) or was deleted: start a fresh one.
        if (!isNotFound(e)) throw e;
      }
    }
    await this.client.create(EVENTS, record.metadata.namespace, record);
    this.remember(key, {
      name: record.metadata.name,
      namespace: record.metadata.namespace,
      count: 1,
      firstTimestamp: record.firstTimestamp,
      lastSeenMs: now,
    });
  }

  private remember(key: string, seen: Seen): void {
    this.seen.delete(key);
    if (this.seen.size >= CACHE_SIZE) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(key, seen);
  }
}
