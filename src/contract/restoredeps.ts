// What a snapshot can be restored only under. vk-cocoon refuses a `:hibernate` snapshot recorded from
// another image, refuses one another hypervisor took, and a snapshot's guest OS and CPU ABI (the
// snapshot compatibility class its node certifies) are baked into its memory: a VM restored under any
// other value of these is refused or would resume on a machine it was not taken for. The CocoonSet
// pass (a suspended set edited) and the checkpoint room (a branch) both compare against this one list.

import {
  type CocoonSet,
  DEFAULT_BACKEND,
  DEFAULT_OS,
  type VMOptions,
  withDefault,
} from "../apis/v1/types.ts";
import { ANN_BACKEND, ANN_IMAGE, ANN_OS, LABEL_SNAPSHOT_CPU_CLASS, ROLE_TOOLBOX } from "./keys.ts";

/** The values a snapshot was taken under, or that a pod about to restore it asks for. */
export interface RestoreDependencies {
  /** The pod's `cocoonset.cocoonstack.io/image` (the snapshot's `cocoonstack.snapshot.baseimage`). */
  image: string;
  /** The hypervisor, `vm.cocoonstack.io/backend`, defaulted. */
  backend: string;
  /** The guest OS, `cocoonset.cocoonstack.io/os`, defaulted. */
  os: string;
  /** The node label `cocoonstack.io/snapshot-cpu-class` the pod selects; "" when none. */
  snapshotCompatibilityClass: string;
}

export type RestoreDependency = keyof RestoreDependencies;

export const RESTORE_DEPENDENCIES: readonly RestoreDependency[] = [
  "image",
  "backend",
  "os",
  "snapshotCompatibilityClass",
];

/** One value that differs between what a snapshot was taken under and what is asked of it now. */
export interface RestoreMismatch {
  field: RestoreDependency;
  taken: string;
  wanted: string;
}

interface PodShape {
  metadata: { annotations?: Record<string, string> };
  spec?: { nodeSelector?: Record<string, string> };
}

/** What the VM of this pod runs under: a snapshot of it was, or will be, taken under these. */
export function podRestoreDependencies(pod: PodShape): RestoreDependencies {
  const annotations = pod.metadata.annotations ?? {};
  return {
    image: annotations[ANN_IMAGE] ?? "",
    backend: withDefault(annotations[ANN_BACKEND], DEFAULT_BACKEND),
    os: withDefault(annotations[ANN_OS], DEFAULT_OS),
    snapshotCompatibilityClass: pod.spec?.nodeSelector?.[LABEL_SNAPSHOT_CPU_CLASS] ?? "",
  };
}

/** A VM's place in a set: an agent slot, or a toolbox by name. */
export interface SetPlace {
  role: string;
  toolbox?: string;
}

/**
 * What a pod the set's spec builds for this place asks of a snapshot; undefined for a toolbox the
 * spec no longer has (nothing of the spec will restore it).
 */
export function specRestoreDependencies(cs: CocoonSet, place: SetPlace): RestoreDependencies | undefined {
  const options: (VMOptions & { image?: string }) | undefined =
    place.role === ROLE_TOOLBOX
      ? cs.spec.toolboxes?.find((toolbox) => toolbox.name === place.toolbox)
      : cs.spec.agent;
  if (!options) return undefined;
  return {
    image: options.image ?? "",
    backend: withDefault(options.backend, DEFAULT_BACKEND),
    os: withDefault(options.os, DEFAULT_OS),
    snapshotCompatibilityClass: cs.spec.snapshotCompatibilityClass ?? "",
  };
}

/** The fields among `fields` on which `wanted` differs from `taken`, in RESTORE_DEPENDENCIES order. */
export function restoreMismatches(
  taken: RestoreDependencies,
  wanted: RestoreDependencies,
  fields: readonly RestoreDependency[] = RESTORE_DEPENDENCIES,
): RestoreMismatch[] {
  return RESTORE_DEPENDENCIES.filter((field) => fields.includes(field) && taken[field] !== wanted[field]).map(
    (field) => ({ field, taken: taken[field], wanted: wanted[field] }),
  );
}

/** `backend cloud-hypervisor (the spec asks for firecracker)`, for each mismatch, comma-separated. */
export function describeMismatches(mismatches: readonly RestoreMismatch[]): string {
  return mismatches
    .map((m) => `${m.field} ${m.taken || "(none)"} (the spec asks for ${m.wanted || "(none)"})`)
    .join(", ");
}
