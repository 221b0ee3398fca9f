// Step 14: /status is computed from the classification of step 4 and patched only when it differs,
// so a settled pass writes nothing. A pass in which steps 12–13 wrote requeues at once instead: its
// classification is already stale; so is that of a pass still waiting for pods created earlier to show
// in the cache (src/pass/expectations.ts), which requeues within the poll.

import { statusMergePatch } from "../../apis/status.ts";
import type { CocoonSetPhase } from "../../apis/v1/types.ts";
import { awaitCreated, finish, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { patchSetStatus } from "../../pass/writes.ts";
import { formatRFC3339 } from "../../rfc3339.ts";
import { computeStatus, type StatusOptions, statusEqual } from "../decide/computestatus.ts";

export async function patchStatus(pass: Pass): Promise<StepOutcome> {
  if (pass.changed) return finish({ requeue: true });
  // Pods created by an earlier pass are not in the cache yet: the classification is as stale.
  if (pass.awaitingCreates) return awaitCreated(pass);
  await writeStatus(pass);
  const requeueAfterMs = pass.requeueAfterMs ?? 0;
  return requeueAfterMs > 0 ? finish({ requeueAfterMs }) : finish({});
}

/**
 * Writes the status computed from the pass's classification with `phase` (default pass.phase) and,
 * for a Failed set whose cause a step knows, that cause in the Ready condition; no call when it equals
 * the current status. Steps that end the pass with a phase of their own use it.
 */
export async function writeStatus(
  pass: Pass,
  phase: CocoonSetPhase | undefined = pass.phase,
  failure?: StatusOptions["failure"],
  suspendHeld?: StatusOptions["suspendHeld"],
): Promise<boolean> {
  const now = formatRFC3339(pass.deps.clock.now());
  const lastUseMs = pass.deps.activity?.lastUseMs(pass.cs);
  const guest = pass.deps.guest?.heldMembers(pass.cs, pass.pods.all.values());
  const next = computeStatus(pass.cs, pass.pods, {
    now,
    ...(phase ? { phase } : {}),
    ...(failure ? { failure } : {}),
    ...(suspendHeld ? { suspendHeld } : {}),
    ...(lastUseMs === undefined ? {} : { lastUseMs }),
    ...(guest?.named ? { guestHooks: { held: guest.held } } : {}),
  });
  if (statusEqual(pass.cs.status, next)) return false;
  await patchSetStatus(pass, statusMergePatch(pass.cs.status, next), next);
  return true;
}
