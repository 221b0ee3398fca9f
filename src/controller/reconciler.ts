// The contract between the runtime and a reconciler: one key in, one result out. A reconciler never
// sees an event; it reads the cache for the key and converges it.

export interface Request {
  namespace: string;
  name: string;
}

/**
 * What the queue does with the key afterwards. requeueAfterMs > 0 wins over requeue; an empty result
 * means done (the key's backoff is reset). Throwing means "retry with backoff".
 */
export type Result = { requeue?: boolean; requeueAfterMs?: number };

export interface Reconciler {
  reconcile(req: Request, signal: AbortSignal): Promise<Result>;
}

/** "namespace/name", or just "name" for a cluster-scoped object (the client-go key format). */
export function requestKey(req: Request): string {
  return req.namespace === "" ? req.name : `${req.namespace}/${req.name}`;
}

export function requestFromKey(key: string): Request {
  const slash = key.indexOf("/");
  return slash < 0
    ? { namespace: "", name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
