// The VM names a set answers for: those its spec gives its members (agents by slot, toolboxes by
// name) and those its status and bookkeeping annotations list, kept only where they are the set's own
// by the rule of contract/vmname.ts. Two sets sharing one of these names would share a repository.

import type { CocoonSet } from "../apis/v1/types.ts";
import { ANN_DELETE_VM_NAMES, ANN_HIBERNATE_RECLAIM } from "../contract/keys.ts";
import { byteOrder } from "../contract/order.ts";
import { agentVMName, isOwnVMName, toolboxVMName } from "../contract/vmname.ts";
import { readReclaim } from "./reclaimrecord.ts";

/** The stored `delete-vm-names` value: split on commas, whitespace trimmed, empties dropped. */
export function parseDeleteVMNames(raw: string | undefined): string[] {
  if (!raw) return [];
  return raw
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
}

/** The set's own VM names, sorted and without repeats; a name of anything else is left out. */
export function setVMNames(cs: CocoonSet): string[] {
  const namespace = cs.metadata.namespace ?? "";
  const setName = cs.metadata.name ?? "";
  const names = new Set<string>();
  const add = (vm: string | undefined): void => {
    if (vm && isOwnVMName(namespace, setName, vm)) names.add(vm);
  };
  const replicas = cs.spec?.agent?.replicas ?? 0;
  for (let slot = 0; slot <= replicas; slot++) add(agentVMName(namespace, setName, slot));
  for (const toolbox of cs.spec?.toolboxes ?? []) add(toolboxVMName(namespace, setName, toolbox.name));
  for (const agent of cs.status?.agents ?? []) add(agent.vmName);
  for (const toolbox of cs.status?.toolboxes ?? []) add(toolbox.vmName);
  const annotations = cs.metadata.annotations ?? {};
  for (const vm of parseDeleteVMNames(annotations[ANN_DELETE_VM_NAMES])) add(vm);
  const reclaim = readReclaim(annotations[ANN_HIBERNATE_RECLAIM]).value;
  for (const vm of [...reclaim.vms, ...reclaim.restore, ...reclaim.suspended]) add(vm);
  return [...names].sort(byteOrder);
}

/**
 * Whether `a` keeps a VM name it shares with `b`: a set that has VMs (its status lists them, or its
 * reclaim record holds them) before one that has none, then the earlier creationTimestamp, then the
 * smaller uid. A creationTimestamp has whole seconds, so two sets created within one second tie on
 * it: the one already running must not then be refused for the one just created.
 */
export function keepsSharedNames(a: CocoonSet, b: CocoonSet): boolean {
  const started = hasVMs(a);
  if (started !== hasVMs(b)) return started;
  const at = createdAt(a);
  const bt = createdAt(b);
  if (at !== bt) return at < bt;
  return byteOrder(a.metadata.uid ?? "", b.metadata.uid ?? "") < 0;
}

function hasVMs(cs: CocoonSet): boolean {
  const status = cs.status;
  return (
    (status?.agents ?? []).some((agent) => agent.vmName) ||
    (status?.toolboxes ?? []).some((toolbox) => toolbox.vmName) ||
    readReclaim(cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value.vms.length > 0
  );
}

/** A set without a readable creationTimestamp counts as the latest. */
function createdAt(cs: CocoonSet): number {
  const ms = Date.parse(cs.metadata.creationTimestamp ?? "");
  return Number.isNaN(ms) ? Number.POSITIVE_INFINITY : ms;
}

/** A VM name the set shares with another live set, which keeps it. */
export interface VMNameCollision {
  readonly vm: string;
  readonly holder: CocoonSet;
}

/**
 * The names of `vms` another set also answers for and keeps (keepsSharedNames), each with that set,
 * in the order of `vms`. `setsNaming` returns the live sets that answer for a name (this one among them or not).
 */
export function collisionsWithKeepers(
  cs: CocoonSet,
  vms: readonly string[],
  setsNaming: (vm: string) => readonly CocoonSet[],
): VMNameCollision[] {
  const key = setKey(cs);
  const out: VMNameCollision[] = [];
  for (const vm of vms) {
    const holder = setsNaming(vm)
      .filter((other) => setKey(other) !== key && keepsSharedNames(other, cs))
      .sort((a, b) => (keepsSharedNames(a, b) ? -1 : 1))[0];
    if (holder) out.push({ vm, holder });
  }
  return out;
}

function setKey(cs: CocoonSet): string {
  return `${cs.metadata.namespace ?? ""}/${cs.metadata.name ?? ""}`;
}
