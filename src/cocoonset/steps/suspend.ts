// Step 6: spec.suspend=true hibernates every managed VM (and, with hibernatePolicy release, frees the
// seats). The suspend path owns the pass. Order matters for the VMs' live state: the reclaim record is
// durable before the first hibernate annotation (a restart mid-suspend still drops the tags later),
// and under release a pod dies only after the gate saw its snapshot in the registry.

import type { Pod } from "../../apis/core.ts";
import { DEFAULT_HIBERNATE_POLICY } from "../../apis/v1/types.ts";
import { ANN_HIBERNATE, ANN_SUSPENDING_SINCE, ROLE_MAIN, TAG_HIBERNATE } from "../../contract/keys.ts";
import { readLifecycleState } from "../../contract/lifecycle.ts";
import { sortByName } from "../../contract/order.ts";
import { readHibernateState } from "../../contract/pod.ts";
import { REASON_PRE_HIBERNATE_FAILED } from "../../guest/keys.ts";
import type { HibernateVerdict } from "../../guestgate.ts";
import {
  awaitCreated,
  CONTINUE,
  finish,
  type Pass,
  REQUEUE_POLL_MS,
  type StepOutcome,
} from "../../pass/pass.ts";
import { preHibernateGate } from "../../pass/prehibernate.ts";
import { gateFingerprint } from "../../pass/suspendconfirmations.ts";
import {
  patchPodFlag,
  patchSetAnnotations,
  persistReclaim,
  reclaimRecord,
  setEvent,
} from "../../pass/writes.ts";
import { createManagedPod } from "../create.ts";
import { heldSnapshots } from "../decide/heldsnapshots.ts";
import { buildMainPod } from "../decide/pods.ts";
import { recordSuspend } from "../decide/reclaim.ts";
import {
  checkSuspendDeadline,
  SUSPEND_TIMEOUT_MS,
  shouldClearSuspendingSince,
} from "../decide/suspenddeadline.ts";
import { managedVMNames, planSuspendGate } from "../decide/suspendgate.ts";
import { releaseSeats } from "../slotrelease.ts";
import { heldReleased, reportHeldSnapshots } from "./heldsnapshots.ts";
import { writeStatus } from "./status.ts";

export const REASON_SUSPEND_TIMED_OUT = "SuspendTimedOut";

export async function reconcileSuspend(pass: Pass): Promise<StepOutcome> {
  if (!pass.cs.spec.suspend) {
    pass.deps.suspendConfirmations?.forget(setKey(pass));
    return CONTINUE;
  }
  const release = (pass.cs.spec.hibernatePolicy || DEFAULT_HIBERNATE_POLICY) === "release";
  if (release) {
    if (!pass.deps.registry) {
      throw new Error(
        `hibernatePolicy=release on ${pass.namespace}/${pass.name} requires a configured registry`,
      );
    }
    // Seats already released, or suspended before the first boot: nothing left to snapshot — unless
    // a pod created by an earlier pass is not in the cache yet.
    if (pass.pods.all.size === 0) {
      if (pass.awaitingAnyCreate()) return awaitCreated(pass);
      if (await holdReleased(pass)) return finish();
      await settleSuspended(pass);
      return finish();
    }
  } else if (!pass.pods.main) {
    // A main a release suspend deleted (the policy edited since): not recreated under an edit its
    // snapshot cannot be restored under.
    if (await holdReleased(pass)) return finish();
    return createMainBeforeSuspend(pass);
  }

  // The group is quiesced before any VM of it is asked to hibernate: a failed pre-hibernate hook under
  // Fail leaves the set running, saying why, and nothing of it is snapshotted.
  const hooks = preHibernateGate(pass, toHibernate(pass));
  if (hooks.action !== "proceed") return holdForHooks(pass, hooks);

  await persistReclaim(pass, recordSuspend(reclaimRecord(pass), managedVMNames(pass.pods.all.values())));
  for (const pod of sortByName(pass.pods.all.values())) {
    // vk-cocoon acts on the hibernate annotation only in UpdatePod: a pod it first sees already
    // annotated is brought up by CreatePod and left running. So a pod vk has not reported on yet (no
    // lifecycle state: unscheduled, or not picked up) is annotated on the pass its report brings.
    if (readLifecycleState(pod) === "") continue;
    await patchPodFlag(pass, pod, ANN_HIBERNATE, true);
  }

  // Under release the gate licenses pod deletes: it always asks the registry.
  const gate = await runSuspendGate(pass, !release);
  if (!gate.confirmed) return stayOrTimeOut(pass, gate);
  // Every snapshot is in; one the spec could no longer restore is kept, and the set says so, before
  // any seat is released (the pods are what records what the snapshots were taken under).
  const held = heldSnapshots(pass.cs, pass.pods);
  if (held.length > 0) {
    await reportHeldSnapshots(pass, held);
    if (shouldClearSuspendingSince(pass.cs))
      await patchSetAnnotations(pass, { [ANN_SUSPENDING_SINCE]: null });
    return finish();
  }
  if (release) {
    // A pod the server shows awake again is kept: the next pass, on a cache that has caught up, gates it anew.
    if (!(await releaseSeats(pass, gate.snapshotted))) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
    await settleSuspended(pass);
    return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  }
  await settleSuspended(pass);
  if (gate.fingerprint !== undefined) pass.deps.suspendConfirmations?.confirm(setKey(pass), gate.fingerprint);
  return finish();
}

/** The pods this pass would annotate: reported on by vk-cocoon, not yet asked to hibernate. */
function toHibernate(pass: Pass): Pod[] {
  return sortByName(pass.pods.all.values()).filter(
    (pod) => readLifecycleState(pod) !== "" && !readHibernateState(pod),
  );
}

