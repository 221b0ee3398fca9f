// The `delete-vm-names` CocoonSet annotation: every VM whose registry tags
// teardown must GC, sorted and comma-joined. It is stashed before any pod delete (teardown, scale-down,
// toolbox removal, slot release), so teardown still covers a set deleted before Status.Agents was
// patched, slots that left the spec earlier, and pods deleted while suspended (the reclaim record).

import type { Pod } from "../../apis/core.ts";
import type { CocoonSetStatus } from "../../apis/v1/types.ts";
import { byteOrder } from "../../contract/order.ts";
import { vmNameOf } from "../../contract/pod.ts";
import type { ReclaimRecord } from "../../pass/reclaimrecord.ts";
import { parseDeleteVMNames } from "../../pass/setvms.ts";

/**
 * The annotation value holding the stored names plus `more`; undefined when the union is empty or
 * equals the current value, so the caller skips the patch.
 */
export function mergeDeleteVMNames(current: string | undefined, more: Iterable<string>): string | undefined {
  const names = new Set(parseDeleteVMNames(current));
  for (const name of more) {
    const trimmed = name.trim();
    if (trimmed !== "") names.add(trimmed);
  }
  if (names.size === 0) return undefined;
  const joined = [...names].sort(byteOrder).join(",");
  return joined === current ? undefined : joined;
}

/** VM names the status lists: agents, then toolboxes. */
export function statusVMNames(status: CocoonSetStatus | undefined): string[] {
  const names: string[] = [];
  for (const agent of status?.agents ?? []) if (agent.vmName) names.push(agent.vmName);
  for (const toolbox of status?.toolboxes ?? []) if (toolbox.vmName) names.push(toolbox.vmName);
  return names;
}

/** Everything a stash takes: the status's VMs, the given pods' VMs and the reclaim record's VMs. */
export function vmNamesToStash(
  status: CocoonSetStatus | undefined,
  pods: Iterable<Pod>,
  reclaim: ReclaimRecord,
): string[] {
  const names = statusVMNames(status);
  for (const pod of pods) {
    const vm = vmNameOf(pod);
    if (vm) names.push(vm);
  }
  names.push(...reclaim.vms);
  return names;
}
