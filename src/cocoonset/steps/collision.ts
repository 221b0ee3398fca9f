// Before any pod or tag is touched: a set whose VM names (setvms.ts) are also those of another live
// set that keeps them (keepsSharedNames: the one with VMs, else the earlier-created), in any
// namespace, would share that set's registry repositories, so it is refused. It stays Failed with the
// reason in its Ready condition, creates no pod and deletes no tag; the other set goes on. The check reads only the cache's index, so a settled pass stays free of
// calls, and it looks again after a while: the other set's delete is not an event of this one.

import { CONTINUE, finish, type Pass, type StepOutcome } from "../../pass/pass.ts";
import { collisionsWithKeepers, setVMNames, type VMNameCollision } from "../../pass/setvms.ts";
import { setEvent } from "../../pass/writes.ts";
import { writeStatus } from "./status.ts";

export const REASON_VM_NAME_COLLISION = "VMNameCollision";

/** How soon a refused set looks again for the other set to be gone. */
export const COLLISION_RECHECK_MS = 30_000;

/** Which names are whose: `vk-x-0 (CocoonSet ns/name)`, comma-joined. */
export function collisionMessage(collisions: readonly VMNameCollision[]): string {
  const shared = collisions
    .map(({ vm, holder }) => `${vm} (CocoonSet ${holder.metadata.namespace}/${holder.metadata.name})`)
    .join(", ");
  return `VM names another CocoonSet keeps: ${shared}`;
}

export async function refuseCollidingNames(pass: Pass): Promise<StepOutcome> {
  const collisions = collisionsWithKeepers(pass.cs, setVMNames(pass.cs), (vm) =>
    pass.deps.view.listSetsNamingVM(vm),
  );
  if (collisions.length === 0) return CONTINUE;
  const message = `${collisionMessage(collisions)}; this set is refused (no pod created, no tag deleted) until its VM names are its alone`;
  if (await writeStatus(pass, "Failed", { reason: REASON_VM_NAME_COLLISION, message }))
    setEvent(pass, "Warning", REASON_VM_NAME_COLLISION, message);
  return finish({ requeueAfterMs: COLLISION_RECHECK_MS });
}
