// A suspended set whose spec was edited on a field its snapshots depend on (backend, OS, snapshot
// compatibility class): the pods the spec now builds could not restore them, and a rebuild would
// throw the state away. Such a set keeps its snapshots and waits, Failed, for the edit to be set back
// (docs/cocoonset.md, "Editing a suspended set"). What a snapshot was taken under is read from its
// hibernated pod or, once a release suspend deleted the pod, from the reclaim record. The image is
// not among these fields: an image edit gives the snapshot up by the image rule. Pure: the steps do
// the writes.

import type { CocoonSet } from "../../apis/v1/types.ts";
import { LABEL_ROLE, LABEL_SLOT, ROLE_MAIN, ROLE_SUB_AGENT, ROLE_TOOLBOX } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { isPodFailed, podKey, readHibernateState, vmNameOf } from "../../contract/pod.ts";
import {
  describeMismatches,
  podRestoreDependencies,
  type RestoreDependencies,
  type RestoreDependency,
  type RestoreMismatch,
  restoreMismatches,
  type SetPlace,
  specRestoreDependencies,
} from "../../contract/restoredeps.ts";
import { agentPodName, agentVMName, toolboxPodName, toolboxVMName } from "../../contract/vmname.ts";
import type { Classification } from "../../pass/classify.ts";
import type { ReclaimRecord, ReleasedDependencies } from "../../pass/reclaimrecord.ts";

export const REASON_SNAPSHOT_INCOMPATIBLE = "SnapshotIncompatible";

/** The fields an edit of a suspended set is held on; the image rule handles the image. */
const HELD_FIELDS: readonly RestoreDependency[] = ["backend", "os", "snapshotCompatibilityClass"];

export interface HeldSnapshot {
  vmName: string;
  /** `namespace/name` of the hibernated pod, or of the pod a released VM's wake would create. */
  podKey: string;
  place: SetPlace;
  mismatches: RestoreMismatch[];
}

/**
 * The hibernated (hibernate-annotated) pods the spec would rebuild under a value their snapshot
 * cannot be restored under. A pod with no class selector that has not failed is adopted under a new
 * class rather than rebuilt (drift.ts), so wakes where it slept: its class is not held.
 */
export function heldSnapshots(cs: CocoonSet, pods: Classification): HeldSnapshot[] {
  const held: HeldSnapshot[] = [];
  const replicas = cs.spec.agent.replicas ?? 0;
  for (const pod of pods.all.values()) {
    if (!readHibernateState(pod)) continue;
    const labels = pod.metadata.labels ?? {};
    const role = labels[LABEL_ROLE] ?? "";
    const place = role === ROLE_TOOLBOX ? { role, toolbox: labels[LABEL_SLOT] ?? "" } : { role };
    if (role !== ROLE_TOOLBOX && Number(labels[LABEL_SLOT] ?? 0) > replicas) continue;
    const wanted = specRestoreDependencies(cs, place);
    if (!wanted) continue;
    const taken = podRestoreDependencies(pod);
    const adopted = taken.snapshotCompatibilityClass === "" && !isPodFailed(pod);
    const mismatches = restoreMismatches(taken, wanted, heldFields(adopted));
    if (mismatches.length > 0) held.push({ vmName: vmNameOf(pod), podKey: podKey(pod), place, mismatches });
  }
  return held.sort((a, b) => byteOrder(a.vmName, b.vmName));
}

/**
 * The VMs a release suspend deleted the pods of, whose pod the spec would now build under a value
 * their snapshot cannot be restored under. What each snapshot was taken under is the reclaim record's
 * `releasedUnder`; a VM with nothing recorded there (a record of the Go operator or of an older
 * version) is not held. A VM whose pod is back, or still terminating, is the pod's to judge. A
 * snapshot taken by a pod that selected no class has no class to hold the spec to: the field is
 * immutable once set, so that edit could never be set back, and vk-cocoon restores it on any node
 * of the class its wake pod selects.
 */
export function heldReleasedSnapshots(
  cs: CocoonSet,
  pods: Classification,
  record: ReclaimRecord,
): HeldSnapshot[] {
  const released = record.releasedUnder ?? {};
  if (Object.keys(released).length === 0) return [];
  const present = new Set([...pods.all.values(), ...pods.terminating].map(vmNameOf));
  const held: HeldSnapshot[] = [];
  for (const { vmName, podName, place } of specPlaces(cs)) {
    const recorded = released[vmName];
    if (!recorded || present.has(vmName)) continue;
    const wanted = specRestoreDependencies(cs, place);
    if (!wanted) continue;
    const taken = takenUnder(recorded, wanted);
    const mismatches = restoreMismatches(taken, wanted, heldFields(taken.snapshotCompatibilityClass === ""));
    if (mismatches.length > 0) {
      held.push({ vmName, podKey: `${cs.metadata.namespace ?? ""}/${podName}`, place, mismatches });
    }
  }
  return held.sort((a, b) => byteOrder(a.vmName, b.vmName));
}

function heldFields(classless: boolean): readonly RestoreDependency[] {
  return classless ? HELD_FIELDS.filter((f) => f !== "snapshotCompatibilityClass") : HELD_FIELDS;
}

/** The recorded values, with the image the spec asks for (the image rule, not the hold, judges it). */
function takenUnder(recorded: ReleasedDependencies, wanted: RestoreDependencies): RestoreDependencies {
  return { image: wanted.image, ...recorded };
}

/** Every pod the spec builds: its VM, its pod name and its place. */
function specPlaces(cs: CocoonSet): { vmName: string; podName: string; place: SetPlace }[] {
  const namespace = cs.metadata.namespace ?? "";
  const name = cs.metadata.name ?? "";
  const places = [];
  for (let slot = 0; slot <= (cs.spec.agent.replicas ?? 0); slot++) {
    places.push({
      vmName: agentVMName(namespace, name, slot),
      podName: agentPodName(name, slot),
      place: { role: slot === 0 ? ROLE_MAIN : ROLE_SUB_AGENT },
    });
  }
  for (const toolbox of cs.spec.toolboxes ?? []) {
    places.push({
      vmName: toolboxVMName(namespace, name, toolbox.name),
      podName: toolboxPodName(name, toolbox.name),
      place: { role: ROLE_TOOLBOX, toolbox: toolbox.name },
    });
  }
  return places;
}

/** The spec field a user sets back for this mismatch at this place. */
function specPath(place: SetPlace, field: RestoreDependency): string {
  if (field === "snapshotCompatibilityClass") return "spec.snapshotCompatibilityClass";
  return place.role === ROLE_TOOLBOX
    ? `spec.toolboxes[${place.toolbox ?? ""}].${field}`
    : `spec.agent.${field}`;
}

/** What the snapshots were taken under, what the spec asks for, and what to set back to resume. */
export function heldSnapshotsMessage(held: readonly HeldSnapshot[]): string {
  const taken = held.map(
    (h) => `VM ${h.vmName} of pod ${h.podKey} was snapshotted under ${describeMismatches(h.mismatches)}`,
  );
  const reverts = new Set(
    held.flatMap((h) => h.mismatches.map((m) => `${specPath(h.place, m.field)} back to ${m.taken || '""'}`)),
  );
  return `vk-cocoon cannot restore the snapshots as the spec now asks: ${taken.join("; ")}. The snapshots are kept: set ${[...reverts].join(", ")} and the set resumes with its state`;
}
