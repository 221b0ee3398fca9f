// The reclaim record of steps 6 and 10 (decisions.md #1): the `hibernate-reclaim` CocoonSet
// annotation, in the newer Go operator's shape, so either operator can take over mid-suspend:
// {"generation": <int>, "vms": [...], "restore": [...], "suspended": [...]}.
// - vms: VMs whose :hibernate tag this set still owes a drop;
// - restore: VMs owed a restore (their pod went missing while suspended);
// - suspended: VMs of the current suspend, until the unsuspend bookkeeping has run.
// Every transition returns a new record; the caller persists each one before the next step, and a
// write whose encoding equals the current annotation is skipped.

import type { Pod } from "../apis/core.ts";
import { LIFECYCLE_READY } from "../contract/keys.ts";
import { readLifecycle } from "../contract/lifecycle.ts";
import { isVMLive, readHibernateState, vmNameOf } from "../contract/pod.ts";
import type { Decoded } from "./rebuild.ts";

export interface ReclaimRecord {
  readonly generation: number;
  readonly vms: readonly string[];
  readonly restore: readonly string[];
  readonly suspended: readonly string[];
}

export const EMPTY_RECLAIM: ReclaimRecord = { generation: 0, vms: [], restore: [], suspended: [] };

/** Reads the annotation; missing or `null` is an empty record, unreadable JSON too (with a warning). */
export function readReclaim(raw: string | undefined): Decoded<ReclaimRecord> {
  if (raw === undefined || raw === "") return { value: EMPTY_RECLAIM };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return {
      value: EMPTY_RECLAIM,
      warning: `hibernate-reclaim is not JSON, read as empty: ${(err as Error).message}`,
    };
  }
  if (parsed === null) return { value: EMPTY_RECLAIM };
  const record = decodeRecord(parsed);
  return record
    ? { value: record }
    : { value: EMPTY_RECLAIM, warning: "hibernate-reclaim is malformed, read as empty" };
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

/** Step 6: every managed VM of the owned pods joins the record and the suspended list. */
export function recordSuspend(record: ReclaimRecord, vms: Iterable<string>): ReclaimRecord {
  const list = [...vms];
  return { ...record, vms: union(record.vms, list), suspended: union(record.suspended, list) };
}

/**
 * Step 10 runs its bookkeeping when a suspended list exists or an owned pod still carries the
 * hibernate annotation; otherwise the pass makes no call for it.
 */
export function needsUnsuspendBookkeeping(record: ReclaimRecord, annotatedPodCount: number): boolean {
  return record.suspended.length > 0 || annotatedPodCount > 0;
}

/**
 * Step 10, first write: the record's generation becomes the set's, VMs of pods still carrying the
 * hibernate annotation are recorded (a set suspended by an older operator, an abandoned migration
 * quiesce), and every suspended VM whose pod is missing (deleted while suspended, or still
 * terminating) is owed a restore. `presentVMs` are the VM names of the classified (live, undeleted)
 * owned pods. VMs an earlier cycle recorded are not in the suspended list, so they are not owed one.
 */
export function beginUnsuspend(
  record: ReclaimRecord,
  generation: number,
  annotatedVMs: Iterable<string>,
  presentVMs: ReadonlySet<string>,
): ReclaimRecord {
  return oweRestoresToMissing(stampUnsuspend(record, generation, annotatedVMs), presentVMs);
}

/** beginUnsuspend's first half, its own write: the set's generation, and the annotated pods' VMs. */
export function stampUnsuspend(
  record: ReclaimRecord,
  generation: number,
  annotatedVMs: Iterable<string>,
): ReclaimRecord {
  return { ...record, generation, vms: union(record.vms, [...annotatedVMs]) };
}

/** beginUnsuspend's second half, its own write: suspended VMs without a present pod are owed a restore. */
export function oweRestoresToMissing(record: ReclaimRecord, presentVMs: ReadonlySet<string>): ReclaimRecord {
  const missing = record.suspended.filter((vm) => !presentVMs.has(vm));
  return { ...record, restore: union(record.restore, missing) };
}

/** Step 10, last write, after the hibernate annotations are cleared: the suspended list goes. */
export function finishUnsuspend(record: ReclaimRecord): ReclaimRecord {
  return { ...record, suspended: [] };
}

/**
 * A branch from a checkpoint (issue 19) is about to seed these VMs' `:hibernate` tags before their
 * first pod: each is recorded first, so step 10 (once the VM runs, at this generation or later) or the
 * teardown drops whatever copy lands, even from a branch that never completes.
 */
export function recordBranchTargets(
  record: ReclaimRecord,
  generation: number,
  vms: Iterable<string>,
): ReclaimRecord {
  return { ...record, generation, vms: union(record.vms, [...vms]) };
}

/** Every copy of the branch is in place: each VM is owed a restore, so steps 11–13 restore-mark its pod. */
export function oweBranchRestores(record: ReclaimRecord, vms: Iterable<string>): ReclaimRecord {
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

/**
 * Step 10: the recorded VMs whose pod has woken — no hibernate annotation, a live VM, and vk-cocoon
 * reporting ready at the record's generation or later — so their :hibernate tag can be dropped
 * (a later recreate then fresh-boots instead of restoring a stale snapshot). In record order.
 */
export function wokenRecordedVMs(record: ReclaimRecord, pods: Iterable<Pod>): string[] {
  const woken = new Set<string>();
  for (const pod of pods) {
    const lifecycle = readLifecycle(pod);
    if (
      !readHibernateState(pod) &&
      isVMLive(pod) &&
      lifecycle.state === LIFECYCLE_READY &&
      lifecycle.observedGeneration >= record.generation
    ) {
      woken.add(vmNameOf(pod));
    }
  }
  return record.vms.filter((vm) => woken.has(vm));
}

/** Appends what is new, keeping first-seen order. */
function union(list: readonly string[], more: readonly string[]): string[] {
  const out = [...list];
  for (const item of more) if (!out.includes(item)) out.push(item);
  return out;
}
