// Where a restored VM's snapshot came from, and the registry import it goes through. A `:hibernate`
// manifest may have been pushed under another VM's name and copied into this VM's repository
// (checkpoint branching, docs/checkpoints.md). vk-cocoon restores it like any other: without a local
// snapshot carrying its snapshotId, the registry pull imports it as `<vm>-hibernate-import` and clones
// that into `<vm>` (upstream provider/cocoon/update.go, hibernateImportSuffix). Nothing compares the
// snapshot's own VM name with the pod's. The import reads every blob from this VM's repository, so a
// repository missing one (a half-done copy) fails the pull as it would for vk.

import type { GuestState } from "./guest.ts";
import type { FetchedManifest, OciClient } from "./oci.ts";
import { readGuestState } from "./snapshot.ts";

const TITLE = "org.opencontainers.image.title";
const VM_CONFIG_TITLE = "config.json";
const OVERLAY_TITLE = "overlay.qcow2";

/** The snapshot a restore or wake used, for the VM journal. */
export interface SnapshotOrigin {
  /** `<repository>:<tag>` the manifest was read from. */
  ref: string;
  digest: string;
  /** The VM the snapshot was taken of (its config.json layer); another VM's for a branched copy. */
  takenOf: string;
  /** Pulled from the registry into `<vm>-hibernate-import` (false: the node-local snapshot served). */
  imported: boolean;
}

/**
 * Reads the snapshot's own VM name and, unless the node-local snapshot serves the restore, pulls every
 * blob of the manifest from `repo` (the import) and reads the guest state its overlay carries. Throws
 * when a blob is missing there.
 */
export async function resolveSnapshotOrigin(
  oci: OciClient,
  repo: string,
  tag: string,
  manifest: FetchedManifest,
  fromLocalCache: boolean,
): Promise<{ origin: SnapshotOrigin; guest?: GuestState }> {
  const vmConfig = manifest.json.layers.find((layer) => layer.annotations?.[TITLE] === VM_CONFIG_TITLE);
  let takenOf = "";
  if (vmConfig !== undefined) {
    const config = JSON.parse((await oci.getBlob(repo, vmConfig.digest)).toString("utf8")) as {
      name?: string;
    };
    takenOf = config.name ?? "";
  }
  let guest: GuestState | undefined;
  if (!fromLocalCache) {
    for (const layer of manifest.json.layers) {
      const blob = await oci.getBlob(repo, layer.digest);
      if (layer.annotations?.[TITLE] === OVERLAY_TITLE) guest = readGuestState(blob);
    }
  }
  const origin = { ref: `${repo}:${tag}`, digest: manifest.digest, takenOf, imported: !fromLocalCache };
  return guest === undefined ? { origin } : { origin, guest };
}
