// The registry operations the operator needs: probe, read and delete a manifest under
// `<OCI_REGISTRY>/<repo>`, with the HTTP behaviour of go-containerregistry's remote.* calls,
// plus a tag-delete fallback for registries that refuse DELETE by tag. The delete rule of every
// caller lives here: no delete removes a manifest another tag of the repository still names.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { systemClock } from "../clock.ts";
import { type Env, proxyFromEnvironment } from "../net/proxy.ts";
import { uploadBlob } from "./blobupload.ts";
import {
  dockerConfigKeychain,
  googleKeychain,
  type Keychain,
  multiKeychain,
  type WarnLogger,
} from "./credentials.ts";
import { ManifestNotFoundError, parseErrorBody, RegistryError } from "./errors.ts";
import { isDigest, manifestPath, parseRegistryBase, type RegistryBase, repositoryPath } from "./reference.ts";
import { type Action, type CallSignal, type HttpResult, Session } from "./session.ts";
import { createTransport, type FetchLike } from "./transport.ts";
import { DEFAULT_CHUNK_BYTES, DEFAULT_UPLOAD_ATTEMPTS } from "./upload.ts";

/** Sent on every manifest HEAD and GET; without it distribution 2.8 answers 404 for OCI manifests. */
export const MANIFEST_ACCEPT = [
  "application/vnd.docker.distribution.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.v1+prettyjws",
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
].join(",");

/** The manifest annotation vk-cocoon records a snapshot's image in; the snapshot image rule reads it. */
export const BASE_IMAGE_ANNOTATION = "cocoonstack.snapshot.baseimage";

export const DEFAULT_TIMEOUT_MS = 30_000;

export interface RegistryClientOptions {
  /** Deadline of one public call, including its ping and token requests. */
  timeoutMs?: number;
  /** PEM bundle trusted in addition to the system roots (private registry or token server CA). */
  caFile?: string;
  /**
   * Where HTTPS_PROXY / HTTP_PROXY / NO_PROXY and SSL_CERT_FILE / SSL_CERT_DIR are read, as Go's
   * default transport reads them; default process.env.
   */
  env?: Env;
  /** Default: $DOCKER_CONFIG/config.json or ~/.docker/config.json. */
  dockerConfigPath?: string;
  /** Replaces the default Google ADC → docker config chain. */
  keychain?: Keychain;
  /** Warnings (credentials) and, where it has one, the debug log of interrupted blob uploads. */
  logger?: WarnLogger & { debug?(obj: object, msg: string): void };
  fetch?: FetchLike;
  /**
   * Bytes per PATCH of a streamed blob copy (DEFAULT_CHUNK_BYTES), raised to the registry's
   * OCI-Chunk-Min-Length; 0 sends each blob in one streamed PUT, which a failure restarts.
   */
  chunkSize?: number;
  /** Tries of one blob's chunked upload, the first included (DEFAULT_UPLOAD_ATTEMPTS). */
  uploadAttempts?: number;
  /** Waits between those tries (backoff); default the system clock's. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Called after every HTTP exchange (registry and token server); status 0 = no response. */
  onRequest?: (method: string, path: string, status: number) => void;
  /** Called once per manifest or tag delete the caller asked for: done (or already absent), or failed. */
  onDelete?: (outcome: "deleted" | "failed") => void;
}

export interface ManifestHead {
  digest: string;
  mediaType: string;
  size: number;
}

export interface Manifest {
  digest: string;
  mediaType: string;
  /** The parsed JSON body. */
  manifest: Record<string, unknown>;
  raw: Buffer;
}

/** What the reconcilers read from a snapshot manifest. */
export interface SnapshotManifest {
  digest: string;
  /** `cocoonstack.snapshot.baseimage`; "" when the manifest does not record it. */
  baseImage: string;
  annotations: Record<string, string>;
}

