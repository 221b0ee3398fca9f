// The reclaim record: the `hibernate-reclaim` CocoonSet annotation, in the newer Go operator's shape
// so either operator can take over mid-suspend:
// {"generation": <int>, "vms": [...], "restore": [...], "suspended": [...], "releasedUnder": {...}}.
// - vms: VMs whose :hibernate tag this set still owes a drop (once the VM runs again, or at teardown);
// - restore: VMs owed a restore (a pod created for one is restore-marked while its tag exists);
// - suspended: VMs of the current suspend, until the unsuspend bookkeeping has run;
// - releasedUnder (beyond the Go operator, which ignores it and drops it when it rewrites the record):
//   per VM whose pod a release suspend deleted, what its snapshot was taken under, for the pod that
//   will restore it to be compared against.
// Any step may record VMs, owe them restores or drop them; every transition returns a new record, and
// the caller persists each one before the next step (writes.ts persistReclaim skips an unchanged one).

import { type Decoded, decodeJsonAnnotation } from "../contract/annotationjson.ts";
import type { RestoreDependencies } from "../contract/restoredeps.ts";

/** What a released VM's snapshot was taken under (its image is on the snapshot itself). */
export type ReleasedDependencies = Readonly<Omit<RestoreDependencies, "image">>;

export interface ReclaimRecord {
  readonly generation: number;
  readonly vms: readonly string[];
  readonly restore: readonly string[];
  readonly suspended: readonly string[];
  /** Absent: nothing recorded (a record of the Go operator, or of an older version of this one). */
  readonly releasedUnder?: Readonly<Record<string, ReleasedDependencies>>;
}

export const EMPTY_RECLAIM: ReclaimRecord = { generation: 0, vms: [], restore: [], suspended: [] };

/**
 * Reads the annotation; missing or `null` is an empty record, unreadable JSON too (with a warning).
 * A malformed `releasedUnder` alone reads as absent, with a warning, and the rest of the record is
 * kept: the tags owed a drop and the restores owed outweigh a comparison that can only hold a wake.
 */
export function readReclaim(raw: string | undefined): Decoded<ReclaimRecord> {
  let releasedWarning: string | undefined;
  const decoded = decodeJsonAnnotation<ReclaimRecord>(
    "hibernate-reclaim",
    raw,
    () => EMPTY_RECLAIM,
    (parsed) => {
      const record = decodeRecord(parsed);
      if (!record) return "is malformed";
      const released = decodeReleased((parsed as Record<string, unknown>).releasedUnder);
      if (released === undefined) {
        releasedWarning = "hibernate-reclaim releasedUnder is malformed, read as absent";
        return record;
      }
      return Object.keys(released).length > 0 ? { ...record, releasedUnder: released } : record;
    },
  );
  return releasedWarning && !decoded.warning ? { ...decoded, warning: releasedWarning } : decoded;
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

function decodeReleased(value: unknown): Record<string, ReleasedDependencies> | undefined {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) return undefined;
  const out: Record<string, ReleasedDependencies> = {};
  for (const [vm, entry] of Object.entries(value)) {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return undefined;
    const { backend, os, snapshotCompatibilityClass } = entry as Record<string, unknown>;
    if (
      typeof backend !== "string" ||
      typeof os !== "string" ||
      typeof snapshotCompatibilityClass !== "string"
    )
      return undefined;
    out[vm] = { backend, os, snapshotCompatibilityClass };
  }
  return out;
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
    releasedUnder?: Record<string, ReleasedDependencies>;
  } = { generation: record.generation, vms: record.vms };
  if (record.restore.length > 0) out.restore = record.restore;
  if (record.suspended.length > 0) out.suspended = record.suspended;
  const released = Object.entries(record.releasedUnder ?? {});
  if (released.length > 0) {
    out.releasedUnder = Object.fromEntries(
      released.map(([vm, d]) => [
        vm,
        { backend: d.backend, os: d.os, snapshotCompatibilityClass: d.snapshotCompatibilityClass },
      ]),
    );
  }
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
  const { releasedUnder, ...rest } = record;
  const released = Object.entries(releasedUnder ?? {}).filter(([vm]) => !gone.has(vm));
  return {
    ...rest,
    vms: keep(record.vms),
    restore: keep(record.restore),
    suspended: keep(record.suspended),
    ...(released.length > 0 ? { releasedUnder: Object.fromEntries(released) } : {}),
  };
}

/**
 * A release suspend is about to delete these VMs' pods: what each snapshot was taken under is
 * recorded (replacing what an earlier release recorded), so the pod that restores it is held when the
 * spec has moved away from it. Only VMs the record holds are recorded: the record is their lifetime.
 */
export function recordReleased(
  record: ReclaimRecord,
  released: Readonly<Record<string, ReleasedDependencies>>,
): ReclaimRecord {
  const entries = Object.entries(released).filter(([vm]) => record.vms.includes(vm));
  if (entries.length === 0) return record;
  return { ...record, releasedUnder: { ...record.releasedUnder, ...Object.fromEntries(entries) } };
}

/** The VM's released snapshot is gone (its wake dropped it): nothing is left to hold its pod to. */
export function forgetReleased(record: ReclaimRecord, vm: string): ReclaimRecord {
  if (!record.releasedUnder?.[vm]) return record;
  const { [vm]: _gone, ...rest } = record.releasedUnder;
  const { releasedUnder: _all, ...others } = record;
  return Object.keys(rest).length > 0 ? { ...others, releasedUnder: rest } : others;
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
