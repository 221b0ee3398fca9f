// Builds and pushes a small but real cocoon snapshot artifact: a config blob
// carrying the snapshotId, two tiny file layers, and the manifest annotations vk-cocoon sets.

import { randomUUID } from "node:crypto";
import { MANIFEST_ANN_BASE_IMAGE, MANIFEST_ANN_FROM_NODE } from "../../../src/contract/keys.ts";
import type { GuestState } from "./guest.ts";
import { OCI_MANIFEST, type OciClient, type OciManifest } from "./oci.ts";

const ARTIFACT_TYPE = "application/vnd.cocoonstack.snapshot.v1+json";
const CONFIG_TYPE = "application/vnd.cocoonstack.snapshot.config.v1+json";
const TITLE = "org.opencontainers.image.title";
const CREATED = "org.opencontainers.image.created";
/** cocoon's default hypervisor, recorded when the pod names no backend. */
export const DEFAULT_HYPERVISOR = "cloud-hypervisor";

export interface SnapshotPush {
  vmName: string;
  vmID: string;
  tag: string;
  baseImage: string;
  fromNode: string;
  /** The config blob's hypervisor: the pod's vm.cocoonstack.io/backend; default cloud-hypervisor. */
  hypervisor?: string;
  /** The guest's disk and memory state, carried in the overlay layer (readGuestState reads it back). */
  guest?: GuestState;
}

export interface PushedSnapshot {
  snapshotId: string;
  digest: string;
}

export async function pushSnapshot(oci: OciClient, push: SnapshotPush): Promise<PushedSnapshot> {
  const repo = oci.repository(push.vmName);
  const snapshotId = randomUUID();
  const createdAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const vmConfig = Buffer.from(JSON.stringify({ name: push.vmName, id: push.vmID }));
  const disk = Buffer.from(
    push.guest === undefined
      ? `overlay of ${push.vmName} (${push.vmID})\n`
      : JSON.stringify({ overlayOf: push.vmName, vmID: push.vmID, guest: push.guest }),
  );
  const layers = [
    { ...(await oci.pushBlob(repo, vmConfig, "application/vnd.cocoonstack.vm.config+json")) },
    { ...(await oci.pushBlob(repo, disk, "application/vnd.cocoonstack.disk.qcow2")) },
  ];
  layers[0]!.annotations = { [TITLE]: "config.json" };
  layers[1]!.annotations = { [TITLE]: "overlay.qcow2" };
  const config = Buffer.from(
    JSON.stringify({
      schemaVersion: "v1",
      snapshotId,
      description: `simulated snapshot of ${push.vmName}`,
      image: push.baseImage,
      hypervisor: push.hypervisor ?? DEFAULT_HYPERVISOR,
      cpu: 2,
      memory: 4294967296,
      storage: 21474836480,
      nics: 1,
      windows: false,
      createdAt,
    }),
  );
  const manifest: OciManifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: ARTIFACT_TYPE,
    config: await oci.pushBlob(repo, config, CONFIG_TYPE),
    layers,
    annotations: {
      [CREATED]: createdAt,
      ...(push.baseImage === "" ? {} : { [MANIFEST_ANN_BASE_IMAGE]: push.baseImage }),
      [MANIFEST_ANN_FROM_NODE]: push.fromNode,
    },
  };
  const raw = Buffer.from(JSON.stringify(manifest, null, 2));
  const digest = await oci.putManifest(repo, push.tag, raw, OCI_MANIFEST);
  return { snapshotId, digest };
}

/** The guest state an overlay layer carries; undefined for a snapshot pushed without one. */
export function readGuestState(overlay: Buffer): GuestState | undefined {
  try {
    const parsed = JSON.parse(overlay.toString("utf8")) as { guest?: GuestState };
    return parsed.guest;
  } catch {
    return undefined;
  }
}

/** Reads the snapshotId out of a pushed snapshot's config blob. */
export async function readSnapshotId(oci: OciClient, repo: string, manifest: OciManifest): Promise<string> {
  const config = JSON.parse((await oci.getBlob(repo, manifest.config.digest)).toString("utf8")) as {
    snapshotId?: string;
  };
  return config.snapshotId ?? "";
}

/** Reads the hypervisor that took a snapshot out of its config blob ("" when absent or not a snapshot). */
export async function readSnapshotHypervisor(
  oci: OciClient,
  repo: string,
  manifest: OciManifest,
): Promise<string> {
  const raw = (await oci.getBlob(repo, manifest.config.digest)).toString("utf8");
  try {
    const config = JSON.parse(raw) as { hypervisor?: unknown };
    return typeof config.hypervisor === "string" ? config.hypervisor : "";
  } catch {
    return "";
  }
}
