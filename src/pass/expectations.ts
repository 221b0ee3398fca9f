// Created-pod expectations (client-go's ReplicaSet "expectations", reduced to creates). A pass that
// creates pods requeues at once, and the next pass reads a pod cache that may not show them yet: it
// would create them again (409 AlreadyExists, each attempt after a registry manifest read). So every
// pod this process creates is remembered, by `<namespace>/<name>`, until the cache shows it or a TTL
// passes (the pod may be deleted before the cache ever saw it); while it is remembered a pass does
// not create that pod again, reads nothing for it, and waits for the pod-add event instead.
//
// The cache "shows" the pod when it holds a pod of that name that is either the one created (same
// uid) or not being deleted. A terminating pod of another uid is the old pod the created one
// replaced, still cached: the expectation stays until the new one arrives. A delete event for the
// created uid ends it too: the pod is gone, and the next pass may create it again.

import type { Pod } from "../apis/core.ts";
import type { Clock } from "../clock.ts";

/** How long a create is expected at most before a pass may create the pod again. */
export const CREATE_EXPECTATION_TTL_MS = 30_000;

interface Expectation {
  /** The created pod's uid ("" when the API server's answer had none). */
  uid: string;
  /** `<namespace>/<set name>` of the CocoonSet the pod belongs to. */
  setKey: string;
  /** When the expectation lapses, on the injected clock. */
  expiresAt: number;
}

export class PodCreateExpectations {
  private readonly clock: Clock;
  private readonly ttlMs: number;
  /** By `<namespace>/<pod name>`. */
  private readonly entries = new Map<string, Expectation>();
  /** Pod names by `<namespace>/<set name>`, for the per-pass snapshot. */
  private readonly bySet = new Map<string, Set<string>>();
  private lastSweep: number;

  constructor(clock: Clock, ttlMs = CREATE_EXPECTATION_TTL_MS) {
    this.clock = clock;
    this.ttlMs = ttlMs;
    this.lastSweep = clock.now();
  }

  /** Pods created and not yet seen (expired ones included until the next lookup or sweep). */
  get size(): number {
    return this.entries.size;
  }

  /** Records a successful create of the pod `namespace/name` (uid as the API server answered). */
  created(namespace: string, name: string, uid: string | undefined, setName: string): void {
    const now = this.clock.now();
    this.sweep(now);
    const key = keyOf(namespace, name);
    this.drop(key);
    const setKey = keyOf(namespace, setName);
    this.entries.set(key, { uid: uid ?? "", setKey, expiresAt: now + this.ttlMs });
    let names = this.bySet.get(setKey);
    if (!names) {
      names = new Set();
      this.bySet.set(setKey, names);
    }
    names.add(name);
  }

  /**
   * Milliseconds left on the expectation for the pod `namespace/name`, or undefined when none is
   * pending (never created here, seen by the cache, or expired; an expired one is dropped).
   */
  pendingMs(namespace: string, name: string): number | undefined {
    const key = keyOf(namespace, name);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const left = entry.expiresAt - this.clock.now();
    if (left > 0) return left;
    this.drop(key);
    return undefined;
  }

  /**
   * The pods of the set `namespace/setName` still expected, by name, with the time each lapses. A
   * pass takes this right after listing its pods: a pod whose add event lands later in the pass was
   * not in its list either, so the pass must still treat it as pending.
   */
  pendingForSet(namespace: string, setName: string): Map<string, number> {
    const out = new Map<string, number>();
    const names = this.bySet.get(keyOf(namespace, setName));
    if (!names) return out;
    for (const name of [...names]) {
      if (this.pendingMs(namespace, name) === undefined) continue;
      const entry = this.entries.get(keyOf(namespace, name));
      if (entry) out.set(name, entry.expiresAt);
    }
    return out;
  }

  /**
   * Whether a pod of the set `namespace/setName` is still expected, without building the map
   * pendingForSet returns: the CocoonSet queue asks on every event of the set.
   */
  awaitsCreates(namespace: string, setName: string): boolean {
    const names = this.bySet.get(keyOf(namespace, setName));
    if (!names) return false;
    return [...names].some((name) => this.pendingMs(namespace, name) !== undefined);
  }

  /** The cache shows `pod` (a list, an add or an update): its expectation ends when it is the pod. */
  observe(pod: Pod): void {
    if (this.entries.size === 0) return;
    const key = keyOf(pod.metadata.namespace ?? "", pod.metadata.name ?? "");
    const entry = this.entries.get(key);
    if (!entry) return;
    const sameUid = entry.uid !== "" && entry.uid === pod.metadata.uid;
    if (sameUid || !pod.metadata.deletionTimestamp) this.drop(key);
  }

  observeAll(pods: Iterable<Pod>): void {
    if (this.entries.size === 0) return;
    for (const pod of pods) this.observe(pod);
  }

  /** The cache saw `pod` deleted: the created pod is gone, so nothing is expected of it any more. */
  observeDeleted(pod: Pod): void {
    if (this.entries.size === 0) return;
    const key = keyOf(pod.metadata.namespace ?? "", pod.metadata.name ?? "");
    const entry = this.entries.get(key);
    if (entry && (entry.uid === "" || entry.uid === pod.metadata.uid)) this.drop(key);
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    const names = this.bySet.get(entry.setKey);
    names?.delete(key.slice(key.indexOf("/") + 1));
    if (names?.size === 0) this.bySet.delete(entry.setKey);
  }

  /** Drops expired entries, at most once per TTL (a set deleted mid-create never looks again). */
  private sweep(now: number): void {
    if (now - this.lastSweep < this.ttlMs) return;
    this.lastSweep = now;
    for (const [key, entry] of [...this.entries]) {
      if (entry.expiresAt <= now) this.drop(key);
    }
  }
}

function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
