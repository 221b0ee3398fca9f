// The pod statuses vk-cocoon publishes through virtual-kubelet, as /status
// merge patches: null removes a field.

import type { Pod } from "../../../src/apis/core.ts";
import type { StatusPatch } from "./podapi.ts";

export interface RunningFacts {
  vmIP: string;
  /** When the VM started: the container's running.startedAt. */
  startedAt: string;
  hostIP: string;
  startTime: string;
  ready: boolean;
  now: string;
}

/** VM tracked: Running, podIP, the placeholder container running; Ready as the probe and intent say. */
export function runningStatus(pod: Pod, facts: RunningFacts): StatusPatch {
  const readiness = facts.ready ? "True" : "False";
  const container = pod.spec.containers[0];
  return {
    phase: "Running",
    reason: null,
    message: null,
    startTime: facts.startTime,
    hostIP: facts.hostIP,
    hostIPs: [{ ip: facts.hostIP }],
    podIP: facts.vmIP,
    podIPs: [{ ip: facts.vmIP }],
    conditions: [
      { type: "PodScheduled", status: "True", lastTransitionTime: facts.now },
      { type: "PodReadyToStartContainers", status: "True", lastTransitionTime: facts.now },
      { type: "Initialized", status: "True", lastTransitionTime: facts.now },
      { type: "ContainersReady", status: readiness, lastTransitionTime: facts.now },
      { type: "Ready", status: readiness, lastTransitionTime: facts.now },
    ],
    containerStatuses: [
      {
        name: container?.name ?? "agent",
        image: container?.image ?? "",
        imageID: "",
        ready: facts.ready,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: facts.startedAt } },
      },
    ],
  };
}

/** No VM tracked (hibernated): Pending with only startTime, so neither Ready nor a running container shows. */
export function pendingStatus(startTime: string): StatusPatch {
  return {
    phase: "Pending",
    reason: null,
    message: null,
    startTime,
    conditions: null,
    containerStatuses: null,
    podIP: null,
    podIPs: null,
  };
}

/** DeletePod succeeded: the terminal status virtual-kubelet writes before the grace-0 delete. */
export function succeededStatus(pod: Pod, now: string): StatusPatch {
  return terminalStatus(pod, "Succeeded", { exitCode: 0, reason: "Completed" }, now);
}

/**
 * vk-cocoon's eviction notify: phase Failed, the agent container terminated with exit code 1 and the
 * eviction reason; Ready goes False with it.
 */
export function evictedStatus(pod: Pod, reason: string, message: string, now: string): StatusPatch {
  return terminalStatus(pod, "Failed", { exitCode: 1, reason, message }, now);
}

function terminalStatus(
  pod: Pod,
  phase: "Succeeded" | "Failed",
  terminated: { exitCode: number; reason: string; message?: string },
  now: string,
): StatusPatch {
  const container = pod.spec.containers[0];
  return {
    phase,
    reason: null,
    message: null,
    conditions: [
      { type: "PodScheduled", status: "True", lastTransitionTime: now },
      { type: "Initialized", status: "True", lastTransitionTime: now },
      { type: "ContainersReady", status: "False", lastTransitionTime: now },
      { type: "Ready", status: "False", lastTransitionTime: now },
    ],
    containerStatuses: [
      {
        name: container?.name ?? "agent",
        image: container?.image ?? "",
        imageID: "",
        ready: false,
        started: false,
        restartCount: 0,
        state: { terminated: { ...terminated, finishedAt: now } },
      },
    ],
  };
}

export function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");
}
