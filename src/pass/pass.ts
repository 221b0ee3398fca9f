// The contract every step of the CocoonSet pass is written against, whichever room it lives in: what a
// pass works with (the set and its classified pods, read once from the cache; the collaborators it
// writes through; the little state steps hand to later steps) and what a step returns (CONTINUE, or
// finish(result), at which the pass stops). Nothing here knows which steps there are: src/cocoonset/
// lists them in the spec's order, and a feature room builds its own step with a factory that takes
// the feature's own collaborators.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation, CocoonSet, CocoonSetPhase } from "../apis/v1/types.ts";
import type { Clock } from "../clock.ts";
import type { Client } from "../controller/client.ts";
import type { EventRecorder } from "../controller/events.ts";
import type { Result } from "../controller/reconciler.ts";
import type { GuestGate } from "../guestgate.ts";
import type { Logger } from "../log.ts";
import type { SnapshotManifest, SnapshotRegistry } from "../registry/index.ts";
import type { Classification } from "./classify.ts";
import type { PodCreateExpectations } from "./expectations.ts";
import type { FailedMains } from "./failedmains.ts";
import type { SuspendConfirmations } from "./suspendconfirmations.ts";

/** T with every property, nested object and array read-only. */
export type DeepReadonly<T> = T extends (infer E)[]
  ? readonly DeepReadonly<E>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** A CocoonHibernation as the cache holds it: the cache's own object, handed out uncopied. */
export type CachedHibernation = DeepReadonly<CocoonHibernation>;

/** Cached reads. Every call here is free of API traffic; listHibernations is counted per pass. */
export interface CocoonSetView {
  /** A copy: the pass updates it to keep its own writes in step. */
  getCocoonSet(namespace: string, name: string): CocoonSet | undefined;
  /** Pods in the namespace carrying label cocoonset.cocoonstack.io/name=<setName>; copies. */
  listSetPods(namespace: string, setName: string): Pod[];
  /** The cache's own objects, not copies (a pass only reads them): never write to them. */
  listHibernations(namespace: string): readonly CachedHibernation[];
  /** The live sets, of any namespace, that answer for `vm` (setvms.ts); the cache's own objects. */
  listSetsNamingVM(vm: string): readonly CocoonSet[];
}

/** The collaborators every pass has, one set per controller. */
export interface PassDeps {
  /** Writes, and the few explicit uncached reads the spec asks for. */
  client: Client;
  view: CocoonSetView;
  /** Absent when no OCI_REGISTRY is configured (tests of the no-registry paths). */
  registry: SnapshotRegistry | undefined;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
  /**
   * Pods this process created that the cache has not shown yet (one per controller, shared with the
   * pods informer's handler). Absent: every pass trusts the cache alone.
   */
  expectations?: PodCreateExpectations;
  /**
   * The suspends step 6's gate confirmed in this process (one per controller), so a settled
   * Suspended set is not probed again. Absent: every gate pass probes the registry.
   */
  suspendConfirmations?: SuspendConfirmations;
  /**
   * The mains step 7 put their set in Failed for (one per controller), so their recovery is reported
   * even by a pass whose cache does not show that Failed yet. Absent: the cached phase alone.
   */
  failedMains?: FailedMains;
  /** Reports of the sets' use beside their last-activity annotation. Absent: the annotation only. */
  activity?: ActivitySource;
  /** Guest hooks (docs/guest.md). Absent: hooks are off, and a guest-policy annotation is ignored. */
  guest?: GuestGate;
}

/** Where else a set's use is reported (src/idle/activity.ts: a Lease per set). */
export interface ActivitySource {
  /** The last use reported for the set, undefined when none is (or the source is not synced). */
  lastUseMs(cs: CocoonSet): number | undefined;
  /** Makes the set reportable (creates its Lease) once the source knows it is not yet. */
  ensureReportable(cs: CocoonSet, client: Client): Promise<void>;
}

/**
 * What a step returns: go on to the next step, or end the pass with this result. A step that ends the
 * pass in a phase of its own (a feature waiting on something) names it, and the pass's status is
 * written with that phase before the result is returned.
 */
export type StepOutcome =
  | { readonly done: false }
  | { readonly done: true; readonly result: Result; readonly phase?: CocoonSetPhase };

/** One step of the pass. */
export type Step = (pass: Pass) => Promise<StepOutcome>;

export const CONTINUE: StepOutcome = { done: false };

export function finish(result: Result = {}): StepOutcome {
  return { done: true, result };
}

