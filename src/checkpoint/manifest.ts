// The manifests checkpoints and branches write: the snapshot's own config and layers (so no blob moves
// and the image rule reads the same baseimage), plus one annotation that gives each copy a digest of
// its own within its repository (keys.ts, MANIFEST_ANN_CHECKPOINT, says why).

import { createHash } from "node:crypto";
import { MANIFEST_ANN_FROM_NODE } from "../contract/keys.ts";
import { MANIFEST_ANN_BRANCH, MANIFEST_ANN_CHECKPOINT } from "./keys.ts";

function withAnnotation(raw: Buffer, key: string, value: string, drop: readonly string[] = []): Buffer {
  const manifest = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  const current = manifest.annotations;
  const annotations: Record<string, unknown> =
    typeof current === "object" && current !== null && !Array.isArray(current) ? { ...current } : {};
  for (const gone of drop) delete annotations[gone];
  return Buffer.from(JSON.stringify({ ...manifest, annotations: { ...annotations, [key]: value } }));
}

/**
 * A `:hibernate` manifest as the checkpoint `<namespace>/<name>` tags it. The source VM's node
 * (`cocoonstack.snapshot.from-node`) is dropped: every branch copies this manifest, and vk-cocoon
 * would first ask that node's peer for a VM it does not hold (a dial and a header wait per VM)
 * before pulling from the registry.
 */
export function checkpointManifest(raw: Buffer, namespace: string, name: string): Buffer {
  return withAnnotation(raw, MANIFEST_ANN_CHECKPOINT, `${namespace}/${name}`, [MANIFEST_ANN_FROM_NODE]);
}

/**
 * A checkpoint manifest as a branch writes it back into the checkpoint's own repository (a set
 * re-created under its old name): `:hibernate` there must not share the checkpoint tag's digest, or
 * step 10 dropping it would delete the checkpoint's tag too.
 */
export function sameRepositoryBranchManifest(raw: Buffer, namespace: string, setName: string): Buffer {
  return withAnnotation(raw, MANIFEST_ANN_BRANCH, `${namespace}/${setName}`);
}

/** The digest a registry gives these manifest bytes (sha256 of them as sent). */
export function manifestDigest(raw: Buffer): string {
  return `sha256:${createHash("sha256").update(raw).digest("hex")}`;
}
