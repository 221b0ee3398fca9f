// The CocoonCheckpoint reconciler. A checkpoint waits (Pending) until its set is Suspended
// at its current generation, fixes its member list (Copying), copies each member's `:hibernate`
// manifest to `<vm>:ckpt-<name>` in the same repository (a manifest PUT: the blobs are already there),
// and goes Ready. Deleting it deletes those tags, probe first; the finalizer stays until every one
// is gone. A Ready checkpoint is never copied again; its set's keep-checkpoints prunes older ones.

import type { Pod } from "../apis/core.ts";
import { statusMergePatch } from "../apis/status.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CheckpointMember,
  type CheckpointPhase,
  type CheckpointProgress,
  type CocoonCheckpoint,
  type CocoonCheckpointStatus,
  type CocoonPool,
  type CocoonRestore,
  KIND_COCOONCHECKPOINT,
} from "../apis/v1alpha1/types.ts";
import { isDeepStrictEqual } from "../builtins.ts";
import type { Clock } from "../clock.ts";
import { TAG_HIBERNATE } from "../contract/keys.ts";
import type { Client } from "../controller/client.ts";
import { isConflict, isForbidden, isNotFound, unlessNotFound } from "../controller/errors.ts";
import type { EventRecorder, EventType } from "../controller/events.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { COCOONCHECKPOINTS, COCOONPOOLS, COCOONRESTORES, COCOONSETS } from "../controller/resources.ts";
import type { Logger } from "../log.ts";
import { checkpointBytesTotal, checkpointDurationSeconds, checkpointsTotal } from "../metrics/checkpoint.ts";
import {
  BASE_IMAGE_ANNOTATION,
  type CheckpointRegistry,
  type Manifest,
  ManifestNotFoundError,
  referencedBytes,
} from "../registry/index.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import { writeCheckpointTag } from "./copy.ts";
import {
  ANN_KEEP_CHECKPOINTS,
  checkpointTag,
  FINALIZER_COCOONCHECKPOINT,
  REASON_COPY_FAILED,
  REASON_COPYING,
  REASON_DELETE_WAITING,
  REASON_FAILED,
  REASON_KEEP_INVALID,
  REASON_PRUNED,
  REASON_READY,
  REASON_TAG_DELETE_FAILED,
  REASON_TAGS_DELETED,
  REASON_WAITING,
} from "./keys.ts";
import { memberRestoreDependencies, mergeMembers, setSlots, unconfirmedBySuspend } from "./members.ts";
import { checkpointsToPrune, parseKeepCheckpoints } from "./prune.ts";
import { bytesNotIn, settledSetGeneration } from "./size.ts";
import {
  CONDITION_PROGRESSING,
  CONDITION_REASON_COPY_FAILED,
  CONDITION_REASON_IN_USE,
  CONDITION_REASON_TAG_DELETE_FAILED,
  deletingCondition,
  failureDeadlineMs,
  phaseConditions,
} from "./status.ts";
import { type CheckpointNeeders, checkpointNeeders, isPinned } from "./usage.ts";

/** A Suspended set without any snapshot (nothing will announce one) is looked at again after this. */
const NO_SNAPSHOT_RETRY_MS = 30_000;
/** A failed copy under a failureDeadline is retried at most this far apart, so the deadline is kept. */
const COPY_RETRY_MS = 10_000;
/** A delete waiting for branches looks again after this; the sets' own events come sooner. */
const DELETE_WAIT_MS = 30_000;

/** Cached reads. */
export interface CheckpointView {
  getCheckpoint(namespace: string, name: string): CocoonCheckpoint | undefined;
  /** The cache's objects naming the set (read only). */
  checkpointsOfSet(namespace: string, setName: string): readonly CocoonCheckpoint[];
  getCocoonSet(namespace: string, name: string): CocoonSet | undefined;
  /** The set's pods, as cached (read only). */
  listSetPods(namespace: string, setName: string): readonly Pod[];
}

export interface CheckpointDeps {
  client: Client;
  view: CheckpointView;
  registry: CheckpointRegistry;
  events: EventRecorder;
  clock: Clock;
  log: Logger;
}

