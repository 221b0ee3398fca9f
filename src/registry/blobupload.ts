// One blob streamed from a source repository into an upload session of a target repository, as the
// OCI distribution spec's chunked push: PATCHes of `chunk` bytes with Content-Range, each answered by
// a 202 naming the next Location and the Range the session holds, then a PUT ?digest=. A chunk that
// fails (no answer, a reset, 5xx, 429) is resumed: the session's status (GET <location>: 204 with
// Range 0-N) says where, and the source is read again from byte N+1 with a ranged GET. A session the
// registry forgot (404) is replaced by a new one from byte 0, as is a source that ignores Range.
// Nothing is held beyond one read of the source stream.
import { parseErrorBody, RegistryError } from "./errors.ts";
import type { CallSignal, HttpResult, Session } from "./session.ts";
import {
  backoffMs,
  chunkBytes,
  isRetryableStatus,
  nextChunk,
  parseContentRange,
  resumeOffset,
} from "./upload.ts";

export interface UploadBlob {
  digest: string;
  size?: number;
}

export interface BlobUploadOptions {
  session: Session;
  call: CallSignal;
  /** Repository paths (under the registry), of the source and of the target. */
  from: string;
  to: string;
  blob: UploadBlob;
  host: string;
  /** Bytes per PATCH; 0 sends the blob in one streamed PUT, which is not resumable. */
  chunk: number;
  /** Tries of the upload, the first included. */
  attempts: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  debug: (obj: object, msg: string) => void;
}

/** Streams the blob into the session `opened` (the 202 of a POST to …/blobs/uploads/); returns the bytes sent. */
export async function uploadBlob(opts: BlobUploadOptions, opened: HttpResult): Promise<number> {
  return new BlobUpload(opts).run(opened);
}

class BlobUpload {
  readonly #o: BlobUploadOptions;
  readonly #uploads: string;
  readonly #blobPath: string;
  readonly #scopes: { scopes: string[] };
  #location = "";
  #chunk = 0;
  #sent = 0;

  constructor(opts: BlobUploadOptions) {
    this.#o = opts;
    this.#uploads = `/v2/${opts.to}/blobs/uploads/`;
    this.#blobPath = `/v2/${opts.from}/blobs/${opts.blob.digest}`;
    this.#scopes = { scopes: [`repository:${opts.from}:pull`] };
  }

