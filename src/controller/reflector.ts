// List then watch, forever: keeps a Store in step with the API server and reports every change.
// Bookmarks advance the resourceVersion; a 410 (HTTP or ERROR event) re-lists and reports the diff;
// every other failure reconnects after a jittered exponential backoff. It stops only on its signal.
// Lists are served from the API server's watch cache as client-go's reflector asks for them: the first
// at resourceVersion "0", a re-list at the last version seen (not older than it, unpaged), and only
// when the server no longer has that version, a consistent read.

import { type Clock, systemClock } from "../clock.ts";
import { log } from "../log.ts";
import { type WatchClient, type WatchEvent, watchErrorToApiError } from "./client.ts";
import { ApiError, isGone } from "./errors.ts";
import { Backoff, type BackoffOptions } from "./ratelimit.ts";
import { apiVersionOf, type ResourceType } from "./resources.ts";
import { keyOf, type Store, type StoredObject } from "./store.ts";

export interface ReflectorSink<T> {
  added(obj: T): void;
  updated(oldObj: T, newObj: T): void;
  deleted(obj: T): void;
}

export interface ReflectorOptions<T extends StoredObject> {
  client: WatchClient;
  rt: ResourceType;
  store: Store<T>;
  sink: ReflectorSink<T>;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  transform?: (obj: T) => T;
  clock?: Clock;
  backoff?: BackoffOptions;
  random?: () => number;
  /** A watch silent for this long is considered dead (bookmarks arrive about once a minute). */
  inactivityTimeoutMs?: number;
  pageSize?: number;
}

/** The API server's answer to a version newer than it has (a 504 with this cause, as client-go checks). */
function isResourceVersionTooLarge(e: unknown): boolean {
  return e instanceof ApiError && (e.details?.causes ?? []).some((c) => c.type === "ResourceVersionTooLarge");
}

/** A watch stream that ran at least this long, or delivered an event, counts as healthy. */
const HEALTHY_WATCH_MS = 1000;

