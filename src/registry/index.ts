// The OCI registry client: it depends on nothing else of the operator.
export type { Challenge } from "./challenge.ts";
export {
  BASE_IMAGE_ANNOTATION,
  type BlobCopy,
  type BlobCopyResult,
  type BlobRef,
  type CheckpointRegistry,
  createRegistryClient,
  DEFAULT_TIMEOUT_MS,
  DROPPED_TAG_ANNOTATION,
  MANIFEST_ACCEPT,
  type Manifest,
  type ManifestCopy,
  type ManifestHead,
  type RegistryClient,
  type RegistryClientOptions,
  referencedBlobs,
  referencedBytes,
  type SnapshotManifest,
  type SnapshotRegistry,
  withManifestAnnotations,
} from "./client.ts";
export {
  type AccessTokenSource,
  type Credential,
  dockerConfigKeychain,
  googleKeychain,
  type Keychain,
  multiKeychain,
  type WarnLogger,
} from "./credentials.ts";
export { ManifestNotFoundError, RegistryError } from "./errors.ts";
export { parseRegistryBase, type RegistryBase } from "./reference.ts";
export type { FetchInit, FetchLike } from "./transport.ts";
export { DEFAULT_CHUNK_BYTES, MiB } from "./upload.ts";
