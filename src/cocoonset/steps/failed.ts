// Step 7: a main that vk-cocoon (lifecycle-state=failed) or the kubelet (Pod.Phase=Failed) reports
// failed, and that still matches its spec, parks the set in Failed with no requeue: nothing the
// operator does would revive it, and a pod event brings the next pass. A failed main that drifted
// from the spec takes the rebuild budget instead, since a recreate is the remedy. Failed is
// recoverable: a main Ready again is noticed and the pass goes on.

import type { Pod } from "../../apis/core.ts";
import { readLifecycle } from "../../contract/lifecycle.ts";
import { isPodReady, podFailedReason, podKey } from "../../contract/pod.ts";
import { lifecycleStateFailedObservedTotal } from "../../metrics/cocoon.ts";
import { CONTINUE, finish, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { setEvent } from "../../pass/writes.ts";
import { agentDriftReason } from "../decide/drift.ts";
import { migrationPending } from "../decide/migrationplan.ts";
import { spendRebuildBudget } from "../rebuildbudget.ts";
import { writeStatus } from "./status.ts";
import { settleUnsuspend } from "./unsuspend.ts";

export const EVENT_RECOVERED_FROM_FAILURE = "RecoveredFromFailure";

export async function reconcileFailedMain(pass: Pass): Promise<StepOutcome> {
  const main = pass.pods.main;
  if (!main) return CONTINUE;
  const reason = podFailedReason(main);
  const setKey = `${pass.namespace}/${pass.name}`;
  const podUid = main.metadata.uid ?? "";
  if (reason === "") {
    // Failed as cached, or as this process wrote it for this main (the cache may not show it yet).
    if (pass.cs.status?.phase === "Failed" || pass.deps.failedMains?.marked(setKey, podUid)) {
      // A main no longer failed but not Ready yet (vk-cocoon reports a lifted failure as creating,
      // then ready) keeps the set Failed: the set recovers when its main is Ready again, and says so.
      if (isPodReady(main)) {
        setEvent(pass, "Normal", EVENT_RECOVERED_FROM_FAILURE, `main pod ${podKey(main)} is Ready again`);
        pass.deps.failedMains?.forget(setKey);
      } else {
        pass.phase = "Failed";
      }
    }
    return CONTINUE;
  }

  // Step 10's clear first: a main whose hibernate vk-cocoon refused (a macOS agent fails every one
  // with HibernateUnsupported) is otherwise refused again on its next update and never returns to
  // Ready. A pending migration keeps it: there it is the quiesce, and clearing it would let vk lift
  // the failure and restart the migration on every pass.
  if (!pass.cs.spec.suspend && !migrationPending(pass.cs, main)) await settleUnsuspend(pass);

  const drift = agentDriftReason(main, pass.cs, 0);
  if (drift !== undefined) {
    const decision = await spendRebuildBudget(pass, main, { drifted: true, reason: drift });
    if (decision.action === "rebuild-now") return finish({ requeue: true });
    if (decision.action === "wait") return finish({ requeueAfterMs: pass.requeueAfterMs ?? 0 });
    // Budget spent: the main stays, failed, until a spec edit — the set reports that below.
  }

  reportFailedMain(pass, main, reason);
  pass.phase = "Failed";
  await writeStatus(pass, "Failed");
  pass.deps.failedMains?.mark(setKey, podUid);
  return finish({});
}

function reportFailedMain(pass: Pass, main: Pod, reason: "PodLifecycleFailed" | "MainAgentFailed"): void {
  // Only the vk-cocoon path counts, so kubelet failures do not dilute the metric.
  if (reason === "PodLifecycleFailed") {
    lifecycleStateFailedObservedTotal.inc({ phase: pass.cs.status?.phase || "Pending" });
  }
  const detail = readLifecycle(main).message || main.status?.phase || "";
  setEvent(pass, "Warning", reason, `main pod ${podKey(main)}: ${detail}`);
}
