// Step 9: a main released by a hibernatePolicy=release suspend is recreated from its snapshot. The
// writes follow the live state: Waking is durable before the restore pod is created (a crash between
// them resumes the wake instead of fresh-booting), and the snapshot is dropped only once the restored
// VM runs. It runs before step 11, whose restore intent would otherwise fresh-boot over the snapshot.

import type { Pod } from "../../apis/core.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_IMAGE,
  LABEL_ROLE,
  ROLE_MAIN,
  TAG_HIBERNATE,
} from "../../contract/keys.ts";
import {
  isPodFailed,
  isVMLive,
  readHibernateState,
  unschedulableMessage,
  vmNameOf,
} from "../../contract/pod.ts";
import { agentVMName } from "../../contract/vmname.ts";
import { isNotFound } from "../../controller/errors.ts";
import { PODS } from "../../controller/resources.ts";
import { slotReleaseWakeTotal, slotReleaseWakeUnschedulableTotal } from "../../metrics/cocoon.ts";
import {
  awaitCreated,
  CONTINUE,
  finish,
  type Pass,
  REQUEUE_POLL_MS,
  type StepOutcome,
} from "../../pass/pass.ts";
import { dropVM, encodeReclaim } from "../../pass/reclaimrecord.ts";
import {
  keepOwnVMNames,
  patchSetAnnotations,
  readPodFromServer,
  reclaimRecord,
  setEvent,
} from "../../pass/writes.ts";
import type { SnapshotRegistry } from "../../registry/index.ts";
import { createPod } from "../create.ts";
import { buildMainPod } from "../decide/pods.ts";
import { prepareSnapshotForCreate } from "../imagerule.ts";
import { mayDropWakeSnapshot, wakeEngagement, wakePlacement } from "../slotrelease.ts";
import { writeStatus } from "./status.ts";

export const REASON_WAKE_NO_CAPACITY = "WakeNoCapacity";

export async function reconcileWake(pass: Pass): Promise<StepOutcome> {
  const registry = pass.deps.registry;
  if (!registry) return CONTINUE;
  const main = pass.pods.main;
  const wake = wakeEngagement(pass.cs, main);
  if (!wake.engaged) return CONTINUE;
  if (!main) return startReleasedWake(pass, wake.hint);
  // A suspend withdrawn mid-wake can leave its hibernate request on the restore pod with the phase
  // still Waking (the operator stopped between step 6's annotation and its Suspending write). Once vk
  // has no VM left for it (the hibernate is done, or the restore not up yet), step 10 clears it;
  // otherwise the wake would wait forever on a main kept hibernated. While the VM still runs, the
  // hibernate may be pushing a fresh snapshot, so the wake waits as before.
  if (wake.waking && readHibernateState(main) && !isVMLive(main)) return CONTINUE;
  if (wake.waking) {
    return mayDropWakeSnapshot(main)
      ? completeWake(pass, registry, main, wake.hint)
      : awaitWakingMain(pass, main);
  }
  // Suspended, or Suspending with a hint, yet a main in the cache: a stale view of the released main
  // or a delete that never ran. Only an uncached read tells them apart.
  if (wake.hint !== "" && !isPodFailed(main)) return confirmReleasedDelete(pass, main);
  // A retained suspend's main, or a terminal main kept for triage: the normal flow owns these.
  return CONTINUE;
}

/**
 * No main: restore it from the snapshot when one is left. The image rule's manifest read doubles as
 * the existence probe; a refused read fails the pass (falling through would fresh-boot over a real
 * snapshot). With nothing to restore the hint goes and step 11 boots the main fresh.
 */
