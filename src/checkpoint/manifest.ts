// The checkpoint's copy of a `:hibernate` manifest: the same config and layers (so no blob moves and
// the image rule reads the same baseimage), plus one annotation naming the checkpoint (keys.ts says
// why its digest must be its own).

import { MANIFEST_ANN_CHECKPOINT } from "./keys.ts";

export function checkpointManifest(raw: Buffer, namespace: string, name: string): Buffer {
  const manifest = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  const current = manifest.annotations;
  const annotations =
    typeof current === "object" && current !== null && !Array.isArray(current) ? current : {};
  return Buffer.from(
    JSON.stringify({
      ...manifest,
      annotations: { ...annotations, [MANIFEST_ANN_CHECKPOINT]: `${namespace}/${name}` },
    }),
  );
}
