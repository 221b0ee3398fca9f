// The CocoonCheckpoint reconciler. A checkpoint waits (Pending) until its set is Suspended
// at its current generation, fixes its member list (Copying), copies each member's `:hibernate`
// manifest to `<vm>:ckpt-<name>` in the same repository (a manifest PUT: the blobs are already there),
// and goes Ready. Deleting it deletes those tags, probe first; the finalizer stays until every one
// is gone. A Ready checkpoint is never copied again; its set's keep-checkpoints prunes older ones.

import { statusMergePatch } from "../apis/status.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import {
  API_VERSION_V1ALPHA1,
  type CheckpointMember,
  type CocoonCheckpoint,
  type CocoonCheckpointStatus,
  KIND_COCOONCHECKPOINT,
} from "../apis/v1alpha1/types.ts";
import { isDeepStrictEqual } from "../builtins.ts";
import type { Clock } from "../clock.ts";
import { TAG_HIBERNATE } from "../contract/keys.ts";
import type { Client } from "../controller/client.ts";
import { isNotFound, unlessNotFound } from "../controller/errors.ts";
import type { EventRecorder, EventType } from "../controller/events.ts";
import type { Reconciler, Request, Result } from "../controller/reconciler.ts";
import { COCOONCHECKPOINTS, COCOONSETS } from "../controller/resources.ts";
import type { Logger } from "../log.ts";
import { checkpointBytesTotal, checkpointDurationSeconds, checkpointsTotal } from "../metrics/checkpoint.ts";
import {
  BASE_IMAGE_ANNOTATION,
  type CheckpointRegistry,
  ManifestNotFoundError,
  referencedBytes,
} from "../registry/index.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import {
  ANN_KEEP_CHECKPOINTS,
  checkpointTag,
  FINALIZER_COCOONCHECKPOINT,
  REASON_COPYING,
  REASON_KEEP_INVALID,
  REASON_PRUNED,
  REASON_READY,
  REASON_TAG_DELETE_FAILED,
  REASON_TAGS_DELETED,
  REASON_WAITING,
} from "./keys.ts";
import { checkpointManifest } from "./manifest.ts";
import { memberRestoreDependencies, mergeMembers, setSlots } from "./members.ts";
import { checkpointsToPrune, parseKeepCheckpoints } from "./prune.ts";

/** A Suspended set without any snapshot (nothing will announce one) is looked at again after this. */
const NO_SNAPSHOT_RETRY_MS = 30_000;