/** Exactly the registry operations the reconcilers use; fake this in their unit tests. */
export interface SnapshotRegistry {
  /** HEAD: true on 200, false on 404, RegistryError otherwise. */
  hasManifest(repo: string, tag: string, signal?: AbortSignal): Promise<boolean>;
  /** GET: the manifest's digest and base image, null on 404, RegistryError otherwise. */
  getSnapshot(repo: string, tag: string, signal?: AbortSignal): Promise<SnapshotManifest | null>;
  /**
   * DELETE by tag or digest; absent counts as deleted. No delete removes a manifest another tag of
   * the repository still names: a tag goes alone (re-pointed first where the registry deletes only
   * by digest and another tag shares its digest), and a digest some tag names is refused
   * (RegistryError MANIFEST_TAGGED).
   */
  deleteManifest(repo: string, ref: string, signal?: AbortSignal): Promise<void>;
  /** HEAD, then DELETE only what the HEAD saw; true when something was deleted. */
  deleteIfPresent(repo: string, tag: string, signal?: AbortSignal): Promise<boolean>;
  /** HEAD: the manifest's descriptor, or null on 404. */
  headManifest(repo: string, ref: string, signal?: AbortSignal): Promise<ManifestHead | null>;
  /**
   * DELETE of a tag a HEAD has just seen naming `digest`, without probing again: by tag, as the
   * contract's DeleteManifest does, or by that digest where the registry refuses tag deletes
   * (distribution 2.8), so there a manifest pushed under the tag since the HEAD survives. 404 is done.
   * There the other tags of the repository are listed and probed first; when one names the same
   * digest, this tag is re-pointed to a manifest of its own and that goes instead, so the other tag
   * keeps its manifest.
   */
  deleteTagAt(repo: string, tag: string, digest: string, signal?: AbortSignal): Promise<void>;
}

/** A blob as a manifest references it; the size, when known, extends the copy's deadline. */
export interface BlobRef {
  digest: string;
  size?: number;
}

/**
 * A streamed blob copy may take longer than one call's deadline: it gets this much more time per
 * byte, i.e. it times out only below 8 MiB/s.
 */
const STREAM_FLOOR_BYTES_PER_MS = (8 * 1024 * 1024) / 1000;

/** How one blob reached the target repository: already there (a HEAD saw it), mounted, or streamed. */
export type BlobCopy = "present" | "mounted" | "streamed";

export interface BlobCopyResult {
  method: BlobCopy;
  /** Bytes uploaded, a resumed chunk's re-sent bytes included; 0 for a blob present or mounted. */
  bytesSent: number;
}

export interface ManifestCopy {
  /** The digest of the manifest now under the target tag (the source's: the bytes are identical). */
  digest: string;
  mediaType: string;
  /** Per blob of the manifest (config first, then layers); empty for a copy within one repository. */
  blobs: BlobCopy[];
  /** Bytes the blob copies uploaded (streamed ones only). */
  bytesSent: number;
}

/**
 * The writes checkpoints and branching make (docs/checkpoints.md): manifest PUTs of existing content and
 * blob copies between repositories. Nothing here builds a snapshot of its own.
 */
export interface CheckpointRegistry extends SnapshotRegistry {
  /** GET; throws ManifestNotFoundError on 404. */
  getManifest(repo: string, ref: string, signal?: AbortSignal): Promise<Manifest>;
  /** PUT `raw` as `<repo>:<tag>`; every blob it references must be in repo already. Returns its digest. */
  putManifest(
    repo: string,
    tag: string,
    raw: Buffer,
    mediaType: string,
    signal?: AbortSignal,
  ): Promise<string>;
  /**
   * Makes blob `digest` of `fromRepo` available in `toRepo`: nothing when a HEAD finds it there
   * already; else a cross-repository mount (POST …/blobs/uploads/?mount=&from=, one token for push on
   * toRepo and pull on fromRepo); where the registry answers the mount with a plain upload session
   * instead, the blob is streamed through in resumable chunks (GET, PATCH…, PUT; src/registry/blobupload.ts).
   */
  copyBlob(fromRepo: string, toRepo: string, blob: BlobRef, signal?: AbortSignal): Promise<BlobCopyResult>;
  /** Copies `<fromRepo>@<ref>` to `<toRepo>:<toTag>`: its blobs (copyBlob) and then the manifest PUT. */
  copyManifest(
    fromRepo: string,
    ref: string,
    toRepo: string,
    toTag: string,
    signal?: AbortSignal,
  ): Promise<ManifestCopy>;
}

export interface RegistryClient extends CheckpointRegistry {
  readonly base: RegistryBase;
  /** The repository's tags (distribution's tags/list, every page); [] when the repository is unknown. */
  listTags(repo: string, signal?: AbortSignal): Promise<string[]>;
}

