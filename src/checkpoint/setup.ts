// Wires checkpoints into the operator (docs/checkpoints.md): the CocoonCheckpoint controller, the CocoonSet
// controller's watch on checkpoints (a set waiting to branch wakes when its checkpoint moves), and
// the probe that leaves all of it out when the cluster does not serve the kind.

import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import type { Client } from "../controller/client.ts";
import { Controller } from "../controller/controller.ts";
import { deepCopyJson } from "../controller/deepcopy.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Manager } from "../controller/manager.ts";
import type { Request } from "../controller/reconciler.ts";
import { restoreHoldOf } from "../holds.ts";
import { type OperatorInformers, POD_BY_COCOONSET_INDEX } from "../informers/informers.ts";
import type { Logger } from "../log.ts";
import type { CheckpointRegistry, SnapshotRegistry } from "../registry/index.ts";
import type { CheckpointCatalog } from "./catalog.ts";
import { ANN_FROM_CHECKPOINT } from "./keys.ts";
import { CheckpointReconciler } from "./reconciler.ts";

export const CHECKPOINT_CONTROLLER = "cocooncheckpoint";

export interface CheckpointControllerOptions {
  client: Client;
  catalog: CheckpointCatalog;
  informers: OperatorInformers;
  registry: CheckpointRegistry;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
}

/** The registry client can copy manifests (a test double of SnapshotRegistry alone cannot). */
export function asCheckpointRegistry(registry: SnapshotRegistry | undefined): CheckpointRegistry | undefined {
  const candidate = registry as Partial<CheckpointRegistry> | undefined;
  return candidate &&
    typeof candidate.headManifest === "function" &&
    typeof candidate.getManifest === "function" &&
    typeof candidate.putManifest === "function" &&
    typeof candidate.copyManifest === "function"
    ? (candidate as CheckpointRegistry)
    : undefined;
}

export function setupCheckpointController(
  manager: Manager,
  options: CheckpointControllerOptions,
): Controller {
  const { catalog, informers } = options;
  const reconciler = new CheckpointReconciler({
    client: options.client,
    view: {
      getCheckpoint: (namespace, name) => {
        const ck = catalog.informer.get(namespace, name);
        return ck ? deepCopyJson(ck) : undefined;
      },
      checkpointsOfSet: (namespace, setName) => catalog.checkpointsOfSet(namespace, setName),
      getCocoonSet: (namespace, name) => informers.cocoonSets.get(namespace, name),
      listSetPods: (namespace, setName) =>
        informers.pods.byIndex(POD_BY_COCOONSET_INDEX, `${namespace}/${setName}`),
    },
    registry: options.registry,
    events: options.events,
    clock: options.clock,
    log: options.log.child({ controller: CHECKPOINT_CONTROLLER }),
  });
  const controller = new Controller({ name: CHECKPOINT_CONTROLLER, reconciler, clock: options.clock })
    .for(catalog.informer)
    // A set's every change (its suspend, its keep-checkpoints) wakes the checkpoints naming it, the
    // checkpoint it branches from and the one a restore holds it for (a delete or a prune waits for
    // the branch or the restore to finish).
    .watches(informers.cocoonSets, (cs) => {
      const namespace = cs.metadata.namespace ?? "";
      const requests = catalog
        .checkpointsOfSet(namespace, cs.metadata.name ?? "")
        .map((ck) => ({ namespace, name: ck.metadata.name ?? "" }));
      const from = cs.metadata.annotations?.[ANN_FROM_CHECKPOINT];
      if (from !== undefined) requests.push({ namespace, name: from });
      const hold = restoreHoldOf(cs);
      if (hold !== undefined && hold !== "unreadable") requests.push({ namespace, name: hold.checkpoint });
      return requests;
    });
  manager.addInformer(catalog.informer);
  manager.addInformer(informers.cocoonSets);
  manager.addController(controller);
  return controller;
}

/** The sets in the checkpoint's namespace annotated to branch from it. */
export function setsBranchingFrom(informers: OperatorInformers, ck: CocoonCheckpoint): Request[] {
  const namespace = ck.metadata.namespace ?? "";
  return informers.cocoonSets
    .list(namespace)
    .filter((cs) => cs.metadata.annotations?.[ANN_FROM_CHECKPOINT] === ck.metadata.name)
    .map((cs) => ({ namespace, name: cs.metadata.name ?? "" }));
}
