// An in-memory CheckpointRegistry for checkpoint and branch unit tests: repositories of tags naming
// manifests by digest, blobs per repository, and the client's delete rule over distribution (a tag
// goes alone; removeByDigest is the registry's own digest delete, which takes every tag naming it).
// Every call is recorded in order, into a log the test can share with the API client's calls to
// check the order across both.
import { createHash } from "node:crypto";
import {
  type BlobCopy,
  type BlobCopyResult,
  type BlobRef,
  type CheckpointRegistry,
  type Manifest,
  type ManifestCopy,
  type ManifestHead,
  ManifestNotFoundError,
  RegistryError,
  referencedBlobs,
  type SnapshotManifest,
} from "../../src/registry/index.ts";

export const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";

const sha256 = (bytes: Buffer | string): string =>
  `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

export class FakeCheckpointRegistry implements CheckpointRegistry {
  /** `<op> <repo>:<ref>` per call, in order. */
  readonly log: string[];
  /** Return an error to fail that call (`op`, `repo`, `ref`). */
  failOn: ((op: string, repo: string, ref: string) => Error | undefined) | undefined;
  readonly #manifests = new Map<string, Buffer>();
  readonly #tags = new Map<string, string>();
  readonly #blobs = new Set<string>();

  constructor(log: string[] = []) {
    this.log = log;
  }

  static error(status: number): RegistryError {
    return new RegistryError({ status, code: "DENIED", message: "refused", method: "FAKE", url: "fake" });
  }

  /** Pushes a snapshot-shaped manifest (config + one layer of `layerBytes`) as `<repo>:<tag>`. */
  push(repo: string, tag: string, baseImage: string, layerBytes = 100): string {
    const config = {
      mediaType: "config",
      digest: sha256(`${repo}:${tag}:config:${Math.random()}`),
      size: 10,
    };
    const layer = {
      mediaType: "layer",
      digest: sha256(`${repo}:${tag}:layer:${Math.random()}`),
      size: layerBytes,
    };
    for (const blob of [config, layer]) this.#blobs.add(`${repo}@${blob.digest}`);
    const raw = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config,
        layers: [layer],
        annotations: { "cocoonstack.snapshot.baseimage": baseImage },
      }),
    );
    const digest = sha256(raw);
    this.#manifests.set(`${repo}@${digest}`, raw);
    this.#tags.set(`${repo}:${tag}`, digest);
    return digest;
  }

  digestOf(repo: string, tag: string): string | undefined {
    return this.#tags.get(`${repo}:${tag}`);
  }

  hasBlob(repo: string, digest: string): boolean {
    return this.#blobs.has(`${repo}@${digest}`);
  }

  #call(op: string, repo: string, ref: string): void {
    this.log.push(`${op} ${repo}:${ref}`);
    const err = this.failOn?.(op, repo, ref);
    if (err) throw err;
  }

  #resolve(repo: string, ref: string): string | undefined {
    return ref.includes(":")
      ? this.#manifests.has(`${repo}@${ref}`)
        ? ref
        : undefined
      : this.#tags.get(`${repo}:${ref}`);
  }

  async headManifest(repo: string, ref: string): Promise<ManifestHead | null> {
    this.#call("head", repo, ref);
    const digest = this.#resolve(repo, ref);
    return digest
      ? { digest, mediaType: OCI_MANIFEST, size: this.#manifests.get(`${repo}@${digest}`)?.length ?? 0 }
      : null;
  }

  async hasManifest(repo: string, tag: string): Promise<boolean> {
    this.#call("has", repo, tag);
    return this.#resolve(repo, tag) !== undefined;
  }

  #read(repo: string, ref: string): Manifest {
    const digest = this.#resolve(repo, ref);
    const raw = digest ? this.#manifests.get(`${repo}@${digest}`) : undefined;
    if (!digest || !raw) {
      throw new ManifestNotFoundError({
        code: "MANIFEST_UNKNOWN",
        message: "unknown",
        method: "GET",
        url: `${repo}:${ref}`,
      });
    }
    return { digest, mediaType: OCI_MANIFEST, manifest: JSON.parse(raw.toString("utf8")), raw };
  }

  async getManifest(repo: string, ref: string): Promise<Manifest> {
    this.#call("get", repo, ref);
    return this.#read(repo, ref);
  }

  async getSnapshot(repo: string, tag: string): Promise<SnapshotManifest | null> {
    this.#call("getSnapshot", repo, tag);
    if (this.#resolve(repo, tag) === undefined) return null;
    const manifest = this.#read(repo, tag);
    const annotations = (manifest.manifest.annotations ?? {}) as Record<string, string>;
    return {
      digest: manifest.digest,
      baseImage: annotations["cocoonstack.snapshot.baseimage"] ?? "",
      annotations,
    };
  }

  async putManifest(repo: string, tag: string, raw: Buffer): Promise<string> {
    this.#call("put", repo, tag);
    const manifest = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
    for (const { digest: blob } of referencedBlobs(manifest)) {
      if (!this.#blobs.has(`${repo}@${blob}`)) throw FakeCheckpointRegistry.error(400);
    }
    const digest = sha256(raw);
    this.#manifests.set(`${repo}@${digest}`, raw);
    this.#tags.set(`${repo}:${tag}`, digest);
    return digest;
  }

  /** A blob the target holds already is not copied again (the client's HEAD), else it is mounted. */
  async copyBlob(fromRepo: string, toRepo: string, { digest }: BlobRef): Promise<BlobCopyResult> {
    if (this.#blobs.has(`${toRepo}@${digest}`)) return { method: "present", bytesSent: 0 };
    this.#call("mount", toRepo, digest);
    if (!this.#blobs.has(`${fromRepo}@${digest}`)) throw FakeCheckpointRegistry.error(404);
    this.#blobs.add(`${toRepo}@${digest}`);
    return { method: "mounted", bytesSent: 0 };
  }

  async copyManifest(fromRepo: string, ref: string, toRepo: string, toTag: string): Promise<ManifestCopy> {
    const source = await this.getManifest(fromRepo, ref);
    const blobs: BlobCopy[] = [];
    for (const blob of referencedBlobs(source.manifest))
      blobs.push((await this.copyBlob(fromRepo, toRepo, blob)).method);
    const digest = await this.putManifest(toRepo, toTag, source.raw);
    return { digest, mediaType: OCI_MANIFEST, blobs, bytesSent: 0 };
  }

  /**
   * The registry's own DELETE by digest, as distribution answers it: the manifest and every tag
   * naming it go. The client's calls below never send one that another tag still names.
   */
  removeByDigest(repo: string, digest: string): void {
    this.#manifests.delete(`${repo}@${digest}`);
    for (const [key, value] of this.#tags)
      if (key.startsWith(`${repo}:`) && value === digest) this.#tags.delete(key);
  }

  /** The tags of `repo` naming `digest`. */
  tagsNaming(repo: string, digest: string): string[] {
    return [...this.#tags]
      .filter(([key, value]) => key.startsWith(`${repo}:`) && value === digest)
      .map(([key]) => key.slice(repo.length + 1));
  }

  /**
   * As the client behaves against distribution: a tag goes alone (the manifest too once no tag names
   * it); a digest goes only while no tag names it, else the delete is refused.
   */
  async deleteManifest(repo: string, ref: string): Promise<void> {
    this.#call("delete", repo, ref);
    if (!ref.includes(":")) {
      this.#dropTag(repo, ref, this.#tags.get(`${repo}:${ref}`));
      return;
    }
    if (this.tagsNaming(repo, ref).length > 0) throw FakeCheckpointRegistry.error(409);
    this.#manifests.delete(`${repo}@${ref}`);
  }

  async deleteTagAt(repo: string, tag: string, digest: string): Promise<void> {
    this.#call("deleteTagAt", repo, `${tag}@${digest}`);
    this.#dropTag(repo, tag, digest);
  }

  async deleteIfPresent(repo: string, tag: string): Promise<boolean> {
    this.#call("deleteIfPresent", repo, tag);
    const digest = this.#resolve(repo, tag);
    if (!digest) return false;
    this.#dropTag(repo, tag, digest);
    return true;
  }

  /** `tag` goes if it still names `digest`; the manifest goes with it once no other tag names it. */
  #dropTag(repo: string, tag: string, digest: string | undefined): void {
    if (digest === undefined || this.#tags.get(`${repo}:${tag}`) !== digest) return;
    this.#tags.delete(`${repo}:${tag}`);
    if (this.tagsNaming(repo, digest).length === 0) this.#manifests.delete(`${repo}@${digest}`);
  }
}
