// hibernatePolicy=release: once the suspend gate has confirmed every snapshot, the pods are deleted
// so their scheduling seats free (step 6), and the wake of step 9 recreates the main from its
// snapshot, preferring the node it hibernated on. The predicates here state when a pod may die and
// when a snapshot may go; the steps call nothing destructive without them.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
} from "../contract/keys.ts";
import { sortByName } from "../contract/order.ts";
import {
  isPodFailed,
  isVMLive,
  readHibernateState,
  readRestoreFromHibernate,
  vmNameOf,
} from "../contract/pod.ts";
import { podRestoreDependencies } from "../contract/restoredeps.ts";
import { slotReleasePodsDeletedTotal } from "../metrics/cocoon.ts";
import type { Pass } from "../pass/pass.ts";
import { encodeReclaim, type ReleasedDependencies, recordReleased } from "../pass/reclaimrecord.ts";
import {
  deletePodAsRead,
  patchPodFlagAsRead,
  patchSetAnnotations,
  readPodFromServer,
  reclaimRecord,
} from "../pass/writes.ts";
import { gatePod } from "./decide/suspendgate.ts";
import { stashVMNames } from "./deletepods.ts";

/**
 * A pod may give up its seat only once the gate saw its VM's `:hibernate` manifest in the registry
 * (`snapshotted`), so its live state survives the delete. A terminal pod has no VM state and is kept
 * for triage after unsuspend.
 */
export function mayReleaseSeat(pod: Pod, snapshotted: ReadonlySet<string>): boolean {
  return !isPodFailed(pod) && snapshotted.has(vmNameOf(pod));
}

/**
 * The release after the gate: stash the VM names for teardown's GC and the main's node as the wake
 * hint, both before the first delete, then flag and delete each releasable pod in name order.
 * Returns false when a pod was kept because the API server no longer shows it hibernated.
 */
export async function releaseSeats(pass: Pass, snapshotted: ReadonlySet<string>): Promise<boolean> {
  const pods = sortByName(pass.pods.all.values());
  await stashVMNames(pass, pods);
  // One write: the wake hint, and in the reclaim record what each snapshot was taken under — once
  // the pod is gone nothing else says so, and the wake pod is held to it (step 6, between 6 and 7).
  const mainNode = pass.pods.main?.spec.nodeName;
  const record = recordReleased(reclaimRecord(pass), releasedUnder(pods, snapshotted));
  await patchSetAnnotations(pass, {
    ...(mainNode ? { [ANN_HIBERNATED_ON_NODE]: mainNode } : {}),
    [ANN_HIBERNATE_RECLAIM]: encodeReclaim(record),
  });

  let released = true;
  for (const pod of pods) {
    if (!mayReleaseSeat(pod, snapshotted)) continue;
    // The delete is irreversible: the gate read the cache, which may show a hibernate of an earlier
    // round while the server's pod has woken since. The pod must be hibernated as the server holds it.
    const fresh = await readPodFromServer(pass, pod);
    if (!fresh || gatePod(fresh, pass.generation).verdict !== "probe") {
      released = false;
      continue;
    }
    // The flag and the delete go to the pod as checked: one woken since is not deleted.
    const flagged = await flagKeepSnapshot(pass, fresh);
    if (flagged === undefined || !(await deletePodAsRead(pass, flagged))) {
      released = false;
      continue;
    }
    slotReleasePodsDeletedTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
    pass.deps.log.info(
      { cocoonset: `${pass.namespace}/${pass.name}`, pod: pod.metadata.name, node: pod.spec.nodeName },
      "slot release: deleted hibernated pod",
    );
  }
  return released;
}

/** What the snapshot of each pod about to give up its seat was taken under, by VM. */
export function releasedUnder(
  pods: readonly Pod[],
  snapshotted: ReadonlySet<string>,
): Record<string, ReleasedDependencies> {
  const out: Record<string, ReleasedDependencies> = {};
  for (const pod of pods) {
    if (!mayReleaseSeat(pod, snapshotted)) continue;
    const { backend, os, snapshotCompatibilityClass } = podRestoreDependencies(pod);
    out[vmNameOf(pod)] = { backend, os, snapshotCompatibilityClass };
  }
  return out;
}

/**
 * Best-effort: without the flag vk-cocoon drops the node-local snapshot and the wake pulls from the
 * registry instead; failing the release here would forfeit the seat the policy exists to free.
 */
async function flagKeepSnapshot(pass: Pass, fresh: Pod): Promise<Pod | undefined> {
  try {
    return await patchPodFlagAsRead(pass, fresh, ANN_KEEP_SNAPSHOT_ON_DELETE, true);
  } catch (error) {
    pass.deps.log.error(
      { cocoonset: `${pass.namespace}/${pass.name}`, pod: fresh.metadata.name, err: error },
      "slot release: keep-snapshot flag not set; the wake will pull from the registry",
    );
    return fresh;
  }
}

export interface WakeEngagement {
  /** The wake owns this pass's main handling. */
  engaged: boolean;
  /** A wake is in flight: phase Waking, or a restore-marked, non-hibernating main while the hint remains. */
  waking: boolean;
  /** The node the main hibernated on, "" when none is stashed. */
  hint: string;
}

/**
 * When step 9 engages: the set is Waking or Suspended, or Suspending with a hint (a fast unsuspend
 * that beat the Suspended write), or a restore-marked main that is not hibernating still carries the
 * hint (an unfinished wake whose Waking a stale status write overwrote), or the set is Failed with
 * the hint and no main (a wake held for an edit its snapshot cannot be restored under, now set back).
 * Gated on phase, not policy, so a policy edit while suspended never fresh-boots over the snapshot.
 */
export function wakeEngagement(cs: CocoonSet, main: Pod | undefined): WakeEngagement {
  const hint = cs.metadata.annotations?.[ANN_HIBERNATED_ON_NODE] ?? "";
  const phase = cs.status?.phase;
  const unfinishedWake =
    main !== undefined && readRestoreFromHibernate(main) && !readHibernateState(main) && hint !== "";
  const waking = phase === "Waking" || unfinishedWake;
  const heldWake = phase === "Failed" && hint !== "" && main === undefined;
  const engaged = waking || heldWake || phase === "Suspended" || (phase === "Suspending" && hint !== "");
  return { engaged, waking, hint };
}

/**
 * The woken main's snapshot may go only once its VM runs again (a VM ID and a running container) and
 * nothing asks it to hibernate: a main being hibernated anew may be pushing a fresh snapshot to the
 * same tag.
 */
export function mayDropWakeSnapshot(main: Pod): boolean {
  return isVMLive(main) && !readHibernateState(main);
}

/** The slot_release_wake_total placement label: back on the hinted node, or elsewhere in the pool. */
export function wakePlacement(hint: string, node: string | undefined): "hint-node" | "pool" {
  return node === hint ? "hint-node" : "pool";
}
