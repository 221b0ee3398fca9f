// A suspended set whose spec was edited on a field its snapshots depend on (backend, OS, snapshot
// compatibility class): the pods the spec now builds could not restore them, and a rebuild would
// throw the state away. Such a set keeps its snapshots and waits, Failed, for the edit to be set back
// (docs/cocoonset.md, "Editing a suspended set"). The image is not among these fields: an image edit
// gives the snapshot up by the image rule. Pure: the steps do the writes.

import type { Pod } from "../../apis/core.ts";
import type { CocoonSet } from "../../apis/v1/types.ts";
import { LABEL_ROLE, LABEL_SLOT, ROLE_TOOLBOX } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { isPodFailed, podKey, readHibernateState, vmNameOf } from "../../contract/pod.ts";
import {
  describeMismatches,
  podRestoreDependencies,
  type RestoreDependency,
  type RestoreMismatch,
  restoreMismatches,
  specRestoreDependencies,
} from "../../contract/restoredeps.ts";
import type { Classification } from "../../pass/classify.ts";

export const REASON_SNAPSHOT_INCOMPATIBLE = "SnapshotIncompatible";

/** The fields an edit of a suspended set is held on; the image rule handles the image. */
const HELD_FIELDS: readonly RestoreDependency[] = ["backend", "os", "snapshotCompatibilityClass"];

export interface HeldSnapshot {
  pod: Pod;
  vmName: string;
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
    const fields = adopted ? HELD_FIELDS.filter((f) => f !== "snapshotCompatibilityClass") : HELD_FIELDS;
    const mismatches = restoreMismatches(taken, wanted, fields);
    if (mismatches.length > 0) held.push({ pod, vmName: vmNameOf(pod), mismatches });
  }
  return held.sort((a, b) => byteOrder(a.vmName, b.vmName));
}

/** The spec field a user sets back for this mismatch of this pod. */
function specPath(pod: Pod, field: RestoreDependency): string {
  if (field === "snapshotCompatibilityClass") return "spec.snapshotCompatibilityClass";
  const labels = pod.metadata.labels ?? {};
  return labels[LABEL_ROLE] === ROLE_TOOLBOX
    ? `spec.toolboxes[${labels[LABEL_SLOT] ?? ""}].${field}`
    : `spec.agent.${field}`;
}

/** What the snapshots were taken under, what the spec asks for, and what to set back to resume. */
export function heldSnapshotsMessage(held: readonly HeldSnapshot[]): string {
  const taken = held.map(
    (h) => `VM ${h.vmName} of pod ${podKey(h.pod)} was snapshotted under ${describeMismatches(h.mismatches)}`,
  );
  const reverts = new Set(
    held.flatMap((h) => h.mismatches.map((m) => `${specPath(h.pod, m.field)} back to ${m.taken || '""'}`)),
  );
  return `vk-cocoon cannot restore the snapshots as the spec now asks: ${taken.join("; ")}. The snapshots are kept: set ${[...reverts].join(", ")} and the set resumes with its state`;
}
