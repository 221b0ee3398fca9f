// Step 8: a spec.nodeName pin that differs from the main's node moves the main across nodes —
// quiesce it, wait for its :hibernate snapshot, delete it, recreate it restore-flagged on the target,
// and drop the snapshot once the new VM runs. Phase=Migrating persists throughout; every decision
// reads durable state (the phase, the pod, the tag), so any pass can resume it. Decisions live in
// ../migration.ts; this module only performs them, one awaited write at a time.

import type { Pod } from "../../apis/core.ts";
import {
  ANN_HIBERNATE,
  ANN_IMAGE,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
  ROLE_MAIN,
  TAG_HIBERNATE,
} from "../../contract/keys.ts";
import { podKey, unschedulableMessage } from "../../contract/pod.ts";
import { agentPodName, agentVMName } from "../../contract/vmname.ts";
import { REASON_PRE_HIBERNATE_FAILED } from "../../guest/keys.ts";
import { migrateUnschedulableTotal } from "../../metrics/cocoon.ts";
import {
  awaitCreated,
  CONTINUE,
  finish,
  type Pass,
  REQUEUE_POLL_MS,
  type StepOutcome,
} from "../../pass/pass.ts";
import { preHibernateGate } from "../../pass/prehibernate.ts";
import {
  deletePodAsRead,
  patchPodFlag,
  patchPodFlagAsRead,
  readPodFromServer,
  setEvent,
} from "../../pass/writes.ts";
import { createPod } from "../create.ts";
import {
  awaitsNodeNoLongerPinned,
  decideMigration,
  hibernationClaimsPod,
  isMigrating,
  leftoverTagUnread,
  migrationEngaged,
  migrationTarget,
  newVMRuns,
  settledWithoutProbe,
  snapshotExistsAndWeQuiesced,
} from "../decide/migrationplan.ts";
import { buildMainPod } from "../decide/pods.ts";
import { prepareSnapshotForCreate, readSnapshotOnce } from "../imagerule.ts";
import { writeStatus } from "./status.ts";

export const EVENT_MIGRATE_NO_CAPACITY = "MigrateNoCapacity";

export async function reconcileMigration(pass: Pass): Promise<StepOutcome> {
  const main = pass.pods.main;
  const target = migrationTarget(pass.cs);
  // A main waiting under an affinity the pin no longer names goes first, whatever the phase or registry.
  if (main && awaitsNodeNoLongerPinned(main, target)) return recreateUnderCurrentPin(pass, main, target);

  const registry = pass.deps.registry;
  const migrating = isMigrating(pass.cs);
  if (!registry || !migrationEngaged(target, migrating)) return CONTINUE;
  if (settledWithoutProbe(main, target, migrating)) return CONTINUE;
  if (main && hibernationClaimsPod(pass.hibernationsInNamespace(), main.metadata.name ?? "")) return CONTINUE;
  // The restored main created by an earlier pass, not in the cache yet: no probe until it shows.
  if (!main && pass.awaitingCreate(agentPodName(pass.name, 0))) return awaitCreated(pass);

  const vmName = agentVMName(pass.namespace, pass.name, 0);
  // A probe error fails the pass: the normal flow would clear the quiesce or fresh-boot over the tag.
  // Without a main the probe is the manifest read of the recreate (and of step 11 when the image rule
  // leaves the main to it), so a create attempt reads the manifest once.
  const snapshotExists = main
    ? await registry.hasManifest(vmName, TAG_HIBERNATE, pass.signal)
    : (await readSnapshotOnce(pass, registry, vmName)) !== null;
  const action = decideMigration({ target, migrating, main, snapshotExists });
  const log = pass.deps.log.child({ cocoonset: `${pass.namespace}/${pass.name}`, vm: vmName, target });

  switch (action.kind) {
    case "hand-back":
      return CONTINUE;
    case "quiesce-old-main": {
      // Migrating first, so a pass that finds the quiesce can trust the phase.
      pass.phase = "Migrating";
      await writeStatus(pass, "Migrating");
      // The main's pre-hibernate hooks come first; one failed under Fail keeps it running where it is.
      const hooks = preHibernateGate(pass, [action.main]);
      if (hooks.action === "wait") {
        log.info(`migration: waiting on pre-hibernate hooks: ${hooks.message}`);
        return finish({ requeueAfterMs: REQUEUE_POLL_MS });
      }
      if (hooks.action === "refused") {
        // Said on the set each time the hook has failed again: Migrating alone would not say why.
        setEvent(
          pass,
          "Warning",
          REASON_PRE_HIBERNATE_FAILED,
          `migration to ${target} waits: ${hooks.message}`,
        );
        return finish({ requeueAfterMs: hooks.retryAfterMs });
      }
      log.info({ from: action.main.spec.nodeName }, "migration: quiescing the main for its snapshot");
      await patchPodFlag(pass, action.main, ANN_HIBERNATE, true);
      return finish({ requeueAfterMs: REQUEUE_POLL_MS });
    }
    case "drop-leftover-tag": {
      // The cached main may predate this controller's own quiesce, whose snapshot the probe just saw:
      // the drop is irreversible, so it needs the main as the API server holds it after the probe.
      const fresh = main && (await readPodFromServer(pass, main));
      if (!leftoverTagUnread(fresh, target)) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
      log.warn("migration: dropping a :hibernate tag this controller never asked for");
      await registry.deleteIfPresent(vmName, TAG_HIBERNATE, pass.signal);
      return markMigrating(pass);
    }
    case "delete-old-main": {
      // The quiesce must hold on the server: a cached annotation that a wake in place has since
      // cleared would have the woken VM deleted.
      const fresh = await readPodFromServer(pass, action.main);
      if (!fresh || !snapshotExistsAndWeQuiesced(fresh, target, true))
        return finish({ requeueAfterMs: REQUEUE_POLL_MS });
      // Migrating before the delete: a pass that does not find it skips the probe once the new main
      // runs, and the snapshot the migration restores from would stay behind.
      await persistMigrating(pass);
      // The flag and the delete go to the pod as checked: one woken since is not deleted.
      const flagged = await flagKeepSnapshot(pass, fresh);
      if (flagged === undefined || !(await deletePodAsRead(pass, flagged)))
        return finish({ requeueAfterMs: REQUEUE_POLL_MS });
      log.info(
        { from: action.main.spec.nodeName },
        "migration: snapshot in the registry, deleted the old main",
      );
      return finish({ requeueAfterMs: REQUEUE_POLL_MS });
    }
    case "recreate-from-snapshot":
      return recreateFromSnapshot(pass, vmName);
    case "wake-in-place":
      log.info("migration: main quiesced on its target, waking it in place");
      await patchPodFlag(pass, action.main, ANN_HIBERNATE, false);
      return markMigrating(pass);
    case "await-restore":
      reportNoCapacity(pass, action.main);
      return markMigrating(pass);
    case "drop-snapshot": {
      // As above: a cached main that predates a re-target's quiesce would look like the new VM running.
      const fresh = main && (await readPodFromServer(pass, main));
      if (!newVMRuns(fresh, target)) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
      log.info("migration: the new VM runs, dropping the snapshot");
      await registry.deleteIfPresent(vmName, TAG_HIBERNATE, pass.signal);
      return markMigrating(pass);
    }
  }
}

