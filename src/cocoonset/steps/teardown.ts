// Step 2: a set being deleted loses its pods first, then its snapshot tags, then its finalizer.
// The VM names to GC are stashed on the set before the first pod delete, so the cleanup survives a
// restart mid-teardown and covers VMs the status never listed. Only the set's own VMs are collected:
// a stashed name that is not the set's, or that another live set keeps (pass/setvms.ts), is
// left alone with a Warning.

import type { Pod } from "../../apis/core.ts";
import type { CocoonSet } from "../../apis/v1/types.ts";
import { ANN_DELETE_VM_NAMES, FINALIZER_COCOONSET, TAG_HIBERNATE, TAG_LATEST } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { isControlledBy } from "../../contract/pod.ts";
import { shouldSnapshotVM } from "../../contract/snapshotpolicy.ts";
import { extractAgentSlot, inferRoleFromSlot } from "../../contract/vmname.ts";
import type { Result } from "../../controller/reconciler.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { classifyPods } from "../../pass/classify.ts";
import { Pass, type PassDeps, REQUEUE_POLL_MS } from "../../pass/pass.ts";
import { collisionsWithKeepers, parseDeleteVMNames } from "../../pass/setvms.ts";
import { keepOwnVMNames, setEvent } from "../../pass/writes.ts";
import { LABEL_CLAIMED_FROM, LABEL_POOL } from "../../pool/keys.ts";
import { deleteAfterStash, stashVMNames } from "../deletepods.ts";
import { waitForHolder } from "../teardownhold.ts";
import { collisionMessage, REASON_VM_NAME_COLLISION } from "./collision.ts";

/** A required tag the teardown could not delete (the registry refused or did not answer). */
export const REASON_SNAPSHOT_CLEANUP_FAILED = "SnapshotCleanupFailed";

/** One registry tag the teardown probes and deletes when present. */
export interface TagToCollect {
  vm: string;
  tag: typeof TAG_HIBERNATE | typeof TAG_LATEST;
  /** A :hibernate failure keeps the finalizer; a :latest failure is only logged. */
  required: boolean;
}

/**
 * The tags to GC, in order: VMs sorted, for each its :hibernate (whatever the policy: hibernate
 * pushes ignore it), then its :latest where vk-cocoon never pushes one for that VM's role, or for
 * every VM when `everyLatest` (a set whose name is never used again, so no later set restores it).
 */
export function tagsToCollect(
  namespace: string,
  setName: string,
  policy: string,
  vmNames: readonly string[],
  everyLatest = false,
): TagToCollect[] {
  const tags: TagToCollect[] = [];
  for (const vm of [...vmNames].sort(byteOrder)) {
    tags.push({ vm, tag: TAG_HIBERNATE, required: true });
    const role = inferRoleFromSlot(extractAgentSlot(namespace, setName, vm));
    if (everyLatest || !shouldSnapshotVM(policy, role)) tags.push({ vm, tag: TAG_LATEST, required: false });
  }
  return tags;
}

/**
 * A pool's member, claimed or not: its name was generated for it and no set takes it again, so a
 * :latest its VMs pushed on delete would be read by nobody and kept for ever.
 */
function isPoolMember(cs: CocoonSet): boolean {
  const labels = cs.metadata.labels ?? {};
  return labels[LABEL_POOL] !== undefined || labels[LABEL_CLAIMED_FROM] !== undefined;
}

export async function teardown(cs: CocoonSet, deps: PassDeps, signal: AbortSignal): Promise<Result> {
  if (!cs.metadata.finalizers?.includes(FINALIZER_COCOONSET)) return {};
  const namespace = cs.metadata.namespace ?? "";
  const name = cs.metadata.name ?? "";
  const ownedPods = (): Pod[] =>
    deps.view.listSetPods(namespace, name).filter((pod) => isControlledBy(pod, cs.metadata));

  const pods = ownedPods();
  const pass = new Pass(cs, classifyPods(pods, { name, uid: cs.metadata.uid ?? "" }), deps, signal);
  // Every owned pod's VM is stashed; a pod already terminating needs no second delete.
  await stashVMNames(pass, pods);
  await deleteAfterStash(
    pass,
    pods.filter((pod) => !pod.metadata.deletionTimestamp),
  );
  // vk-cocoon pushes snapshots during a pod's grace period: no tag is collected while a pod remains.
  if (ownedPods().length > 0) return { requeueAfterMs: REQUEUE_POLL_MS };
  const held = await waitForHolder(pass);
  if (held) return held;

  const logger = deps.log.child({ cocoonset: `${namespace}/${name}` });
  if (!deps.registry) {
    logger.warn("no snapshot registry configured; skipping snapshot tag cleanup");
  } else {
    const vmNames = ownVMNamesToCollect(pass);
    const failures: string[] = [];
    for (const { vm, tag, required } of tagsToCollect(
      namespace,
      name,
      cs.spec.snapshotPolicy ?? "",
      vmNames,
      isPoolMember(cs),
    )) {
      try {
        if (await deps.registry.deleteIfPresent(vm, tag, signal))
          logger.info({ vm, tag }, "deleted snapshot tag");
      } catch (err) {
        if (!required) {
          logger.warn({ vm, tag, err }, "snapshot tag cleanup failed (best-effort)");
          continue;
        }
        logger.error({ vm, tag, err }, "snapshot tag cleanup failed; keeping the finalizer");
        failures.push(`${vm}:${tag}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    if (failures.length > 0) {
      // Said on the set, and tried again at the poll: a failing pass would back off exponentially, and
      // a registry back after a short outage would leave the set in teardown for minutes, silent.
      setEvent(
        pass,
        "Warning",
        REASON_SNAPSHOT_CLEANUP_FAILED,
        `teardown keeps the finalizer until these tags are deleted: ${failures.join("; ")}`,
      );
      return { requeueAfterMs: REQUEUE_POLL_MS };
    }
  }

  await removeFinalizer(pass);
  return {};
}

/**
 * The stashed names teardown may collect: the set's own, less those another live set keeps (this set
 * was refused them). Each name left out is named in a Warning.
 */
function ownVMNamesToCollect(pass: Pass): string[] {
  const stashed = parseDeleteVMNames(pass.cs.metadata.annotations?.[ANN_DELETE_VM_NAMES]);
  const own = keepOwnVMNames(pass, stashed, `teardown: ${ANN_DELETE_VM_NAMES}`);
  const collisions = collisionsWithKeepers(pass.cs, own, (vm) => pass.deps.view.listSetsNamingVM(vm));
  if (collisions.length === 0) return own;
  setEvent(
    pass,
    "Warning",
    REASON_VM_NAME_COLLISION,
    `teardown leaves their tags: ${collisionMessage(collisions)}`,
  );
  const held = new Set(collisions.map((c) => c.vm));
  return own.filter((vm) => !held.has(vm));
}

/** An Update carrying the set as last written (its annotation patch included), minus the finalizer. */
async function removeFinalizer(pass: Pass): Promise<void> {
  const { cs } = pass;
  await pass.deps.client.update<CocoonSet>(COCOONSETS, {
    ...cs,
    metadata: {
      ...cs.metadata,
      finalizers: (cs.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_COCOONSET),
    },
  });
}
