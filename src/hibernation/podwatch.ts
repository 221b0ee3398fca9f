// The pods CocoonHibernations name, and only those. A CR names any pod vk-cocoon runs: a CocoonSet's
// (labelled with the set's name, which the CocoonSet cache selects on) or a standalone one such as
// the upstream test-ubuntu sample, which carries no label the operator could select on.
//
// Design: reads by name plus one filtered watch. Each named pod is read with a list by name
// (fieldSelector metadata.name=<pod>), which returns its state and the resourceVersion that state
// holds at; one watch of the pod collection (the operator's namespace scope) then keeps the named
// pods current and drops every other event as it arrives. Memory is one pod per named pod, whatever
// else runs in the cluster, and the whole thing is one watch connection. The rejected alternatives:
// caching every pod (memory grows with the cluster), and one watch per named pod (each an HTTP/1.1
// TLS connection, about 140 KiB of native memory apiece, more than a cached pod costs).
//
// States are ordered by resourceVersion, compared as the integers the API server issues (comparable
// resource versions, KEP-5504): a list or an event applies only when newer than what is held, so a
// list answered late or an event replayed from before it never moves a pod back in time. The watch
// runs while at least one pod is named and resumes from the first list's resourceVersion; a 410
// re-reads every named pod. Until a pod's first read lands, reads go to the API server (one GET).

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation } from "../apis/v1/types.ts";
import { type Clock, systemClock } from "../clock.ts";
import type { EventHandler, Informer } from "../controller/cache.ts";
import { type Client, type WatchClient, watchErrorToApiError } from "../controller/client.ts";
import { isGone, isNotFound } from "../controller/errors.ts";
import type { ManagedInformer } from "../controller/manager.ts";
import { Backoff } from "../controller/ratelimit.ts";
import { PODS } from "../controller/resources.ts";
import { objectKey } from "../controller/store.ts";
import { stripUnreadPodFields } from "../informers/compact.ts";
import { log } from "../log.ts";

export interface NamedPodsOptions {
  hibernations: Informer<CocoonHibernation>;
  /** Lists and watches pods; serves the GETs of pods not read yet. */
  client: Client & WatchClient;
  /** The operator's namespace scope; default every namespace. */
  namespace?: string;
  clock?: Clock;
  random?: () => number;
}

/** Reads by name in flight at once when many pods are (re)read, as at start. */
const READ_CONCURRENCY = 8;

interface NamedPod {
  /** The CRs (`namespace/name`) naming the pod. */
  readonly holders: Set<string>;
  /** The pod as last read; undefined while absent or not read yet. */
  pod: Pod | undefined;
  /** The resourceVersion `pod` (or its absence) holds at; -1 until the first read. */
  version: bigint;
}

/** A resourceVersion as an integer; undefined for one kube-apiserver never issues (not a number). */
function versionOf(resourceVersion: string | undefined): bigint | undefined {
  return resourceVersion !== undefined && /^\d+$/.test(resourceVersion) ? BigInt(resourceVersion) : undefined;
}

function podRefKey(ch: CocoonHibernation): string | undefined {
  const podName = ch.spec?.podRef?.name ?? "";
  return podName === "" ? undefined : objectKey(ch.metadata.namespace ?? "", podName);
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf("/");
  return [key.slice(0, slash), key.slice(slash + 1)];
}

