// Step 12: sub-agents 1..replicas exist, forked from the main on its node; extras go.
// Existing sub-agents are triaged first (drifted or terminal → the rebuild budget), then the missing
// slots are created concurrently under the image rule, then slots above replicas are deleted, their
// VM names stashed for teardown's registry GC before the first delete.

import type { Pod } from "../../apis/core.ts";
import { ROLE_SUB_AGENT } from "../../contract/keys.ts";
import { isPodFailed, podFailedReason, vmNameOf } from "../../contract/pod.ts";
import { agentPodName } from "../../contract/vmname.ts";
import { forEachLimited } from "../../pass/limit.ts";
import { CONTINUE, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { createManagedPod } from "../create.ts";
import { agentDriftReason } from "../decide/drift.ts";
import { buildSubAgentPod } from "../decide/pods.ts";
import { deleteAfterStash } from "../deletepods.ts";
import { isMissingPodParked, spendRebuildBudget } from "../rebuildbudget.ts";

/** A large scale-up must not burst the API server. */
export const SUB_AGENT_CREATE_CONCURRENCY = 8;

export async function reconcileSubAgents(pass: Pass): Promise<StepOutcome> {
  // Step 11 ends the pass until a Ready main exists.
  const main = pass.pods.main;
  if (!main) return CONTINUE;
  const replicas = pass.cs.spec.agent.replicas ?? 0;

  const missing: number[] = [];
  for (let slot = 1; slot <= replicas; slot++) {
    const pod = pass.pods.subAgents.get(slot);
    if (pod) await triage(pass, pod, slot);
    else if (!isMissingPodParked(pass, agentPodName(pass.name, slot))) missing.push(slot);
  }

  const mainVMName = vmNameOf(main);
  const mainNode = main.spec.nodeName ?? "";
  await forEachLimited(missing, SUB_AGENT_CREATE_CONCURRENCY, async (slot) => {
    const { outcome } = await createManagedPod(pass, {
      role: ROLE_SUB_AGENT,
      wantRestore: false,
      build: (restore) => buildSubAgentPod(pass.cs, slot, mainNode, { restore, mainVMName }),
    });
    // AlreadyExists: the slot's old pod is still terminating; a later pass creates it. Pending: an
    // earlier pass created it and the cache does not show it yet; the pass waits for it.
    if (outcome === "created") pass.changed = true;
  });

  await removeExtras(pass, replicas);
  return CONTINUE;
}

async function triage(pass: Pass, pod: Pod, slot: number): Promise<void> {
  const drift = agentDriftReason(pod, pass.cs, slot);
  if (drift === undefined && !isPodFailed(pod)) return;
  await spendRebuildBudget(pass, pod, {
    drifted: drift !== undefined,
    reason: drift ?? podFailedReason(pod),
  });
}

/** Slots above replicas, in slot order, after their VM names (and the reclaim record's) are stashed. */
async function removeExtras(pass: Pass, replicas: number): Promise<void> {
  const extras = [...pass.pods.subAgents.entries()]
    .filter(([slot]) => slot > replicas)
    .sort(([a], [b]) => a - b)
    .map(([, pod]) => pod);
  if (extras.length === 0) return;
  await deleteAfterStash(pass, extras, "sub-agent above replicas");
  pass.changed = true;
}
