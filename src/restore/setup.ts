// Wires restores into the operator (docs/checkpoints.md): the CocoonRestore controller, woken by its
// restores and by every change of the sets they name (a suspend confirmed, a wake finished, a hold).
// The operator calls this once the cluster serves CocoonRestore and CocoonCheckpoint.

import type { CocoonSet } from "../apis/v1/types.ts";
import type { CheckpointReader } from "../checkpoint/catalog.ts";
import type { Clock } from "../clock.ts";
import type { Client } from "../controller/client.ts";
import { Controller } from "../controller/controller.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Manager } from "../controller/manager.ts";
import type { Request } from "../controller/reconciler.ts";
import { restoreHoldOf } from "../holds.ts";
import type { OperatorInformers } from "../informers/informers.ts";
import type { Logger } from "../log.ts";
import type { CheckpointRegistry } from "../registry/index.ts";
import type { RestoreCatalog } from "./catalog.ts";
import { RestoreReconciler } from "./reconciler.ts";

export const RESTORE_CONTROLLER = "cocoonrestore";

/**
 * Restore workers unless configured (--restore-concurrency): each worker runs one restore's pass, whose
 * copies can take minutes, so one slow restore does not hold up the others.
 */
export const DEFAULT_RESTORE_CONCURRENCY = 4;

export interface RestoreControllerOptions {
  client: Client;
  /** Restores reconciled at once; default DEFAULT_RESTORE_CONCURRENCY. */
  concurrency?: number;
  catalog: RestoreCatalog;
  checkpoints: CheckpointReader;
  informers: OperatorInformers;
  registry: CheckpointRegistry;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
}

/** The restores naming the set, and the one its hold names (it may be gone: its hold is let go). */
function restoresOfSet(catalog: RestoreCatalog, cs: CocoonSet): Request[] {
  const namespace = cs.metadata.namespace ?? "";
  const names = new Set(
    catalog.restoresOfSet(namespace, cs.metadata.name ?? "").map((r) => r.metadata.name ?? ""),
  );
  const hold = restoreHoldOf(cs);
  if (hold !== undefined && hold !== "unreadable") names.add(hold.restore);
  return [...names].map((name) => ({ namespace, name }));
}

export function setupRestoreController(manager: Manager, options: RestoreControllerOptions): Controller {
  const { catalog, informers } = options;
  const reconciler = new RestoreReconciler({
    client: options.client,
    view: {
      getRestore: (namespace, name) => catalog.getRestore(namespace, name),
      listRestores: (namespace) => catalog.listRestores(namespace),
      getCocoonSet: (namespace, name) => informers.cocoonSets.get(namespace, name),
      listCocoonSets: (namespace) => informers.cocoonSets.list(namespace),
      checkpoints: options.checkpoints,
    },
    registry: options.registry,
    events: options.events,
    clock: options.clock,
    log: options.log.child({ controller: RESTORE_CONTROLLER }),
  });
  const controller = new Controller({
    name: RESTORE_CONTROLLER,
    reconciler,
    clock: options.clock,
    maxConcurrentReconciles: options.concurrency ?? DEFAULT_RESTORE_CONCURRENCY,
  })
    .for(catalog.informer)
    .watches(informers.cocoonSets, (cs) => restoresOfSet(catalog, cs));
  manager.addInformer(catalog.informer);
  manager.addInformer(informers.cocoonSets);
  manager.addController(controller);
  return controller;
}
