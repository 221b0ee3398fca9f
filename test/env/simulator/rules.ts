// Pure pieces of vk-cocoon's pod reading: annotation flags, role, snapshot policy, generation.

import type { Pod } from "../../../src/apis/core.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_MANAGED,
  ANN_OS,
  ANN_SNAPSHOT_POLICY,
  KIND_COCOONSET,
  ROLE_MAIN,
  ROLE_SUB_AGENT,
  ROLE_TOOLBOX,
  type Role,
  TRUE,
} from "../../../src/contract/keys.ts";

export function annotation(pod: Pod, key: string): string {
  return pod.metadata.annotations?.[key] ?? "";
}

export function flag(pod: Pod, key: string): boolean {
  return annotation(pod, key) === TRUE;
}

export function isManaged(pod: Pod): boolean {
  return flag(pod, ANN_MANAGED);
}

export function isMacOS(pod: Pod): boolean {
  return isManaged(pod) && annotation(pod, ANN_OS) === "macos";
}

/** The pod's cocoonset generation annotation; missing or unparsable counts as 0. */
export function podGeneration(pod: Pod): number {
  const raw = annotation(pod, ANN_COCOONSET_GENERATION);
  return /^-?\d+$/.test(raw) ? Number(raw) : 0;
}

/** meta.RoleForPod: owner CocoonSet name plus the slot parsed from the VM name. */
export function roleForPod(pod: Pod, vmName: string): Role {
  const owner = pod.metadata.ownerReferences?.find((o) => o.kind === KIND_COCOONSET)?.name ?? "";
  const prefix = `vk-${pod.metadata.namespace ?? ""}-${owner}-`;
  if (owner === "" || !vmName.startsWith(prefix)) return ROLE_TOOLBOX;
  const rest = vmName.slice(prefix.length);
  // Go strconv.Atoi accepts a leading sign and leading zeros.
  if (rest.includes("-") || !/^[+-]?\d+$/.test(rest)) return ROLE_TOOLBOX;
  const slot = Number(rest);
  if (slot < 0) return ROLE_TOOLBOX;
  return slot === 0 ? ROLE_MAIN : ROLE_SUB_AGENT;
}

/** meta.ShouldSnapshotVM for the pod's snapshot-policy annotation. */
export function shouldSnapshotVM(pod: Pod, role: Role): boolean {
  const policy = annotation(pod, ANN_SNAPSHOT_POLICY);
  if (policy === "never") return false;
  if (policy === "main-only") return role === ROLE_MAIN;
  return true;
}

/** Lifecycle messages are truncated to 4096 bytes. */
export function truncateMessage(message: string): string {
  const bytes = Buffer.from(message, "utf8");
  return bytes.length <= 4096 ? message : bytes.subarray(0, 4096).toString("utf8");
}
