// Step 11: the main agent (slot 0) exists, matches its spec and is Ready before anything else scales.
// Sub-agents fork from the main's VM, so steps 12 and 13 only run once it is Ready.

import { ROLE_MAIN } from "../../contract/keys.ts";
import { isPodReady } from "../../contract/pod.ts";
import { agentPodName } from "../../contract/vmname.ts";
import {
  awaitCreated,
  CONTINUE,
  finish,
  type Pass,
  REQUEUE_POLL_MS,
  type StepOutcome,
} from "../../pass/pass.ts";
import { createManagedPod } from "../create.ts";
import { agentDriftReason } from "../decide/drift.ts";
import { buildMainPod } from "../decide/pods.ts";
import { isMissingPodParked, spendRebuildBudget } from "../rebuildbudget.ts";
import { writeStatus } from "./status.ts";

export async function reconcileMain(pass: Pass): Promise<StepOutcome> {
  const main = pass.pods.main;
  if (!main) {
    // The budget gave up on this main at this generation: report it rather than boot it again.
    if (isMissingPodParked(pass, agentPodName(pass.name, 0))) {
      pass.phase = "Failed";
      await writeStatus(pass);
      return finish();
    }
    const { outcome } = await createManagedPod(pass, {
      role: ROLE_MAIN,
      wantRestore: false,
      build: (restore) => buildMainPod(pass.cs, { restore }),
    });
    // Pending: created by an earlier pass, not in the cache yet; its add event wakes the set.
    if (outcome === "pending") return awaitCreated(pass);
    // AlreadyExists: the old main is still terminating.
    return finish(outcome === "created" ? { requeue: true } : { requeueAfterMs: REQUEUE_POLL_MS });
  }

  // A terminal main that still matches its spec is step 7's (Failed); a drifted one is rebuilt here.
  const drift = agentDriftReason(main, pass.cs, 0);
  if (drift !== undefined) {
    const decision = await spendRebuildBudget(pass, main, { drifted: true, reason: drift });
    if (decision.action === "rebuild-now" || decision.action === "dead-letter") {
      return finish({ requeue: true });
    }
  }

  if (!isPodReady(main)) {
    // A phase step 7 decided stays: a Failed set whose main is coming back is Failed until it is Ready.
    pass.phase ??= "Pending";
    await writeStatus(pass);
    return finish({ requeueAfterMs: Math.min(REQUEUE_POLL_MS, pass.requeueAfterMs ?? REQUEUE_POLL_MS) });
  }
  return CONTINUE;
}
