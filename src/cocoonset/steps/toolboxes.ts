// Step 13: one pod `<cs>-<tb>` per toolbox of the spec; removed toolboxes go, their VM names stashed
// first for teardown's GC. Names are validated before any write, so a spec that slipped past the
// webhook leaves no partial state. A write marks the pass changed: step 14 then requeues at once
// instead of patching.

import type { Pod } from "../../apis/core.ts";
import type { ToolboxSpec } from "../../apis/v1/types.ts";
import { parseGoIntNumber } from "../../contract/goint.ts";
import { LABEL_ROLE, ROLE_TOOLBOX } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { isControlledBy, isPodFailed, podFailedReason } from "../../contract/pod.ts";
import { toolboxPodName } from "../../contract/vmname.ts";
import { PODS } from "../../controller/resources.ts";
import { CONTINUE, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { createManagedPod, createPod } from "../create.ts";
import { toolboxDriftReason } from "../decide/drift.ts";
import { buildToolboxPod } from "../decide/pods.ts";
import { deleteAfterStash } from "../deletepods.ts";
import { isMissingPodParked, spendRebuildBudget } from "../rebuildbudget.ts";

export async function reconcileToolboxes(pass: Pass): Promise<StepOutcome> {
  const toolboxes = pass.cs.spec.toolboxes ?? [];
  const invalid = invalidToolboxNames(toolboxes);
  if (invalid) throw new Error(`cocoonset ${pass.namespace}/${pass.name}: ${invalid}`);

  for (const toolbox of toolboxes) {
    const podName = toolboxPodName(pass.name, toolbox.name);
    const pod = pass.pods.toolboxes.get(toolbox.name);
    if (!pod && pass.pods.all.has(podName)) {
      throw new Error(`create toolbox ${toolbox.name}: name collision with existing pod ${podName}`);
    }
    if (pod) await triage(pass, pod, toolbox);
    else if (!isMissingPodParked(pass, podName)) await createToolbox(pass, toolbox);
  }

  await removeDeparted(pass, new Set(toolboxes.map((toolbox) => toolbox.name)));
  return CONTINUE;
}

/**
 * Why the toolbox list cannot be reconciled, or undefined. A duplicate would map two entries onto one
 * pod; an integer name (as Go's strconv.Atoi reads it) would collide with an agent slot's pod name.
 */
export function invalidToolboxNames(toolboxes: readonly ToolboxSpec[]): string | undefined {
  const seen = new Set<string>();
  for (const { name } of toolboxes) {
    if (seen.has(name)) return `duplicate toolbox name ${JSON.stringify(name)} in spec`;
    if (parseGoIntNumber(name, 64) !== undefined) {
      return `toolbox name ${JSON.stringify(name)} must not be an integer: collides with agent slot pod naming`;
    }
    seen.add(name);
  }
  return undefined;
}

async function triage(pass: Pass, pod: Pod, toolbox: ToolboxSpec): Promise<void> {
  const drift = toolboxDriftReason(pod, pass.cs, toolbox);
  if (drift === undefined && !isPodFailed(pod)) return;
  await spendRebuildBudget(pass, pod, {
    drifted: drift !== undefined,
    reason: drift ?? podFailedReason(pod),
  });
}

async function createToolbox(pass: Pass, toolbox: ToolboxSpec): Promise<void> {
  // A static toolbox adopts a VM vk-cocoon does not manage: no snapshot of it to read.
  const outcome =
    toolbox.mode === "static"
      ? await createPod(pass, buildToolboxPod(pass.cs, toolbox))
      : (
          await createManagedPod(pass, {
            role: ROLE_TOOLBOX,
            wantRestore: false,
            build: (restore) => buildToolboxPod(pass.cs, toolbox, { restore }),
          })
        ).outcome;
  if (outcome === "created") {
    pass.changed = true;
    return;
  }
  // Created by an earlier pass and not in the cache yet: the pass waits for it.
  if (outcome === "pending") return;
  // The cache did not show the pod: read the API server to tell our toolbox from a stranger.
  const podName = toolboxPodName(pass.name, toolbox.name);
  const existing = await pass.deps.client.get<Pod>(PODS, pass.namespace, podName);
  const ours =
    existing.metadata.labels?.[LABEL_ROLE] === ROLE_TOOLBOX &&
    isControlledBy(existing, { uid: pass.cs.metadata.uid });
  if (!ours) {
    const role = existing.metadata.labels?.[LABEL_ROLE] ?? "";
    throw new Error(
      `create toolbox ${toolbox.name}: name collision with existing pod ${pass.namespace}/${podName} (role=${role})`,
    );
  }
}

/** Toolboxes no longer in the spec, in name order, after their VM names are stashed for teardown. */
async function removeDeparted(pass: Pass, desired: ReadonlySet<string>): Promise<void> {
  const departed = [...pass.pods.toolboxes.entries()]
    .filter(([name]) => !desired.has(name))
    .sort(([a], [b]) => byteOrder(a, b))
    .map(([, pod]) => pod);
  if (departed.length === 0) return;
  await deleteAfterStash(pass, departed, "toolbox no longer in the spec");
  pass.changed = true;
}