  async run(opened: HttpResult): Promise<number> {
    this.#adopt(opened, "POST");
    if (this.#o.chunk === 0) {
      await this.#monolithic();
      return this.#sent;
    }
    let offset: number | "done" = 0;
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.#o.attempts; attempt++) {
      try {
        if (attempt > 1) {
          await this.#o.sleep(backoffMs(attempt), this.#o.call.signal).catch(() => {
            throw lastError;
          });
          offset = await this.#resumePoint();
        }
        if (offset !== "done") {
          await this.#sendFrom(offset);
          await this.#finish();
        }
        return this.#sent;
      } catch (err) {
        if (!isResumable(err)) throw err;
        lastError = err;
        this.#o.debug(
          { digest: this.#o.blob.digest, repository: this.#o.to, attempt, err: (err as Error).message },
          "blob upload interrupted",
        );
      }
    }
    throw lastError;
  }

  /** Takes the session a POST or PATCH answered with: its Location, and its minimum chunk on the POST. */
  #adopt(result: HttpResult, method: string): void {
    const location = result.headers.get("location");
    if (!location) {
      throw new RegistryError({
        status: result.status,
        code: "UPLOAD_LOCATION_MISSING",
        message: "upload session without a Location header",
        method,
        url: `${this.#o.host}${this.#uploads}`,
      });
    }
    const url = new URL(location, "http://registry.invalid");
    this.#location = `${url.pathname}${url.search}`;
    if (method === "POST")
      this.#chunk = chunkBytes(this.#o.chunk, result.headers.get("oci-chunk-min-length"));
  }

  async #newSession(): Promise<void> {
    const { session, to, call } = this.#o;
    const opened = await session.request("POST", this.#uploads, to, "push,pull", {}, call, this.#scopes);
    if (opened.status !== 202) throw this.#failure("POST", this.#uploads, opened);
    this.#adopt(opened, "POST");
  }

  /** Where to continue after a failure: the session's own count, byte 0 of a new one, or done already. */
  async #resumePoint(): Promise<number | "done"> {
    const { session, to, call, blob } = this.#o;
    const status = await session.request("GET", this.#location, to, "push,pull", {}, call, this.#scopes);
    if (status.status === 204 || status.status === 200) {
      const offset = resumeOffset(status.headers.get("range"));
      if (offset !== undefined) {
        if (status.headers.get("location")) this.#adopt(status, "GET");
        return offset;
      }
    } else if (status.status === 404) {
      // The session is gone, perhaps because the final PUT landed before its answer was lost.
      const target = `/v2/${to}/blobs/${blob.digest}`;
      const head = await session.request("HEAD", target, to, "push,pull", {}, call, this.#scopes);
      if (head.status === 200) return "done";
    } else {
      throw this.#failure("GET", pathOnly(this.#location), status);
    }
    await this.#newSession();
    return 0;
  }

  /** Opens the source at `offset` and PATCHes it chunk by chunk to the end of the blob. */
  async #sendFrom(offset: number): Promise<void> {
    const { session, from, to, call, blob } = this.#o;
    const range: Record<string, string> = offset > 0 ? { range: `bytes=${offset}-` } : {};
    const source = await session.open("GET", this.#blobPath, from, "pull", range, call);
    const stream = source.stream;
    let size = blob.size;
    if (source.status === 206) {
      const answered = parseContentRange(source.headers.get("content-range"));
      if (answered?.first !== offset) {
        await stream?.cancel().catch(() => undefined);
        throw this.#unreadable(source.status, "the source answered another range than the one asked");
      }
      size ??= answered.size;
    } else if (source.status === 200 && stream !== null) {
      if (offset > 0) {
        this.#o.debug(
          { digest: blob.digest, repository: from, offset },
          "the source ignores Range: the blob's upload starts again from byte 0",
        );
        await this.#newSession();
        offset = 0;
      }
      const length = source.headers.get("content-length");
      size ??= length === null ? undefined : Number(length);
    }
    if ((source.status !== 200 && source.status !== 206) || stream === null) {
      await stream?.cancel().catch(() => undefined);
      throw this.#unreadable(source.status, "blob not readable from the source repository");
    }
    if (size === undefined) {
      await stream.cancel().catch(() => undefined);
      throw this.#unreadable(source.status, "the blob's size is unknown");
    }
    const reader = stream.getReader();
    const carry: Carry = {};
    try {
      for (let c = nextChunk(offset, size, this.#chunk); c; c = nextChunk(offset, size, this.#chunk)) {
        const length = c.end - c.start + 1;
        const patched = await session.request(
          "PATCH",
          this.#location,
          to,
          "push,pull",
          {
            "content-type": "application/octet-stream",
            "content-range": `${c.start}-${c.end}`,
            "content-length": String(length),
          },
          call,
          { ...this.#scopes, body: this.#slice(reader, length, carry) },
        );
        if (patched.status !== 202) throw this.#failure("PATCH", pathOnly(this.#location), patched);
        this.#adopt(patched, "PATCH");
        const held = patched.headers.get("range");
        const next = held === null ? c.end + 1 : resumeOffset(held, c.end);
        if (next !== c.end + 1) {
          throw new RegistryError({
            status: 0,
            code: "UPLOAD_RANGE_MISMATCH",
            message: `the session holds ${held}, not 0-${c.end}`,
            method: "PATCH",
            url: `${this.#o.host}${pathOnly(this.#location)}`,
          });
        }
        offset = next;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  async #finish(): Promise<void> {
    await this.#closingPut({ "content-length": "0" }, Buffer.alloc(0));
  }

  /** The PUT that completes the upload: to the session's location with ?digest=, carrying `body`. */
  async #closingPut(
    headers: Record<string, string>,
    body: Buffer | ReadableStream<Uint8Array>,
  ): Promise<void> {
    const { session, to, call } = this.#o;
    const target = new URL(this.#location, "http://registry.invalid");
    target.searchParams.set("digest", this.#o.blob.digest);
    const put = await session.request(
      "PUT",
      `${target.pathname}${target.search}`,
      to,
      "push,pull",
      headers,
      call,
      { ...this.#scopes, body },
    );
    if (put.status !== 201) throw this.#failure("PUT", target.pathname, put);
  }

  /** The whole blob in one streamed PUT: what a registry without chunked uploads needs. */
  async #monolithic(): Promise<void> {
    const { session, from, call } = this.#o;
    const source = await session.open("GET", this.#blobPath, from, "pull", {}, call);
    if (source.status !== 200 || source.stream === null) {
      await source.stream?.cancel().catch(() => undefined);
      throw this.#unreadable(source.status, "blob not readable from the source repository");
    }
    const counted = source.stream.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (bytes, controller) => {
          this.#sent += bytes.byteLength;
          controller.enqueue(bytes);
        },
      }),
    );
    await this.#closingPut({ "content-type": "application/octet-stream" }, counted);
  }

  /** Exactly `length` bytes of the source, pulled as the request sends them. */
  #slice(
    reader: ReadableStreamDefaultReader<Uint8Array>,
    length: number,
    carry: Carry,
  ): ReadableStream<Uint8Array> {
    let remaining = length;
    return new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          let bytes = carry.rest;
          carry.rest = undefined;
          if (bytes === undefined) {
            const read = await reader.read();
            if (read.done) {
              controller.error(this.#unreadable(0, "the source ended before the blob's last byte"));
              return;
            }
            bytes = read.value;
          }
          if (bytes.byteLength > remaining) {
            carry.rest = bytes.subarray(remaining);
            bytes = bytes.subarray(0, remaining);
          }
          remaining -= bytes.byteLength;
          this.#sent += bytes.byteLength;
          controller.enqueue(bytes);
          if (remaining === 0) controller.close();
        },
      },
      { highWaterMark: 0 },
    );
  }

  #unreadable(status: number, message: string): RegistryError {
    return new RegistryError({
      status,
      code: status === 0 ? "UNREACHABLE" : `HTTP_${status}`,
      message,
      method: "GET",
      url: `${this.#o.host}${this.#blobPath}`,
    });
  }

  #failure(method: string, path: string, result: HttpResult): RegistryError {
    const parsed = parseErrorBody(result.body.toString("utf8"));
    return new RegistryError({
      status: result.status,
      code: parsed?.code ?? `HTTP_${result.status}`,
      message: parsed?.message || `unexpected status ${result.status}`,
      method,
      url: `${this.#o.host}${path}`,
    });
  }
}

/** Bytes read from the source past the end of the chunk that asked for them, for the next chunk. */
interface Carry {
  rest?: Uint8Array;
}

/**
 * A failure the session's status can recover from: no answer, a server error, a range the registry
 * disputes (416), or a session it dropped (distribution cancels one whose size is off its state, after
 * a chunk cut short: 404 BLOB_UPLOAD_INVALID). A cancel or the call's deadline is not one.
 */
function isResumable(err: unknown): boolean {
  if (!(err instanceof RegistryError)) return false;
  if (err.code === "CANCELLED" || err.code === "TIMEOUT") return false;
  if (err.code === "BLOB_UPLOAD_INVALID" || err.code === "BLOB_UPLOAD_UNKNOWN") return true;
  return isRetryableStatus(err.status) || err.status === 416;
}

function pathOnly(location: string): string {
  return location.split("?")[0] ?? location;
}
