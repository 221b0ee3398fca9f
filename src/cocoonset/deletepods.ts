// Deleting owned pods. Teardown garbage-collects the registry tags of every VM named in the set's
// `delete-vm-names` annotation, so the names are stashed there before the first pod delete of any
// kind (teardown, scale-down, toolbox removal, slot release): a set deleted between the delete and its
// next status write still has every tag collected.

import type { Pod } from "../apis/core.ts";
import { ANN_DELETE_VM_NAMES } from "../contract/keys.ts";
import type { Pass } from "../pass/pass.ts";
import { deletePod, patchSetAnnotations, reclaimRecord } from "../pass/writes.ts";
import { mergeDeleteVMNames, vmNamesToStash } from "./decide/deletevmnames.ts";

/** Stashes the VM names of `pods`, of the status and of the reclaim record; no call when all are there. */
export async function stashVMNames(pass: Pass, pods: Iterable<Pod>): Promise<void> {
  const stash = mergeDeleteVMNames(
    pass.cs.metadata.annotations?.[ANN_DELETE_VM_NAMES],
    vmNamesToStash(pass.cs.status, pods, reclaimRecord(pass)),
  );
  if (stash !== undefined) await patchSetAnnotations(pass, { [ANN_DELETE_VM_NAMES]: stash });
}

/**
 * Deletes `pods` in the order given, after stashing their VM names; `logAs` names what was deleted in
 * the info line logged for each pod.
 */
export async function deleteAfterStash(pass: Pass, pods: readonly Pod[], logAs?: string): Promise<void> {
  await stashVMNames(pass, pods);
  for (const pod of pods) {
    await deletePod(pass, pod);
    if (logAs)
      pass.deps.log.info(
        { cocoonset: `${pass.namespace}/${pass.name}`, pod: pod.metadata.name },
        `deleted ${logAs}`,
      );
  }
}
