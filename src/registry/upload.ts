// The arithmetic of a chunked, resumable blob upload (OCI distribution spec, "Pushing a blob in
// chunks"): which bytes the next PATCH carries, what an upload session's Range header says it holds,
// where a resumed upload continues, and how long to wait before trying again. Pure: no I/O.

export const MiB = 1024 * 1024;

/**
 * Bytes per PATCH unless configured otherwise: large enough to keep request overhead small, small
 * enough to pass registries' body-size limits and to bound what a failure re-sends and what a copy
 * holds in memory (about one chunk; --copy-concurrency copies run at once under a 512 MiB limit).
 */
export const DEFAULT_CHUNK_BYTES = 16 * MiB;

/** Tries of one blob's upload (the first included) before the copy fails. */
export const DEFAULT_UPLOAD_ATTEMPTS = 5;

const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 10_000;

/** One PATCH's bytes of the blob, both ends inclusive as Content-Range writes them. */
export interface Chunk {
  start: number;
  end: number;
}

/**
 * The chunk size to use: the configured one, raised to the registry's `OCI-Chunk-Min-Length` when it
 * asks for more (a header that is not a positive integer is ignored).
 */
export function chunkBytes(configured: number, minLengthHeader: string | null): number {
  const min = minLengthHeader !== null && /^\d+$/.test(minLengthHeader.trim()) ? Number(minLengthHeader) : 0;
  return Math.max(configured, min);
}

/** The next chunk of a blob of `size` bytes from `offset`; undefined once every byte is sent. */
export function nextChunk(offset: number, size: number, chunk: number): Chunk | undefined {
  if (offset >= size) return undefined;
  return { start: offset, end: Math.min(offset + chunk, size) - 1 };
}

/** Every chunk of a blob from `offset`, in order. */
export function chunkPlan(offset: number, size: number, chunk: number): Chunk[] {
  const plan: Chunk[] = [];
  for (let c = nextChunk(offset, size, chunk); c !== undefined; c = nextChunk(c.end + 1, size, chunk)) {
    plan.push(c);
  }
  return plan;
}

/** The last byte an upload session's `Range: 0-<last>` header names; undefined when absent or malformed. */
export function parseUploadRange(header: string | null): number | undefined {
  const match = header?.trim().match(/^(?:bytes=)?0-(\d+)$/);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * Where an upload continues, from the session's Range header: the byte after the last one it holds.
 * `0-0` is what distribution says both of an empty session and of one holding a single byte: it is
 * taken as one byte only right after sending exactly byte 0 (`sentEnd` 0), and is otherwise unknown.
 * Unknown (undefined): the session's content cannot be trusted, a new one starts from byte 0.
 */
export function resumeOffset(rangeHeader: string | null, sentEnd?: number): number | undefined {
  const last = parseUploadRange(rangeHeader);
  if (last === undefined) return undefined;
  if (last === 0 && sentEnd !== 0) return undefined;
  return last + 1;
}

/**
 * The first byte a source answered a ranged GET with (`Content-Range: bytes <first>-<last>/<size>`) and
 * the blob's size, or undefined when the header is absent or malformed.
 */
export function parseContentRange(header: string | null): { first: number; size: number } | undefined {
  const match = header?.trim().match(/^bytes (\d+)-(\d+)\/(\d+)$/);
  if (!match) return undefined;
  return { first: Number(match[1]), size: Number(match[3]) };
}

/** Statuses after which an upload is worth resuming: no answer, timeouts, throttling, server errors. */
export function isRetryableStatus(status: number): boolean {
  return status === 0 || status === 408 || status === 429 || status >= 500;
}

/** The wait before try `attempt` (2, 3, …): doubling from 0.5 s, at most 10 s. */
export function backoffMs(attempt: number): number {
  return Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 2));
}
