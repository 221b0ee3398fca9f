// Deterministic VM and pod names: plain concatenation, no hashing or
// truncation. The role of a pod comes from its owner plus the slot parse, never a suffix split.

import type { Pod } from "../apis/core.ts";
import { parseGoIntNumber } from "./goint.ts";
import { ROLE_MAIN, ROLE_SUB_AGENT, ROLE_TOOLBOX, type Role } from "./keys.ts";
import { cocoonSetOwnerName } from "./pod.ts";

/** `vk-<ns>-<cs>-<slot>`: the VM of an agent slot (slot 0 = main). */
export function agentVMName(namespace: string, cocoonSet: string, slot: number): string {
  return `vk-${namespace}-${cocoonSet}-${slot}`;
}

/** `vk-<ns>-<podName>`: the VM of any pod by name. */
export function podVMName(namespace: string, podName: string): string {
  return `vk-${namespace}-${podName}`;
}

/** `vk-<ns>-<cs>-<toolbox>`: a toolbox VM is named after its pod `<cs>-<toolbox>`. */
export function toolboxVMName(namespace: string, cocoonSet: string, toolbox: string): string {
  return podVMName(namespace, toolboxPodName(cocoonSet, toolbox));
}

export function agentVMNamePrefix(namespace: string, cocoonSet: string): string {
  return `vk-${namespace}-${cocoonSet}-`;
}

/** `<cs>-<slot>`. */
export function agentPodName(cocoonSet: string, slot: number): string {
  return `${cocoonSet}-${slot}`;
}

/** `<cs>-<toolbox>`. */
export function toolboxPodName(cocoonSet: string, toolbox: string): string {
  return `${cocoonSet}-${toolbox}`;
}

/**
 * The agent slot a VM name encodes, or -1 for anything else (toolboxes, other sets). The remainder
 * after the prefix is read as Go's strconv.Atoi, so "007" and "+3" are slots 7 and 3.
 */
export function extractAgentSlot(namespace: string, cocoonSet: string, vmName: string): number {
  const prefix = agentVMNamePrefix(namespace, cocoonSet);
  if (!vmName.startsWith(prefix)) return -1;
  const remainder = vmName.slice(prefix.length);
  if (remainder.includes("-")) return -1;
  const slot = parseGoIntNumber(remainder, 64);
  return slot === undefined || slot < 0 ? -1 : slot;
}

export function inferRoleFromSlot(slot: number): Role {
  if (slot < 0) return ROLE_TOOLBOX;
  return slot === 0 ? ROLE_MAIN : ROLE_SUB_AGENT;
}

/** The role of a pod's VM: owner CocoonSet name + slot parse. */
export function roleForPod(pod: Pick<Pod, "metadata">, vmName: string): Role {
  const cocoonSet = cocoonSetOwnerName(pod);
  return inferRoleFromSlot(extractAgentSlot(pod.metadata.namespace ?? "", cocoonSet, vmName));
}

/**
 * One path component of a distribution repository name: lowercase alphanumerics joined by `.`, `_`,
 * `__` or runs of `-`. No `/`, no `..`, no leading or trailing separator.
 */
const REPOSITORY_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const MAX_REPOSITORY_NAME = 255;

/** The event reason under which a name read back that breaks these rules is reported, and left alone. */
export const REASON_FOREIGN_VM_NAME_IGNORED = "ForeignVMNameIgnored";

/** Whether `vmName` can name a repository of its own: one valid path component, short enough. */
function isRepositoryComponent(vmName: string): boolean {
  return vmName.length <= MAX_REPOSITORY_NAME && REPOSITORY_COMPONENT.test(vmName);
}

/**
 * Whether `vmName` may be one of the set's own VMs: `vk-<ns>-<set>-<suffix>` with a non-empty suffix,
 * and one valid repository path component. Every registry delete driven by a name the operator read
 * back from an annotation passes through this rule first, so a name a user wrote can never reach
 * another set's repository, a base image, or a path outside the snapshot prefix.
 */
export function isOwnVMName(namespace: string, cocoonSet: string, vmName: string): boolean {
  const prefix = agentVMNamePrefix(namespace, cocoonSet);
  return vmName.length > prefix.length && vmName.startsWith(prefix) && isRepositoryComponent(vmName);
}

/** The same rule for one pod: its own VM is `vk-<ns>-<podName>`, one valid repository path component. */
export function isPodVMName(namespace: string, podName: string, vmName: string): boolean {
  return podName !== "" && vmName === podVMName(namespace, podName) && isRepositoryComponent(vmName);
}

/** `names` split by the rule above, each list in the order given. */
export function partitionOwnVMNames(
  namespace: string,
  cocoonSet: string,
  names: Iterable<string>,
): { own: string[]; foreign: string[] } {
  const own: string[] = [];
  const foreign: string[] = [];
  for (const name of names) (isOwnVMName(namespace, cocoonSet, name) ? own : foreign).push(name);
  return { own, foreign };
}
