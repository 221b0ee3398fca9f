// The CocoonCheckpoint cache, and whether the kind exists at all. Clusters that have not applied the
// v1alpha1 CRD (those the Go operator ran) answer 404 for it: the operator logs that once and runs
// without checkpoints instead of waiting forever for a cache that cannot sync, looking again on a slow
// schedule so that applying the CRD (or the RBAC) later switches them on without a restart.

import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import type { Clock } from "../clock.ts";
import { createInformer, type Informer, stripManagedFields } from "../controller/cache.ts";
import type { Client, WatchClient } from "../controller/client.ts";
import { deepCopyJson } from "../controller/deepcopy.ts";
import { ApiError } from "../controller/errors.ts";
import { COCOONCHECKPOINTS } from "../controller/resources.ts";
import type { Logger } from "../log.ts";

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

const PROBE_BACKOFF_START_MS = 500;
const PROBE_BACKOFF_MAX_MS = 10_000;

/**
 * One LIST: true when the API serves the kind. 404 (no CRD) and 403 (a ClusterRole from before
 * checkpoints) mean the operator runs without them. Anything else (the API server not up yet) is
 * retried with backoff until one of those answers, or the signal aborts.
 */
export async function checkpointKindServed(
  client: Client,
  namespace: string | undefined,
  opts: { clock: Clock; log: Logger; signal?: AbortSignal },
): Promise<boolean> {
  for (let backoff = PROBE_BACKOFF_START_MS; ; backoff = Math.min(backoff * 2, PROBE_BACKOFF_MAX_MS)) {
    try {
      await client.list(COCOONCHECKPOINTS, namespace);
      return true;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 403)) return false;
      opts.log.warn({ err, retryInMs: backoff }, "probing for the CocoonCheckpoint API failed; retrying");
    }
    await opts.clock.sleep(backoff, opts.signal);
  }
}

/** How often an operator running without checkpoints looks again for their API. */
export const CHECKPOINT_REPROBE_MS = 60_000;

/**
 * Resolves once the kind is served, probing every intervalMs (the first probe one interval from now:
 * the caller has just probed). The same LIST as at start, not a discovery GET: discovery of the group
 * version is open to every authenticated user, so only the LIST also sees a ClusterRole without
 * cocooncheckpoints; while the CRD is absent both are answered by the API server's router alone.
 * Rejects with the signal's reason when it aborts.
 */
export async function whenCheckpointKindServed(
  client: Client,
  namespace: string | undefined,
  opts: { clock: Clock; log: Logger; signal: AbortSignal; intervalMs: number },
): Promise<void> {
  do await opts.clock.sleep(opts.intervalMs, opts.signal);
  while (!(await checkpointKindServed(client, namespace, opts)));
}