export class NamedPods implements ManagedInformer {
  private readonly opts: NamedPodsOptions;
  private readonly clock: Clock;
  private readonly backoff: Backoff;
  private readonly named = new Map<string, NamedPod>();
  private readonly handlers: EventHandler<Pod>[] = [];
  private signal: AbortSignal | undefined;
  /** The running watch's stop, aborted when no pod is named any more. */
  private watchStop: AbortController | undefined;
  /** Wakes the loop when the first pod is named. */
  private wake: (() => void) | undefined;
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];

  constructor(opts: NamedPodsOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.backoff = new Backoff({ random: opts.random });
    opts.hibernations.addEventHandler({
      onAdd: (ch) => this.hold(ch),
      onUpdate: (oldCh, newCh) => {
        // spec.podRef is immutable under the CRD; a retarget without it still moves the read.
        if (podRefKey(oldCh) === podRefKey(newCh)) return;
        this.hold(newCh);
        this.release(oldCh);
      },
      onDelete: (ch) => this.release(ch),
    });
  }

  /** Events of the named pods; a handler added late first sees the pods held as adds. */
  addEventHandler(handler: EventHandler<Pod>): void {
    this.handlers.push(handler);
    for (const entry of this.named.values()) if (entry.pod) handler.onAdd?.(entry.pod);
  }

  start(signal: AbortSignal): void {
    if (this.signal) throw new Error("named pod reads already started");
    this.signal = signal;
    this.run(signal).catch((err: unknown) => log.error({ err: String(err) }, "named pod watch stopped"));
  }

  /** True once the CR cache has synced and the pods it named were read. */
  hasSynced(): boolean {
    return this.synced;
  }

  async waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return;
    signal?.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.syncWaiters.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  /** The named pod as last read, or (not read yet) as the API server holds it. */
  async getPod(namespace: string, name: string): Promise<Pod | undefined> {
    const entry = this.named.get(objectKey(namespace, name));
    if (entry && entry.version >= 0n) return entry.pod;
    try {
      return await this.opts.client.get<Pod>(PODS, namespace, name);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private hold(ch: CocoonHibernation): void {
    const key = podRefKey(ch);
    if (key === undefined) return;
    let entry = this.named.get(key);
    if (!entry) {
      entry = { holders: new Set(), pod: undefined, version: -1n };
      this.named.set(key, entry);
      // A watch already running only needs this pod read; otherwise the loop reads it first.
      if (this.watchStop && this.signal) void this.readQuietly(key, this.signal);
      this.wake?.();
    }
    entry.holders.add(objectKey(ch.metadata.namespace ?? "", ch.metadata.name ?? ""));
  }

  private release(ch: CocoonHibernation): void {
    const key = podRefKey(ch);
    const entry = key === undefined ? undefined : this.named.get(key);
    if (!key || !entry) return;
    entry.holders.delete(objectKey(ch.metadata.namespace ?? "", ch.metadata.name ?? ""));
    if (entry.holders.size > 0) return;
    this.named.delete(key);
    if (this.named.size === 0) this.watchStop?.abort();
  }

  private async run(signal: AbortSignal): Promise<void> {
    await this.opts.hibernations.waitForSync(signal).catch(() => undefined);
    let resumeFrom: string | undefined;
    while (!signal.aborted) {
      if (this.named.size === 0) {
        this.markSynced();
        resumeFrom = undefined;
        await new Promise<void>((resolve) => {
          const onAbort = () => resolve();
          signal.addEventListener("abort", onAbort, { once: true });
          this.wake = () => {
            signal.removeEventListener("abort", onAbort);
            resolve();
          };
        });
        this.wake = undefined;
        continue;
      }
      let delay = 0;
      try {
        // After a 410 every named pod is read again (the missed events are gone); otherwise only
        // those named since the watch last ran.
        const first = await this.readNamed(resumeFrom === undefined, signal);
        resumeFrom ??= first || undefined;
        this.markSynced();
        // Every named pod went while being read: back to idle.
        if (resumeFrom === undefined) continue;
        resumeFrom = await this.watch(resumeFrom, signal);
        this.backoff.reset();
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          resumeFrom = undefined;
        } else {
          delay = this.backoff.next();
          log.warn({ err: String(err), retryInMs: delay }, "named pod watch failed, retrying");
        }
      }
      if (delay > 0) await this.clock.sleep(delay, signal).catch(() => undefined);
    }
  }

  /**
   * Reads the named pods (all, or those not read yet); returns the first read's resourceVersion. The
   * first read goes alone, so every later one holds at that version or after; the rest go
   * READ_CONCURRENCY at a time.
   */
  private async readNamed(all: boolean, signal: AbortSignal): Promise<string> {
    const keys = [...this.named].filter(([, entry]) => all || entry.version < 0n).map(([key]) => key);
    const [firstKey, ...rest] = keys;
    if (firstKey === undefined) return "";
    const first = await this.read(firstKey, signal);
    const workers = Array.from({ length: Math.min(READ_CONCURRENCY, rest.length) }, async () => {
      for (let key = rest.shift(); key !== undefined; key = rest.shift()) await this.read(key, signal);
    });
    await Promise.all(workers);
    return first;
  }

  /** Lists the one pod by name; returns the list's resourceVersion. */
  private async read(key: string, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    const [namespace, name] = splitKey(key);
    const result = await this.opts.client.list<Pod>(PODS, namespace, {
      fieldSelector: `metadata.name=${name}`,
    });
    this.apply(key, result.items[0], versionOf(result.resourceVersion));
    return result.resourceVersion;
  }

  private async readQuietly(key: string, signal: AbortSignal): Promise<void> {
    try {
      await this.read(key, signal);
    } catch (err) {
      // The pass falls back to a GET meanwhile; the watch's next restart reads it again.
      if (!signal.aborted) log.warn({ pod: key, err: String(err) }, "read of a named pod failed");
    }
  }

  /** One watch stream of the pod collection; returns the resourceVersion to resume from. */
  private async watch(resourceVersion: string, signal: AbortSignal): Promise<string> {
    const stop = new AbortController();
    this.watchStop = stop;
    // Pods named between the loop's reads and now; later ones are read as they are named.
    for (const [key, entry] of this.named) if (entry.version < 0n) void this.readQuietly(key, signal);
    let resumeFrom = resourceVersion;
    try {
      const stream = this.opts.client.watch<Pod>(PODS, this.opts.namespace, {
        resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: 300 + Math.floor((this.opts.random ?? Math.random)() * 300),
        inactivityTimeoutMs: 180_000,
        signal: AbortSignal.any([signal, stop.signal]),
      });
      for await (const event of stream) {
        if (event.type === "ERROR") throw watchErrorToApiError(event.object);
        const rv = event.object.metadata?.resourceVersion;
        if (rv) resumeFrom = rv;
        if (event.type === "BOOKMARK") continue;
        const pod = event.object;
        const key = objectKey(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "");
        if (!this.named.has(key)) continue;
        this.apply(key, event.type === "DELETED" ? undefined : pod, versionOf(rv));
      }
    } finally {
      if (this.watchStop === stop) this.watchStop = undefined;
    }
    return resumeFrom;
  }

  /**
   * Takes `pod` (undefined: absent) as the named pod's state at `version`, when newer than held. A
   * state without a comparable version is taken as the newest, and keeps the held version.
   */
  private apply(key: string, pod: Pod | undefined, version: bigint | undefined): void {
    const entry = this.named.get(key);
    if (!entry || (version !== undefined && version <= entry.version)) return;
    const old = entry.pod;
    entry.pod = pod ? stripUnreadPodFields(pod) : undefined;
    entry.version = version ?? (entry.version < 0n ? 0n : entry.version);
    const current = entry.pod;
    for (const handler of this.handlers) {
      try {
        if (old && current) handler.onUpdate?.(old, current);
        else if (current) handler.onAdd?.(current);
        else if (old) handler.onDelete?.(old);
      } catch (err) {
        log.error({ pod: key, err: String(err) }, "named pod event handler threw");
      }
    }
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const resolve of this.syncWaiters.splice(0)) resolve();
  }
}
