// The lifecycle triple vk-cocoon writes and the generation stamp the operator writes. vk writes state
// and observed generation together, so "state X at generation ≥ G" is a skew-free completion signal
// for an operation requested at CocoonSet generation G.

import type { Pod } from "../apis/core.ts";
import { parseGoIntNumber } from "./goint.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  ANN_LIFECYCLE_STATE_MESSAGE,
  LIFECYCLE_FAILED,
  LIFECYCLE_HIBERNATED,
  LIFECYCLE_READY,
} from "./keys.ts";

export interface LifecycleStatus {
  /** creating | ready | hibernating | hibernated | failed, or "" when absent. */
  state: string;
  observedGeneration: number;
  message: string;
}

type PodMeta = Pick<Pod, "metadata">;

/** Missing or not a decimal int64 → 0. */
function readInt64(pod: PodMeta, key: string): number {
  return parseGoIntNumber(pod.metadata.annotations?.[key] ?? "", 64) ?? 0;
}

export function readLifecycle(pod: PodMeta): LifecycleStatus {
  return {
    state: readLifecycleState(pod),
    observedGeneration: readInt64(pod, ANN_LIFECYCLE_OBSERVED_GENERATION),
    message: pod.metadata.annotations?.[ANN_LIFECYCLE_STATE_MESSAGE] ?? "",
  };
}

export function readLifecycleState(pod: PodMeta): string {
  return pod.metadata.annotations?.[ANN_LIFECYCLE_STATE] ?? "";
}

/** The CocoonSet generation stamped on the pod; missing or corrupt → 0. */
export function readCocoonSetGeneration(pod: PodMeta): number {
  return readInt64(pod, ANN_COCOONSET_GENERATION);
}

/** The states a client waits for: ready, hibernated, failed. */
export function isTerminalLifecycle(state: string): boolean {
  return state === LIFECYCLE_READY || state === LIFECYCLE_HIBERNATED || state === LIFECYCLE_FAILED;
}

/** Annotations for a merge patch; an empty message becomes null so the patch deletes it. */
export function lifecycleAnnotations(status: LifecycleStatus): Record<string, string | null> {
  return {
    [ANN_LIFECYCLE_STATE]: status.state,
    [ANN_LIFECYCLE_OBSERVED_GENERATION]: String(status.observedGeneration),
    [ANN_LIFECYCLE_STATE_MESSAGE]: status.message === "" ? null : status.message,
  };
}

/** Sets the triple in place; an empty message removes the key. */
export function applyLifecycle(annotations: Record<string, string>, status: LifecycleStatus): void {
  annotations[ANN_LIFECYCLE_STATE] = status.state;
  annotations[ANN_LIFECYCLE_OBSERVED_GENERATION] = String(status.observedGeneration);
  if (status.message === "") delete annotations[ANN_LIFECYCLE_STATE_MESSAGE];
  else annotations[ANN_LIFECYCLE_STATE_MESSAGE] = status.message;
}
