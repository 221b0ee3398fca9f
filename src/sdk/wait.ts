// Every wait of the SDK: list + watch the objects it judges (by name, or a set's pods by label),
// resumed from the last resourceVersion, re-listed on 410 Gone, reconnected after a short pause when a
// stream ends; the judge runs on every event and nothing is re-read between events. A wait ends with
// the judge's "done", a CocoonOperationError carrying the operator's reason (its newest Warning event
// about the object, else the judge's), a CocoonTimeoutError carrying the last progress and Warning, or
// the abort signal's reason, and always stops its watches.

import type { Clock } from "../clock.ts";
import { type Client, type WatchClient, watchErrorToApiError } from "../controller/client.ts";
import { isGone, isNotFound } from "../controller/errors.ts";
import type { ResourceType } from "../controller/resources.ts";
import { abortReason, CocoonError, CocoonOperationError, CocoonTimeoutError } from "./errors.ts";
import type { WarningWatch } from "./events.ts";

/** Longer than the operator's own deadlines (3 min to suspend, 5 min to wake), so its verdict comes first. */
export const DEFAULT_WAIT_MS = 6 * 60_000;
/** The pause before a watch that ended or broke is opened again. */
export const RECONNECT_MS = 500;

export type Verdict =
  | { kind: "done"; summary: string }
  | { kind: "failed"; reason: string; message: string }
  | { kind: "waiting"; progress: string };

/** One object by name, or the objects a label selector picks, in the session's namespace. */
export type Query = { rt: ResourceType; name: string } | { rt: ResourceType; labelSelector: string };

/** The current items of each query, in query order. */
export type Snapshot = readonly (readonly unknown[])[];

/** A snapshot after every change, the first once every query is listed; ends when the signal aborts. */
export type Observe = (
  namespace: string,
  queries: readonly Query[],
  signal: AbortSignal,
) => AsyncIterable<Snapshot>;

/** What the operations run with: the API, the namespace, how waits observe, and the time. */
export interface Session {
  client: Client;
  namespace: string;
  observe: Observe;
  clock: Clock;
}

export interface WaitOptions {
  /** Default DEFAULT_WAIT_MS. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Each new progress line, then the summary of the end reached. */
  onProgress?: (text: string) => void;
  /** Called as each stage's wait begins, with what it awaits and its timeout. */
  onWait?: (what: string, timeoutMs: number) => void;
}

export interface WaitSpec<T> {
  /** What is awaited, e.g. `cocoonset "demo" to suspend`. */
  what: string;
  queries: readonly Query[];
  /** The judged state out of a snapshot of the queries. */
  state(snapshot: Snapshot): T;
  judge(state: T): Verdict;
  warnings?: WarningWatch;
  /** The error for a query's kind answering 404 (its CRD is not applied). */
  notServed?: () => CocoonError;
}

const TIMEOUT: unique symbol = Symbol("timeout");
const ABORTED: unique symbol = Symbol("aborted");

/** Judges each snapshot of the spec's queries until done; throws the typed errors above otherwise. */
export async function waitFor<T>(session: Session, spec: WaitSpec<T>, opts: WaitOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_WAIT_MS;
  const signal = opts.signal;
  if (signal?.aborted) throw abortReason(signal);
  opts.onWait?.(spec.what, timeoutMs);
  const stop = new AbortController();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
  const start = session.clock.now();
  const timer = session.clock.sleep(timeoutMs, stop.signal).then(
    (): typeof TIMEOUT => TIMEOUT,
    () => new Promise<never>(() => {}),
  );
  const events = session.observe(session.namespace, spec.queries, stop.signal)[Symbol.asyncIterator]();
  let progress = "not yet observed";
  let shown: string | undefined;
  const timedOut = async () =>
    new CocoonTimeoutError(spec.what, timeoutMs, progress, await spec.warnings?.latest());
  try {
    for (;;) {
      const next = await Promise.race([events.next(), timer, aborted]);
      if (next === ABORTED) throw abortReason(signal);
      if (next === TIMEOUT) throw await timedOut();
      if (next.done) throw new CocoonError("WatchEnded", `the watch for ${spec.what} ended`);
      const state = spec.state(next.value);
      const verdict = spec.judge(state);
      if (verdict.kind === "done") {
        opts.onProgress?.(verdict.summary);
        return state;
      }
      if (verdict.kind === "failed") {
        const warning = await spec.warnings?.latest(true);
        throw new CocoonOperationError(
          spec.what,
          warning?.reason || verdict.reason,
          warning?.message || verdict.message,
        );
      }
      progress = verdict.progress;
      if (progress !== shown) {
        shown = progress;
        opts.onProgress?.(progress);
      }
      if (session.clock.now() - start >= timeoutMs) throw await timedOut();
    }
  } catch (err) {
    if (isNotFound(err) && spec.notServed) throw spec.notServed();
    throw err;
  } finally {
    // One signal may serve many operations (a rollout loop's): leave no listener on it.
    if (onAbort) signal?.removeEventListener("abort", onAbort);
    stop.abort();
    events.return?.().catch(() => {});
  }
}

