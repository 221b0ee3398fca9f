// The snapshot image rule and restore intent: the one registry read that precedes every managed-pod
// create (main in steps 6 and 11, the wake of step 9, the migration recreate of step 8, a sub-agent in
// step 12, a toolbox in step 13). vk-cocoon refuses to create a pod over a `:hibernate` tag recorded
// from another image, and refuses a fork-from pod over any tag; this read decides, before the create,
// whether the tag is restored from, or dropped so the pod boots fresh (docs/cocoonset.md). Static
// toolboxes are unmanaged: vk never reads a tag for them, so they skip this.

import { ROLE_SUB_AGENT, type Role, TAG_HIBERNATE } from "../contract/keys.ts";
import type { CachedHibernation, Pass } from "../pass/pass.ts";
import { dropVM, owesRestore, type ReclaimRecord } from "../pass/reclaimrecord.ts";
import { persistReclaim, reclaimRecord } from "../pass/writes.ts";
import type { SnapshotManifest, SnapshotRegistry } from "../registry/index.ts";

export interface CreateSnapshotRequest {
  /** The pod about to be created, for CocoonHibernation restore intent. */
  podName: string;
  vmName: string;
  /** The new pod's `cocoonset.cocoonstack.io/image`. */
  image: string;
  role: Role;
  /** The caller restores whenever a compatible tag exists (a wake or migration recreate). */
  wantRestore: boolean;
}

export interface SnapshotForCreate {
  /** Mark the pod restore-from-hibernate. */
  restore: boolean;
  /** The tag was deleted before the create: the pod boots fresh, and the VM left the reclaim record. */
  dropped: boolean;
}

/** What the manifest read leads to, decided without side effects. */
export type SnapshotVerdict =
  | { action: "fresh" }
  | { action: "restore" }
  /** vk-cocoon would refuse the pod over this tag: delete it (by digest), then boot fresh. */
  | { action: "drop"; reason: "image-mismatch" | "fork-from" };

/**
 * The decision for one create. `recordedImage` is undefined when no tag exists. A tag from another
 * image is dropped whatever the intent (vk refuses it, restore-marked or not); a sub-agent that nobody
 * restores would be refused as a fork-from pod, so its tag goes too; otherwise intent plus a tag
 * restores, and a main or toolbox without intent is left to vk-cocoon, which restores a compatible
 * tag itself.
 */
export function snapshotVerdict(
  recordedImage: string | undefined,
  podImage: string,
  role: Role,
  restoreIntended: boolean,
): SnapshotVerdict {
  if (recordedImage === undefined) return { action: "fresh" };
  if (recordedImage !== "" && recordedImage !== podImage) return { action: "drop", reason: "image-mismatch" };
  if (restoreIntended) return { action: "restore" };
  if (role === ROLE_SUB_AGENT) return { action: "drop", reason: "fork-from" };
  return { action: "fresh" };
}

/** CocoonHibernation phases in which a recreated pod must restore: the snapshot is the VM's state. */
export function restoredByHibernation(hibernations: readonly CachedHibernation[], podName: string): boolean {
  return hibernations.some(
    (ch) =>
      ch.spec.podRef.name === podName && (ch.status?.phase === "Hibernated" || ch.status?.phase === "Waking"),
  );
}

/**
 * Runs the image rule and restore intent for one managed-pod create: one manifest GET of
 * `<vm>:hibernate`, plus a tag delete and a reclaim-record write when vk-cocoon would refuse the pod.
 * A registry error is thrown: the pass fails and nothing is created over the tag. Without a registry
 * nothing is read and the pod boots fresh.
 */
export async function prepareSnapshotForCreate(
  pass: Pass,
  request: CreateSnapshotRequest,
): Promise<SnapshotForCreate> {
  const registry = pass.deps.registry;
  if (!registry) return { restore: false, dropped: false };
  const manifest = await readSnapshotOnce(pass, registry, request.vmName);
  // Intent is resolved for every create attempt (the CocoonHibernation list is cached and taken at
  // most once per pass), never on a pass that creates nothing.
  const restoreIntended =
    request.wantRestore ||
    owesRestore(reclaimRecord(pass), request.vmName) ||
    restoredByHibernation(pass.hibernationsInNamespace(), request.podName);
  const verdict = snapshotVerdict(manifest?.baseImage, request.image, request.role, restoreIntended);
  if (verdict.action !== "drop") return { restore: verdict.action === "restore", dropped: false };

  pass.deps.log.info(
    {
      cocoonset: `${pass.namespace}/${pass.name}`,
      vm: request.vmName,
      reason: verdict.reason,
      recordedImage: manifest?.baseImage,
      podImage: request.image,
    },
    "dropping :hibernate tag vk-cocoon would refuse; the pod boots fresh",
  );
  // The tag the GET read, at the digest it returned: a registry that refuses DELETE by tag gets that
  // digest, so a manifest pushed since stays, and the client keeps any other tag naming it.
  if (manifest) await registry.deleteTagAt(request.vmName, TAG_HIBERNATE, manifest.digest, pass.signal);
  pass.snapshotReads?.set(request.vmName, null);
  await updateReclaim(pass, (record) => dropVM(record, request.vmName));
  return { restore: false, dropped: true };
}

// The manifest reads of a pass, by VM. A create attempt that hands over to a later step of the same
// pass (a wake or migration recreate that falls through to step 11, with nothing to restore) reads
// the manifest once: no pod of that VM exists meanwhile, so nothing can push to the tag, and the
// only change, this pass's own drop, is recorded here. A failed read is not kept. They are kept on the
// pass itself (pass.snapshotReads): a WeakMap entry per pass cost more than the rest of the lookup.

/** `<vm>:hibernate` as this pass first read it: one GET per VM per pass; null when absent. */
export async function readSnapshotOnce(
  pass: Pass,
  registry: SnapshotRegistry,
  vmName: string,
): Promise<SnapshotManifest | null> {
  pass.snapshotReads ??= new Map();
  const reads = pass.snapshotReads;
  const known = reads.get(vmName);
  if (known !== undefined) return known;
  const manifest = await registry.getSnapshot(vmName, TAG_HIBERNATE, pass.signal);
  reads.set(vmName, manifest);
  return manifest;
}

// Sub-agent creates run concurrently; their record writes are chained per pass so that each one reads
// the record the previous one wrote (a read-modify-write race would re-add a dropped VM).
function updateReclaim(pass: Pass, change: (record: ReclaimRecord) => ReclaimRecord): Promise<boolean> {
  // An earlier write's failure is its own caller's error; this write still reads the record afresh.
  const previous = pass.reclaimWrite?.catch(() => undefined) ?? Promise.resolve();
  const write = previous.then(() => persistReclaim(pass, change(reclaimRecord(pass))));
  pass.reclaimWrite = write;
  return write;
}
