// Wires the CocoonHibernation reconciler into a manager (docs/architecture.md): the
// controller "cocoonhibernation" reconciles every CR event, and every event of a pod a CR names
// (podwatch.ts watches those pods, and only those) maps to the CRs in the pod's namespace whose
// spec.podRef.name names it, so a pod arriving after its CR, or vk-cocoon's annotations moving on,
// re-runs the CR without waiting for the requeue.

import type { Pod } from "../apis/core.ts";
import { isDeepStrictEqual } from "../builtins.ts";
import type { Clock } from "../clock.ts";
import type { Client, WatchClient } from "../controller/client.ts";
import { Controller, type Predicate } from "../controller/controller.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Manager } from "../controller/manager.ts";
import type { Request } from "../controller/reconciler.ts";
import type { HibernateVerdict } from "../guestgate.ts";
import { POD_REF_INDEX, podRefIndexKey } from "../informers/informers.ts";
import type { SnapshotRegistry } from "../registry/index.ts";
import { NamedPods } from "./podwatch.ts";
import { HibernationReconciler } from "./reconciler.ts";
import { type HibernationInformers, informerView } from "./view.ts";

export const HIBERNATION_CONTROLLER = "cocoonhibernation";

export interface HibernationControllerOptions {
  /** Writes, and the reads and the watch of the pods CRs name (podwatch.ts). */
  client: Client & WatchClient;
  /** The CR informer must be created with `indexers: hibernationIndexers` (src/informers/informers.ts). */
  informers: HibernationInformers;
  /** Watch one namespace only, as the informers do; default every namespace. */
  namespace?: string;
  registry: SnapshotRegistry;
  events: EventRecorder;
  clock: Clock;
  /** Workers (HIBERNATION_CONCURRENCY, default 4); below 1 is a setup error. */
  concurrency: number;
  /** Asked before a pod is annotated to hibernate (docs/guest.md); absent: no guest hooks. */
  beforeHibernate?: (pod: Pod) => HibernateVerdict;
}

/**
 * Pod creates and deletes pass, and updates that change annotations (the VM name arriving, vk's
 * lifecycle and VM ID writes, the hibernate flag). Status-only churn is dropped: vk writes the
 * lifecycle annotation after the status it reports, so no completion is missed.
 */
export const podAnnotationsChanged: Predicate<Pod> = {
  update: (oldPod, newPod) =>
    !isDeepStrictEqual(oldPod.metadata.annotations ?? {}, newPod.metadata.annotations ?? {}),
};

export function setupHibernationController(
  manager: Manager,
  options: HibernationControllerOptions,
): Controller {
  const { informers, concurrency } = options;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new Error(`hibernation concurrency must be at least 1, got ${concurrency}`);
  }
  try {
    informers.hibernations.byIndex(POD_REF_INDEX, "");
  } catch {
    throw new Error(
      `the CocoonHibernation informer needs the index "${POD_REF_INDEX}" (pass hibernationIndexers)`,
    );
  }

  const pods = new NamedPods({
    hibernations: informers.hibernations,
    client: options.client,
    namespace: options.namespace,
    clock: options.clock,
  });
  const reconciler = new HibernationReconciler({
    client: options.client,
    view: informerView(informers, pods),
    registry: options.registry,
    events: options.events,
    clock: options.clock,
    ...(options.beforeHibernate ? { beforeHibernate: options.beforeHibernate } : {}),
  });
  const controller = new Controller({
    name: HIBERNATION_CONTROLLER,
    reconciler,
    maxConcurrentReconciles: concurrency,
    clock: options.clock,
  });
  const targetingPod = (pod: Pod): Request[] =>
    informers.hibernations
      .byIndex(POD_REF_INDEX, podRefIndexKey(pod.metadata.namespace ?? "", pod.metadata.name ?? ""))
      .map((ch) => ({ namespace: ch.metadata.namespace ?? "", name: ch.metadata.name ?? "" }));
  controller.for(informers.hibernations).watches(pods, targetingPod, podAnnotationsChanged);

  manager.addInformer(informers.hibernations);
  manager.addInformer(pods);
  manager.addController(controller);
  return controller;
}
