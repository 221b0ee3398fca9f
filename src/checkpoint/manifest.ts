// The manifests checkpoints, branches and restores write: the snapshot's own config and layers (so
// no blob moves and the image rule reads the same baseimage), plus the stamps that give each write a
// digest of its own within its repository (keys.ts, MANIFEST_ANN_CHECKPOINT and MANIFEST_ANN_WRITE,
// say why).

import { createHash } from "node:crypto";
import { MANIFEST_ANN_FROM_NODE } from "../contract/keys.ts";
import { withManifestAnnotations } from "../registry/index.ts";
import { MANIFEST_ANN_BRANCH, MANIFEST_ANN_CHECKPOINT, MANIFEST_ANN_WRITE } from "./keys.ts";

/** The write a manifest is for: the uid of its checkpoint, restore or branched set. */
export interface ManifestWrite {
  namespace: string;
  /** The checkpoint's name (checkpointManifest) or the set's (sameRepositoryBranchManifest). */
  name: string;
  uid: string;
}

/**
 * A `:hibernate` manifest as the checkpoint `<namespace>/<name>` tags it. The source VM's node
 * (`cocoonstack.snapshot.from-node`) is dropped: every branch copies this manifest, and vk-cocoon
 * would first ask that node's peer for a VM it does not hold (a dial and a header wait per VM)
 * before pulling from the registry. The stamps of the restore or branch that wrote that
 * `:hibernate` are dropped too: they name another write, and a restore from this checkpoint stamps
 * its own.
 */
export function checkpointManifest(raw: Buffer, checkpoint: ManifestWrite): Buffer {
  return withManifestAnnotations(
    raw,
    {
      [MANIFEST_ANN_CHECKPOINT]: `${checkpoint.namespace}/${checkpoint.name}`,
      [MANIFEST_ANN_WRITE]: checkpoint.uid,
    },
    [MANIFEST_ANN_FROM_NODE, MANIFEST_ANN_BRANCH],
  );
}

/**
 * A checkpoint manifest as a restore or a branch writes it back into the checkpoint's own repository
 * (a restore of the set itself, a set re-created under its old name): stamped with the set
 * (`<ns>/<set>`) and the write's uid, so `:hibernate` never shares the digest of the checkpoint tag
 * it came from, nor of any other checkpoint tag, nor of another restore's `:hibernate`.
 */
export function sameRepositoryBranchManifest(raw: Buffer, write: ManifestWrite): Buffer {
  return withManifestAnnotations(raw, {
    [MANIFEST_ANN_BRANCH]: `${write.namespace}/${write.name}`,
    [MANIFEST_ANN_WRITE]: write.uid,
  });
}

/** The digest a registry gives these manifest bytes (sha256 of them as sent). */
export function manifestDigest(raw: Buffer): string {
  return `sha256:${createHash("sha256").update(raw).digest("hex")}`;
}
