// A controller: event sources mapped to keys on one rate-limited work queue, drained by N workers
// that call the reconciler (controller-runtime semantics). Nothing here knows a resource type:
// sources, predicates and mappings are supplied by the caller.
import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import { type Logger, log } from "../log.ts";
import {
  activeWorkers,
  initControllerMetrics,
  RECONCILE_RESULTS,
  type ReconcileResult,
  reconcileErrors,
  reconcilePanics,
  reconcileTime,
  reconcileTotal,
  workQueueMetrics,
} from "./metrics.ts";
import type { RateLimiter } from "./ratelimiter.ts";
import type { Reconciler, Request } from "./reconciler.ts";
import { requestFromKey, requestKey } from "./reconciler.ts";
import { WorkQueue } from "./workqueue.ts";

/** The informer's handler interface (cache.ts), repeated so this module only needs its shape. */
export interface EventHandler<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export interface EventSource<T> {
  addEventHandler(handler: EventHandler<T>): void;
}

/** Filters events before they are mapped to keys; a missing function lets the event through. */
export interface Predicate<T> {
  create?(obj: T): boolean;
  update?(oldObj: T, newObj: T): boolean;
  delete?(obj: T): boolean;
}

export interface ControllerOwnerReference {
  kind: string;
  name: string;
  controller?: boolean;
}