async function startReleasedWake(pass: Pass, hint: string): Promise<StepOutcome> {
  if (pass.pods.terminating.some((pod) => pod.metadata.labels?.[LABEL_ROLE] === ROLE_MAIN)) {
    return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  }
  const fresh = buildMainPod(pass.cs, { wakeHintNode: hint });
  // The restore pod created by an earlier pass, not in the cache yet: no second read, no second create.
  if (pass.awaitingCreate(fresh.metadata.name ?? "")) return awaitCreated(pass);
  const snapshot = await prepareSnapshotForCreate(pass, {
    podName: fresh.metadata.name ?? "",
    vmName: vmNameOf(fresh),
    image: fresh.metadata.annotations?.[ANN_IMAGE] ?? "",
    role: ROLE_MAIN,
    wantRestore: true,
  });
  if (!snapshot.restore) {
    await patchSetAnnotations(pass, { [ANN_HIBERNATED_ON_NODE]: null });
    return CONTINUE;
  }
  await writeStatus(pass, "Waking");
  const outcome = await createPod(pass, buildMainPod(pass.cs, { restore: true, wakeHintNode: hint }));
  if (outcome === "created") {
    pass.deps.log.info(
      { cocoonset: `${pass.namespace}/${pass.name}`, preferredNode: hint },
      "wake: recreated the main from its snapshot",
    );
  }
  return finish({ requeueAfterMs: REQUEUE_POLL_MS });
}

/** Restore in flight. Unschedulable is the out-of-capacity signal: surfaced, and the wake keeps waiting. */
async function awaitWakingMain(pass: Pass, main: Pod): Promise<StepOutcome> {
  const message = unschedulableMessage(main);
  if (message !== undefined) {
    slotReleaseWakeUnschedulableTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
    setEvent(
      pass,
      "Warning",
      REASON_WAKE_NO_CAPACITY,
      `main pod ${main.metadata.name ?? ""} unschedulable: ${message}`,
    );
  }
  await writeStatus(pass, "Waking");
  return finish({ requeueAfterMs: REQUEUE_POLL_MS });
}

/**
 * The restored main runs: its snapshot goes (a later recreate then boots fresh), the landing is
 * scored once — the hint is the in-flight marker, so a re-entry without it never scores again — and
 * the rest of the pass runs, whose status replaces Waking.
 */
async function completeWake(
  pass: Pass,
  registry: SnapshotRegistry,
  main: Pod,
  hint: string,
): Promise<StepOutcome> {
  // The drop is irreversible: the woken main must run as the API server holds it, not only as cached.
  const fresh = await readPodFromServer(pass, main);
  if (!fresh || !mayDropWakeSnapshot(fresh)) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  // The name is the pod's annotation: a name that is not the set's own is left alone, with a Warning.
  const vm = vmNameOf(main) || agentVMName(pass.namespace, pass.name, 0);
  for (const own of keepOwnVMNames(pass, [vm], "the main pod's vm-name"))
    await registry.deleteIfPresent(own, TAG_HIBERNATE, pass.signal);
  if (hint !== "") {
    slotReleaseWakeTotal.inc({
      namespace: pass.namespace,
      cocoonset: pass.name,
      placement: wakePlacement(hint, main.spec.nodeName),
    });
  }
  // With the snapshot gone the VM leaves the record, as step 10 drops a woken VM, and with it what the
  // snapshot was taken under: a later pod of this VM boots fresh.
  await patchSetAnnotations(pass, {
    [ANN_HIBERNATED_ON_NODE]: null,
    [ANN_HIBERNATE_RECLAIM]: encodeReclaim(dropVM(reclaimRecord(pass), vm)),
  });
  // The wake hands the pass on: step 10's bookkeeping and step 14's status follow in this pass.
  return CONTINUE;
}

async function confirmReleasedDelete(pass: Pass, main: Pod): Promise<StepOutcome> {
  let live: Pod;
  try {
    live = await pass.deps.client.get<Pod>(PODS, pass.namespace, main.metadata.name ?? "");
  } catch (error) {
    if (isNotFound(error)) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
    throw error;
  }
  return live.metadata.deletionTimestamp ? finish({ requeueAfterMs: REQUEUE_POLL_MS }) : CONTINUE;
}
