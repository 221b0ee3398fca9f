// The one copy checkpoints make into a set: a checkpoint member's manifest becomes a VM's `:hibernate`.
// A branch seeds a new set's VMs with it (before their first pod); a restore puts it over an existing
// set's suspended VMs, replacing the `:hibernate` its suspend took, which is the live state the restore
// request discards. No other path writes `:hibernate` here: the branch runs only for a set that has
// had no pod, snapshot or reclaim record of its own (branch.ts), the restore only for a set it holds,
// suspended and confirmed (src/restore/).

import { TAG_HIBERNATE } from "../contract/keys.ts";
import type { BlobCopy, CheckpointRegistry, Manifest } from "../registry/index.ts";
import { checkpointTag } from "./keys.ts";
import {
  checkpointManifest,
  type ManifestWrite,
  manifestDigest,
  sameRepositoryBranchManifest,
} from "./manifest.ts";
import type { BranchCopy } from "./members.ts";

/**
 * What a copy did: whether it wrote (false: the manifest was in place already), each blob's method, and
 * the bytes its blobs uploaded (none for a blob already in the target or mounted).
 */
export interface HibernateCopy {
  landed: boolean;
  blobs: readonly BlobCopy[];
  bytesSent: number;
}

/**
 * `copy.targetVM:hibernate` becomes the checkpointed manifest of `copy.member` (by digest). Into the
 * checkpoint's own repository (a restore of the set itself, or a set re-created under its old name)
 * it is a manifest PUT alone, stamped with the set and the write (`write`: the set, and the uid of
 * the restore or of the branched set) so that `:hibernate` has a digest of its own: no other tag
 * there names it, and a retry of the same write finds it in place. Across repositories the member's
 * manifest goes as it is: its stamp names a checkpoint of another set, which writes no tag there.
 */
export async function copyToHibernate(
  registry: CheckpointRegistry,
  copy: BranchCopy,
  write: ManifestWrite,
  signal: AbortSignal,
): Promise<HibernateCopy> {
  const digest = copy.member.digest ?? "";
  if (copy.member.vmName === copy.targetVM) {
    const source = await registry.getManifest(copy.member.vmName, digest, signal);
    const raw = sameRepositoryBranchManifest(source.raw, write);
    const present = await registry.headManifest(copy.targetVM, TAG_HIBERNATE, signal);
    if (present?.digest === manifestDigest(raw)) return { landed: false, blobs: [], bytesSent: 0 };
    await registry.putManifest(copy.targetVM, TAG_HIBERNATE, raw, source.mediaType, signal);
    return { landed: true, blobs: [], bytesSent: 0 };
  }
  const present = await registry.headManifest(copy.targetVM, TAG_HIBERNATE, signal);
  if (present?.digest === digest) return { landed: false, blobs: [], bytesSent: 0 };
  const result = await registry.copyManifest(
    copy.member.vmName,
    digest,
    copy.targetVM,
    TAG_HIBERNATE,
    signal,
  );
  return { landed: true, blobs: result.blobs, bytesSent: result.bytesSent };
}

/**
 * `vmName:ckpt-<checkpoint>` becomes `source` (the VM's `:hibernate` as read) stamped as the
 * checkpoint's (checkpointManifest), a manifest PUT in the VM's own repository. Returns its digest.
 */
export function writeCheckpointTag(
  registry: CheckpointRegistry,
  vmName: string,
  source: Manifest,
  checkpoint: ManifestWrite,
  signal: AbortSignal,
): Promise<string> {
  const raw = checkpointManifest(source.raw, checkpoint);
  return registry.putManifest(vmName, checkpointTag(checkpoint.name), raw, source.mediaType, signal);
}