/** Ends the pass with the status written in `phase` (the rest of the status computed as usual). */
export function finishInPhase(phase: CocoonSetPhase, result: Result = {}): StepOutcome {
  return { done: true, result, phase };
}

/** Ends a pass that waits for the cache to show a pod it created (after awaitingCreate said so). */
export function awaitCreated(pass: Pass): StepOutcome {
  return finish({ requeueAfterMs: pass.requeueAfterMs ?? CREATE_PENDING_POLL_MS });
}

export const REQUEUE_POLL_MS = 5_000;

const NONE_EXPECTED: ReadonlyMap<string, number> = new Map();

/**
 * A pass waiting for the cache to show a pod it created looks again after this at the latest; the
 * pod's add event normally wakes the set much sooner.
 */
export const CREATE_PENDING_POLL_MS = 1_000;

export class Pass {
  readonly cs: CocoonSet;
  readonly deps: PassDeps;
  readonly signal: AbortSignal;
  /** Step 4's classification; every later step reads it, none re-lists. */
  pods: Classification;
  /** A phase a step decided (Suspending, Failed, …); status derives one otherwise. */
  phase: CocoonSetPhase | undefined;
  /** Set by steps 12–13 when they wrote: the pass requeues at once and skips the status patch. */
  changed = false;
  /** The smallest rebuild backoff still pending; the pass requeues after it. */
  requeueAfterMs: number | undefined;
  /**
   * A pod this pass would create is still expected from an earlier create: the classification is
   * stale, so step 14 requeues (within the poll) instead of patching the status.
   */
  awaitingCreates = false;
  /** The image rule's manifest reads, by VM; null: absent (src/cocoonset/imagerule.ts readSnapshotOnce). */
  snapshotReads: Map<string, SnapshotManifest | null> | undefined;
  /** The image rule's last reclaim-record write, which the next one chains on (src/cocoonset/imagerule.ts). */
  reclaimWrite: Promise<unknown> | undefined;
  private hibernations: readonly CachedHibernation[] | undefined;
  /**
   * Pods created by earlier passes that this pass's list did not show, with the time each lapses;
   * taken when the pass is made, right after its pods were listed (expectations.ts).
   */
  private readonly expectedCreates: ReadonlyMap<string, number>;

  constructor(cs: CocoonSet, pods: Classification, deps: PassDeps, signal: AbortSignal) {
    this.cs = cs;
    this.pods = pods;
    this.deps = deps;
    this.signal = signal;
    this.phase = undefined;
    this.requeueAfterMs = undefined;
    this.snapshotReads = undefined;
    this.reclaimWrite = undefined;
    this.expectedCreates =
      deps.expectations?.pendingForSet(cs.metadata.namespace ?? "", cs.metadata.name ?? "") ?? NONE_EXPECTED;
  }

  get namespace(): string {
    return this.cs.metadata.namespace ?? "";
  }

  get name(): string {
    return this.cs.metadata.name ?? "";
  }

  get generation(): number {
    return this.cs.metadata.generation ?? 0;
  }

  /** The namespace's CocoonHibernations, listed lazily and at most once per pass. */
  hibernationsInNamespace(): readonly CachedHibernation[] {
    this.hibernations ??= this.deps.view.listHibernations(this.namespace);
    return this.hibernations;
  }

  /**
   * True when this process already created the pod `podName` and the pass's list of pods did not
   * show it: the caller must not create it (nor read the registry for it). The pass is marked as
   * waiting for it and requeues within CREATE_PENDING_POLL_MS (or when the expectation lapses).
   */
  awaitingCreate(podName: string): boolean {
    const expiresAt = this.expectedCreates.get(podName);
    if (expiresAt === undefined) return false;
    const left = expiresAt - this.deps.clock.now();
    if (left <= 0) return false;
    this.awaitingCreates = true;
    this.requeueWithin(Math.min(CREATE_PENDING_POLL_MS, left));
    return true;
  }

  /** Whether any pod of this set is still expected from an earlier create (see awaitingCreate). */
  awaitingAnyCreate(): boolean {
    for (const name of this.expectedCreates.keys()) if (this.awaitingCreate(name)) return true;
    return false;
  }

  /** Lowers the pass's requeue-after to ms when that is sooner. */
  requeueWithin(ms: number): void {
    this.requeueAfterMs = this.requeueAfterMs === undefined ? ms : Math.min(this.requeueAfterMs, ms);
  }
}