/**
 * Pre-hibernate hooks still run: Suspending, looked at again when a pod's record changes (or within
 * the poll). One failed under Fail: the set stays as it runs, its Suspended condition says why, the
 * suspend deadline is not armed, and the hook runs again when it is due.
 */
async function holdForHooks(
  pass: Pass,
  hooks: Exclude<HibernateVerdict, { action: "proceed" }>,
): Promise<StepOutcome> {
  if (hooks.action === "wait") {
    await writeStatus(pass, "Suspending");
    return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  }
  if (shouldClearSuspendingSince(pass.cs)) await patchSetAnnotations(pass, { [ANN_SUSPENDING_SINCE]: null });
  await writeStatus(pass, undefined, undefined, {
    reason: REASON_PRE_HIBERNATE_FAILED,
    message: hooks.message,
  });
  return finish({ requeueAfterMs: hooks.retryAfterMs });
}

/**
 * Released VMs (their pods deleted by a release suspend) the spec was edited away from since: the set
 * says so, Failed, instead of settling Suspended or recreating a main.
 */
async function holdReleased(pass: Pass): Promise<boolean> {
  const held = heldReleased(pass);
  if (held.length === 0) return false;
  await reportHeldSnapshots(pass, held);
  if (shouldClearSuspendingSince(pass.cs)) await patchSetAnnotations(pass, { [ANN_SUSPENDING_SINCE]: null });
  return true;
}

function setKey(pass: Pass): string {
  return `${pass.namespace}/${pass.name}`;
}

/** A retained suspend needs its main: created from the snapshot when one exists, then the pass ends. */
async function createMainBeforeSuspend(pass: Pass): Promise<StepOutcome> {
  const { outcome } = await createManagedPod(pass, {
    role: ROLE_MAIN,
    wantRestore: true,
    build: (restore) => buildMainPod(pass.cs, { restore }),
  });
  // "pending": created by an earlier pass, not in the cache yet. "exists": the old main is still
  // terminating; look again shortly.
  if (outcome === "pending") return awaitCreated(pass);
  return outcome === "created" ? finish({ requeue: true }) : finish({ requeueAfterMs: REQUEUE_POLL_MS });
}

type GateOutcome =
  /** fingerprint: what the registry's answers were given for, to remember once Suspended is written. */
  | { confirmed: true; snapshotted: ReadonlySet<string>; fingerprint?: string }
  | { confirmed: false; waitingOn: string; probeError?: Error };

/**
 * The gate: pod-side checks for every pod first, then one manifest probe per VM, in name order —
 * unless `mayRemember` and this process already confirmed the same set at the same generation with
 * the same pods unchanged (src/pass/suspendconfirmations.ts).
 */
async function runSuspendGate(pass: Pass, mayRemember: boolean): Promise<GateOutcome> {
  const plan = planSuspendGate(pass.pods.all.values(), pass.generation);
  if (plan.waitingOn !== undefined) return { confirmed: false, waitingOn: plan.waitingOn };
  const registry = pass.deps.registry;
  // No registry holds snapshots (retain only; release refuses to run without one): vk-cocoon's
  // hibernated report is all there is to wait for.
  if (!registry) return { confirmed: true, snapshotted: new Set(plan.probes) };
  const confirmations = mayRemember ? pass.deps.suspendConfirmations : undefined;
  const fingerprint = confirmations && gateFingerprint(pass.cs, pass.pods.all.values());
  if (fingerprint !== undefined && confirmations?.holds(setKey(pass), fingerprint)) {
    return { confirmed: true, snapshotted: new Set(plan.probes), fingerprint };
  }
  for (const vm of plan.probes) {
    let present: boolean;
    try {
      present = await registry.hasManifest(vm, TAG_HIBERNATE, pass.signal);
    } catch (error) {
      const probeError = error instanceof Error ? error : new Error(String(error));
      return {
        confirmed: false,
        waitingOn: `probe of ${vm}:${TAG_HIBERNATE} failed: ${probeError.message}`,
        probeError,
      };
    }
    if (!present) return { confirmed: false, waitingOn: `${vm}:${TAG_HIBERNATE} is not in the registry yet` };
  }
  return { confirmed: true, snapshotted: new Set(plan.probes), ...(fingerprint ? { fingerprint } : {}) };
}

/**
 * Not hibernated yet: Suspending with a 5 s poll, under a 3-minute deadline restarted on every entry.
 * A probe error is returned (backoff) only after Suspending is written, and counts against the same
 * deadline, so an unreachable registry surfaces as SuspendTimedOut too.
 */
async function stayOrTimeOut(
  pass: Pass,
  gate: { waitingOn: string; probeError?: Error },
): Promise<StepOutcome> {
  const deadline = checkSuspendDeadline(pass.cs, pass.deps.clock.now());
  if (deadline.action === "expired") {
    await writeStatus(pass, "Failed");
    setEvent(
      pass,
      "Warning",
      REASON_SUSPEND_TIMED_OUT,
      `suspend not confirmed within ${SUSPEND_TIMEOUT_MS / 60_000}m0s: ${gate.waitingOn}`,
    );
    return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  }
  if (deadline.action === "arm") {
    await patchSetAnnotations(pass, { [ANN_SUSPENDING_SINCE]: deadline.since });
  }
  await writeStatus(pass, "Suspending");
  if (gate.probeError) throw gate.probeError;
  return finish({ requeueAfterMs: REQUEUE_POLL_MS });
}

/** Suspended lands, then the deadline it ended goes. */
async function settleSuspended(pass: Pass): Promise<void> {
  await writeStatus(pass, "Suspended");
  if (shouldClearSuspendingSince(pass.cs)) {
    await patchSetAnnotations(pass, { [ANN_SUSPENDING_SINCE]: null });
  }
}
