// Wires warm pools into the operator (docs/pools.md): the CocoonPool and CocoonClaim controllers, their
// informers, and the CocoonSet events each maps to its keys. The operator calls this only once the
// cluster serves both kinds (src/controller/served.ts).

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import { KIND_COCOONPOOL } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import type { Client } from "../controller/client.ts";
import { Controller } from "../controller/controller.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Manager } from "../controller/manager.ts";
import type { Request } from "../controller/reconciler.ts";
import type { GuestGate, HeldMember } from "../guestgate.ts";
import { type OperatorInformers, POD_BY_COCOONSET_INDEX } from "../informers/informers.ts";
import type { Logger } from "../log.ts";
import type { PoolCatalog } from "./catalog.ts";
import { ClaimReconciler } from "./claimreconciler.ts";
import { MemberExpectations } from "./expectations.ts";
import { LABEL_CLAIM, LABEL_CLAIMED_FROM, LABEL_POOL } from "./keys.ts";
import { PoolReconciler } from "./poolreconciler.ts";

export const POOL_CONTROLLER = "cocoonpool";
export const CLAIM_CONTROLLER = "cocoonclaim";
/**
 * A bind is three awaited writes (finalizer, the member, the claim's status); claims arriving together
 * wait for a worker, so there are enough for a burst to bind in one round of writes.
 */
const CLAIM_WORKERS = 64;

export interface PoolControllerOptions {
  client: Client;
  catalog: PoolCatalog;
  informers: OperatorInformers;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  /** Claim workers: claims bind in parallel, each a few sequential API calls (default 64). */
  claimConcurrency?: number;
  /** Guest hooks' gate (docs/guest.md): a claim is Ready only once its set's hooks hold no member. */
  guest?: GuestGate;
}

const namespaceOf = (cs: CocoonSet): string => cs.metadata.namespace ?? "";

/** The claim that bound the pod's set (as cached), if one has. */
function claimOfPodsSet(informers: OperatorInformers, pod: Pod): Request[] {
  const namespace = pod.metadata.namespace ?? "";
  const cs = informers.cocoonSets.get(namespace, pod.metadata.labels?.[LABEL_COCOONSET] ?? "");
  const claim = cs?.metadata.labels?.[LABEL_CLAIM];
  return claim === undefined ? [] : [{ namespace, name: claim }];
}

/** The first member of a set the gate holds back, read from the pods' cache. */
function heldBy(
  gate: GuestGate,
  informers: OperatorInformers,
): (cs: CocoonSet, claim: string) => HeldMember | undefined {
  return (cs, claim) => {
    const pods = informers.pods.byIndex(POD_BY_COCOONSET_INDEX, `${namespaceOf(cs)}/${cs.metadata.name}`);
    const { held } = gate.heldMembers(cs, pods, claim);
    return held.values().next().value;
  };
}

/** The pool a set is an unclaimed member of or was claimed from. */
function poolsOfSet(cs: CocoonSet): Request[] {
  const labels = cs.metadata.labels ?? {};
  const ownedBy = (cs.metadata.ownerReferences ?? []).find(
    (ref) => ref.controller === true && ref.kind === KIND_COCOONPOOL,
  );
  const names = new Set([labels[LABEL_POOL], labels[LABEL_CLAIMED_FROM], ownedBy?.name]);
  return [...names]
    .filter((name) => name !== undefined)
    .map((name) => ({ namespace: namespaceOf(cs), name }));
}

export function setupPoolControllers(manager: Manager, options: PoolControllerOptions): Controller[] {
  const { catalog, informers, clock } = options;
  const poolReconciler = new PoolReconciler({
    client: options.client,
    view: catalog,
    expectations: new MemberExpectations(clock),
    events: options.events,
    clock,
    log: options.log.child({ controller: POOL_CONTROLLER }),
  });
  const claimReconciler = new ClaimReconciler({
    client: options.client,
    view: catalog,
    events: options.events,
    clock,
    log: options.log.child({ controller: CLAIM_CONTROLLER }),
    ...(options.guest ? { guestHeld: heldBy(options.guest, options.informers) } : {}),
  });
  /** The pool's claims still waiting for a member (a member turning ready, or the pool appearing). */
  const pendingClaims = (namespace: string, pool: string): Request[] =>
    catalog
      .claimsOfPool(namespace, pool)
      .filter((claim) => claim.status?.phase !== "Bound")
      .map((claim) => ({ namespace, name: claim.metadata.name ?? "" }));

  const pools = new Controller({
    name: POOL_CONTROLLER,
    reconciler: poolReconciler,
    clock,
    maxConcurrentReconciles: 2,
  })
    .for(catalog.pools)
    .watches(informers.cocoonSets, poolsOfSet);
  const claims = new Controller({
    name: CLAIM_CONTROLLER,
    reconciler: claimReconciler,
    clock,
    maxConcurrentReconciles: options.claimConcurrency ?? CLAIM_WORKERS,
  })
    .for(catalog.claims)
    .watches(catalog.pools, (pool) => pendingClaims(pool.metadata.namespace ?? "", pool.metadata.name ?? ""))
    .watches(informers.cocoonSets, (cs) => {
      const labels = cs.metadata.labels ?? {};
      const claim = labels[LABEL_CLAIM];
      if (claim !== undefined) return [{ namespace: namespaceOf(cs), name: claim }];
      const pool = labels[LABEL_POOL];
      return pool === undefined ? [] : pendingClaims(namespaceOf(cs), pool);
    });
  // A bound set's guest hooks end with a write of a pod's record, not of the set: with hooks on, the
  // bound sets' pods wake their claims.
  if (options.guest) claims.watches(informers.pods, (pod) => claimOfPodsSet(informers, pod));
  catalog.markAvailable();
  manager.addInformer(catalog.pools);
  manager.addInformer(catalog.claims);
  manager.addInformer(informers.cocoonSets);
  manager.addController(pools);
  manager.addController(claims);
  return [pools, claims];
}
