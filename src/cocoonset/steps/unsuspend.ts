// Step 10: spec.suspend=false wakes the pods and settles the reclaim record once, then, on every pass,
// drops the `:hibernate` tag of each recorded VM that runs again. A tag goes only once its VM is live
// and ready at the record's generation: until then a wake or a restore may still read it.

import type { Pod } from "../../apis/core.ts";
import { ANN_HIBERNATE, ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../contract/keys.ts";
import { sortByName } from "../../contract/order.ts";
import { readHibernateState, vmNameOf } from "../../contract/pod.ts";
import { presentVMNames } from "../../pass/classify.ts";
import { forEachLimited } from "../../pass/limit.ts";
import { CONTINUE, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { dropVMs } from "../../pass/reclaimrecord.ts";
import {
  FAN_OUT_LIMIT,
  keepOwnVMNames,
  patchPodFlag,
  persistReclaim,
  readPodFromServer,
  reclaimRecord,
} from "../../pass/writes.ts";
import { driftedPods } from "../decide/drift.ts";
import { hibernationOwnsPod } from "../decide/migrationplan.ts";
import {
  finishUnsuspend,
  needsUnsuspendBookkeeping,
  oweRestoresToMissing,
  stampUnsuspend,
  wokenRecordedVMs,
} from "../decide/reclaim.ts";
import { managedVMNames } from "../decide/suspendgate.ts";

export async function reconcileUnsuspend(pass: Pass): Promise<StepOutcome> {
  const clearedNow = await settleUnsuspend(pass);
  await dropWokenSnapshots(pass, clearedNow);
  return CONTINUE;
}

/**
 * The unsuspend bookkeeping, on a pass that finds the suspended list or a pod still carrying the
 * hibernate annotation; otherwise no call at all. Each write is durable before the next, so a restart
 * anywhere in between redoes the rest and never forgets a VM owed a restore:
 * 1. the record takes the set's generation (the tag-drop threshold) and the annotated pods' VMs;
 * 2. every suspended VM whose pod is missing, terminating or drifted (about to be rebuilt) is owed a
 *    restore;
 * 3. the hibernate annotations are cleared, so vk-cocoon wakes the VMs (concurrently: the spec orders
 *    the clears against the record writes, not against each other);
 * 4. the suspended list goes, last.
 * Also the routine step 7 runs to clear a refused hibernate before reporting a failed main.
 * Returns the pods whose annotation this pass cleared.
 */
export async function settleUnsuspend(pass: Pass): Promise<ReadonlySet<Pod>> {
  const annotated = sortByName(pass.pods.all.values()).filter((pod) => readHibernateState(pod));
  // A pod that drifted from the spec is not woken: steps 11–13 replace it, and its VM is owed a
  // restore like a missing pod's, so the replacement restores the snapshot unless the image rule
  // gives it up. Waking it would only start a wake the rebuild cuts short.
  const drifted = annotated.length > 0 ? driftedPods(pass.cs, pass.pods) : new Set<Pod>();
  // Decided after the CR-held pods are left out: a pass whose only annotated pods belong to a
  // CocoonHibernation (or will be rebuilt) has nothing to do, and must not even restamp the record's
  // generation.
  const candidates = annotated.filter((pod) => !drifted.has(pod));
  const toWake = candidates.length > 0 ? withoutHibernationTargets(pass, candidates) : [];
  if (!needsUnsuspendBookkeeping(reclaimRecord(pass), toWake.length)) return new Set();

  await persistReclaim(pass, stampUnsuspend(reclaimRecord(pass), pass.generation, managedVMNames(toWake)));
  const kept = presentVMNames(pass.pods);
  for (const pod of drifted) kept.delete(vmNameOf(pod));
  await persistReclaim(pass, oweRestoresToMissing(reclaimRecord(pass), kept));
  // The clears are one step of the order: all of them after the owed restores, all before the list goes.
  await forEachLimited(toWake, FAN_OUT_LIMIT, async (pod) => {
    await patchPodFlag(pass, pod, ANN_HIBERNATE, false);
  });
  await persistReclaim(pass, finishUnsuspend(reclaimRecord(pass)));
  return new Set(toWake);
}

/**
 * Pods a CocoonHibernation is hibernating (desire Hibernate, or still in phase Hibernating) keep their
 * annotation: clearing it would race the hibernation reconciler. The list is read only here, on a
 * pass that has an annotation to clear.
 */
function withoutHibernationTargets(pass: Pass, pods: Pod[]): Pod[] {
  const hibernations = pass.hibernationsInNamespace();
  return pods.filter((pod) => !hibernationOwnsPod(hibernations, pod.metadata.name ?? ""));
}

/**
 * Every pass: each recorded VM whose pod woke (no hibernate annotation, a live VM, lifecycle ready at
 * the record's generation or later) has its tag dropped, then leaves the record. The VMs are judged
 * and dropped together, each on its own: its pod read from the API server while the registry is
 * asked which manifest the tag names, then — only if the server's copy woke too — the tag's DELETE at
 * that digest. One record write then removes every VM whose drop succeeded, the annotation going with
 * the last; a tag already gone costs no DELETE. A refused delete (or read) keeps its VM recorded and
 * fails the pass after that write, so the rest of the pass, scaling and status included, does not
 * run, and the retry is left with only the VMs still owing a drop. A pod whose annotation this very
 * pass cleared is not judged until vk-cocoon has answered the clear: its cached state predates it, and
 * a VM still live under the annotation may be about to push a fresh snapshot to that tag.
 */
async function dropWokenSnapshots(pass: Pass, clearedNow: ReadonlySet<Pod>): Promise<void> {
  const registry = pass.deps.registry;
  if (!registry) return;
  const observed = [...pass.pods.all.values()].filter((pod) => !clearedNow.has(pod));
  const record = reclaimRecord(pass);
  const woken = wokenRecordedVMs(record, observed);
  if (woken.length === 0) return;
  // A recorded name that is not the set's own (a pod's vm-name edited to another set's VM) leaves the
  // record with a Warning, its tag untouched.
  const candidates = keepOwnVMNames(pass, woken, ANN_HIBERNATE_RECLAIM);
  const dropped: string[] = woken.filter((vm) => !candidates.includes(vm));
  let refused: { error: unknown } | undefined;
  try {
    await forEachLimited(candidates, FAN_OUT_LIMIT, async (vm) => {
      const cached = observed.find((pod) => vmNameOf(pod) === vm);
      if (!cached) return;
      // Irreversible: the pod must have woken as the API server holds it, not only as cached. The
      // probe runs beside that read, so the DELETE goes out one round trip sooner. Nothing is less
      // safe for it: a snapshot of the live VM needs a hibernate request written after that read saw
      // none, then vk-cocoon's snapshot and push, all before the DELETE lands, the window the
      // read-probe-delete order had too; where the delete goes by the probed digest (distribution),
      // such a push lands under a digest of its own and cannot be reached at all.
      const [fresh, seen] = await Promise.all([
        readPodFromServer(pass, cached),
        registry.headManifest(vm, TAG_HIBERNATE, pass.signal),
      ]);
      if (!fresh || !wokenRecordedVMs(record, [fresh]).includes(vm)) return;
      if (seen !== null) await registry.deleteTagAt(vm, TAG_HIBERNATE, seen.digest, pass.signal);
      dropped.push(vm);
    });
  } catch (error) {
    refused = { error };
  }
  await persistReclaim(pass, dropVMs(reclaimRecord(pass), dropped));
  if (refused) throw refused.error;
}