export function createRegistryClient(base: string, opts: RegistryClientOptions = {}): RegistryClient {
  const parsedBase = parseRegistryBase(base);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const env = opts.env ?? process.env;
  const fetchImpl =
    opts.fetch ??
    createTransport({
      env,
      extraCa: opts.caFile ? readFileSync(opts.caFile, "utf8") : undefined,
      proxy: proxyFromEnvironment(env),
    });
  const keychain =
    opts.keychain ??
    multiKeychain([
      googleKeychain({ logger: opts.logger }),
      dockerConfigKeychain({ path: opts.dockerConfigPath, logger: opts.logger }),
    ]);
  const session = new Session({ base: parsedBase, keychain, fetch: fetchImpl, onRequest: opts.onRequest });
  const chunkSize = opts.chunkSize ?? DEFAULT_CHUNK_BYTES;
  const sleep = opts.sleep ?? systemClock.sleep;

  const callSignal = (caller?: AbortSignal, extraMs = 0): CallSignal => {
    const timeout = AbortSignal.timeout(timeoutMs + extraMs);
    return { signal: caller ? AbortSignal.any([caller, timeout]) : timeout, caller, timeout };
  };

  const manifestRequest = (
    method: string,
    repo: string,
    ref: string,
    action: Action,
    call: CallSignal,
  ): Promise<HttpResult> =>
    session.request(
      method,
      manifestPath(parsedBase, repo, ref),
      repositoryPath(parsedBase, repo),
      action,
      method === "DELETE" ? {} : { accept: MANIFEST_ACCEPT },
      call,
    );

  const failureAt = (method: string, path: string, result: HttpResult): RegistryError => {
    const parsed = parseErrorBody(result.body.toString("utf8"));
    return new RegistryError({
      status: result.status,
      code: parsed?.code ?? statusCode(result.status),
      message: parsed?.message || `unexpected status ${result.status}`,
      method,
      url: `${parsedBase.host}${path}`,
    });
  };
  const failure = (method: string, repo: string, ref: string, result: HttpResult): RegistryError =>
    failureAt(method, manifestPath(parsedBase, repo, ref), result);

  const head = async (repo: string, ref: string, call: CallSignal): Promise<ManifestHead | null> => {
    const result = await manifestRequest("HEAD", repo, ref, "pull", call);
    if (result.status === 404) return null;
    if (result.status !== 200) throw failure("HEAD", repo, ref, result);
    const digest = result.headers.get("docker-content-digest");
    const mediaType = result.headers.get("content-type");
    const size = result.headers.get("content-length");
    if (!digest || !mediaType || size === null) {
      throw new RegistryError({
        status: 200,
        code: "MANIFEST_HEADERS_MISSING",
        message: "HEAD response lacks Docker-Content-Digest, Content-Type or Content-Length",
        method: "HEAD",
        url: `${parsedBase.host}${manifestPath(parsedBase, repo, ref)}`,
      });
    }
    return { digest, mediaType, size: Number(size) };
  };

  const get = async (repo: string, ref: string, call: CallSignal): Promise<Manifest> => {
    const result = await manifestRequest("GET", repo, ref, "pull", call);
    if (result.status === 404) {
      const parsed = parseErrorBody(result.body.toString("utf8"));
      throw new ManifestNotFoundError({
        code: parsed?.code ?? "MANIFEST_UNKNOWN",
        message: parsed?.message || "manifest not found",
        method: "GET",
        url: `${parsedBase.host}${manifestPath(parsedBase, repo, ref)}`,
      });
    }
    if (result.status !== 200) throw failure("GET", repo, ref, result);
    const computed = sha256(result.body);
    const invalid = (message: string): RegistryError =>
      new RegistryError({
        status: 200,
        code: "MANIFEST_INVALID",
        message,
        method: "GET",
        url: `${parsedBase.host}${manifestPath(parsedBase, repo, ref)}`,
      });
    if (isDigest(ref) && ref.startsWith("sha256:") && ref !== computed) {
      throw invalid(`manifest content has digest ${computed}, not the requested one`);
    }
    let manifest: unknown;
    try {
      manifest = JSON.parse(result.body.toString("utf8"));
    } catch {
      throw invalid("manifest is not JSON");
    }
    if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest)) {
      throw invalid("manifest is not a JSON object");
    }
    const record = manifest as Record<string, unknown>;
    const mediaType =
      result.headers.get("content-type") ?? (typeof record.mediaType === "string" ? record.mediaType : "");
    return {
      digest: result.headers.get("docker-content-digest") ?? computed,
      mediaType,
      manifest: record,
      raw: result.body,
    };
  };

  const listTags = async (repo: string, call: CallSignal): Promise<string[]> => {
    const tags: string[] = [];
    let path: string | undefined = `/v2/${repositoryPath(parsedBase, repo)}/tags/list`;
    while (path !== undefined) {
      const result = await session.request("GET", path, repositoryPath(parsedBase, repo), "pull", {}, call);
      if (result.status === 404) return tags;
      if (result.status !== 200) throw failureAt("GET", path, result);
      const body = JSON.parse(result.body.toString("utf8")) as { tags?: unknown };
      if (Array.isArray(body.tags)) for (const tag of body.tags) if (typeof tag === "string") tags.push(tag);
      path = nextPagePath(result.headers.get("link"));
    }
    return tags;
  };

  /** DELETE one reference; true when the registry refused it because it is a tag. */
  const deleteOnce = async (repo: string, ref: string, call: CallSignal): Promise<"done" | "refused-tag"> => {
    const result = await manifestRequest("DELETE", repo, ref, "push,pull", call);
    if (result.status === 200 || result.status === 202 || result.status === 404) return "done";
    // distribution 2.8 answers DELETE by tag with 400 DIGEST_INVALID; others with 405.
    if (!isDigest(ref) && (result.status === 400 || result.status === 405)) return "refused-tag";
    throw failure("DELETE", repo, ref, result);
  };

  /** The tags of `repo` other than `except` that name `digest` now (a HEAD each). */
  const tagsNaming = async (repo: string, digest: string, except: string | undefined, call: CallSignal) => {
    const naming: string[] = [];
    for (const tag of await listTags(repo, call)) {
      if (tag !== except && (await head(repo, tag, call))?.digest === digest) naming.push(tag);
    }
    return naming;
  };

  /**
   * Removes `tag` from a registry that deletes only by digest, where it named `digest`. A manifest
   * deleted by digest takes every tag naming it, so no delete may go to a digest another tag still
   * names: the tag is first re-pointed to a manifest of its own (the same config and layers, one
   * annotation more), and that digest goes. Where no other tag names the digest it goes at once. A
   * tag the re-point's HEAD finds naming another manifest (pushed since the caller's probe) is left.
   */
  const deleteTagByDigest = async (repo: string, tag: string, digest: string, call: CallSignal) => {
    if ((await tagsNaming(repo, digest, tag, call)).length === 0) {
      await deleteOnce(repo, digest, call);
      return;
    }
    if ((await head(repo, tag, call))?.digest !== digest) return;
    const shared = await get(repo, digest, call);
    const own = await put(
      repo,
      tag,
      withManifestAnnotations(shared.raw, { [DROPPED_TAG_ANNOTATION]: tag }),
      shared.mediaType,
      call,
    );
    await deleteOnce(repo, own, call);
  };

  // A registry that refused one tag delete (distribution 2.8) refuses them all: once it has, a delete
  // whose digest the caller already saw goes straight to the digest, one request fewer per tag.
  let refusesTagDeletes = false;
  const deleteTag = (repo: string, tag: string, digest: string | undefined, call: CallSignal) =>
    counted(deleteTagOnce(repo, tag, digest, call));
  const counted = async (deletion: Promise<void>): Promise<void> => {
    try {
      await deletion;
    } catch (err) {
      opts.onDelete?.("failed");
      throw err;
    }
    opts.onDelete?.("deleted");
  };
  const deleteTagOnce = async (repo: string, tag: string, digest: string | undefined, call: CallSignal) => {
    if (!(refusesTagDeletes && digest !== undefined)) {
      if ((await deleteOnce(repo, tag, call)) === "done") return;
      refusesTagDeletes = true;
    }
    const target = digest ?? (await head(repo, tag, call))?.digest;
    if (target === undefined) return;
    await deleteTagByDigest(repo, tag, target, call);
  };

  /** A manifest by digest goes only when no tag names it: it would take every such tag with it. */
  const deleteUntagged = async (repo: string, digest: string, call: CallSignal) => {
    const naming = await tagsNaming(repo, digest, undefined, call);
    if (naming.length > 0) {
      throw new RegistryError({
        status: 0,
        code: "MANIFEST_TAGGED",
        message: `tags ${naming.join(", ")} still name this manifest; delete a tag instead`,
        method: "DELETE",
        url: `${parsedBase.host}${manifestPath(parsedBase, repo, digest)}`,
      });
    }
    await deleteOnce(repo, digest, call);
  };

  const put = async (repo: string, tag: string, raw: Buffer, mediaType: string, call: CallSignal) => {
    const result = await session.request(
      "PUT",
      manifestPath(parsedBase, repo, tag),
      repositoryPath(parsedBase, repo),
      "push,pull",
      { "content-type": mediaType },
      call,
      { body: raw },
    );
    if (result.status !== 201) throw failure("PUT", repo, tag, result);
    return result.headers.get("docker-content-digest") ?? sha256(raw);
  };

  /** One blob, under a deadline of its own that grows with its size. */
  const copyBlobWithin = (fromRepo: string, toRepo: string, blob: BlobRef, caller?: AbortSignal) =>
    copyBlob(
      fromRepo,
      toRepo,
      blob,
      callSignal(caller, Math.ceil((blob.size ?? 0) / STREAM_FLOOR_BYTES_PER_MS)),
    );

  const copyBlob = async (
    fromRepo: string,
    toRepo: string,
    blob: BlobRef,
    call: CallSignal,
  ): Promise<BlobCopyResult> => {
    const from = repositoryPath(parsedBase, fromRepo);
    const to = repositoryPath(parsedBase, toRepo);
    const { digest } = blob;
    // One token for every request of the copy: push,pull on the target and pull on the source.
    const scopes = { scopes: [`repository:${from}:pull`] };
    const targetPath = `/v2/${to}/blobs/${digest}`;
    const present = await session.request("HEAD", targetPath, to, "push,pull", {}, call, scopes);
    // Only a 200 naming this blob skips it; any other answer leaves the blob to the mount, which
    // reports a refusal with its error body (a HEAD has none).
    if (present.status === 200 && isSameBlob(present.headers, blob))
      return { method: "present", bytesSent: 0 };
    const uploads = `/v2/${to}/blobs/uploads/`;
    const mountQuery = `?mount=${encodeURIComponent(digest)}&from=${encodeURIComponent(from)}`;
    const mount = await session.request("POST", `${uploads}${mountQuery}`, to, "push,pull", {}, call, scopes);
    if (mount.status === 201) return { method: "mounted", bytesSent: 0 };
    if (mount.status !== 202) throw failureAt("POST", uploads, mount);
    // 202: the registry opened an ordinary upload instead (no mount support, or the source is not
    // readable for the mount); the blob goes through this process without being held in memory.
    const upload = {
      session,
      call,
      from,
      to,
      blob,
      host: parsedBase.host,
      chunk: chunkSize,
      attempts: opts.uploadAttempts ?? DEFAULT_UPLOAD_ATTEMPTS,
      sleep,
      debug: (obj: object, msg: string) => opts.logger?.debug?.(obj, msg),
    };
    return { method: "streamed", bytesSent: await uploadBlob(upload, mount) };
  };

  return {
    base: parsedBase,
    headManifest: (repo, ref, signal) => head(repo, ref, callSignal(signal)),
    async hasManifest(repo, tag, signal) {
      return (await head(repo, tag, callSignal(signal))) !== null;
    },
    getManifest: (repo, ref, signal) => get(repo, ref, callSignal(signal)),
    listTags: (repo, signal) => listTags(repo, callSignal(signal)),
    async getSnapshot(repo, tag, signal) {
      let manifest: Manifest;
      try {
        manifest = await get(repo, tag, callSignal(signal));
      } catch (err) {
        if (err instanceof ManifestNotFoundError) return null;
        throw err;
      }
      const annotations = stringRecord(manifest.manifest.annotations);
      return { digest: manifest.digest, baseImage: annotations[BASE_IMAGE_ANNOTATION] ?? "", annotations };
    },
    async deleteManifest(repo, ref, signal) {
      const call = callSignal(signal);
      if (isDigest(ref)) await counted(deleteUntagged(repo, ref, call));
      else await deleteTag(repo, ref, undefined, call);
    },
    putManifest: (repo, tag, raw, mediaType, signal) => put(repo, tag, raw, mediaType, callSignal(signal)),
    copyBlob: copyBlobWithin,
    async copyManifest(fromRepo, ref, toRepo, toTag, signal) {
      const manifest = await get(fromRepo, ref, callSignal(signal));
      const blobs: BlobCopy[] = [];
      let bytesSent = 0;
      if (fromRepo !== toRepo) {
        for (const blob of referencedBlobs(manifest.manifest)) {
          const copied = await copyBlobWithin(fromRepo, toRepo, blob, signal);
          blobs.push(copied.method);
          bytesSent += copied.bytesSent;
        }
      }
      const digest = await put(toRepo, toTag, manifest.raw, manifest.mediaType, callSignal(signal));
      return { digest, mediaType: manifest.mediaType, blobs, bytesSent };
    },
    async deleteTagAt(repo, tag, digest, signal) {
      await deleteTag(repo, tag, digest, callSignal(signal));
    },
    async deleteIfPresent(repo, tag, signal) {
      const call = callSignal(signal);
      const seen = await head(repo, tag, call);
      if (seen === null) return false;
      await deleteTag(repo, tag, seen.digest, call);
      return true;
    },
  };
}

