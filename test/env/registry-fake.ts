// An in-memory SnapshotRegistry for reconciler unit tests: keyed `<repo>:<tag>`, records every
// call in order, and can be told to fail.
import { createHash } from "node:crypto";
import {
  type ManifestHead,
  RegistryError,
  type SnapshotManifest,
  type SnapshotRegistry,
} from "../../src/registry/index.ts";

export type RegistryOp =
  | "hasManifest"
  | "headManifest"
  | "getSnapshot"
  | "deleteManifest"
  | "deleteTagAt"
  | "deleteIfPresent";

export interface RegistryCall {
  op: RegistryOp;
  repo: string;
  ref: string;
}

export class FakeSnapshotRegistry implements SnapshotRegistry {
  readonly calls: RegistryCall[] = [];
  /** Return an error to make that call fail (e.g. `() => FakeSnapshotRegistry.error(500)`). */
  failOn: ((call: RegistryCall) => Error | undefined) | undefined;
  readonly #manifests = new Map<string, { digest: string; annotations: Record<string, string> }>();

  static error(status: number, code = `HTTP_${status}`): RegistryError {
    return new RegistryError({ status, code, message: "injected failure", method: "FAKE", url: "fake" });
  }

  /** Stores a manifest under `<repo>:<tag>` and returns its digest. */
  put(repo: string, tag: string, baseImage = "", annotations: Record<string, string> = {}): string {
    const digest = `sha256:${createHash("sha256").update(`${repo}:${tag}:${this.#manifests.size}`).digest("hex")}`;
    const all = baseImage
      ? { ...annotations, "cocoonstack.snapshot.baseimage": baseImage }
      : { ...annotations };
    this.#manifests.set(`${repo}:${tag}`, { digest, annotations: all });
    return digest;
  }

  has(repo: string, tag: string): boolean {
    return this.#manifests.has(`${repo}:${tag}`);
  }

  /** Only the calls of one kind, as `<repo>:<ref>`. */
  callsOf(op: RegistryOp): string[] {
    return this.calls.filter((c) => c.op === op).map((c) => `${c.repo}:${c.ref}`);
  }

  #record(op: RegistryOp, repo: string, ref: string): void {
    const call = { op, repo, ref };
    this.calls.push(call);
    const err = this.failOn?.(call);
    if (err) throw err;
  }

  async hasManifest(repo: string, tag: string): Promise<boolean> {
    this.#record("hasManifest", repo, tag);
    return this.has(repo, tag);
  }

  async headManifest(repo: string, ref: string): Promise<ManifestHead | null> {
    this.#record("headManifest", repo, ref);
    const digest = this.#manifests.get(`${repo}:${ref}`)?.digest;
    return digest === undefined
      ? null
      : { digest, mediaType: "application/vnd.oci.image.manifest.v1+json", size: 0 };
  }

  async getSnapshot(repo: string, tag: string): Promise<SnapshotManifest | null> {
    this.#record("getSnapshot", repo, tag);
    const entry = this.#manifests.get(`${repo}:${tag}`);
    if (!entry) return null;
    return {
      digest: entry.digest,
      baseImage: entry.annotations["cocoonstack.snapshot.baseimage"] ?? "",
      annotations: { ...entry.annotations },
    };
  }

  async deleteManifest(repo: string, ref: string): Promise<void> {
    this.#record("deleteManifest", repo, ref);
    this.#remove(repo, ref);
  }

  /**
   * As the test registry (distribution 2.8) answers it: the tag delete is refused, so the digest goes,
   * and a manifest pushed under the tag since (another digest) stays.
   */
  async deleteTagAt(repo: string, tag: string, digest: string): Promise<void> {
    this.#record("deleteTagAt", repo, `${tag}@${digest}`);
    this.#remove(repo, digest);
  }

  async deleteIfPresent(repo: string, tag: string): Promise<boolean> {
    this.#record("deleteIfPresent", repo, tag);
    if (!this.has(repo, tag)) return false;
    this.#remove(repo, tag);
    return true;
  }

  /** A digest removes every tag of the repository that points at it, as on a real registry. */
  #remove(repo: string, ref: string): void {
    for (const [key, entry] of this.#manifests) {
      if (key === `${repo}:${ref}` || (key.startsWith(`${repo}:`) && entry.digest === ref)) {
        this.#manifests.delete(key);
      }
    }
  }
}
