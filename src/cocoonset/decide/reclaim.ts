// The reclaim record's transitions in steps 6 and 10 (the record itself and the transitions any
// step may make are in src/pass/reclaimrecord.ts): the suspend records every managed VM, the
// unsuspend owes restores to VMs whose pod went missing, and a woken VM's tag is dropped.

import type { Pod } from "../../apis/core.ts";
import { LIFECYCLE_READY } from "../../contract/keys.ts";
import { readLifecycle } from "../../contract/lifecycle.ts";
import { isVMLive, readHibernateState, vmNameOf } from "../../contract/pod.ts";
import { type ReclaimRecord, union } from "../../pass/reclaimrecord.ts";

/** Step 6: every managed VM of the owned pods joins the record and the suspended list. */
export function recordSuspend(record: ReclaimRecord, vms: Iterable<string>): ReclaimRecord {
  const list = [...vms];
  return { ...record, vms: union(record.vms, list), suspended: union(record.suspended, list) };
}

/**
 * Step 10 runs its bookkeeping when a suspended list exists or an owned pod still carries the
 * hibernate annotation; otherwise the pass makes no call for it.
 */
export function needsUnsuspendBookkeeping(record: ReclaimRecord, annotatedPodCount: number): boolean {
  return record.suspended.length > 0 || annotatedPodCount > 0;
}

/**
 * Step 10, first write: the record's generation becomes the set's, VMs of pods still carrying the
 * hibernate annotation are recorded (a set suspended by an older operator, an abandoned migration
 * quiesce), and every suspended VM whose pod is missing (deleted while suspended, or still
 * terminating) is owed a restore. `presentVMs` are the VM names of the classified (live, undeleted)
 * owned pods. VMs an earlier cycle recorded are not in the suspended list, so they are not owed one.
 */
export function beginUnsuspend(
  record: ReclaimRecord,
  generation: number,
  annotatedVMs: Iterable<string>,
  presentVMs: ReadonlySet<string>,
): ReclaimRecord {
  return oweRestoresToMissing(stampUnsuspend(record, generation, annotatedVMs), presentVMs);
}

/** beginUnsuspend's first half, its own write: the set's generation, and the annotated pods' VMs. */
export function stampUnsuspend(
  record: ReclaimRecord,
  generation: number,
  annotatedVMs: Iterable<string>,
): ReclaimRecord {
  return { ...record, generation, vms: union(record.vms, [...annotatedVMs]) };
}

/** beginUnsuspend's second half, its own write: suspended VMs without a present pod are owed a restore. */
export function oweRestoresToMissing(record: ReclaimRecord, presentVMs: ReadonlySet<string>): ReclaimRecord {
  const missing = record.suspended.filter((vm) => !presentVMs.has(vm));
  return { ...record, restore: union(record.restore, missing) };
}

/** Step 10, last write, after the hibernate annotations are cleared: the suspended list goes. */
export function finishUnsuspend(record: ReclaimRecord): ReclaimRecord {
  return { ...record, suspended: [] };
}

/**
 * Step 10: the recorded VMs whose pod has woken — no hibernate annotation, a live VM, and vk-cocoon
 * reporting ready at the record's generation or later — so their :hibernate tag can be dropped
 * (a later recreate then fresh-boots instead of restoring a stale snapshot). In record order.
 */
export function wokenRecordedVMs(record: ReclaimRecord, pods: Iterable<Pod>): string[] {
  const woken = new Set<string>();
  for (const pod of pods) {
    const lifecycle = readLifecycle(pod);
    if (
      !readHibernateState(pod) &&
      isVMLive(pod) &&
      lifecycle.state === LIFECYCLE_READY &&
      lifecycle.observedGeneration >= record.generation
    ) {
      woken.add(vmNameOf(pod));
    }
  }
  return record.vms.filter((vm) => woken.has(vm));
}
