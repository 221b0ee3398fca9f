// Informers: a reflector feeding an indexed store, with event handlers that see old and new objects.
// Reconcilers read from here instead of the API server.

import type { Clock } from "../clock.ts";
import { log } from "../log.ts";
import type { WatchClient } from "./client.ts";
import type { BackoffOptions } from "./ratelimit.ts";
import { Reflector } from "./reflector.ts";
import type { ResourceType } from "./resources.ts";
import { type IndexFunc, Store, type StoredObject } from "./store.ts";

export interface EventHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export interface Informer<T> {
  /** Handlers added after the first sync first receive onAdd for every cached object. */
  addEventHandler(h: EventHandler<T>): void;
  hasSynced(): boolean;
  /** Resolves after the first list; rejects with the signal's reason if aborted first. */
  waitForSync(signal?: AbortSignal): Promise<void>;
  get(namespace: string, name: string): T | undefined;
  list(namespace?: string): T[];
  byIndex(index: string, value: string): T[];
  /** Starts list-watch in the background until the signal aborts. */
  start(signal: AbortSignal): void;
  /** The resourceVersion of the last list, watch event or bookmark. */
  lastSyncResourceVersion(): string;
}

export interface InformerOptions<T> {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  indexers?: Record<string, IndexFunc<T>>;
  /** Applied to every object before it is stored (e.g. stripManagedFields). */
  transform?: (obj: T) => T;
  clock?: Clock;
  backoff?: BackoffOptions;
  inactivityTimeoutMs?: number;
}

/**
 * A copy of `obj` without `keys`, its other properties in their order. Cached objects lose fields
 * this way rather than by `delete`, which turns a V8 object into a hash table of about twice the size.
 */
export function omitKeys<T extends object>(obj: T, keys: readonly string[]): T {
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) if (!keys.includes(key)) copy[key] = value;
  return copy as T;
}

/** Drops metadata.managedFields, which the operator never reads and which dominates pod size. */
export function stripManagedFields<T>(obj: T): T {
  const holder = obj as { metadata?: object };
  if (holder.metadata && "managedFields" in holder.metadata) {
    holder.metadata = omitKeys(holder.metadata, ["managedFields"]);
  }
  return obj;
}

export function createInformer<T extends StoredObject>(
  client: WatchClient,
  rt: ResourceType,
  opts: InformerOptions<T> = {},
): Informer<T> {
  return new SharedInformer(client, rt, opts);
}

class SharedInformer<T extends StoredObject> implements Informer<T> {
  private readonly store: Store<T>;
  private readonly reflector: Reflector<T>;
  private readonly handlers: EventHandler<T>[] = [];
  private readonly rt: ResourceType;
  private started = false;

  constructor(client: WatchClient, rt: ResourceType, opts: InformerOptions<T>) {
    this.rt = rt;
    this.store = new Store<T>(opts.indexers);
    this.reflector = new Reflector<T>({
      client,
      rt,
      store: this.store,
      namespace: opts.namespace,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      transform: opts.transform,
      clock: opts.clock,
      backoff: opts.backoff,
      inactivityTimeoutMs: opts.inactivityTimeoutMs,
      sink: {
        added: (obj) => this.dispatch("onAdd", (h) => h.onAdd?.(obj)),
        updated: (oldObj, newObj) => this.dispatch("onUpdate", (h) => h.onUpdate?.(oldObj, newObj)),
        deleted: (obj) => this.dispatch("onDelete", (h) => h.onDelete?.(obj)),
      },
    });
  }

  addEventHandler(h: EventHandler<T>): void {
    this.handlers.push(h);
    for (const obj of this.store.list()) this.call(h, "onAdd", () => h.onAdd?.(obj));
  }

  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.reflector.hasSynced()) return;
    signal?.throwIfAborted();
    if (!signal) return this.reflector.whenSynced();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      void this.reflector.whenSynced().then(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  get(namespace: string, name: string): T | undefined {
    return this.store.get(this.rt.namespaced ? namespace : undefined, name);
  }

  list(namespace?: string): T[] {
    return this.store.list(namespace);
  }

  byIndex(index: string, value: string): T[] {
    return this.store.byIndex(index, value);
  }

  lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion();
  }

  start(signal: AbortSignal): void {
    if (this.started) throw new Error(`informer for ${this.rt.plural} already started`);
    this.started = true;
    this.reflector.run(signal).catch((e: unknown) => {
      log.error({ resource: this.rt.plural, err: String(e) }, "reflector stopped unexpectedly");
    });
  }

  private dispatch(what: keyof EventHandler<T>, fn: (h: EventHandler<T>) => void): void {
    for (const h of this.handlers) this.call(h, what, () => fn(h));
  }

  private call(h: EventHandler<T>, what: keyof EventHandler<T>, fn: () => void): void {
    if (!h[what]) return;
    try {
      fn();
    } catch (e) {
      log.error({ resource: this.rt.plural, handler: what, err: String(e) }, "event handler threw");
    }
  }
}
