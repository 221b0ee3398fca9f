// An in-memory SnapshotRegistry for reconciler unit tests: keyed `<repo>:<tag>`, records every
// call in order, and can be told to fail. Its deletes answer as the client does: no delete removes
// a manifest another tag still names.
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

  /**
   * As the client answers it: a tag goes alone; a digest goes only while no tag names it, else the
   * delete is refused (MANIFEST_TAGGED), as it would take every tag naming it.
   */
  async deleteManifest(repo: string, ref: string): Promise<void> {
    this.#record("deleteManifest", repo, ref);
    if (!ref.startsWith("sha256:")) {
      this.#manifests.delete(`${repo}:${ref}`);
      return;
    }
    if (this.#tagsNaming(repo, ref).length > 0) throw FakeSnapshotRegistry.error(0, "MANIFEST_TAGGED");
  }

  /**
   * As the client answers it on the test registry (distribution 2.8), which deletes only by digest:
   * the tag goes if it still names `digest` (a manifest pushed under it since stays), and every other
   * tag naming that digest stays (the client re-points the tag to a manifest of its own first).
   */
  async deleteTagAt(repo: string, tag: string, digest: string): Promise<void> {
    this.#record("deleteTagAt", repo, `${tag}@${digest}`);
    if (this.#manifests.get(`${repo}:${tag}`)?.digest === digest) this.#manifests.delete(`${repo}:${tag}`);
  }

  async deleteIfPresent(repo: string, tag: string): Promise<boolean> {
    this.#record("deleteIfPresent", repo, tag);
    if (!this.has(repo, tag)) return false;
    this.#manifests.delete(`${repo}:${tag}`);
    return true;
  }

  /**
   * Tags `<repo>:<tag>` under the manifest `<repo>:<from>` names (the same digest), as a copy of
   * identical bytes would; returns that digest.
   */
  alias(repo: string, from: string, tag: string): string {
    const entry = this.#manifests.get(`${repo}:${from}`);
    if (!entry) throw new Error(`${repo}:${from} is not stored`);
    this.#manifests.set(`${repo}:${tag}`, entry);
    return entry.digest;
  }

  #tagsNaming(repo: string, digest: string): string[] {
    return [...this.#manifests]
      .filter(([key, entry]) => key.startsWith(`${repo}:`) && entry.digest === digest)
      .map(([key]) => key.slice(repo.length + 1));
  }
}
