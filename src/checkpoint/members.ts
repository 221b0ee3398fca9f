// Which VMs a checkpoint holds and which of them a branch copies: pure functions of the specs and the
// checkpoint's status, free of I/O (the reconcilers do the registry calls).

import type { Pod } from "../apis/core.ts";
import { type CocoonSet, DEFAULT_HIBERNATE_POLICY } from "../apis/v1/types.ts";
import type { CheckpointMember, CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import { ROLE_MAIN, ROLE_SUB_AGENT, ROLE_TOOLBOX } from "../contract/keys.ts";
import { isPodTerminal, vmNameOf } from "../contract/pod.ts";
import {
  RESTORE_DEPENDENCIES,
  type RestoreDependencies,
  type RestoreMismatch,
  restoreMismatches,
  specRestoreDependencies,
} from "../contract/restoredeps.ts";
import { agentVMName, toolboxVMName } from "../contract/vmname.ts";

/** A VM slot of a set's spec: an agent slot or a managed toolbox. */
export interface SetSlot {
  role: CheckpointMember["role"];
  slot?: number;
  toolbox?: string;
  vmName: string;
}

/**
 * The VMs a suspend snapshots, from the spec: the main, every sub-agent slot, every managed toolbox.
 * Static toolboxes run no VM of ours and have no snapshot.
 */
export function setSlots(cs: CocoonSet): SetSlot[] {
  const namespace = cs.metadata.namespace ?? "";
  const name = cs.metadata.name ?? "";
  const slots: SetSlot[] = [{ role: ROLE_MAIN, slot: 0, vmName: agentVMName(namespace, name, 0) }];
  for (let slot = 1; slot <= (cs.spec.agent.replicas ?? 0); slot++) {
    slots.push({ role: ROLE_SUB_AGENT, slot, vmName: agentVMName(namespace, name, slot) });
  }
  for (const toolbox of cs.spec.toolboxes ?? []) {
    if (toolbox.mode === "static") continue;
    slots.push({
      role: ROLE_TOOLBOX,
      toolbox: toolbox.name,
      vmName: toolboxVMName(namespace, name, toolbox.name),
    });
  }
  return slots;
}

/**
 * Why a slot's `:hibernate` is not a snapshot the set's current suspend confirmed, or undefined when
 * it is. The suspend gate skips a Failed pod (it has no live VM), so its VM's `:hibernate`, if any, is
 * from an earlier suspend. A retained suspend keeps every pod it snapshotted, so a slot without a pod
 * was not snapshotted; under release a pod is deleted only after the gate saw its snapshot.
 */
export function unconfirmedBySuspend(cs: CocoonSet, slot: SetSlot, pods: readonly Pod[]): string | undefined {
  const pod = pods.find((p) => vmNameOf(p) === slot.vmName);
  if (pod) {
    return isPodTerminal(pod)
      ? `pod ${pod.metadata.name} is Failed, so the suspend took no snapshot of it`
      : undefined;
  }
  const release = (cs.spec.hibernatePolicy || DEFAULT_HIBERNATE_POLICY) === "release";
  return release ? undefined : "it has no pod, so the suspend took no snapshot of it";
}

/** Same place in a set: the same agent slot, or the toolbox of the same name. */
function samePlace(
  a: Pick<SetSlot, "role" | "slot" | "toolbox">,
  b: Pick<SetSlot, "role" | "slot" | "toolbox">,
) {
  return a.role === ROLE_TOOLBOX
    ? b.role === ROLE_TOOLBOX && a.toolbox === b.toolbox
    : b.role !== ROLE_TOOLBOX && a.slot === b.slot;
}

/** One snapshot a branch copies: from the checkpoint member's tag to the new VM's `:hibernate`. */
export interface BranchCopy {
  member: CheckpointMember;
  targetVM: string;
}

/**
 * For every slot of the new set's spec that the checkpoint holds, the copy that seeds it; slots the
 * checkpoint lacks are absent (they boot as usual), and members the new spec lacks are not copied.
 */
export function planBranch(cs: CocoonSet, checkpoint: CocoonCheckpoint): BranchCopy[] {
  const members = (checkpoint.status?.members ?? []).filter((m) => m.digest);
  const plan: BranchCopy[] = [];
  for (const slot of setSlots(cs)) {
    const member = members.find((m) => samePlace(m, slot));
    if (member) plan.push({ member, targetVM: slot.vmName });
  }
  return plan;
}

/** The checkpoint's own members merged with newly planned ones, by VM: every tag that may exist. */
export function mergeMembers(
  known: readonly CheckpointMember[],
  planned: readonly SetSlot[],
): CheckpointMember[] {
  const out = planned.map((slot) => ({ ...slot }) as CheckpointMember);
  for (const member of known) if (!out.some((m) => m.vmName === member.vmName)) out.push(member);
  return out;
}

/**
 * What a member's snapshot was taken under besides its image (which the snapshot records itself): the
 * set's spec when the checkpoint copies. The set is Suspended at that spec's generation, and a suspended
 * set edited on any of these is Failed instead (src/cocoonset/decide/heldsnapshots.ts), so its VMs
 * ran under them.
 */
export function memberRestoreDependencies(
  cs: CocoonSet,
  slot: SetSlot,
): Pick<CheckpointMember, "backend" | "os" | "snapshotCompatibilityClass"> {
  const deps = specRestoreDependencies(cs, slot);
  return deps
    ? { backend: deps.backend, os: deps.os, snapshotCompatibilityClass: deps.snapshotCompatibilityClass }
    : {};
}

/** A planned copy the new set could not restore, and on which fields. */
export interface IncompatibleCopy {
  copy: BranchCopy;
  mismatches: RestoreMismatch[];
}

/**
 * The copies whose member was taken under another image, backend, OS or compatibility class than the
 * new set's spec asks of that slot. A field the member does not record (a checkpoint from before it
 * was recorded) is not compared, nor an empty image (a snapshot without a base image, which vk-cocoon
 * does not guard); an empty class is compared: such memory may not resume on a certified class.
 */
export function incompatibleCopies(cs: CocoonSet, plan: readonly BranchCopy[]): IncompatibleCopy[] {
  const out: IncompatibleCopy[] = [];
  for (const copy of plan) {
    const wanted = specRestoreDependencies(cs, copy.member);
    if (!wanted) continue;
    const recorded = RESTORE_DEPENDENCIES.filter(
      (field) => copy.member[field] !== undefined && (field !== "image" || copy.member.image !== ""),
    );
    const taken = Object.fromEntries(
      recorded.map((field) => [field, copy.member[field] ?? ""]),
    ) as Partial<RestoreDependencies>;
    const mismatches = restoreMismatches({ ...wanted, ...taken }, wanted, recorded);
    if (mismatches.length > 0) out.push({ copy, mismatches });
  }
  return out;
}