/**
 * The main waits under an affinity the pin no longer names and has no VM yet, so deleting it loses
 * nothing; the next pass recreates it under the current pin (this step from the snapshot when one
 * exists, else step 9 or 11).
 */
async function recreateUnderCurrentPin(pass: Pass, main: Pod, target: string): Promise<StepOutcome> {
  // "No VM yet" is only true of the pod as the API server holds it: a cache that has not seen the
  // binding would have a running VM deleted (reliability suite, api-faults).
  const fresh = await readPodFromServer(pass, main);
  if (!fresh || !awaitsNodeNoLongerPinned(fresh, target)) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  // Bound (and its VM started) after the read: not this pod any more, nothing deleted.
  if (!(await deletePodAsRead(pass, fresh))) return finish({ requeueAfterMs: REQUEUE_POLL_MS });
  pass.deps.log.info(
    { cocoonset: `${pass.namespace}/${pass.name}`, pod: main.metadata.name, target: target || "(any node)" },
    "main waited for a node it is no longer pinned to; deleted to be recreated",
  );
  return finish({ requeue: true });
}

/**
 * Lets the target node fetch the snapshot from the source node instead of the registry, on the pod as
 * read: the pod to delete (as flagged, or as read when the flag failed: best-effort, a failed flag
 * costs a registry pull, whereas blocking the delete would stall the migration), or undefined when
 * the pod changed since the read.
 */
async function flagKeepSnapshot(pass: Pass, fresh: Pod): Promise<Pod | undefined> {
  try {
    return await patchPodFlagAsRead(pass, fresh, ANN_KEEP_SNAPSHOT_ON_DELETE, true);
  } catch (err) {
    pass.deps.log.warn(
      { pod: podKey(fresh), err },
      "migration: keep-snapshot-on-delete not set; the target will pull",
    );
    return fresh;
  }
}

/** The restore-flagged main on the target; an image-rule drop leaves a fresh boot to step 11. */
async function recreateFromSnapshot(pass: Pass, vmName: string): Promise<StepOutcome> {
  const pod = buildMainPod(pass.cs, { restore: true });
  const snapshot = await prepareSnapshotForCreate(pass, {
    podName: agentPodName(pass.name, 0),
    vmName,
    image: pod.metadata.annotations?.[ANN_IMAGE] ?? "",
    role: ROLE_MAIN,
    wantRestore: true,
  });
  if (!snapshot.restore) return CONTINUE;
  // Migrating before the create, as before the delete above.
  await persistMigrating(pass);
  // The old main still terminating holds the name: wait for it.
  await createPod(pass, pod);
  return finish({ requeueAfterMs: REQUEUE_POLL_MS });
}

/** The scheduler has no seat for the restored main on its target. */
function reportNoCapacity(pass: Pass, main: Pod): void {
  const message = unschedulableMessage(main);
  if (message === undefined) return;
  migrateUnschedulableTotal.inc({ namespace: pass.namespace, cocoonset: pass.name });
  setEvent(
    pass,
    "Warning",
    EVENT_MIGRATE_NO_CAPACITY,
    `main pod ${main.metadata.name ?? ""} unschedulable: ${message}`,
  );
}

/**
 * The durable marker of a migration in flight: written before each side effect that starts or
 * continues one, so a pass that skips the probe (settledWithoutProbe) never leaves one half done.
 */
async function persistMigrating(pass: Pass): Promise<void> {
  pass.phase = "Migrating";
  await writeStatus(pass, "Migrating");
}

async function markMigrating(pass: Pass): Promise<StepOutcome> {
  await persistMigrating(pass);
  return finish({ requeueAfterMs: REQUEUE_POLL_MS });
}