interface Named {
  metadata?: { name?: string; resourceVersion?: string };
}

/** The SDK's Observe: a list + watch per query, merged into one stream of snapshots. */
export function watchQueries(client: WatchClient, clock: Clock): Observe {
  return (namespace, queries, signal) =>
    merged(
      queries.map((q) => listWatch(client, clock, namespace, q, signal)),
      signal,
    );
}

/** The query's items after its list and after every watch event, until the signal aborts. */
async function* listWatch(
  client: WatchClient,
  clock: Clock,
  namespace: string,
  query: Query,
  signal: AbortSignal,
): AsyncIterable<unknown[]> {
  const selector =
    "name" in query
      ? { fieldSelector: `metadata.name=${query.name}` }
      : { labelSelector: query.labelSelector };
  const wanted = (obj: Named) => !("name" in query) || obj.metadata?.name === query.name;
  while (!signal.aborted) {
    const list = await client.list<Named>(query.rt, namespace, selector);
    const items = new Map<string, Named>();
    for (const item of list.items) if (wanted(item)) items.set(item.metadata?.name ?? "", item);
    let version = list.resourceVersion;
    yield [...items.values()];
    let gone = false;
    while (!signal.aborted && !gone) {
      try {
        for await (const event of client.watch<Named>(query.rt, namespace, {
          ...selector,
          resourceVersion: version,
          allowWatchBookmarks: true,
          signal,
        })) {
          if (event.type === "ERROR") throw watchErrorToApiError(event.object);
          version = event.object.metadata?.resourceVersion ?? version;
          if (event.type === "BOOKMARK" || !wanted(event.object)) continue;
          const key = event.object.metadata?.name ?? "";
          if (event.type === "DELETED") items.delete(key);
          else items.set(key, event.object);
          yield [...items.values()];
        }
      } catch (err) {
        if (signal.aborted) return;
        if (isGone(err)) {
          gone = true;
          continue;
        }
        if (isNotFound(err)) throw err;
      }
      if (!gone) await clock.sleep(RECONNECT_MS, signal).catch(() => {});
    }
  }
}

/** The latest value of every stream after each change, once each has given one; a stream's failure ends it. */
async function* merged<T>(streams: AsyncIterable<T>[], signal: AbortSignal): AsyncIterable<T[]> {
  const latest: (T | undefined)[] = streams.map(() => undefined);
  const seen = streams.map(() => false);
  let failure: { err: unknown } | undefined;
  let changed = false;
  let wake: (() => void) | undefined;
  streams.forEach((stream, i) => {
    (async () => {
      for await (const value of stream) {
        latest[i] = value;
        seen[i] = true;
        changed = true;
        wake?.();
      }
    })().catch((err: unknown) => {
      failure ??= { err };
      wake?.();
    });
  });
  const onAbort = () => wake?.();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      if (failure) throw failure.err;
      if (signal.aborted) return;
      if (changed && seen.every(Boolean)) {
        changed = false;
        yield [...latest] as T[];
        continue;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = undefined;
    }
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}
