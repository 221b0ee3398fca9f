// Step 14: /status is computed from the classification of step 4 and patched only when it differs,
// so a settled pass writes nothing. A pass in which steps 12–13 wrote requeues at once instead: its
// classification is already stale; so is that of a pass still waiting for pods created earlier to show
// in the cache (expectations.ts), which requeues within the poll.
import type { CocoonSet, CocoonSetPhase, CocoonSetStatus } from "../../apis/v1/types.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { awaitCreated, finish, type Pass, type StepOutcome } from "../pass.ts";
import { computeStatus, statusEqual } from "../status.ts";

export async function patchStatus(pass: Pass): Promise<StepOutcome> {
  if (pass.changed) return finish({ requeue: true });
  // Pods created by an earlier pass are not in the cache yet: the classification is as stale.
  if (pass.awaitingCreates) return awaitCreated(pass);
  await writeStatus(pass);
  const requeueAfterMs = pass.requeueAfterMs ?? 0;
  return requeueAfterMs > 0 ? finish({ requeueAfterMs }) : finish({});
}

/**
 * Writes the status computed from the pass's classification with `phase` (default pass.phase); no
 * call when it equals the current status. Steps that end the pass with a phase of their own use it.
 */
export async function writeStatus(
  pass: Pass,
  phase: CocoonSetPhase | undefined = pass.phase,
): Promise<boolean> {
  const now = new Date(pass.deps.clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z");
  const next = computeStatus(pass.cs, pass.pods, { now, ...(phase ? { phase } : {}) });
  if (statusEqual(pass.cs.status, next)) return false;
  const updated = await pass.deps.client.patch<CocoonSet>(
    COCOONSETS,
    pass.namespace,
    pass.name,
    { status: statusMergePatch(pass.cs.status, next) },
    { subresource: "status" },
  );
  pass.cs.status = updated.status ?? next;
  pass.cs.metadata.resourceVersion = updated.metadata.resourceVersion;
  return true;
}

/** The new status, with null for each top-level field it no longer has (merge patch deletes those). */
export function statusMergePatch<S extends object = CocoonSetStatus>(
  current: S | undefined,
  next: S,
): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...(next as Record<string, unknown>) };
  for (const key of Object.keys(current ?? {})) if (!(key in next)) patch[key] = null;
  return patch;
}
