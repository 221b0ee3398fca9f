// A minimal OCI Distribution client for the simulator: what vk-cocoon does against the registry
// (evidence GET, blob upload, manifest PUT, the rollback DELETE). Anonymous only; plain http for
// loopback and private hosts, as go-containerregistry allows.

import { createHash } from "node:crypto";

export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

const MANIFEST_ACCEPT = [
  "application/vnd.docker.distribution.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v1+prettyjws",
  "application/vnd.docker.distribution.manifest.v2+json",
  OCI_MANIFEST,
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
].join(", ");

export interface FetchedManifest {
  digest: string;
  mediaType: string;
  raw: Buffer;
  json: OciManifest;
}

export interface OciDescriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface OciManifest {
  schemaVersion: number;
  mediaType?: string;
  artifactType?: string;
  config: OciDescriptor;
  layers: OciDescriptor[];
  annotations?: Record<string, string>;
}

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

export class OciClient {
  private readonly origin: string;
  private readonly prefix: string;

  /** base is "host:port" or "host:port/path/prefix"; repositories live under the prefix. */
  constructor(base: string) {
    const slash = base.indexOf("/");
    const host = slash < 0 ? base : base.slice(0, slash);
    this.prefix = slash < 0 ? "" : base.slice(slash + 1).replace(/\/+$/, "");
    this.origin = `${isPlainHttpHost(host) ? "http" : "https"}://${host}`;
  }

  /** The repository path (below /v2/) for a VM name. */
  repository(vmName: string): string {
    return this.prefix === "" ? vmName : `${this.prefix}/${vmName}`;
  }

  /** The manifest, or null when the registry answers 404 (tag absent). Any other status throws. */
  async getManifest(repo: string, reference: string): Promise<FetchedManifest | null> {
    const res = await fetch(this.url(repo, "manifests", reference), { headers: { accept: MANIFEST_ACCEPT } });
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    if (res.status !== 200) throw await registryError(`GET manifest ${repo}:${reference}`, res);
    const raw = Buffer.from(await res.arrayBuffer());
    return {
      digest: res.headers.get("docker-content-digest") ?? sha256Digest(raw),
      mediaType: res.headers.get("content-type") ?? "",
      raw,
      json: JSON.parse(raw.toString("utf8")) as OciManifest,
    };
  }

  async getBlob(repo: string, digest: string): Promise<Buffer> {
    const res = await fetch(this.url(repo, "blobs", digest));
    if (res.status !== 200) throw await registryError(`GET blob ${repo}@${digest}`, res);
    return Buffer.from(await res.arrayBuffer());
  }

  /** Uploads a blob unless the registry already has it (HEAD first, as the cocoon pusher does). */
  async pushBlob(repo: string, bytes: Uint8Array, mediaType: string): Promise<OciDescriptor> {
    const digest = sha256Digest(bytes);
    const descriptor = { mediaType, digest, size: bytes.byteLength };
    const head = await fetch(this.url(repo, "blobs", digest), { method: "HEAD" });
    if (head.status === 200) return descriptor;
    if (head.status !== 404) throw await registryError(`HEAD blob ${repo}@${digest}`, head);
    const start = await fetch(`${this.origin}/v2/${repo}/blobs/uploads/`, { method: "POST" });
    if (start.status !== 202) throw await registryError(`start upload ${repo}`, start);
    await start.body?.cancel();
    const location = start.headers.get("location");
    if (location === null) throw new Error(`start upload ${repo}: no Location header`);
    const target = new URL(location, this.origin);
    target.searchParams.set("digest", digest);
    const put = await fetch(target, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: bytes,
    });
    if (put.status !== 201) throw await registryError(`finish upload ${repo}@${digest}`, put);
    await put.body?.cancel();
    return descriptor;
  }

  async putManifest(repo: string, tag: string, raw: Uint8Array, mediaType: string): Promise<string> {
    const res = await fetch(this.url(repo, "manifests", tag), {
      method: "PUT",
      headers: { "content-type": mediaType },
      body: raw,
    });
    if (res.status !== 201) throw await registryError(`PUT manifest ${repo}:${tag}`, res);
    await res.body?.cancel();
    return res.headers.get("docker-content-digest") ?? sha256Digest(raw);
  }

  /** Deletes a tag by resolving it to its digest (registry:2 refuses DELETE by tag); absent is success. */
  async deleteTag(repo: string, tag: string): Promise<void> {
    const head = await fetch(this.url(repo, "manifests", tag), {
      method: "HEAD",
      headers: { accept: MANIFEST_ACCEPT },
    });
    if (head.status === 404) return;
    const digest = head.headers.get("docker-content-digest");
    if (head.status !== 200 || digest === null)
      throw await registryError(`HEAD manifest ${repo}:${tag}`, head);
    const res = await fetch(this.url(repo, "manifests", digest), { method: "DELETE" });
    if (res.status !== 202 && res.status !== 200 && res.status !== 404) {
      throw await registryError(`DELETE manifest ${repo}@${digest}`, res);
    }
    await res.body?.cancel();
  }

  private url(repo: string, kind: "manifests" | "blobs", reference: string): string {
    return `${this.origin}/v2/${repo}/${kind}/${reference}`;
  }
}

function isPlainHttpHost(hostPort: string): boolean {
  const host = hostPort.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost") || host === "::1") return true;
  const octets = host.split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o))) return false;
  const [a = 0, b = 0] = octets;
  return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}

async function registryError(what: string, res: Response): Promise<Error> {
  const text = await res.text().catch(() => "");
  return new Error(`${what}: HTTP ${res.status} ${text.slice(0, 300)}`.trim());
}
