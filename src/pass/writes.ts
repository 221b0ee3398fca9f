// The writes steps share. Each is one awaited API call, so a write the spec orders ("each durable
// before the next") is persisted before the caller goes on, and each is skipped when the cache
// already shows the desired value, so a settled pass makes none.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet, CocoonSetStatus } from "../apis/v1/types.ts";
import { ANN_DELETE_VM_NAMES, ANN_HIBERNATE_RECLAIM, ANN_REBUILD_HISTORY, TRUE } from "../contract/keys.ts";
import { annotationsMergePatch } from "../contract/pod.ts";
import { partitionOwnVMNames, REASON_FOREIGN_VM_NAME_IGNORED } from "../contract/vmname.ts";
import { isConflict, isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONSETS, PODS } from "../controller/resources.ts";
import type { Pass } from "./pass.ts";
import { encodeReclaim, type ReclaimRecord, readReclaim } from "./reclaimrecord.ts";

type AnnotationChanges = Record<string, string | null>;

/**
 * Per-pod calls a step sends out together (writes the spec does not order among the pods, tag drops),
 * at most this many in flight: the spec's cap on concurrent pod creates, so a large set does not
 * burst the API server or the registry.
 */
export const FAN_OUT_LIMIT = 8;

function pendingChanges(
  current: Record<string, string> | undefined,
  changes: AnnotationChanges,
): AnnotationChanges {
  const pending: AnnotationChanges = {};
  for (const [key, value] of Object.entries(changes)) {
    const existing = current?.[key];
    if (value === null ? existing !== undefined : existing !== value) pending[key] = value;
  }
  return pending;
}

/**
 * Annotations a pass rewrites whole from the value it read (a record, a list, a history). Their write
 * carries the resourceVersion the value was read at: over a cache behind the server's last write it
 * fails with a conflict (the pass is retried on a fresher read) instead of putting an older value
 * back, which would forget a VM owed a restore or a drop, or a VM teardown must collect.
 */
const WHOLE_VALUE_ANNOTATIONS: ReadonlySet<string> = new Set([
  ANN_HIBERNATE_RECLAIM,
  ANN_DELETE_VM_NAMES,
  ANN_REBUILD_HISTORY,
]);

/**
 * Merge-patches annotations on the set (null deletes) and keeps pass.cs in step with what was
 * written, so later steps of the same pass read their own writes. No call when nothing changes.
 */
export async function patchSetAnnotations(pass: Pass, changes: AnnotationChanges): Promise<boolean> {
  const pending = pendingChanges(pass.cs.metadata.annotations, changes);
  if (Object.keys(pending).length === 0) return false;
  const patch = annotationsMergePatch(pending);
  const guarded = Object.keys(pending).some((key) => WHOLE_VALUE_ANNOTATIONS.has(key));
  const updated = await pass.deps.client.patch<CocoonSet>(
    COCOONSETS,
    pass.namespace,
    pass.name,
    guarded ? { metadata: { ...patch.metadata, resourceVersion: pass.cs.metadata.resourceVersion } } : patch,
  );
  pass.cs.metadata.annotations = updated.metadata.annotations ?? {};
  // A later Update of the set in the same pass (finalizer removal) must carry the new version.
  pass.cs.metadata.resourceVersion = updated.metadata.resourceVersion;
  return true;
}

/**
 * Merge-patches the set's /status and keeps pass.cs in step with what the server returned (`written`
 * stands in for a reply without a status). Callers patch only what differs: a settled pass writes none.
 */
export async function patchSetStatus(
  pass: Pass,
  statusPatch: Record<string, unknown>,
  written?: CocoonSetStatus,
): Promise<void> {
  const updated = await pass.deps.client.patch<CocoonSet>(
    COCOONSETS,
    pass.namespace,
    pass.name,
    { status: statusPatch },
    { subresource: "status" },
  );
  const status = updated.status ?? written;
  if (status) pass.cs.status = status;
  pass.cs.metadata.resourceVersion = updated.metadata.resourceVersion;
}

/** Merge-patches annotations on a pod; no call when the cached pod already has them. */
export async function patchPodAnnotations(
  pass: Pass,
  pod: Pod,
  changes: AnnotationChanges,
): Promise<boolean> {
  const pending = pendingChanges(pod.metadata.annotations, changes);
  if (Object.keys(pending).length === 0) return false;
  await pass.deps.client.patch<Pod>(
    PODS,
    pass.namespace,
    pod.metadata.name ?? "",
    annotationsMergePatch(pending),
  );
  const annotations = { ...(pod.metadata.annotations ?? {}) };
  for (const [key, value] of Object.entries(pending)) {
    if (value === null) delete annotations[key];
    else annotations[key] = value;
  }
  pod.metadata.annotations = annotations;
  return true;
}