export interface KubeObject {
  metadata: { name?: string; namespace?: string; ownerReferences?: ControllerOwnerReference[] };
}

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  /** Workers, so keys reconciled in parallel (never the same key twice). Default 1; below 1 throws. */
  maxConcurrentReconciles?: number;
  clock?: Clock;
  rateLimiter?: RateLimiter<string>;
  /** The work queue's rank (workqueue.ts): lowest first and not before it; absent: first-queued first. */
  rank?: (key: string) => number;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue<string>;
  private readonly reconciler: Reconciler;
  private readonly workerCount: number;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly inFlight = new Set<string>();
  /** The metric labels of every reconcile, made once: prom-client copies none of them. */
  private readonly labels: { controller: string };
  private readonly resultLabels: Record<ReconcileResult, { controller: string; result: ReconcileResult }>;
  private readonly reconcileAbort = new AbortController();
  private workers: Promise<void>[] | undefined;

  constructor(options: ControllerOptions) {
    const workerCount = options.maxConcurrentReconciles ?? 1;
    if (!Number.isInteger(workerCount) || workerCount < 1) {
      throw new Error(`controller ${options.name}: maxConcurrentReconciles must be an integer >= 1`);
    }
    this.name = options.name;
    this.reconciler = options.reconciler;
    this.workerCount = workerCount;
    this.clock = options.clock ?? systemClock;
    this.logger = log.child({ controller: options.name });
    this.labels = { controller: options.name };
    this.resultLabels = Object.fromEntries(
      RECONCILE_RESULTS.map((result) => [result, { controller: options.name, result }]),
    ) as Controller["resultLabels"];
    this.queue = new WorkQueue<string>({
      clock: this.clock,
      rateLimiter: options.rateLimiter,
      metrics: workQueueMetrics(options.name),
      ...(options.rank ? { rank: options.rank } : {}),
    });
  }

  /** Reconciles the objects of the source itself, by their own key. */
  for<T extends KubeObject>(source: EventSource<T>, predicate?: Predicate<NoInfer<T>>): this {
    return this.watches(source, (obj) => [objectRequest(obj)], predicate);
  }

  /** Reconciles the owner (by controller reference of ownerKind, same namespace) of each object. */
  owns<T extends KubeObject>(
    source: EventSource<T>,
    ownerKind: string,
    predicate?: Predicate<NoInfer<T>>,
  ): this {
    return this.watches(source, (obj) => controllerOwnerRequests(obj, ownerKind), predicate);
  }

  /** Reconciles whatever keys map returns for each object; an update maps both versions. */
  watches<T>(source: EventSource<T>, map: (obj: T) => Request[], predicate?: Predicate<NoInfer<T>>): this {
    source.addEventHandler({
      onAdd: (obj) => {
        if (predicate?.create?.(obj) ?? true) this.enqueue(map(obj));
      },
      onUpdate: (oldObj, newObj) => {
        if (predicate?.update?.(oldObj, newObj) ?? true) this.enqueue([...map(oldObj), ...map(newObj)]);
      },
      onDelete: (obj) => {
        if (predicate?.delete?.(obj) ?? true) this.enqueue(map(obj));
      },
    });
    return this;
  }

  /** Starts the workers; keys queued before this are processed now. A controller starts once. */
  start(): void {
    if (this.workers) throw new Error(`controller ${this.name} already started`);
    initControllerMetrics(this.name, this.workerCount);
    this.logger.info({ workerCount: this.workerCount }, "Starting workers");
    this.workers = Array.from({ length: this.workerCount }, () => this.runWorker());
  }

  /**
   * Takes no more work and lets in-flight reconciles finish for up to deadlineMs; those still
   * running then have their signal aborted (they are not awaited further).
   */
  async stop(deadlineMs: number): Promise<void> {
    const drained = this.queue.shutDownWithDrain();
    const deadline = new AbortController();
    const finishedInTime = await Promise.race([
      drained.then(() => true),
      this.clock.sleep(deadlineMs, deadline.signal).then(
        () => false,
        () => true,
      ),
    ]);
    deadline.abort();
    if (!finishedInTime) {
      this.logger.warn(
        { keys: [...this.inFlight] },
        "Reconciles still running at the shutdown deadline; aborting",
      );
    }
    this.reconcileAbort.abort(new Error(`controller ${this.name} stopped`));
    this.logger.info("Controller stopped");
  }

  /** Stops at once: in-flight reconciles see their signal aborted, workers take no more keys. */
  stopNow(reason: Error): void {
    this.queue.shutDown();
    this.reconcileAbort.abort(reason);
  }

  private enqueue(requests: Request[]): void {
    for (const request of requests) this.queue.add(requestKey(request));
  }

  private async runWorker(): Promise<void> {
    for (let key = await this.queue.get(); key !== undefined; key = await this.queue.get()) {
      this.inFlight.add(key);
      try {
        await this.reconcileKey(key);
      } finally {
        this.inFlight.delete(key);
        this.queue.done(key);
      }
    }
  }

  private async reconcileKey(key: string): Promise<void> {
    const request = requestFromKey(key);
    const labels = this.labels;
    activeWorkers.inc(labels);
    const endTimer = reconcileTime.startTimer(labels);
    let outcome: ReconcileResult;
    try {
      const result = await this.reconciler.reconcile(request, this.reconcileAbort.signal);
      const requeueAfterMs = result.requeueAfterMs ?? 0;
      if (requeueAfterMs > 0) {
        this.queue.forget(key);
        this.queue.addAfter(key, requeueAfterMs);
        outcome = "requeue_after";
      } else if (result.requeue) {
        this.queue.addRateLimited(key);
        outcome = "requeue";
      } else {
        this.queue.forget(key);
        outcome = "success";
      }
    } catch (err) {
      this.queue.addRateLimited(key);
      reconcileErrors.inc(labels);
      if (isProgrammingError(err)) reconcilePanics.inc(labels);
      outcome = "error";
      this.logger.error({ err, namespace: request.namespace, name: request.name }, "Reconciler error");
    } finally {
      endTimer();
      activeWorkers.dec(labels);
    }
    reconcileTotal.inc(this.resultLabels[outcome], 1);
  }
}

/**
 * A bug in the reconciler rather than a failed call: what a Go reconciler would panic on (nil
 * dereference, index out of range). controller-runtime recovers such panics, counts them in
 * controller_runtime_reconcile_panics_total and handles them as errors; so does this controller.
 */
function isProgrammingError(err: unknown): boolean {
  const bug = err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError;
  // fetch reports a failed connection as a TypeError carrying its cause: an I/O error, not a bug.
  return bug && err.cause === undefined;
}

function objectRequest(obj: KubeObject): Request {
  return { namespace: obj.metadata.namespace ?? "", name: obj.metadata.name ?? "" };
}

function controllerOwnerRequests(obj: KubeObject, ownerKind: string): Request[] {
  const owner = obj.metadata.ownerReferences?.find(
    (ref) => ref.controller === true && ref.kind === ownerKind,
  );
  return owner ? [{ namespace: obj.metadata.namespace ?? "", name: owner.name }] : [];
}
