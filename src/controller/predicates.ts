// Generic event predicates. They read only standard object metadata and status, so they serve any
// resource with that shape.
import { isDeepStrictEqual } from "../builtins.ts";
import type { Predicate } from "./controller.ts";

interface ObjectWithStatus {
  metadata: { generation?: number };
  status?: unknown;
}

/**
 * Passes creates, deletes, and updates that bring a new generation (a spec edit) or a changed
 * status; an update touching only metadata (e.g. an annotation patch) is dropped.
 */
export const generationChangedOrStatusChanged: Predicate<ObjectWithStatus> = {
  update: (oldObj, newObj) =>
    oldObj.metadata.generation !== newObj.metadata.generation ||
    !isDeepStrictEqual(oldObj.status, newObj.status),
};

interface PodLike {
  metadata: {
    deletionTimestamp?: string | null;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string }[];
  };
}

/**
 * Passes creates, deletes, and updates where the pod started terminating, changed phase, flipped
 * readiness, or had its labels or annotations changed. Other status churn (probe times, container
 * restarts, IPs) is dropped.
 */
export const podRelevantChange: Predicate<PodLike> = {
  update: (oldPod, newPod) =>
    (oldPod.metadata.deletionTimestamp == null && newPod.metadata.deletionTimestamp != null) ||
    oldPod.status?.phase !== newPod.status?.phase ||
    podReady(oldPod) !== podReady(newPod) ||
    !isDeepStrictEqual(oldPod.metadata.labels ?? {}, newPod.metadata.labels ?? {}) ||
    !isDeepStrictEqual(oldPod.metadata.annotations ?? {}, newPod.metadata.annotations ?? {}),
};

function podReady(pod: PodLike): boolean {
  return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}