/** Sets a boolean pod flag ("true" or absent, never "false"). */
export function patchPodFlag(pass: Pass, pod: Pod, key: string, on: boolean): Promise<boolean> {
  return patchPodAnnotations(pass, pod, { [key]: on ? TRUE : null });
}

/**
 * Deletes the pod only as the API server held it when `fresh` was read (uid and resourceVersion as
 * preconditions): a pod bound, woken or replaced since is not deleted, and false says so. A check on
 * the server's pod licenses a delete of that pod, not of what it became after the read.
 */
export async function deletePodAsRead(pass: Pass, fresh: Pod): Promise<boolean> {
  try {
    await pass.deps.client.delete(PODS, pass.namespace, fresh.metadata.name ?? "", {
      preconditions: { uid: fresh.metadata.uid ?? "", resourceVersion: fresh.metadata.resourceVersion ?? "" },
    });
    return true;
  } catch (error) {
    if (isNotFound(error)) return true;
    if (isConflict(error)) return false;
    throw error;
  }
}

/**
 * Sets a boolean pod flag only on the pod as read at `fresh` (its resourceVersion in the patch): the
 * pod as patched, for a delete that follows; undefined when the pod changed since the read.
 */
export async function patchPodFlagAsRead(
  pass: Pass,
  fresh: Pod,
  key: string,
  on: boolean,
): Promise<Pod | undefined> {
  try {
    return await pass.deps.client.patch<Pod>(PODS, pass.namespace, fresh.metadata.name ?? "", {
      metadata: { resourceVersion: fresh.metadata.resourceVersion, annotations: { [key]: on ? TRUE : null } },
    });
  } catch (error) {
    if (isConflict(error) || isNotFound(error)) return undefined;
    throw error;
  }
}

/** Deletes a pod; a pod already gone is not an error. */
export async function deletePod(pass: Pass, pod: Pod): Promise<void> {
  try {
    await pass.deps.client.delete(PODS, pass.namespace, pod.metadata.name ?? "");
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
}

/**
 * The pod as the API server holds it now, or undefined when it is gone or replaced (another uid).
 * An irreversible step (dropping a snapshot tag) re-checks its safety predicate on this: the cache
 * may predate this controller's own latest write, such as the hibernate request of a quiesce.
 */
export async function readPodFromServer(pass: Pass, cached: Pod): Promise<Pod | undefined> {
  const fresh = await unlessNotFound(() =>
    pass.deps.client.get<Pod>(PODS, pass.namespace, cached.metadata.name ?? ""),
  );
  return fresh?.metadata.uid === cached.metadata.uid ? fresh : undefined;
}

/** The set's reclaim record; an unreadable annotation reads as empty, with a warning. */
export function reclaimRecord(pass: Pass): ReclaimRecord {
  const decoded = readReclaim(pass.cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]);
  if (decoded.warning) pass.deps.log.warn({ cocoonset: `${pass.namespace}/${pass.name}` }, decoded.warning);
  return decoded.value;
}

/** Persists the reclaim record (the annotation goes with its last VM); no call when unchanged. */
export function persistReclaim(pass: Pass, record: ReclaimRecord): Promise<boolean> {
  return patchSetAnnotations(pass, { [ANN_HIBERNATE_RECLAIM]: encodeReclaim(record) });
}

/** Emits an event on the set. */
export function setEvent(pass: Pass, type: "Normal" | "Warning", reason: string, message: string): void {
  pass.deps.events.event(pass.cs, type, reason, message);
}

/**
 * The names of `names` that are the set's own VMs (contract/vmname.ts), in their order. The rest are
 * named in one Warning saying where they were read (`source`); the caller deletes none of their tags.
 */
export function keepOwnVMNames(pass: Pass, names: readonly string[], source: string): string[] {
  const { own, foreign } = partitionOwnVMNames(pass.namespace, pass.name, names);
  if (foreign.length > 0) {
    setEvent(
      pass,
      "Warning",
      REASON_FOREIGN_VM_NAME_IGNORED,
      `${source} names VMs that are not this set's (vk-${pass.namespace}-${pass.name}-<member>, a valid repository name); none of their tags is deleted: ${foreign.join(", ")}`,
    );
  }
  return own;
}
