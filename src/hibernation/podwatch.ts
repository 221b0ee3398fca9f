// The pods CocoonHibernations name, and only those. A CR names any pod vk-cocoon runs: a CocoonSet's
// (labelled with the set's name, which the CocoonSet cache selects on) or a standalone one such as
// the upstream test-ubuntu sample, which carries no label the operator could select on. Caching
// every pod of the cluster to find those would cost memory in proportion to the cluster; a CR names
// one pod, so each named pod gets a watch of its own instead (namespace plus
// fieldSelector=metadata.name=<pod>, the per-object watch the kubelet keeps for the secrets and
// config maps its pods mount). The cache then holds one pod per named pod, whatever else runs.
//
// A watch opens when the first CR naming the pod appears in the CR cache and closes when the last
// one leaves it. Until a watch has listed, reads go to the API server (one GET), so a pass never
// mistakes a watch still starting for a missing pod.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";
import { stripUnreadPodFields } from "../cocoonset/view.ts";
import { createInformer, type EventHandler, type Informer } from "../controller/cache.ts";
import type { Client, WatchClient } from "../controller/client.ts";
import { isNotFound } from "../controller/errors.ts";
import type { ManagedInformer } from "../controller/manager.ts";
import { PODS } from "../controller/resources.ts";
import { objectKey } from "../controller/store.ts";

/** Opens the list-watch of the one pod `namespace/name`; it runs once started. */
export type PodWatchFactory = (namespace: string, name: string) => Informer<Pod>;

/** The production watch: that pod only, stripped as the CocoonSet cache strips its pods. */
export function namedPodWatch(client: WatchClient, clock?: Clock): PodWatchFactory {
  return (namespace, name) =>
    createInformer<Pod>(client, PODS, {
      namespace,
      fieldSelector: `metadata.name=${name}`,
      transform: stripUnreadPodFields,
      clock,
    });
}

interface PodWatch {
  readonly informer: Informer<Pod>;
  readonly stop: AbortController;
  /** The CRs (`namespace/name`) naming the pod. */
  readonly holders: Set<string>;
  started: boolean;
}

function podRefKey(ch: CocoonHibernation): string | undefined {
  const podName = ch.spec?.podRef?.name ?? "";
  return podName === "" ? undefined : objectKey(ch.metadata.namespace ?? "", podName);
}

function crKey(ch: CocoonHibernation): string {
  return objectKey(ch.metadata.namespace ?? "", ch.metadata.name ?? "");
}

export class NamedPodWatches implements ManagedInformer {
  private readonly hibernations: Informer<CocoonHibernation>;
  private readonly open: PodWatchFactory;
  private readonly client: Client;
  private readonly watches = new Map<string, PodWatch>();
  private readonly handlers: EventHandler<Pod>[] = [];
  private signal: AbortSignal | undefined;

  /** Follows the CRs of `hibernations`; `client` serves the reads of pods whose watch has not listed. */
  constructor(hibernations: Informer<CocoonHibernation>, open: PodWatchFactory, client: Client) {
    this.hibernations = hibernations;
    this.open = open;
    this.client = client;
    hibernations.addEventHandler({
      onAdd: (ch) => this.hold(ch),
      onUpdate: (oldCh, newCh) => {
        // spec.podRef is immutable under the CRD; a retarget without it still moves the watch.
        if (podRefKey(oldCh) === podRefKey(newCh)) return;
        this.hold(newCh);
        this.release(oldCh);
      },
      onDelete: (ch) => this.release(ch),
    });
  }

  /** Pod events of every watched pod; a handler added late first sees the cached pods as adds. */
  addEventHandler(handler: EventHandler<Pod>): void {
    this.handlers.push(handler);
    for (const watch of this.watches.values()) {
      for (const pod of watch.informer.list()) handler.onAdd?.(pod);
    }
  }

  start(signal: AbortSignal): void {
    if (this.signal) throw new Error("named pod watches already started");
    this.signal = signal;
    for (const watch of this.watches.values()) this.run(watch);
  }

  hasSynced(): boolean {
    return this.hibernations.hasSynced();
  }

  /** Resolves once the CR cache has synced and every watch it opened has listed. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await this.hibernations.waitForSync(signal);
    await Promise.all([...this.watches.values()].map((watch) => watch.informer.waitForSync(signal)));
  }

  /** The named pod as cached, or (its watch not listed yet) as the API server holds it. */
  async getPod(namespace: string, name: string): Promise<Pod | undefined> {
    const watch = this.watches.get(objectKey(namespace, name));
    if (watch?.informer.hasSynced()) return watch.informer.get(namespace, name);
    try {
      return await this.client.get<Pod>(PODS, namespace, name);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private hold(ch: CocoonHibernation): void {
    const key = podRefKey(ch);
    if (key === undefined) return;
    let watch = this.watches.get(key);
    if (!watch) {
      const informer = this.open(ch.metadata.namespace ?? "", ch.spec.podRef.name);
      const opened: PodWatch = { informer, stop: new AbortController(), holders: new Set(), started: false };
      // A closed watch's last events go nowhere: no CR names its pod any more.
      const live = () => this.watches.get(key) === opened;
      informer.addEventHandler({
        onAdd: (pod) => live() && this.dispatch((h) => h.onAdd?.(pod)),
        onUpdate: (oldPod, newPod) => live() && this.dispatch((h) => h.onUpdate?.(oldPod, newPod)),
        onDelete: (pod) => live() && this.dispatch((h) => h.onDelete?.(pod)),
      });
      this.watches.set(key, opened);
      this.run(opened);
      watch = opened;
    }
    watch.holders.add(crKey(ch));
  }

  private release(ch: CocoonHibernation): void {
    const key = podRefKey(ch);
    const watch = key === undefined ? undefined : this.watches.get(key);
    if (!key || !watch) return;
    watch.holders.delete(crKey(ch));
    if (watch.holders.size > 0) return;
    watch.stop.abort();
    this.watches.delete(key);
  }

  private run(watch: PodWatch): void {
    if (watch.started || !this.signal) return;
    watch.started = true;
    watch.informer.start(AbortSignal.any([this.signal, watch.stop.signal]));
  }

  private dispatch(fn: (handler: EventHandler<Pod>) => void): void {
    for (const handler of this.handlers) fn(handler);
  }
}
