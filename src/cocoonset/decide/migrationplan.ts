// Pure decisions of the cross-node migration of the main (step 8). Live
// state is never lost: the old main dies only after its :hibernate snapshot exists AND this
// controller quiesced it, and the snapshot drops only after the new VM runs. Each destructive write
// has its own predicate below, so the safety condition is stated, and tested, once.

import type { Pod } from "../../apis/core.ts";
import type { CocoonSet } from "../../apis/v1/types.ts";
import { LABEL_HOSTNAME } from "../../contract/keys.ts";
import { isVMLive, readHibernateState } from "../../contract/pod.ts";
import type { CachedHibernation } from "../../pass/pass.ts";

/** spec.nodeName: the node the main is pinned to, "" when unpinned. */
export function migrationTarget(cs: CocoonSet): string {
  return cs.spec.nodeName ?? "";
}

/** The durable marker of a migration in flight, persisted before its first side effect. */
export function isMigrating(cs: CocoonSet): boolean {
  return cs.status?.phase === "Migrating";
}

function isScheduled(pod: Pod): boolean {
  return (pod.spec.nodeName ?? "") !== "";
}

/**
 * The main still waits for a node under a required hostname affinity that spec.nodeName no
 * longer names (a re-pin away from a full node, or a removed pin). It has no VM yet, so deleting it
 * loses nothing; read from the pod alone, so a settled pass costs no call.
 */
export function awaitsNodeNoLongerPinned(main: Pod, target: string): boolean {
  if (isScheduled(main)) return false;
  const terms =
    main.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  return (terms ?? []).some((term) =>
    (term.matchExpressions ?? []).some(
      (requirement) =>
        requirement.key === LABEL_HOSTNAME &&
        !(requirement.values?.length === 1 && requirement.values[0] === target),
    ),
  );
}

/** The step engages (given a registry) on a pin, or on a migration a removed pin must still finish. */
export function migrationEngaged(target: string, migrating: boolean): boolean {
  return target !== "" || migrating;
}

/**
 * Every case in which no snapshot could make the step act: outside a migration,
 * a main that is not quiesced and sits on its target (live or still coming up) or is still unscheduled
 * is the normal flow's. Safe to skip the probe because Migrating is persisted before any side effect.
 */
export function settledWithoutProbe(main: Pod | undefined, target: string, migrating: boolean): boolean {
  if (migrating || !main || readHibernateState(main)) return false;
  const node = main.spec.nodeName ?? "";
  return node === "" || node === target;
}

/**
 * The skip rule a clear of the hibernate annotation shares with step 10: a CocoonHibernation that
 * wants the pod hibernated (desire=Hibernate) or is hibernating it owns the annotation.
 */
export function hibernationOwnsPod(hibernations: readonly CachedHibernation[], podName: string): boolean {
  return hibernations.some(
    (ch) =>
      ch.spec.podRef.name === podName &&
      (ch.spec.desire === "Hibernate" || ch.status?.phase === "Hibernating"),
  );
}

/**
 * The pod belongs to the hibernation reconciler, which owns it (above) or tracks it
 * without having settled Active (a wake in flight, or a failed wake retrying that still needs the
 * snapshot). The migration hands back rather than race it.
 */
export function hibernationClaimsPod(hibernations: readonly CachedHibernation[], podName: string): boolean {
  return (
    hibernationOwnsPod(hibernations, podName) ||
    hibernations.some((ch) => ch.spec.podRef.name === podName && ch.status?.phase !== "Active")
  );
}

/**
 * A scheduled main on a node other than the pin. An unscheduled one has no VM to move, so it is never
 * "off target": awaitsNodeNoLongerPinned handles one waiting under an outdated pin.
 */
export function mainOffTarget(main: Pod | undefined, target: string): boolean {
  return main !== undefined && target !== "" && isScheduled(main) && main.spec.nodeName !== target;
}

/**
 * Step 7's exception: a pinned main running elsewhere carries the migration's quiesce, which the
 * failed-main clear must keep.
 */
export function migrationPending(cs: CocoonSet, main: Pod | undefined): boolean {
  return mainOffTarget(main, migrationTarget(cs));
}

/** The hibernate annotation: the quiesce this controller (a migration, or a suspend) asked for. */
export function quiesced(main: Pod): boolean {
  return readHibernateState(main);
}

/** Safety: the old main may be deleted — the snapshot exists AND this controller quiesced it. */
export function snapshotExistsAndWeQuiesced(
  main: Pod | undefined,
  target: string,
  snapshotExists: boolean,
): boolean {
  return snapshotExists && main !== undefined && mainOffTarget(main, target) && quiesced(main);
}

/** Safety: the migration's snapshot may be dropped — the new VM runs where the set wants it. */
export function newVMRuns(main: Pod | undefined, target: string): boolean {
  if (!main || quiesced(main) || !isVMLive(main)) return false;
  return target === "" || main.spec.nodeName === target;
}

/**
 * Safety: a tag found while the main runs off target unquiesced is a leftover only once that main
 * runs a live VM; until then a wake or restore may still read it.
 */
export function leftoverTagUnread(main: Pod | undefined, target: string): boolean {
  return main !== undefined && mainOffTarget(main, target) && !quiesced(main) && isVMLive(main);
}

export type MigrationAction =
  /** The normal flow (or a CocoonHibernation) owns the main. */
  | { kind: "hand-back" }
  /** Persist Migrating, then set hibernate=true on the main. */
  | { kind: "quiesce-old-main"; main: Pod }
  /** Delete a tag this controller never asked for, before the migration starts. */
  | { kind: "drop-leftover-tag" }
  /** Flag keep-snapshot-on-delete (best-effort), then delete the old main. */
  | { kind: "delete-old-main"; main: Pod }
  /** Create the main restore-flagged on the target. */
  | { kind: "recreate-from-snapshot" }
  /** A re-target back mid-migration: clear hibernate on the main where it is. */
  | { kind: "wake-in-place"; main: Pod }
  /** The restored main is not live yet: stay Migrating and poll. */
  | { kind: "await-restore"; main: Pod }
  /** The new VM runs: delete the snapshot. */
  | { kind: "drop-snapshot" };

export interface MigrationState {
  target: string;
  migrating: boolean;
  main: Pod | undefined;
  snapshotExists: boolean;
}

const HAND_BACK: MigrationAction = { kind: "hand-back" };

/** What step 8 does once the registry has been probed. */
export function decideMigration(state: MigrationState): MigrationAction {
  const { target, migrating, main, snapshotExists } = state;
  if (!main) return snapshotExists ? { kind: "recreate-from-snapshot" } : HAND_BACK;
  if (!snapshotExists) return mainOffTarget(main, target) ? { kind: "quiesce-old-main", main } : HAND_BACK;
  if (mainOffTarget(main, target)) {
    if (snapshotExistsAndWeQuiesced(main, target, snapshotExists)) return { kind: "delete-old-main", main };
    return leftoverTagUnread(main, target) ? { kind: "drop-leftover-tag" } : HAND_BACK;
  }
  // Quiesced where it should be: a re-target back only mid-migration; otherwise step 10's unsuspend.
  if (quiesced(main) && (target === "" || main.spec.nodeName === target)) {
    return migrating ? { kind: "wake-in-place", main } : HAND_BACK;
  }
  if (newVMRuns(main, target)) return { kind: "drop-snapshot" };
  // Not live yet: without the durable Migrating phase this is a CocoonHibernation wake, not ours.
  return migrating ? { kind: "await-restore", main } : HAND_BACK;
}