/** The path of a `Link: </v2/…?last=x&n=y>; rel="next"` header, as distribution paginates. */
function nextPagePath(link: string | null): string | undefined {
  const match = link?.match(/<([^>]+)>\s*;\s*rel="?next"?/);
  if (!match?.[1]) return undefined;
  const url = new URL(match[1], "http://registry.invalid");
  return url.pathname + url.search;
}

/**
 * Written on the manifest a tag is re-pointed to just before its delete (the tag's name), so that
 * manifest's digest is the tag's alone.
 */
export const DROPPED_TAG_ANNOTATION = "cocoonstack.registry.dropped-tag";

/**
 * The manifest `raw` with `stamps` among its annotations and the keys `drop` removed from them; every
 * other field as it was, so its config and layers (and no blob) are shared with the original.
 */
export function withManifestAnnotations(
  raw: Buffer,
  stamps: Record<string, string>,
  drop: readonly string[] = [],
): Buffer {
  const manifest = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  const current = manifest.annotations;
  const annotations: Record<string, unknown> =
    typeof current === "object" && current !== null && !Array.isArray(current) ? { ...current } : {};
  for (const gone of drop) delete annotations[gone];
  return Buffer.from(JSON.stringify({ ...manifest, annotations: { ...annotations, ...stamps } }));
}

