// What a hibernate or wake pass should do, decided from the CR, the pod and (for hibernate) the
// registry probe, without touching the API or the registry (docs/hibernation.md, steps 6–8).

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation, HibernationDesire } from "../apis/v1/types.ts";
import { HIBERNATION_DESIRES, isValid } from "../apis/v1/types.ts";
import { LIFECYCLE_HIBERNATED, LIFECYCLE_READY } from "../contract/keys.ts";
import { readCocoonSetGeneration, readLifecycle } from "../contract/lifecycle.ts";
import { isVMLive } from "../contract/pod.ts";
import { HIBERNATE_TIMEOUT_MS, phaseDeadlineExceeded, WAKE_TIMEOUT_MS } from "./status.ts";

/**
 * The transition this pass drives. A reversed desire first finishes the running transition: the
 * previous round's tag and lifecycle annotations would otherwise read as the new round's
 * completion, since vk flips neither until its transition ends. undefined: the desire is unknown.
 */
export function transitionFor(ch: CocoonHibernation): HibernationDesire | undefined {
  const desire = ch.spec.desire;
  if (!isValid(HIBERNATION_DESIRES, desire)) return undefined;
  const phase = ch.status?.phase;
  if (desire === "Hibernate" && phase === "Waking") return "Wake";
  if (desire === "Wake" && phase === "Hibernating") return "Hibernate";
  return desire;
}

/**
 * A Wake CR that reached Active at its current generation is settled: its wake is over, and the
 * pod's hibernate annotation now belongs to whoever sets it next (the CocoonSet's suspend of step
 * 6, a migration's quiesce of step 8). Clearing it, or dropping the tag those push, would undo them
 * on every pod event; only a new generation of the CR (a changed desire) makes it act again.
 */
export function settledWake(ch: CocoonHibernation): boolean {
  const generation = ch.metadata.generation ?? 0;
  return (
    ch.spec.desire === "Wake" &&
    ch.status?.phase === "Active" &&
    ch.status.observedGeneration !== undefined &&
    ch.status.observedGeneration === generation
  );
}

/**
 * vk reports this round's hibernate done: lifecycle `hibernated` at an observed generation at least
 * the pod's own stamp. vk writes state and generation in one patch, so a hibernated@G from an
 * earlier round (or a lagging cache) cannot pass once the stamp moved on.
 */
export function hibernateReported(pod: Pod): boolean {
  const lifecycle = readLifecycle(pod);
  return (
    lifecycle.state === LIFECYCLE_HIBERNATED && lifecycle.observedGeneration >= readCocoonSetGeneration(pod)
  );
}

/**
 * The woken VM runs: a running container with a freshly written VM ID (vk deletes the ID at wake
 * start and rewrites it after the clone), and vk reports `ready` at the pod's current generation.
 */
export function wakeReported(pod: Pod): boolean {
  const lifecycle = readLifecycle(pod);
  return (
    isVMLive(pod) &&
    lifecycle.state === LIFECYCLE_READY &&
    lifecycle.observedGeneration >= readCocoonSetGeneration(pod)
  );
}

/** The registry's answer about `<vm>:hibernate`, when it was asked. */
export type TagProbe = { present: boolean } | { error: unknown };

export type HibernateOutcome =
  | { kind: "hibernated" }
  | { kind: "probe-error"; error: unknown }
  | { kind: "timed-out" }
  | { kind: "waiting" };

/**
 * The snapshot must be in the registry before Hibernated. A probe error is returned for backoff
 * only while the deadline holds: a registry that keeps failing must still end in Failed, or the
 * phase would starve in Hibernating.
 */
export function decideHibernate(
  ch: CocoonHibernation,
  probe: TagProbe | undefined,
  nowMs: number,
): HibernateOutcome {
  const expired = phaseDeadlineExceeded(ch, "Hibernating", HIBERNATE_TIMEOUT_MS, nowMs);
  if (probe !== undefined && "error" in probe) {
    if (!expired) return { kind: "probe-error", error: probe.error };
  } else if (probe?.present) {
    return { kind: "hibernated" };
  }
  return expired ? { kind: "timed-out" } : { kind: "waiting" };
}

export type WakeOutcome = { kind: "active" } | { kind: "timed-out" } | { kind: "waiting" };

export function decideWake(ch: CocoonHibernation, pod: Pod, nowMs: number): WakeOutcome {
  if (wakeReported(pod)) return { kind: "active" };
  if (phaseDeadlineExceeded(ch, "Waking", WAKE_TIMEOUT_MS, nowMs)) return { kind: "timed-out" };
  return { kind: "waiting" };
}

/**
 * Another live CR (a different UID, not being deleted) still tracks the VM of the CR being deleted,
 * by status.vmName or by podRef (a fresh duplicate holds the VM before its first pass writes
 * status.vmName). The last holder drops the shared tag; dropping it earlier would strand the
 * survivors on a Hibernated whose snapshot is gone.
 */
export function vmHeldByAnother(
  deleting: CocoonHibernation,
  inNamespace: readonly CocoonHibernation[],
): boolean {
  const vmName = deleting.status?.vmName ?? "";
  const podName = deleting.spec?.podRef?.name ?? "";
  return inNamespace.some(
    (other) =>
      other.metadata.uid !== deleting.metadata.uid &&
      !other.metadata.deletionTimestamp &&
      ((vmName !== "" && other.status?.vmName === vmName) ||
        (podName !== "" && other.spec?.podRef?.name === podName)),
  );
}
