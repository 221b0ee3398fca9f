// Read-only helpers over a pod's status, annotations and ownership, plus the merge-patch body shape
// every annotation write uses.

import type { Pod, Toleration } from "../apis/core.ts";
import type { OwnerReference } from "../apis/v1/types.ts";
import { DEFAULT_NODE_POOL } from "../apis/v1/types.ts";
import {
  ANN_HIBERNATE,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
  ANN_RESTORE_FROM_HIBERNATE,
  ANN_VM_ID,
  ANN_VM_NAME,
  KIND_COCOONSET,
  LABEL_NODE_POOL,
  LIFECYCLE_FAILED,
  TOLERATION_KEY,
  TRUE,
} from "./keys.ts";
import { readLifecycleState } from "./lifecycle.ts";

export type PodMeta = Pick<Pod, "metadata">;

function annotation(pod: PodMeta, key: string): string {
  return pod.metadata.annotations?.[key] ?? "";
}

/** A Ready condition with status True. */
export function isPodReady(pod: Pod): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/** Phase Failed only: Succeeded is not terminal for a VM-backed pod. */
export function isPodTerminal(pod: Pod): boolean {
  return pod.status?.phase === "Failed";
}

/**
 * Why a pod counts as failed for the operator: vk-cocoon's lifecycle `failed` (checked first) or
 * the kubelet's phase Failed; "" when neither.
 */
export function podFailedReason(pod: Pod): "PodLifecycleFailed" | "MainAgentFailed" | "" {
  if (readLifecycleState(pod) === LIFECYCLE_FAILED) return "PodLifecycleFailed";
  if (isPodTerminal(pod)) return "MainAgentFailed";
  return "";
}

/** Failed by either path of podFailedReason. */
export function isPodFailed(pod: Pod): boolean {
  return podFailedReason(pod) !== "";
}

/** Any container reported running. */
export function isContainerRunning(pod: Pod): boolean {
  return (pod.status?.containerStatuses ?? []).some((s) => s.state?.running != null);
}

/**
 * vk-cocoon assigned a VM ID and a container runs. Both are needed: the container can report
 * running for a moment before vk has pulled the snapshot.
 */
export function isVMLive(pod: Pod): boolean {
  return annotation(pod, ANN_VM_ID) !== "" && isContainerRunning(pod);
}

/** The scheduler's message when PodScheduled=False with reason Unschedulable; undefined otherwise. */
export function unschedulableMessage(pod: Pod): string | undefined {
  const condition = (pod.status?.conditions ?? []).find(
    (c) => c.type === "PodScheduled" && c.status === "False" && c.reason === "Unschedulable",
  );
  return condition?.message || undefined;
}

/** `<namespace>/<name>`. */
export function podKey(pod: PodMeta): string {
  return `${pod.metadata.namespace ?? ""}/${pod.metadata.name ?? ""}`;
}

/** First non-empty of nodeSelector, label and annotation `cocoonstack.io/pool`, else `default`. */
export function podNodePool(pod: Pod): string {
  return (
    pod.spec.nodeSelector?.[LABEL_NODE_POOL] ||
    pod.metadata.labels?.[LABEL_NODE_POOL] ||
    pod.metadata.annotations?.[LABEL_NODE_POOL] ||
    DEFAULT_NODE_POOL
  );
}

/** The VM name annotation, "" when absent. */
export function vmNameOf(pod: PodMeta): string {
  return annotation(pod, ANN_VM_NAME);
}

export function readHibernateState(pod: PodMeta): boolean {
  return annotation(pod, ANN_HIBERNATE) === TRUE;
}

export function readRestoreFromHibernate(pod: PodMeta): boolean {
  return annotation(pod, ANN_RESTORE_FROM_HIBERNATE) === TRUE;
}

export function readKeepSnapshotOnDelete(pod: PodMeta): boolean {
  return annotation(pod, ANN_KEEP_SNAPSHOT_ON_DELETE) === TRUE;
}

/** Only the key marks a cocoon pod; operator, value and effect are ignored. */
export function hasCocoonToleration(tolerations: readonly Toleration[] | undefined): boolean {
  return (tolerations ?? []).some((t) => t.key === TOLERATION_KEY);
}

/** Name of the first ownerReference of kind CocoonSet (no apiVersion, controller or uid check); "" if none. */
export function cocoonSetOwnerName(pod: PodMeta): string {
  return (pod.metadata.ownerReferences ?? []).find((ref) => ref.kind === KIND_COCOONSET)?.name ?? "";
}

/** The pod's controller ownerReference, as metav1.GetControllerOf. */
export function controllerOf(pod: PodMeta): OwnerReference | undefined {
  return (pod.metadata.ownerReferences ?? []).find((ref) => ref.controller === true);
}

/** metav1.IsControlledBy: the controller ownerReference carries the set's UID. */
export function isControlledBy(pod: PodMeta, set: { uid?: string }): boolean {
  const ref = controllerOf(pod);
  return ref !== undefined && set.uid !== undefined && ref.uid === set.uid;
}

/** `{"metadata":{"annotations":{…}}}` for a JSON merge patch; null deletes the key. */
export function annotationsMergePatch(annotations: Record<string, string | null>): {
  metadata: { annotations: Record<string, string | null> };
} {
  return { metadata: { annotations } };
}

/** The merge patch that requests hibernation (true) or a wake (false removes the key, never "false"). */
export function hibernateStatePatch(hibernate: boolean): {
  metadata: { annotations: Record<string, string | null> };
} {
  return annotationsMergePatch({ [ANN_HIBERNATE]: hibernate ? TRUE : null });
}
