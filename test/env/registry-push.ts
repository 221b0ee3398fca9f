// Pushes a small snapshot-shaped OCI manifest for tests: a config blob and one layer blob through
// the blob upload session (POST, then PUT with the digest), then the manifest PUT as 2-space
// indented JSON, like vk-cocoon's pusher. Handles the test registry's auth modes.
import { createHash, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseChallenge } from "../../src/registry/challenge.ts";
import { createTransport, type FetchLike, type FetchResponse } from "../../src/registry/transport.ts";
import type { TestRegistry } from "./registry.ts";

export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
export const SNAPSHOT_ARTIFACT = "application/vnd.cocoonstack.snapshot.v1+json";
const SNAPSHOT_CONFIG = "application/vnd.cocoonstack.snapshot.config.v1+json";

export interface PushedManifest {
  digest: string;
  raw: Buffer;
}

function sha256(data: Buffer): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

/** A fetch that adds the auth the registry asks for, using the registry's test credentials. */
function authedFetch(
  reg: TestRegistry,
  repo: string,
): (url: string, init: RequestInitLike) => Promise<FetchResponse> {
  const doFetch: FetchLike = createTransport({
    extraCa: reg.caFile ? readFileSync(reg.caFile, "utf8") : undefined,
  });
  let authorization: string | undefined;
  const basic = reg.credentials
    ? `Basic ${Buffer.from(`${reg.credentials.user}:${reg.credentials.password}`).toString("base64")}`
    : undefined;
  return async (url, init) => {
    const send = () =>
      doFetch(url, {
        method: init.method,
        headers: { ...init.headers, ...(authorization ? { authorization } : {}) },
        body: init.body,
      });
    const res = await send();
    if (res.status !== 401 || !basic) return res;
    await res.arrayBuffer();
    const challenge = parseChallenge(res.headers.get("www-authenticate"));
    if (challenge?.scheme === "bearer") {
      const realm = new URL(challenge.params.realm ?? "");
      realm.searchParams.set("service", challenge.params.service ?? "");
      realm.searchParams.set("scope", `repository:${repo}:pull,push`);
      const tokenRes = await doFetch(realm.href, { method: "GET", headers: { authorization: basic } });
      const body = JSON.parse(Buffer.from(await tokenRes.arrayBuffer()).toString("utf8")) as {
        token: string;
      };
      authorization = `Bearer ${body.token}`;
    } else {
      authorization = basic;
    }
    return send();
  };
}

interface RequestInitLike {
  method: string;
  headers: Record<string, string>;
  body?: Buffer;
}

async function expectStatus(res: FetchResponse, status: number, what: string): Promise<FetchResponse> {
  if (res.status !== status)
    throw new Error(`${what}: HTTP ${res.status}: ${Buffer.from(await res.arrayBuffer()).toString("utf8")}`);
  return res;
}

async function pushBlob(
  reg: TestRegistry,
  send: ReturnType<typeof authedFetch>,
  repo: string,
  data: Buffer,
): Promise<string> {
  const digest = sha256(data);
  const started = await send(`${reg.url}/v2/${repo}/blobs/uploads/`, { method: "POST", headers: {} });
  await expectStatus(started, 202, "start blob upload");
  await started.arrayBuffer();
  const location = new URL(started.headers.get("location") ?? "", reg.url);
  location.searchParams.set("digest", digest);
  const done = await send(location.href, {
    method: "PUT",
    headers: { "content-type": "application/octet-stream" },
    body: data,
  });
  await expectStatus(done, 201, "finish blob upload");
  await done.arrayBuffer();
  return digest;
}

/**
 * Pushes `<reg>/<repo>:<tag>`. `repo` is the full repository path on the registry (include the
 * OCI_REGISTRY path prefix, if any). Every push has a fresh config blob, so two pushes never share
 * a digest (a digest delete would otherwise remove both tags).
 */
export async function pushTestManifest(
  reg: TestRegistry,
  repo: string,
  tag: string,
  annotations: Record<string, string> = {},
): Promise<PushedManifest> {
  const send = authedFetch(reg, repo);
  const config = Buffer.from(JSON.stringify({ schemaVersion: "v1", snapshotId: randomUUID() }));
  const layer = Buffer.from(`test layer ${randomUUID()}\n`);
  const configDigest = await pushBlob(reg, send, repo, config);
  const layerDigest = await pushBlob(reg, send, repo, layer);
  const manifest = {
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    artifactType: SNAPSHOT_ARTIFACT,
    config: { mediaType: SNAPSHOT_CONFIG, digest: configDigest, size: config.length },
    layers: [
      {
        mediaType: "application/vnd.cocoonstack.vm.config+json",
        digest: layerDigest,
        size: layer.length,
        annotations: { "org.opencontainers.image.title": "config.json" },
      },
    ],
    annotations: { "org.opencontainers.image.created": new Date().toISOString(), ...annotations },
  };
  const raw = Buffer.from(JSON.stringify(manifest, null, 2));
  const put = await send(`${reg.url}/v2/${repo}/manifests/${tag}`, {
    method: "PUT",
    headers: { "content-type": OCI_MANIFEST },
    body: raw,
  });
  await expectStatus(put, 201, "put manifest");
  await put.arrayBuffer();
  return { digest: sha256(raw), raw };
}
