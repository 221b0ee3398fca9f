// Whether the API serves an optional kind (the v1alpha1 CocoonCheckpoint, CocoonPool, CocoonClaim).
// Clusters that have not applied its CRD (those the Go operator ran) answer 404 for it: the operator
// logs that once and runs without the feature instead of waiting forever for a cache that cannot sync,
// looking again on a slow schedule so that applying the CRD (or the RBAC) later switches it on without
// a restart.

import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Client } from "./client.ts";
import { ApiError } from "./errors.ts";
import type { ResourceType } from "./resources.ts";

const PROBE_BACKOFF_START_MS = 500;
const PROBE_BACKOFF_MAX_MS = 10_000;

/**
 * One LIST per kind: true when the API serves every one of them (a feature's kinds come in one
 * install). 404 (no CRD) and 403 (a ClusterRole from before the kind) mean the operator runs without
 * the feature. Anything else (the API server not up yet) is retried with backoff until one of those
 * answers, or the signal aborts.
 */
export async function kindsServed(
  client: Client,
  kinds: readonly ResourceType[],
  namespace: string | undefined,
  opts: { clock: Clock; log: Logger; signal?: AbortSignal },
): Promise<boolean> {
  for (const rt of kinds) if (!(await kindServed(client, rt, namespace, opts))) return false;
  return true;
}

async function kindServed(
  client: Client,
  rt: ResourceType,
  namespace: string | undefined,
  opts: { clock: Clock; log: Logger; signal?: AbortSignal },
): Promise<boolean> {
  for (let backoff = PROBE_BACKOFF_START_MS; ; backoff = Math.min(backoff * 2, PROBE_BACKOFF_MAX_MS)) {
    try {
      await client.list(rt, namespace);
      return true;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 403)) return false;
      opts.log.warn({ err, retryInMs: backoff }, `probing for the ${rt.kind} API failed; retrying`);
    }
    await opts.clock.sleep(backoff, opts.signal);
  }
}

/** How often an operator running without an optional kind looks again for its API. */
export const KIND_REPROBE_MS = 60_000;

/**
 * Resolves once the kinds are served, probing every intervalMs (the first probe one interval from now:
 * the caller has just probed). The same LIST as at start, not a discovery GET: discovery of the group
 * version is open to every authenticated user, so only the LIST also sees a ClusterRole without
 * the kind; while the CRD is absent both are answered by the API server's router alone.
 * Rejects with the signal's reason when it aborts.
 */
export async function whenKindsServed(
  client: Client,
  kinds: readonly ResourceType[],
  namespace: string | undefined,
  opts: { clock: Clock; log: Logger; signal: AbortSignal; intervalMs: number },
): Promise<void> {
  do await opts.clock.sleep(opts.intervalMs, opts.signal);
  while (!(await kindsServed(client, kinds, namespace, opts)));
}