/** Cached reads. */
export interface CheckpointView {
  getCheckpoint(namespace: string, name: string): CocoonCheckpoint | undefined;
  /** The cache's objects naming the set (read only). */
  checkpointsOfSet(namespace: string, setName: string): readonly CocoonCheckpoint[];
  getCocoonSet(namespace: string, name: string): CocoonSet | undefined;
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
      await this.prune(ck, false);
      return {};
    }

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
    if (!current || current.metadata.deletionTimestamp || current.status?.phase === "Ready") return {};
    return this.copy(current, cs, signal);
  }

  private async copy(ck: CocoonCheckpoint, cs: CocoonSet, signal: AbortSignal): Promise<Result> {
    const { namespace, name } = names(ck);
    const setName = cs.metadata.name ?? "";
    const slots = setSlots(cs);
    const startedAt = this.deps.clock.now();
    // The member list is durable before the first tag is written: a delete then knows every tag
    // that may exist, whatever happens to the copy.
    const planned = mergeMembers(ck.status?.members ?? [], slots);
    const copying = await this.writeStatus(ck, {
      phase: "Copying",
      message: `copying ${slots.length} snapshots of CocoonSet ${setName}`,
      members: planned,
    });
    this.event(ck, "Normal", REASON_COPYING, `copying the :hibernate snapshots of ${slots.length} VMs`);

    const tag = checkpointTag(name);
    const copied: CheckpointMember[] = [];
    const missing: string[] = [];
    for (const slot of slots) {
      let source: Awaited<ReturnType<CheckpointRegistry["getManifest"]>>;
      try {
        source = await this.deps.registry.getManifest(slot.vmName, TAG_HIBERNATE, signal);
      } catch (err) {
        if (!(err instanceof ManifestNotFoundError)) throw err;
        missing.push(slot.vmName);
        continue;
      }
      const raw = checkpointManifest(source.raw, namespace, name);
      const digest = await this.deps.registry.putManifest(slot.vmName, tag, raw, source.mediaType, signal);
      const annotations = source.manifest.annotations as Record<string, unknown> | undefined;
      const image = annotations?.[BASE_IMAGE_ANNOTATION];
      copied.push({
        ...slot,
        digest,
        image: typeof image === "string" ? image : "",
        ...memberRestoreDependencies(cs, slot),
        bytes: referencedBytes(source.manifest),
      });
    }
    if (copied.length === 0) {
      // No event of the set's announces a snapshot appearing: look again later.
      const message = `CocoonSet ${setName} is Suspended but no VM of it has a :hibernate snapshot`;
      await this.wait(copying, message);
      return { requeueAfterMs: NO_SNAPSHOT_RETRY_MS };
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
    if (moved) return this.wait(copying, `${moved}; copying again once it is Suspended`);

    const totalBytes = copied.reduce((sum, m) => sum + (m.bytes ?? 0), 0);
    // Members planned earlier but not copied now keep an entry without a digest, so a delete still
    // probes their tags; branches copy only members with one.
    const members: CheckpointMember[] = [
      ...copied,
      ...planned
        .filter((p) => !copied.some((m) => m.vmName === p.vmName))
        .map(({ role, slot, toolbox, vmName }) => ({
          role,
          vmName,
          ...(slot === undefined ? {} : { slot }),
          ...(toolbox === undefined ? {} : { toolbox }),
        })),
    ];
    const updated = await this.writeStatus(copying, {
      phase: "Ready",
      message:
        missing.length === 0
          ? `${copied.length} snapshots of CocoonSet ${setName}`
          : `${copied.length} snapshots of CocoonSet ${setName}; no :hibernate snapshot for ${missing.join(", ")}`,
      members,
      totalBytes,
      readyTime: formatRFC3339(this.deps.clock.now()),
    });
    const labels = { namespace, cocoonset: setName };
    checkpointDurationSeconds.observe(labels, (this.deps.clock.now() - startedAt) / 1000);
    checkpointBytesTotal.inc(labels, totalBytes);
    checkpointsTotal.inc({ ...labels, transition: "ready" });
    this.event(ck, "Normal", REASON_READY, `${copied.length} snapshots tagged ${tag}, ${totalBytes} bytes`);
    await this.prune(updated, true);
    return {};
  }

  /** Pending with a message; no call when the status already says so. */
  private async wait(ck: CocoonCheckpoint, message: string): Promise<Result> {
    const next: CocoonCheckpointStatus = { ...ck.status, phase: "Pending", message };
    if (await this.writeStatus(ck, next).then((u) => u !== ck)) {
      this.event(ck, "Normal", REASON_WAITING, message);
    }
    // The set's own events wake the checkpoint (setup.ts); nothing to poll.
    return {};
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
    // The cache may not show this checkpoint Ready yet: count it as this pass wrote it.
    const cached = this.deps.view
      .checkpointsOfSet(namespace, setName)
      .filter((c) => c.metadata.uid !== ck.metadata.uid);
    for (const old of checkpointsToPrune([...cached, ck], keep)) {
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
    const tag = checkpointTag(name);
    let deleted = 0;
    for (const member of ck.status?.members ?? []) {
      try {
        if (await this.deps.registry.deleteIfPresent(member.vmName, tag, signal)) deleted++;
      } catch (err) {
        this.event(
          ck,
          "Warning",
          REASON_TAG_DELETE_FAILED,
          `delete ${member.vmName}:${tag}: ${(err as Error).message}`,
        );
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

  /** Patches /status to `next` when it differs; returns the checkpoint as it now is. */
  private async writeStatus(ck: CocoonCheckpoint, next: CocoonCheckpointStatus): Promise<CocoonCheckpoint> {
    const status: CocoonCheckpointStatus = { ...next, observedGeneration: ck.metadata.generation ?? 0 };
    if (isDeepStrictEqual(ck.status ?? {}, status)) return ck;
    const { namespace, name } = names(ck);
    const updated = await this.deps.client.patch<CocoonCheckpoint>(
      COCOONCHECKPOINTS,
      namespace,
      name,
      { status: statusMergePatch(ck.status, status) },
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

function names(ck: CocoonCheckpoint): { namespace: string; name: string } {
  return { namespace: ck.metadata.namespace ?? "", name: ck.metadata.name ?? "" };
}