export class Reflector<T extends StoredObject> {
  private readonly opts: ReflectorOptions<T>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private resourceVersion = "";
  /** The last list or watch answered that resourceVersion is gone or ahead of the server: read afresh. */
  private resourceVersionUnavailable = false;
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];

  constructor(opts: ReflectorOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.backoff = new Backoff({ random: this.random, ...opts.backoff });
  }

  /** The resourceVersion the next watch resumes from. */
  lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  /** True once the first list has been stored and reported. */
  hasSynced(): boolean {
    return this.synced;
  }

  whenSynced(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  async run(signal: AbortSignal): Promise<void> {
    const what = this.opts.rt.plural;
    let needList = true;
    let goneStreak = 0;
    while (!signal.aborted) {
      let delay = 0;
      try {
        if (needList) {
          await this.listAndReplace();
          needList = false;
        }
        const healthy = await this.watchOnce(signal);
        if (healthy) {
          this.backoff.reset();
          goneStreak = 0;
        } else {
          delay = this.backoff.next();
        }
      } catch (e) {
        if (signal.aborted) break;
        if (isGone(e)) {
          // The resourceVersion was compacted away: list afresh. Repeated 410s back off like any error.
          needList = true;
          delay = goneStreak++ === 0 ? 0 : this.backoff.next();
          log.info({ resource: what, rv: this.resourceVersion, err: String(e) }, "watch expired, re-listing");
        } else {
          delay = this.backoff.next();
          log.warn({ resource: what, err: String(e), retryInMs: delay }, "list/watch failed, retrying");
        }
      }
      if (delay > 0) await this.clock.sleep(delay, signal).catch(() => undefined);
    }
  }

  /** client-go's relistResourceVersion: "0" at first, then the last version seen, "" once that is gone. */
  private relistResourceVersion(): string {
    if (this.resourceVersionUnavailable) return "";
    return this.resourceVersion || "0";
  }

  private async listAndReplace(): Promise<void> {
    const { client, rt, namespace, labelSelector, fieldSelector } = this.opts;
    const list = (resourceVersion: string) =>
      client.list<T>(rt, namespace, {
        labelSelector,
        fieldSelector,
        resourceVersion,
        // A version to be not older than is only served from the watch cache without a limit; "0"
        // is served from it either way, and pages if the server has no watch cache.
        limit: resourceVersion === "0" || resourceVersion === "" ? (this.opts.pageSize ?? 500) : undefined,
        transform: (item) => this.prepare(item, true),
      });
    let result: Awaited<ReturnType<typeof list>>;
    try {
      result = await list(this.relistResourceVersion());
    } catch (e) {
      if (!isGone(e) && !isResourceVersionTooLarge(e)) throw e;
      this.resourceVersionUnavailable = true;
      result = await list(this.relistResourceVersion());
    }
    this.resourceVersionUnavailable = false;
    const diff = this.opts.store.replace(result.items);
    this.resourceVersion = result.resourceVersion;
    const { sink } = this.opts;
    for (const obj of diff.added) sink.added(obj);
    for (const [oldObj, newObj] of diff.updated) sink.updated(oldObj, newObj);
    for (const obj of diff.deleted) sink.deleted(obj);
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
  }

  /** One watch stream; returns whether it was healthy when it ended normally. Throws on failure. */
  private async watchOnce(signal: AbortSignal): Promise<boolean> {
    const { client, rt, namespace, labelSelector, fieldSelector, store, sink } = this.opts;
    const started = this.clock.now();
    let events = 0;
    const stream = client.watch<T>(rt, namespace, {
      resourceVersion: this.resourceVersion,
      labelSelector,
      fieldSelector,
      allowWatchBookmarks: true,
      // Randomised 5–10 min, as client-go does, so watches of many clients do not expire together.
      timeoutSeconds: Math.floor(300 + this.random() * 300),
      inactivityTimeoutMs: this.opts.inactivityTimeoutMs ?? 180_000,
      signal,
    });
    try {
      for await (const event of stream) {
        events++;
        this.apply(event, store, sink);
      }
    } catch (e) {
      // A stream that worked for a while and then broke (an API server restart) retries quickly.
      if (events > 0 || this.clock.now() - started >= HEALTHY_WATCH_MS) this.backoff.reset();
      throw e;
    }
    const lastedMs = this.clock.now() - started;
    // client-go logs the same at V(4) ("Watch close"): a server that closes watches early shows here.
    log.debug(
      { resource: rt.plural, events, lastedMs, rv: this.resourceVersion },
      "watch closed, watching again",
    );
    return events > 0 || lastedMs >= HEALTHY_WATCH_MS;
  }

  private apply(event: WatchEvent<T>, store: Store<T>, sink: ReflectorSink<T>): void {
    switch (event.type) {
      case "ADDED":
      case "MODIFIED": {
        const obj = this.prepare(event.object, false);
        const old = store.upsert(obj);
        if (old) sink.updated(old, obj);
        else sink.added(obj);
        break;
      }
      case "DELETED": {
        const obj = this.prepare(event.object, false);
        store.remove(keyOf(obj));
        sink.deleted(obj);
        break;
      }
      case "BOOKMARK":
        break;
      case "ERROR":
        throw watchErrorToApiError(event.object);
      default:
        log.warn({ resource: this.opts.rt.plural, type: event.type }, "unknown watch event type");
        return;
    }
    const rv = event.object.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  /** List items carry no kind/apiVersion; fill them in so every cached object is self-describing. */
  private prepare(obj: T, fromList: boolean): T {
    if (fromList) {
      const typed = obj as T & { kind?: string; apiVersion?: string };
      typed.kind ??= this.opts.rt.kind;
      typed.apiVersion ??= apiVersionOf(this.opts.rt);
    }
    return this.opts.transform ? this.opts.transform(obj) : obj;
  }
}
