// The completion gate of step 6, as far as it can be decided from the pods alone. A managed VM is
// hibernated for this suspend when vk-cocoon reports lifecycle `hibernated` at an observed generation
// ≥ the set's (vk writes both in one patch, so a stale `hibernated` from an earlier cycle or a lagging
// cache fails it) AND its `:hibernate` manifest is in the registry. The registry is asked only once
// every pod passes the pod-side checks, and not again for pods it already vouched for
// (src/pass/suspendconfirmations.ts).

import type { Pod } from "../../apis/core.ts";
import { ANN_MANAGED, LIFECYCLE_HIBERNATED, TRUE } from "../../contract/keys.ts";
import { readLifecycle } from "../../contract/lifecycle.ts";
import { sortByName } from "../../contract/order.ts";
import { isPodTerminal, vmNameOf } from "../../contract/pod.ts";

export type PodGate =
  /** Nothing to snapshot: an unmanaged pod (no VM lifecycle) or a Phase=Failed pod (no live VM). */
  | { readonly verdict: "skip" }
  | { readonly verdict: "wait"; readonly reason: string }
  /** The pod side passed: the `:hibernate` manifest of `vm` decides. */
  | { readonly verdict: "probe"; readonly vm: string };

/**
 * One pod against the gate. A pod that only reports lifecycle `failed` is waited on, not skipped:
 * its VM may still be live, and the 3-minute deadline surfaces it.
 */
export function gatePod(pod: Pod, generation: number): PodGate {
  if (pod.metadata.annotations?.[ANN_MANAGED] !== TRUE) return { verdict: "skip" };
  if (isPodTerminal(pod)) return { verdict: "skip" };
  const name = pod.metadata.name ?? "";
  const vm = vmNameOf(pod);
  if (!vm) return { verdict: "wait", reason: `pod ${name} has no VM name yet` };
  const lifecycle = readLifecycle(pod);
  if (lifecycle.state !== LIFECYCLE_HIBERNATED) {
    const detail = lifecycle.message ? ` (${lifecycle.message})` : "";
    return {
      verdict: "wait",
      reason: `pod ${name} lifecycle is ${JSON.stringify(lifecycle.state)}, not hibernated${detail}`,
    };
  }
  if (lifecycle.observedGeneration < generation) {
    return {
      verdict: "wait",
      reason: `pod ${name} hibernated at generation ${lifecycle.observedGeneration}, set is at ${generation}`,
    };
  }
  return { verdict: "probe", vm };
}

export interface GatePlan {
  /** The first pod-side reason the suspend is not complete; undefined when every pod passed. */
  waitingOn: string | undefined;
  /** VMs whose `:hibernate` manifest is probed, in pod-name order; only meaningful when not waiting. */
  probes: string[];
}

/** The gate over the owned pods; pods are taken in name order, as the probes are. */
export function planSuspendGate(pods: Iterable<Pod>, generation: number): GatePlan {
  const plan: GatePlan = { waitingOn: undefined, probes: [] };
  for (const pod of sortByName(pods)) {
    const gate = gatePod(pod, generation);
    if (gate.verdict === "wait") {
      plan.waitingOn ??= gate.reason;
    } else if (gate.verdict === "probe") {
      plan.probes.push(gate.vm);
    }
  }
  return plan;
}

/** The managed VMs of the owned pods, in pod-name order: what the reclaim record takes at suspend. */
export function managedVMNames(pods: Iterable<Pod>): string[] {
  const names: string[] = [];
  for (const pod of sortByName(pods)) {
    const vm = vmNameOf(pod);
    if (vm && pod.metadata.annotations?.[ANN_MANAGED] === TRUE) names.push(vm);
  }
  return names;
}
