// The completion gate of step 6 (behaviours.md items 24–26), as far as it can be decided from the
// pods alone. A managed VM is hibernated for this suspend when vk-cocoon reports lifecycle
// `hibernated` at an observed generation ≥ the set's (vk writes both in one patch, so a stale
// `hibernated` from an earlier cycle or a lagging cache fails it) AND its `:hibernate` manifest is in
// the registry. The registry is asked only once every pod passes the pod-side checks, and not again for
// pods it already vouched for (SuspendConfirmations).

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import { ANN_MANAGED, LIFECYCLE_HIBERNATED, TRUE } from "../contract/keys.ts";
import { readLifecycle } from "../contract/lifecycle.ts";
import { isPodTerminal, vmNameOf } from "../contract/pod.ts";

export type PodGate =
  /** Nothing to snapshot: an unmanaged pod (no VM lifecycle) or a Phase=Failed pod (no live VM). */
  | { readonly verdict: "skip" }
  | { readonly verdict: "wait"; readonly reason: string }
  /** The pod side passed: the `:hibernate` manifest of `vm` decides. */
  | { readonly verdict: "probe"; readonly vm: string };

/**
 * One pod against the gate. A pod that only reports lifecycle `failed` is waited on, not skipped
 * (decisions #5): its VM may still be live, and the 3-minute deadline surfaces it.
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

/**
 * The suspends the gate confirmed in this process: per set, what it saw when every `:hibernate`
 * manifest was in the registry and Suspended was written (gateFingerprint). A pass that sees the same
 * again — the same set at the same generation, the same pods unchanged — has nothing new to ask the
 * registry, so a settled Suspended set makes no registry call. A new or changed pod, a new
 * generation, or another set under the name is probed afresh; a restart starts empty and probes once.
 */
export class SuspendConfirmations {
  readonly #confirmed = new Map<string, string>();

  holds(setKey: string, fingerprint: string): boolean {
    return this.#confirmed.get(setKey) === fingerprint;
  }

  confirm(setKey: string, fingerprint: string): void {
    this.#confirmed.set(setKey, fingerprint);
  }

  forget(setKey: string): void {
    this.#confirmed.delete(setKey);
  }
}

/**
 * What the gate saw of a set: its uid and generation, and every owned pod's name, uid and
 * resourceVersion (any write to a pod, vk-cocoon's lifecycle reports included, changes it).
 */
export function gateFingerprint(cs: CocoonSet, pods: Iterable<Pod>): string {
  const seen = sortByName(pods).map(
    (pod) => `${pod.metadata.name}/${pod.metadata.uid}/${pod.metadata.resourceVersion}`,
  );
  return JSON.stringify([cs.metadata.uid, cs.metadata.generation, seen]);
}

export function sortByName(pods: Iterable<Pod>): Pod[] {
  return [...pods].sort((a, b) => byteOrder(a.metadata.name ?? "", b.metadata.name ?? ""));
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
