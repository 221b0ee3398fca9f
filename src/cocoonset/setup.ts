// Wires the CocoonSet reconciler into a controller: its own objects (a new generation or a status
// change), its pods (meaningful transitions only) and the CocoonHibernations naming its pods.

import type { CocoonHibernation, CocoonSet } from "../apis/v1/types.ts";
import type { BranchingDeps } from "../checkpoint/branch.ts";
import { ANN_FROM_CHECKPOINT } from "../checkpoint/keys.ts";
import { type Clock, systemClock } from "../clock.ts";
import { KIND_COCOONSET } from "../contract/keys.ts";
import { controllerOf } from "../contract/pod.ts";
import type { Client } from "../controller/client.ts";
import type { Predicate } from "../controller/controller.ts";
import { Controller } from "../controller/controller.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Manager } from "../controller/manager.ts";
import { generationChangedOrStatusChanged, podRelevantChange } from "../controller/predicates.ts";
import { type Request, requestFromKey } from "../controller/reconciler.ts";
import { guestInputsChanged } from "../guest/decide.ts";
import type { GuestGate } from "../guestgate.ts";
import { type ActivityLeases, setOfLease } from "../idle/activity.ts";
import { idlePolicyAnnotationsChanged } from "../idle/policy.ts";
import { type OperatorInformers, POD_BY_COCOONSET_INDEX } from "../informers/informers.ts";
import { type Logger, log } from "../log.ts";
import { PodCreateExpectations } from "../pass/expectations.ts";
import { FailedMains } from "../pass/failedmains.ts";
import { SuspendConfirmations } from "../pass/suspendconfirmations.ts";
import type { SnapshotRegistry } from "../registry/index.ts";
import { queueRank } from "./decide/queuerank.ts";
import { CocoonSetReconciler } from "./reconciler.ts";
import { InformerCocoonSetView } from "./view.ts";

export const COCOONSET_CONTROLLER = "cocoonset";
export const DEFAULT_COCOONSET_CONCURRENCY = 4;

export interface CocoonSetControllerOptions {
  client: Client;
  informers: OperatorInformers;
  registry: SnapshotRegistry | undefined;
  events: EventRecorder;
  clock?: Clock;
  /** Sets reconciled in parallel (COCOONSET_CONCURRENCY); below 1 is a setup error. */
  concurrency?: number;
  log?: Logger;
  /** Checkpoints new sets branch from (docs/checkpoints.md); absent when the kind is not served. */
  branching?: BranchingDeps;
  /** Created-pod expectations; default a fresh one for this controller. */
  expectations?: PodCreateExpectations;
  /** Suspends the gate confirmed; default a fresh one for this controller. */
  suspendConfirmations?: SuspendConfirmations;
  /** The sets' activity Leases; watchActivity() starts their watch once they may be listed. */
  activity?: ActivityLeases;
  /** Guest hooks' gate (docs/guest.md); absent: hooks are off. */
  guest?: GuestGate;
}

export function setupCocoonSetController(manager: Manager, options: CocoonSetControllerOptions): Controller {
  const { informers } = options;
  const clock = options.clock ?? systemClock;
  const expectations = options.expectations ?? new PodCreateExpectations(clock);
  // Registered before the controller's own handler: a pod's add event ends its expectation before
  // the set it wakes is reconciled.
  informers.pods.addEventHandler({
    onAdd: (pod) => expectations.observe(pod),
    onUpdate: (_oldPod, pod) => expectations.observe(pod),
    onDelete: (pod) => expectations.observeDeleted(pod),
  });
  const reconciler = new CocoonSetReconciler({
    client: options.client,
    view: new InformerCocoonSetView(informers),
    registry: options.registry,
    events: options.events,
    clock,
    log: (options.log ?? log).child({ controller: COCOONSET_CONTROLLER }),
    expectations,
    suspendConfirmations: options.suspendConfirmations ?? new SuspendConfirmations(),
    failedMains: new FailedMains(),
    ...(options.branching ? { branching: options.branching } : {}),
    ...(options.activity ? { activity: options.activity } : {}),
    ...(options.guest ? { guest: options.guest } : {}),
  });
  const controller = new Controller({
    name: COCOONSET_CONTROLLER,
    reconciler,
    maxConcurrentReconciles: options.concurrency ?? DEFAULT_COCOONSET_CONCURRENCY,
    clock,
    rank: (key) => {
      const { namespace, name } = requestFromKey(key);
      return queueRank(
        informers.cocoonSets.get(namespace, name),
        informers.pods.byIndex(POD_BY_COCOONSET_INDEX, `${namespace}/${name}`),
        clock.now(),
        expectations.awaitsCreates(namespace, name),
      );
    },
  })
    .for(informers.cocoonSets, cocoonSetChange)
    .owns(informers.pods, KIND_COCOONSET, podRelevantChange)
    .watches(informers.hibernations, (ch) => setOwningHibernatedPod(informers, ch));
  manager.addInformer(informers.cocoonSets);
  manager.addInformer(informers.pods);
  manager.addInformer(informers.hibernations);
  manager.addController(controller);
  return controller;
}

/** Watches the activity Leases: a renewal runs the set's pass, which re-arms its idle deadline. */
export function watchActivity(manager: Manager, controller: Controller, activity: ActivityLeases): void {
  controller.watches(activity.informer, setOfLease);
  manager.addInformer(activity.informer);
}

/**
 * A new generation or a status change (each status patch brings one more pass, which corrects a status
 * computed from a stale view of the pods), plus an edit of the idle policy's annotations (docs/idle.md)
 * or of from-checkpoint (one added to a set with state of its own is answered at once), and of what
 * its guest hooks hold (docs/guest.md).
 */
export const cocoonSetChange: Predicate<CocoonSet> = {
  update: (oldSet, newSet) =>
    (generationChangedOrStatusChanged.update?.(oldSet, newSet) ?? true) ||
    idlePolicyAnnotationsChanged(oldSet.metadata.annotations, newSet.metadata.annotations) ||
    oldSet.metadata.annotations?.[ANN_FROM_CHECKPOINT] !==
      newSet.metadata.annotations?.[ANN_FROM_CHECKPOINT] ||
    guestInputsChanged(oldSet, newSet),
};

/** The set that controls the pod a CocoonHibernation names, read from the cached pod; none if unknown. */
function setOwningHibernatedPod(informers: OperatorInformers, ch: CocoonHibernation): Request[] {
  const namespace = ch.metadata.namespace ?? "";
  const podName = ch.spec?.podRef?.name;
  if (!podName) return [];
  const pod = informers.pods.get(namespace, podName);
  const owner = pod ? controllerOf(pod) : undefined;
  return owner?.kind === KIND_COCOONSET ? [{ namespace, name: owner.name }] : [];
}
