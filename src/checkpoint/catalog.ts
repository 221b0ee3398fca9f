// The CocoonCheckpoint cache, and whether the kind exists at all: until the operator's probe
// (src/controller/served.ts) found the kind served, every lookup answers "unavailable".

import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { WatchClient } from "../controller/client.ts";
import { deepCopyJson } from "../controller/deepcopy.ts";
import { COCOONCHECKPOINTS } from "../controller/resources.ts";

/** Checkpoints by `<namespace>/<spec.cocoonSetRef.name>`. */
export const CHECKPOINT_BY_SET_INDEX = "cocoonset";

export function checkpointSetKey(namespace: string, setName: string): string {
  return `${namespace}/${setName}`;
}

/** What the branch step reads: a checkpoint, none by that name, or no such kind in this cluster. */
export type CheckpointLookup = CocoonCheckpoint | undefined | "unavailable";

export interface CheckpointReader {
  getCheckpoint(namespace: string, name: string): CheckpointLookup;
}

export class CheckpointCatalog implements CheckpointReader {
  readonly informer: Informer<CocoonCheckpoint>;
  private available = false;

  constructor(client: WatchClient, opts: { clock?: Clock; namespace?: string } = {}) {
    this.informer = createInformer<CocoonCheckpoint>(client, COCOONCHECKPOINTS, {
      ...opts,
      transform: stripManagedFields,
      indexers: {
        [CHECKPOINT_BY_SET_INDEX]: (ck) => [
          checkpointSetKey(ck.metadata.namespace ?? "", ck.spec?.cocoonSetRef?.name ?? ""),
        ],
      },
    });
  }

  /** After a successful probe: the informer runs and lookups answer from it. */
  markAvailable(): void {
    this.available = true;
  }

  get isAvailable(): boolean {
    return this.available;
  }

  getCheckpoint(namespace: string, name: string): CheckpointLookup {
    if (!this.available) return "unavailable";
    const ck = this.informer.get(namespace, name);
    return ck ? deepCopyJson(ck) : undefined;
  }

  /** Checkpoints naming the set, as cached (not copies: read only). */
  checkpointsOfSet(namespace: string, setName: string): readonly CocoonCheckpoint[] {
    return this.available
      ? this.informer.byIndex(CHECKPOINT_BY_SET_INDEX, checkpointSetKey(namespace, setName))
      : [];
  }
}