/** Why the set cannot be checkpointed yet, or undefined when it is Suspended at its generation. */
export function notSuspendedReason(cs: CocoonSet): string | undefined {
  const generation = cs.metadata.generation ?? 0;
  const phase = cs.status?.phase ?? "unknown";
  if (phase !== "Suspended")
    return `waiting for CocoonSet ${cs.metadata.name} to be Suspended (phase ${phase})`;
  const observed = cs.status?.observedGeneration ?? 0;
  if (observed !== generation) {
    return `waiting for CocoonSet ${cs.metadata.name} to be Suspended at generation ${generation} (observed ${observed})`;
  }
  return undefined;
}

export class CheckpointReconciler implements Reconciler {
  private readonly deps: CheckpointDeps;

  constructor(deps: CheckpointDeps) {
    this.deps = deps;
  }

  async reconcile(req: Request, signal: AbortSignal): Promise<Result> {
    const ck = this.deps.view.getCheckpoint(req.namespace, req.name);
    if (!ck) return {};
    if (ck.metadata.deletionTimestamp) return this.finalize(ck, signal);
    const finalizers = ck.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER_COCOONCHECKPOINT)) {
      // Before any tag exists, so none can outlive the object.
      await this.deps.client.update<CocoonCheckpoint>(COCOONCHECKPOINTS, {
        ...ck,
        metadata: { ...ck.metadata, finalizers: [...finalizers, FINALIZER_COCOONCHECKPOINT] },
      });
      return { requeue: true };
    }
    if (ck.status?.phase === "Ready") {
      await this.measureExclusive(ck, signal);
      await this.prune(ck, false);
      return {};
    }
    if (ck.status?.phase === "Failed") return {};

    const setName = ck.spec.cocoonSetRef.name;
    const cs = this.deps.view.getCocoonSet(req.namespace, setName);
    if (!cs) return this.wait(ck, `CocoonSet ${setName} not found`);
    const notYet = notSuspendedReason(cs);
    if (notYet) return this.wait(ck, notYet);
    // A copy writes tags, a Ready event and metrics, so it starts from the server's object: the cache
    // may not show yet the Ready that the pass before this one wrote (its own status write queued
    // this pass), and copying again would rewrite every tag while clients read them.
    const current = await unlessNotFound(() =>
      this.deps.client.get<CocoonCheckpoint>(COCOONCHECKPOINTS, req.namespace, req.name),
    );
    if (!current || current.metadata.deletionTimestamp) return {};
    const phase = current.status?.phase;
    if (phase === "Ready" || phase === "Failed") return {};
    if (this.pastDeadline(current)) {
      await this.fail(current, current.status?.message || "the copy had not begun");
      return {};
    }
    const held = { ck: current };
    try {
      return await this.copy(held, cs, signal);
    } catch (err) {
      return this.copyFailed(held.ck, err as Error);
    }
  }

  /**
   * A copy that threw: the status says what the registry answered. Past the failure deadline the
   * checkpoint is Failed; before it, the copy is retried (with backoff, or under a deadline at most
   * COPY_RETRY_MS apart so the deadline is kept).
   */
  private async copyFailed(ck: CocoonCheckpoint, err: Error): Promise<Result> {
    if (signalAborted(err)) throw err;
    const message = `copy failed: ${err.message}`;
    if (this.pastDeadline(ck)) {
      await this.fail(ck, message);
      return {};
    }
    // Progressing=True (CopyFailed) says it is retried; the message is the registry's answer alone.
    await this.writeStatus(ck, { ...ck.status, phase: "Copying", message }, true);
    this.event(ck, "Warning", REASON_COPY_FAILED, `${message}; retrying`);
    const deadline = failureDeadlineMs(ck);
    if (deadline === undefined) throw err;
    return { requeueAfterMs: Math.max(1, Math.min(COPY_RETRY_MS, deadline - this.deps.clock.now())) };
  }

  private pastDeadline(ck: CocoonCheckpoint): boolean {
    const deadline = failureDeadlineMs(ck);
    return deadline !== undefined && this.deps.clock.now() >= deadline;
  }

  /**
   * Failed, for good: the deadline passed before Ready. `guarded`: the write carries `ck`'s
   * resourceVersion (a conflict is thrown).
   */
  private async fail(ck: CocoonCheckpoint, why: string, guarded = false): Promise<void> {
    const message = `not Ready within failureDeadline ${ck.spec.failureDeadline}: ${why}`;
    await this.writeStatus(ck, { ...ck.status, phase: "Failed", message }, false, guarded);
    this.event(ck, "Warning", REASON_FAILED, message);
  }

  /** The copy; `held.ck` follows every status write, so a failure is reported on the latest object. */
  private async copy(held: { ck: CocoonCheckpoint }, cs: CocoonSet, signal: AbortSignal): Promise<Result> {
    const ck = held.ck;
    const { namespace, name } = names(ck);
    const setName = cs.metadata.name ?? "";
    const slots = setSlots(cs);
    const startedAt = this.deps.clock.now();
    // The member list is durable before the first tag is written: a delete then knows every tag
    // that may exist, whatever happens to the copy.
    const planned = mergeMembers(ck.status?.members ?? [], slots);
    // A retry keeps the last failure in view (and writes nothing when it fails the same way again,
    // so its own status writes do not wake it in a loop).
    const retrying = ck.status?.phase === "Copying" && isRetrying(ck);
    held.ck = await this.writeStatus(
      ck,
      {
        ...ck.status,
        phase: "Copying",
        message: retrying
          ? (ck.status?.message ?? "")
          : `copying ${slots.length} snapshots of CocoonSet ${setName}`,
        members: planned,
      },
      retrying,
    );
    if (ck.status?.phase !== "Copying") {
      this.event(ck, "Normal", REASON_COPYING, `copying the :hibernate snapshots of ${slots.length} VMs`);
    }

    // Only the snapshots this suspend confirmed: a slot the gate skipped keeps an older :hibernate.
    const pods = this.deps.view.listSetPods(namespace, setName);
    const skipped: CheckpointMember[] = [];
    const sources: { slot: (typeof slots)[number]; manifest: Manifest }[] = [];
    const missing: string[] = [];
    for (const slot of slots) {
      const why = unconfirmedBySuspend(cs, slot, pods);
      if (why !== undefined) {
        skipped.push({ ...slot, skipped: why });
        continue;
      }
      try {
        sources.push({
          slot,
          manifest: await this.deps.registry.getManifest(slot.vmName, TAG_HIBERNATE, signal),
        });
      } catch (err) {
        if (!(err instanceof ManifestNotFoundError)) throw err;
        missing.push(slot.vmName);
      }
    }
    if (sources.length === 0) {
      // No event of the set's announces a snapshot appearing: look again later.
      const message = `CocoonSet ${setName} is Suspended but no VM of it has a :hibernate snapshot of this suspend`;
      await this.wait(held.ck, message);
      return { requeueAfterMs: NO_SNAPSHOT_RETRY_MS };
    }

    const tag = checkpointTag(name);
    const progress: CheckpointProgress = {
      membersCopied: 0,
      membersTotal: sources.length,
      bytesCopied: 0,
      bytesTotal: sources.reduce((sum, s) => sum + referencedBytes(s.manifest.manifest), 0),
    };
    // Progress is written as it grows past what the status shows (a retry redoes tags it shows).
    const shown = held.ck.status?.progress;
    const showProgress = async () => {
      const behind =
        !shown || shown.bytesTotal !== progress.bytesTotal || progress.membersCopied > shown.membersCopied;
      if (behind)
        held.ck = await this.writeStatus(held.ck, { ...held.ck.status, progress: { ...progress } }, retrying);
    };
    await showProgress();
    const copied: CheckpointMember[] = [];
    for (const [i, { slot, manifest }] of sources.entries()) {
      const checkpoint = { namespace, name, uid: held.ck.metadata.uid ?? "" };
      const digest = await writeCheckpointTag(this.deps.registry, slot.vmName, manifest, checkpoint, signal);
      const annotations = manifest.manifest.annotations as Record<string, unknown> | undefined;
      const image = annotations?.[BASE_IMAGE_ANNOTATION];
      const bytes = referencedBytes(manifest.manifest);
      copied.push({
        ...slot,
        digest,
        image: typeof image === "string" ? image : "",
        ...memberRestoreDependencies(cs, slot),
        bytes,
      });
      progress.membersCopied++;
      progress.bytesCopied += bytes;
      // The last one's progress comes with Ready.
      if (i < sources.length - 1) await showProgress();
    }

    // The copy is one suspend's state only if the set stayed suspended throughout: a wake and a
    // new suspend each take a new generation, so the API server's set must still be at this one.
    const now = await unlessNotFound(() => this.deps.client.get<CocoonSet>(COCOONSETS, namespace, setName));
    const moved = !now
      ? `CocoonSet ${setName} was deleted during the copy`
      : (notSuspendedReason(now) ??
        (now.metadata.generation === cs.metadata.generation
          ? undefined
          : `CocoonSet ${setName} changed during the copy`));
    if (moved) return this.wait(held.ck, `${moved}; copying again once it is Suspended`);

    // Members planned but not copied now keep an entry without a digest, so a delete still probes
    // their tags; branches copy only members with one. A skipped member says why.
    const members: CheckpointMember[] = [
      ...copied,
      ...skipped,
      ...planned
        .filter(
          (p) => !copied.some((m) => m.vmName === p.vmName) && !skipped.some((m) => m.vmName === p.vmName),
        )
        .map(({ role, slot, toolbox, vmName }) => ({
          role,
          vmName,
          ...(slot === undefined ? {} : { slot }),
          ...(toolbox === undefined ? {} : { toolbox }),
        })),
    ];
    const notes = [
      ...(missing.length === 0 ? [] : [`no :hibernate snapshot for ${missing.join(", ")}`]),
      ...(skipped.length === 0
        ? []
        : [`not of this suspend, not copied: ${skipped.map((m) => m.vmName).join(", ")}`]),
    ];
    const updated = await this.writeStatus(held.ck, {
      phase: "Ready",
      message: [`${copied.length} snapshots of CocoonSet ${setName}`, ...notes].join("; "),
      members,
      totalBytes: progress.bytesCopied,
      progress,
      // The copy tagged the :hibernate content itself: nothing is the checkpoint's alone yet.
      exclusiveBytes: 0,
      exclusiveBytesSetGeneration: cs.metadata.generation ?? 0,
      readyTime: formatRFC3339(this.deps.clock.now()),
    });
    held.ck = updated;
    const labels = { namespace, cocoonset: setName };
    checkpointDurationSeconds.observe(labels, (this.deps.clock.now() - startedAt) / 1000);
    checkpointBytesTotal.inc(labels, progress.bytesCopied);
    checkpointsTotal.inc({ ...labels, transition: "ready" });
    this.event(
      ck,
      "Normal",
      REASON_READY,
      `${copied.length} snapshots tagged ${tag}, ${progress.bytesCopied} bytes`,
    );
    await this.prune(updated, true);
    return {};
  }

  /**
   * exclusiveBytes, measured again once per set generation whose `:hibernate` tags have settled: a
   * GET of each member's checkpoint manifest and of its `:hibernate`. A registry error leaves the last
   * figure (it is a report, not a decision) and is logged.
   */
  private async measureExclusive(ck: CocoonCheckpoint, signal: AbortSignal): Promise<void> {
    const { namespace, name } = names(ck);
    const generation = settledSetGeneration(
      this.deps.view.getCocoonSet(namespace, ck.spec.cocoonSetRef.name),
    );
    if (generation === undefined || ck.status?.exclusiveBytesSetGeneration === generation) return;
    const tag = checkpointTag(name);
    let exclusive = 0;
    try {
      for (const member of ck.status?.members ?? []) {
        if (!member.digest) continue;
        const held = await this.deps.registry.getManifest(member.vmName, member.digest, signal);
        const current = await this.deps.registry
          .getManifest(member.vmName, TAG_HIBERNATE, signal)
          .catch((err) => {
            if (err instanceof ManifestNotFoundError) return undefined;
            throw err;
          });
        exclusive += bytesNotIn(held.manifest, current?.manifest);
      }
    } catch (err) {
      this.deps.log.warn(
        { err, checkpoint: `${namespace}/${name}`, tag },
        "measuring the checkpoint's own bytes failed",
      );
      return;
    }
    await this.patchStatus(ck, {
      ...ck.status,
      exclusiveBytes: exclusive,
      exclusiveBytesSetGeneration: generation,
    });
  }

  /**
   * Pending with a message; no call when the status already says so. Past the failure deadline:
   * Failed instead. Both are judged on the cached checkpoint, so both writes carry its
   * resourceVersion: a cache that does not show the Ready (or Failed) the server has yet, say after a
   * dropped watch, cannot write Pending over it; the conflict ends the pass, and the newer version's
   * event brings the next.
   */
  private async wait(ck: CocoonCheckpoint, message: string): Promise<Result> {
    try {
      if (this.pastDeadline(ck)) {
        await this.fail(ck, message, true);
        return {};
      }
      const next: CocoonCheckpointStatus = { ...ck.status, phase: "Pending", message };
      if (await this.writeStatus(ck, next, false, true).then((u) => u !== ck)) {
        this.event(ck, "Normal", REASON_WAITING, message);
      }
    } catch (err) {
      if (isConflict(err)) return {};
      throw err;
    }
    // The set's own events wake the checkpoint (setup.ts); only a deadline needs a timer.
    const deadline = failureDeadlineMs(ck);
    return deadline === undefined ? {} : { requeueAfterMs: Math.max(1, deadline - this.deps.clock.now()) };
  }

  /** keep-checkpoints on the source set: the Ready checkpoints beyond its N newest are deleted. */
  private async prune(ck: CocoonCheckpoint, justReady: boolean): Promise<void> {
    const { namespace } = names(ck);
    const setName = ck.spec.cocoonSetRef.name;
    const raw = this.deps.view.getCocoonSet(namespace, setName)?.metadata.annotations?.[ANN_KEEP_CHECKPOINTS];
    if (raw === undefined) return;
    const keep = parseKeepCheckpoints(raw);
    if (keep === undefined) {
      if (justReady) {
        this.event(
          ck,
          "Warning",
          REASON_KEEP_INVALID,
          `${ANN_KEEP_CHECKPOINTS}=${JSON.stringify(raw)} is not a positive integer; nothing pruned`,
        );
      }
      return;
    }
    // The cache may not show this checkpoint Ready yet: count it as this pass wrote it. A pinned
    // checkpoint neither goes nor counts; one a branch, a pool or a restore still needs goes once that
    // is done. Who needs it is read from the API server, and only when there is something to prune.
    const cached = this.deps.view
      .checkpointsOfSet(namespace, setName)
      .filter((c) => c.metadata.uid !== ck.metadata.uid);
    const beyond = checkpointsToPrune(
      [...cached, ck].filter((c) => !isPinned(c)),
      keep,
    );
    if (beyond.length === 0) return;
    const needers = await this.needersOnServer(namespace);
    const candidates = beyond.filter((c) => checkpointNeeders(needers, c.metadata.name ?? "").length === 0);
    for (const old of candidates) {
      this.event(
        old,
        "Normal",
        REASON_PRUNED,
        `${ANN_KEEP_CHECKPOINTS}=${keep} on CocoonSet ${setName}: deleting this older checkpoint`,
      );
      try {
        await this.deps.client.delete(COCOONCHECKPOINTS, namespace, old.metadata.name ?? "");
        checkpointsTotal.inc({ namespace, cocoonset: setName, transition: "pruned" });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  /** Deletes every member's tag, probe first; a failure keeps the finalizer and the pass retries. */
  private async finalize(ck: CocoonCheckpoint, signal: AbortSignal): Promise<Result> {
    const finalizers = ck.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER_COCOONCHECKPOINT)) return {};
    const { namespace, name } = names(ck);
    // The API server's objects, not the cache's: a branch or a restore that has just begun must hold
    // the delete.
    const using = checkpointNeeders(await this.needersOnServer(namespace), name);
    if (using.length > 0) {
      const message = `waiting for ${using.join(", ")}, which still need its tags, before deleting them`;
      if (await this.writeDeleting(ck, CONDITION_REASON_IN_USE, message)) {
        this.event(ck, "Normal", REASON_DELETE_WAITING, message);
      }
      return { requeueAfterMs: DELETE_WAIT_MS };
    }
    const tag = checkpointTag(name);
    let deleted = 0;
    for (const member of ck.status?.members ?? []) {
      try {
        if (await this.deps.registry.deleteIfPresent(member.vmName, tag, signal)) deleted++;
      } catch (err) {
        const message = `delete ${member.vmName}:${tag}: ${(err as Error).message}`;
        this.event(ck, "Warning", REASON_TAG_DELETE_FAILED, message);
        await this.writeDeleting(ck, CONDITION_REASON_TAG_DELETE_FAILED, `${message}; retrying`);
        throw err;
      }
    }
    try {
      await this.deps.client.update<CocoonCheckpoint>(COCOONCHECKPOINTS, {
        ...ck,
        metadata: { ...ck.metadata, finalizers: finalizers.filter((f) => f !== FINALIZER_COCOONCHECKPOINT) },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    checkpointsTotal.inc({ namespace, cocoonset: ck.spec.cocoonSetRef.name, transition: "deleted" });
    this.event(ck, "Normal", REASON_TAGS_DELETED, `deleted ${deleted} ${tag} tags`);
    return {};
  }

  /** The namespace's sets, pools and restores on the API server: who may still need a checkpoint. */
  private async needersOnServer(namespace: string): Promise<CheckpointNeeders> {
    const { client } = this.deps;
    const [sets, pools, restores] = await Promise.all([
      client.list<CocoonSet>(COCOONSETS, namespace),
      itemsOrNone(() => client.list<CocoonPool>(COCOONPOOLS, namespace)),
      itemsOrNone(() => client.list<CocoonRestore>(COCOONRESTORES, namespace)),
    ]);
    return { sets: sets.items, pools, restores };
  }

  /** The Deleting condition; true when it changed (and was written). */
  private async writeDeleting(
    ck: CocoonCheckpoint,
    reason: Parameters<typeof deletingCondition>[1],
    message: string,
  ): Promise<boolean> {
    const generation = ck.metadata.generation ?? 0;
    const conditions = deletingCondition(
      ck.status?.conditions ?? [],
      reason,
      message,
      generation,
      this.deps.clock.now(),
    );
    const status: CocoonCheckpointStatus = { ...ck.status, conditions };
    return (await this.patchStatus(ck, status)) !== ck;
  }

  /**
   * Patches /status to `next` when it differs, with the Ready and Progressing conditions of its
   * phase (`retrying`: the last copy failed); returns the checkpoint as it now is.
   */
  private async writeStatus(
    ck: CocoonCheckpoint,
    next: CocoonCheckpointStatus,
    retrying = false,
    guarded = false,
  ): Promise<CocoonCheckpoint> {
    const generation = ck.metadata.generation ?? 0;
    const phase: CheckpointPhase = next.phase ?? "Pending";
    const conditions = phaseConditions(
      next.conditions ?? ck.status?.conditions ?? [],
      phase,
      next.message ?? "",
      generation,
      this.deps.clock.now(),
      retrying,
    );
    return this.patchStatus(ck, { ...next, observedGeneration: generation, conditions }, guarded);
  }

  private async patchStatus(
    ck: CocoonCheckpoint,
    status: CocoonCheckpointStatus,
    guarded = false,
  ): Promise<CocoonCheckpoint> {
    if (isDeepStrictEqual(ck.status ?? {}, status)) return ck;
    const { namespace, name } = names(ck);
    const patch = { status: statusMergePatch(ck.status, status) };
    const updated = await this.deps.client.patch<CocoonCheckpoint>(
      COCOONCHECKPOINTS,
      namespace,
      name,
      guarded ? { metadata: { resourceVersion: ck.metadata.resourceVersion }, ...patch } : patch,
      { subresource: "status" },
    );
    return { ...ck, ...updated, status: updated.status ?? status };
  }

  private event(ck: CocoonCheckpoint, type: EventType, reason: string, message: string): void {
    this.deps.events.event(
      { ...ck, apiVersion: API_VERSION_V1ALPHA1, kind: KIND_COCOONCHECKPOINT },
      type,
      reason,
      message,
    );
  }
}

/** The items a list returns; none where the kind is not served or permitted. */
async function itemsOrNone<T>(list: () => Promise<{ items: T[] }>): Promise<T[]> {
  try {
    return (await list()).items;
  } catch (err) {
    if (isNotFound(err) || isForbidden(err)) return [];
    throw err;
  }
}

function isRetrying(ck: CocoonCheckpoint): boolean {
  return (
    ck.status?.conditions?.find((c) => c.type === CONDITION_PROGRESSING)?.reason ===
    CONDITION_REASON_COPY_FAILED
  );
}

function signalAborted(err: Error): boolean {
  return err.name === "AbortError";
}

function names(ck: CocoonCheckpoint): { namespace: string; name: string } {
  return { namespace: ck.metadata.namespace ?? "", name: ck.metadata.name ?? "" };
}
