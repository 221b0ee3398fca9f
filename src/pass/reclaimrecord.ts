// The reclaim record: the `hibernate-reclaim` CocoonSet annotation, in the newer Go operator's shape
// so either operator can take over mid-suspend:
// {"generation": <int>, "vms": [...], "restore": [...], "suspended": [...]}.
// - vms: VMs whose :hibernate tag this set still owes a drop (once the VM runs again, or at teardown);
// - restore: VMs owed a restore (a pod created for one is restore-marked while its tag exists);
// - suspended: VMs of the current suspend, until the unsuspend bookkeeping has run.
// Any step may record VMs, owe them restores or drop them; every transition returns a new record, and
// the caller persists each one before the next step (writes.ts persistReclaim skips an unchanged one).

import { type Decoded, decodeJsonAnnotation } from "../contract/annotationjson.ts";

export interface ReclaimRecord {
  readonly generation: number;
  readonly vms: readonly string[];
  readonly restore: readonly string[];
  readonly suspended: readonly string[];
}

export const EMPTY_RECLAIM: ReclaimRecord = { generation: 0, vms: [], restore: [], suspended: [] };

/** Reads the annotation; missing or `null` is an empty record, unreadable JSON too (with a warning). */
export function readReclaim(raw: string | undefined): Decoded<ReclaimRecord> {
  return decodeJsonAnnotation(
    "hibernate-reclaim",
    raw,
    () => EMPTY_RECLAIM,
    (parsed) => decodeRecord(parsed) ?? "is malformed",
  );
}

function decodeRecord(parsed: unknown): ReclaimRecord | undefined {
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
  const { generation, vms, restore, suspended } = parsed as Record<string, unknown>;
  if (generation !== undefined && generation !== null && !Number.isInteger(generation)) return undefined;
  const lists = [vms, restore, suspended].map(decodeList);
  const [vmList, restoreList, suspendedList] = lists;
  if (!vmList || !restoreList || !suspendedList) return undefined;
  return {
    generation: (generation as number | null | undefined) ?? 0,
    vms: vmList,
    restore: restoreList,
    suspended: suspendedList,
  };
}

function decodeList(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) return undefined;
  return union([], value);
}

/** The annotation value; null when `vms` is empty, meaning the annotation is removed. */
export function encodeReclaim(record: ReclaimRecord): string | null {
  if (record.vms.length === 0) return null;
  const out: {
    generation: number;
    vms: readonly string[];
    restore?: readonly string[];
    suspended?: readonly string[];
  } = { generation: record.generation, vms: record.vms };
  if (record.restore.length > 0) out.restore = record.restore;
  if (record.suspended.length > 0) out.suspended = record.suspended;
  return JSON.stringify(out);
}

/**
 * The merge-patch value for writing `next` over the current annotation: a string to set, null to
 * remove, undefined when nothing changes (skip the patch).
 */
export function reclaimPatchValue(
  current: string | undefined,
  next: ReclaimRecord,
): string | null | undefined {
  const encoded = encodeReclaim(next);
  if (encoded === null) return current === undefined ? undefined : null;
  return encoded === current ? undefined : encoded;
}

/**
 * VMs about to get a `:hibernate` tag this set did not snapshot (a seed copied in before their first
 * pod): each is recorded first, at this generation, so step 10 (once the VM runs) or the teardown
 * drops whatever copy lands, even from a seeding that never completes.
 */
export function recordVMs(record: ReclaimRecord, generation: number, vms: Iterable<string>): ReclaimRecord {
  return { ...record, generation, vms: union(record.vms, [...vms]) };
}

/** Each VM is owed a restore: steps 11–13 restore-mark the pod they create for it. */
export function oweRestores(record: ReclaimRecord, vms: Iterable<string>): ReclaimRecord {
  return { ...record, restore: union(record.restore, [...vms]) };
}

/** The VM's tag was dropped (woken, or the image rule / a fork-from create dropped it): forget it. */
export function dropVM(record: ReclaimRecord, vm: string): ReclaimRecord {
  return dropVMs(record, [vm]);
}

export function dropVMs(record: ReclaimRecord, vms: Iterable<string>): ReclaimRecord {
  const gone = new Set(vms);
  const keep = (list: readonly string[]) => list.filter((vm) => !gone.has(vm));
  return {
    ...record,
    vms: keep(record.vms),
    restore: keep(record.restore),
    suspended: keep(record.suspended),
  };
}

/** Steps 11–13: a pod created for this VM is marked for restore when its :hibernate tag exists. */
export function owesRestore(record: ReclaimRecord, vm: string): boolean {
  return record.restore.includes(vm);
}

export function isRecorded(record: ReclaimRecord, vm: string): boolean {
  return record.vms.includes(vm);
}

/** Appends what is new, keeping first-seen order. */
export function union(list: readonly string[], more: readonly string[]): string[] {
  const out = [...list];
  for (const item of more) if (!out.includes(item)) out.push(item);
  return out;
}
