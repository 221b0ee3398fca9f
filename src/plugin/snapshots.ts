// A VM's snapshots as the registry holds them: every tag under `<registry base>/<vm>`, with the
// manifest's size (config plus layers) and creation time (org.opencontainers.image.created, which
// vk-cocoon always writes).

import { BASE_IMAGE_ANNOTATION, ManifestNotFoundError, type RegistryClient } from "../registry/index.ts";
import { PluginError } from "./errors.ts";

export const CREATED_ANNOTATION = "org.opencontainers.image.created";

export interface SnapshotTag {
  vm: string;
  tag: string;
  digest: string;
  /** Bytes: the config blob plus every layer, as the manifest declares them. */
  size: number;
  /** RFC 3339, or undefined when the manifest does not say. */
  created: string | undefined;
  baseImage: string;
}

export async function vmSnapshots(registry: RegistryClient, vm: string): Promise<SnapshotTag[]> {
  const tags = (await registry.listTags(vm)).sort();
  const out: SnapshotTag[] = [];
  for (const tag of tags) {
    // A tag deleted between the listing and the read is simply gone.
    const manifest = await registry.getManifest(vm, tag).catch((err: unknown) => {
      if (err instanceof ManifestNotFoundError) return undefined;
      throw err;
    });
    if (!manifest) continue;
    const body = manifest.manifest as {
      config?: { size?: unknown };
      layers?: { size?: unknown }[];
      annotations?: Record<string, unknown>;
    };
    const size = [body.config, ...(body.layers ?? [])].reduce(
      (sum, d) => sum + (typeof d?.size === "number" ? d.size : 0),
      0,
    );
    const created = body.annotations?.[CREATED_ANNOTATION];
    const baseImage = body.annotations?.[BASE_IMAGE_ANNOTATION];
    out.push({
      vm,
      tag,
      digest: manifest.digest,
      size,
      created: typeof created === "string" ? created : undefined,
      baseImage: typeof baseImage === "string" ? baseImage : "",
    });
  }
  return out;
}

export function requireRegistry(registry: RegistryClient | undefined): RegistryClient {
  if (registry) return registry;
  throw new PluginError(
    "no registry configured: pass --registry HOST[/PATH] or set OCI_REGISTRY to the operator's snapshot registry",
  );
}
