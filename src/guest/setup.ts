// Wires guest hooks into the operator (docs/guest.md): the guest controller, one request per pod,
// woken by the pods of sets that name a policy, by their sets (a claim binding, the policy named) and
// by the policies themselves (an edit runs a failed hook again).

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonGuestPolicy } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import type { Client } from "../controller/client.ts";
import { Controller } from "../controller/controller.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { PodExecutor } from "../controller/exec.ts";
import type { Manager } from "../controller/manager.ts";
import { type Request, requestKey } from "../controller/reconciler.ts";
import { type OperatorInformers, POD_BY_COCOONSET_INDEX } from "../informers/informers.ts";
import type { Logger } from "../log.ts";
import type { GuestPolicyCatalog } from "./catalog.ts";
import { guestInputsChanged, guestPolicyName } from "./decide.ts";
import type { GuestHooksGate } from "./gate.ts";
import { GuestReconciler } from "./reconciler.ts";
import type { PreHibernateRequests } from "./requests.ts";

export const GUEST_CONTROLLER = "cocoonguest";

/** Pods whose hooks run at once: a hook waits on its guest, so many run side by side. */
export const DEFAULT_GUEST_CONCURRENCY = 16;

export interface GuestControllerOptions {
  client: Client;
  catalog: GuestPolicyCatalog;
  informers: OperatorInformers;
  executor: PodExecutor;
  gate: GuestHooksGate;
  requests: PreHibernateRequests;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  concurrency?: number;
  claimParameters?: (namespace: string, claim: string) => Record<string, string> | undefined;
}

function podsOfSet(informers: OperatorInformers, cs: CocoonSet): Request[] {
  const namespace = cs.metadata.namespace ?? "";
  return informers.pods
    .byIndex(POD_BY_COCOONSET_INDEX, `${namespace}/${cs.metadata.name}`)
    .map((pod) => ({ namespace, name: pod.metadata.name ?? "" }));
}

/** A pod whose set (as cached) names a guest policy. */
function podOfPolicySet(informers: OperatorInformers, pod: Pod): Request[] {
  const namespace = pod.metadata.namespace ?? "";
  const cs = informers.cocoonSets.get(namespace, pod.metadata.labels?.[LABEL_COCOONSET] ?? "");
  return cs && guestPolicyName(cs) !== "" ? [{ namespace, name: pod.metadata.name ?? "" }] : [];
}

function podsOfPolicy(informers: OperatorInformers, policy: CocoonGuestPolicy): Request[] {
  const namespace = policy.metadata.namespace ?? "";
  return informers.cocoonSets
    .list(namespace)
    .filter((cs) => guestPolicyName(cs) === policy.metadata.name)
    .flatMap((cs) => podsOfSet(informers, cs));
}

export function setupGuestController(manager: Manager, options: GuestControllerOptions): Controller {
  const { informers, catalog } = options;
  const reconciler = new GuestReconciler({
    client: options.client,
    view: {
      getPod: (namespace, name) => informers.pods.get(namespace, name),
      getCocoonSet: (namespace, name) => informers.cocoonSets.get(namespace, name),
    },
    policy: (namespace, name) => catalog.policy(namespace, name),
    executor: options.executor,
    requests: options.requests,
    events: options.events,
    clock: options.clock,
    log: options.log.child({ controller: GUEST_CONTROLLER }),
    ...(options.claimParameters ? { claimParameters: options.claimParameters } : {}),
  });
  const controller = new Controller({
    name: GUEST_CONTROLLER,
    reconciler,
    clock: options.clock,
    maxConcurrentReconciles: options.concurrency ?? DEFAULT_GUEST_CONCURRENCY,
  })
    .watches(informers.pods, (pod) => podOfPolicySet(informers, pod))
    // Of a set, the hooks read only the policy it names and the claim that bound it: a status write
    // (every pass of a set coming up) wakes none of its pods.
    .watches(informers.cocoonSets, (cs) => (guestPolicyName(cs) !== "" ? podsOfSet(informers, cs) : []), {
      update: guestInputsChanged,
    })
    .watches(catalog.informer, (policy) => podsOfPolicy(informers, policy));
  options.gate.enqueue = (namespace, name) => controller.queue.add(requestKey({ namespace, name }));
  manager.addInformer(catalog.informer);
  manager.addController(controller);
  return controller;
}