function sha256(bytes: Buffer): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/**
 * The blobs an image manifest references: config, then layers. An index references manifests, not
 * blobs, and a snapshot is never one: it is refused rather than copied half.
 */
export function referencedBlobs(manifest: Record<string, unknown>): BlobRef[] {
  if (Array.isArray(manifest.manifests)) {
    throw new RegistryError({
      status: 0,
      code: "MANIFEST_UNSUPPORTED",
      message: "an image index cannot be copied as a snapshot",
      method: "GET",
      url: "",
    });
  }
  const descriptors = [manifest.config, ...(Array.isArray(manifest.layers) ? manifest.layers : [])];
  return descriptors.flatMap((d) => {
    const { digest, size } = (d ?? {}) as { digest?: unknown; size?: unknown };
    if (typeof digest !== "string") return [];
    return [typeof size === "number" && size > 0 ? { digest, size } : { digest }];
  });
}

/** Bytes an image manifest references (config and layer sizes). */
export function referencedBytes(manifest: Record<string, unknown>): number {
  return referencedBlobs(manifest).reduce((total, blob) => total + (blob.size ?? 0), 0);
}

function stringRecord(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value !== "object" || value === null) return out;
  for (const [key, entry] of Object.entries(value)) if (typeof entry === "string") out[key] = entry;
  return out;
}

/** A HEAD's answer is the blob asked for: its digest, and its size where both are known. */
function isSameBlob(headers: HttpResult["headers"], blob: BlobRef): boolean {
  const digest = headers.get("docker-content-digest");
  const length = headers.get("content-length");
  if (digest !== null && digest !== blob.digest) return false;
  return blob.size === undefined || length === null || Number(length) === blob.size;
}

/** Client-side codes for statuses whose response has no error body (every HEAD). */
function statusCode(status: number): string {
  switch (status) {
    case 401:
      return "UNAUTHORIZED";
    case 403:
      return "DENIED";
    case 405:
      return "UNSUPPORTED";
    case 429:
      return "TOOMANYREQUESTS";
    default:
      return `HTTP_${status}`;
  }
}
