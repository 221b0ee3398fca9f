// The chunked, resumable blob upload over an in-memory registry speaking the OCI upload protocol,
// for the paths docker-registry cannot be made to take: a minimum chunk length, a session lost
// between chunks, a source without Range support, attempts running out.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import {
  createRegistryClient,
  type FetchInit,
  type FetchLike,
  RegistryError,
} from "../../../src/registry/index.ts";
import { backoffMs } from "../../../src/registry/upload.ts";

const BLOB = Buffer.from(Array.from({ length: 10_000 }, (_, i) => (i * 31 + (i >> 8)) & 255));
const DIGEST = `sha256:${createHash("sha256").update(BLOB).digest("hex")}`;

interface Knobs {
  /** The status of a HEAD of the blob in "dst" before it landed (default 404). */
  headStatus?: number;
  /** Sent on the POST that opens a session. */
  minChunk?: number;
  /** The source answers every GET whole, ignoring Range. */
  ignoreRange?: boolean;
  /** Answers to PATCH number n (1-based) instead of taking it: 503, or 503 and the session dropped. */
  failPatch?: Map<number, "503" | "503-drop">;
}

/** An in-memory registry: repository "src" holds BLOB; uploads into "dst" follow the OCI spec. */
function fakeRegistry(knobs: Knobs = {}) {
  const log: string[] = [];
  const patchLengths: number[] = [];
  const sessions = new Map<string, Buffer>();
  let landed: Buffer | undefined;
  let nextId = 0;
  let patches = 0;
  const respond = (status: number, headers: Record<string, string> = {}, body?: Buffer | string) =>
    new Response(body ?? null, { status, headers });
  const fetch: FetchLike = async (url: string, init: FetchInit) => {
    const u = new URL(url);
    const range = init.headers.range;
    log.push(`${init.method} ${u.pathname}${range ? ` ${range}` : ""}`);
    if (u.pathname === "/v2/") return respond(200);
    if (init.method === "HEAD" && u.pathname === `/v2/dst/blobs/${DIGEST}`) {
      if (!landed) return respond(knobs.headStatus ?? 404);
      return respond(200, { "docker-content-digest": DIGEST, "content-length": String(BLOB.length) });
    }
    if (init.method === "GET" && u.pathname === `/v2/src/blobs/${DIGEST}`) {
      const from = range && !knobs.ignoreRange ? Number(/^bytes=(\d+)-$/.exec(range)?.[1]) : 0;
      if (from > 0) {
        return respond(
          206,
          { "content-range": `bytes ${from}-${BLOB.length - 1}/${BLOB.length}` },
          BLOB.subarray(from),
        );
      }
      return respond(200, { "content-length": String(BLOB.length) }, BLOB);
    }
    if (init.method === "POST" && u.pathname === "/v2/dst/blobs/uploads/") {
      const id = `u${++nextId}`;
      sessions.set(id, Buffer.alloc(0));
      return respond(202, {
        location: `/v2/dst/blobs/uploads/${id}`,
        range: "0-0",
        ...(knobs.minChunk ? { "oci-chunk-min-length": String(knobs.minChunk) } : {}),
      });
    }
    const id = /^\/v2\/dst\/blobs\/uploads\/(u\d+)$/.exec(u.pathname)?.[1] ?? "";
    const held = sessions.get(id);
    if (held === undefined)
      return respond(404, {}, JSON.stringify({ errors: [{ code: "BLOB_UPLOAD_UNKNOWN" }] }));
    const status = () => ({
      location: `/v2/dst/blobs/uploads/${id}`,
      range: `0-${Math.max(0, held.length - 1)}`,
    });
    if (init.method === "GET") return respond(204, status());
    if (init.method === "PATCH") {
      const body = Buffer.from(await new Response(init.body as ReadableStream).arrayBuffer());
      const fault = knobs.failPatch?.get(++patches);
      if (fault) {
        if (fault === "503-drop") sessions.delete(id);
        return respond(503);
      }
      assert.equal(init.headers["content-range"], `${held.length}-${held.length + body.length - 1}`);
      assert.equal(init.headers["content-length"], String(body.length));
      patchLengths.push(body.length);
      const grown = Buffer.concat([held, body]);
      sessions.set(id, grown);
      return respond(202, { location: `/v2/dst/blobs/uploads/${id}`, range: `0-${grown.length - 1}` });
    }
    if (init.method === "PUT") {
      // The final PUT may carry the last bytes, or the whole blob (a monolithic upload).
      const body = init.body
        ? Buffer.from(await new Response(init.body as ReadableStream).arrayBuffer())
        : undefined;
      const whole = body ? Buffer.concat([held, body]) : held;
      const digest = `sha256:${createHash("sha256").update(whole).digest("hex")}`;
      if (digest !== u.searchParams.get("digest"))
        return respond(400, {}, JSON.stringify({ errors: [{ code: "DIGEST_INVALID" }] }));
      landed = whole;
      sessions.delete(id);
      return respond(201);
    }
    return respond(405);
  };
  return { fetch, log, patchLengths, landed: () => landed };
}

function client(fetch: FetchLike, opts: { chunkSize: number; uploadAttempts?: number }) {
  const sleeps: number[] = [];
  const debug: string[] = [];
  const c = createRegistryClient("reg.example.com", {
    fetch,
    keychain: { resolve: async () => ({ kind: "anonymous" }) },
    ...opts,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    logger: { warn: () => {}, debug: (_obj, msg) => debug.push(msg) },
  });
  return { c, sleeps, debug };
}

describe("chunked blob upload", () => {
  it("raises the chunk to the registry's OCI-Chunk-Min-Length", async () => {
    const reg = fakeRegistry({ minChunk: 4000 });
    const { c } = client(reg.fetch, { chunkSize: 1000 });
    assert.deepEqual(await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length }), {
      method: "streamed",
      bytesSent: BLOB.length,
    });
    assert.deepEqual(reg.patchLengths, [4000, 4000, 2000]);
    assert.deepEqual(reg.landed(), BLOB);
  });

  it("continues after a refused chunk from the byte after what the session holds, read with a ranged GET", async () => {
    const reg = fakeRegistry({ failPatch: new Map([[3, "503"]]) });
    const { c, sleeps } = client(reg.fetch, { chunkSize: 3000 });
    const copied = await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length });
    assert.equal(copied.bytesSent, BLOB.length + 3000, "the refused chunk is the only one sent again");
    assert.deepEqual(reg.log.slice(reg.log.indexOf("PATCH /v2/dst/blobs/uploads/u1") + 3), [
      "GET /v2/dst/blobs/uploads/u1",
      `GET /v2/src/blobs/${DIGEST} bytes=6000-`,
      "PATCH /v2/dst/blobs/uploads/u1",
      "PATCH /v2/dst/blobs/uploads/u1",
      "PUT /v2/dst/blobs/uploads/u1",
    ]);
    assert.deepEqual(sleeps, [backoffMs(2)]);
    assert.deepEqual(reg.landed(), BLOB);
  });

  it("opens a new session from byte 0 when the registry forgot the one under way (404 on its status)", async () => {
    const reg = fakeRegistry({ failPatch: new Map([[2, "503-drop"]]) });
    const { c } = client(reg.fetch, { chunkSize: 3000 });
    await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length });
    const after = reg.log.slice(reg.log.indexOf("GET /v2/dst/blobs/uploads/u1"));
    assert.deepEqual(after.slice(0, 4), [
      "GET /v2/dst/blobs/uploads/u1",
      `HEAD /v2/dst/blobs/${DIGEST}`,
      "POST /v2/dst/blobs/uploads/",
      `GET /v2/src/blobs/${DIGEST}`,
    ]);
    assert.equal(after.at(-1), "PUT /v2/dst/blobs/uploads/u2");
    assert.deepEqual(reg.landed(), BLOB);
  });

  it("starts the blob again in a new session when the source ignores Range, and says so in the debug log", async () => {
    const reg = fakeRegistry({ ignoreRange: true, failPatch: new Map([[2, "503"]]) });
    const { c, debug } = client(reg.fetch, { chunkSize: 3000 });
    await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length });
    const ranged = reg.log.indexOf(`GET /v2/src/blobs/${DIGEST} bytes=3000-`);
    assert.ok(ranged > 0, reg.log.join("\n"));
    assert.equal(reg.log[ranged + 1], "POST /v2/dst/blobs/uploads/");
    assert.equal(reg.log.at(-1), "PUT /v2/dst/blobs/uploads/u2");
    assert.ok(
      debug.some((m) => m.includes("ignores Range")),
      debug.join("\n"),
    );
    assert.deepEqual(reg.landed(), BLOB);
  });

  it("fails with the last error once the attempts run out, backing off between them", async () => {
    const reg = fakeRegistry({ failPatch: new Map([1, 2, 3].map((n) => [n, "503"])) });
    const { c, sleeps } = client(reg.fetch, { chunkSize: 3000, uploadAttempts: 3 });
    await assert.rejects(c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length }), (err: unknown) => {
      assert.ok(err instanceof RegistryError);
      assert.equal(err.status, 503);
      return true;
    });
    assert.deepEqual(sleeps, [backoffMs(2), backoffMs(3)]);
    assert.equal(reg.landed(), undefined);
  });

  it("copies a blob whose HEAD the registry refuses: only a HEAD naming the blob skips it", async () => {
    const reg = fakeRegistry({ headStatus: 403 });
    const { c } = client(reg.fetch, { chunkSize: 4000 });
    assert.equal((await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length })).method, "streamed");
    assert.deepEqual(reg.landed(), BLOB);
    assert.equal((await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length })).method, "present");
    // A size the HEAD contradicts is copied, not skipped (here the source has fewer bytes than asked).
    await assert.rejects(
      c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length + 1 }),
      /ended before the blob's last byte/,
    );
  });

  it("sends the blob in one streamed PUT with chunkSize 0", async () => {
    const reg = fakeRegistry();
    const { c } = client(reg.fetch, { chunkSize: 0 });
    assert.deepEqual(await c.copyBlob("src", "dst", { digest: DIGEST, size: BLOB.length }), {
      method: "streamed",
      bytesSent: BLOB.length,
    });
    assert.deepEqual(reg.landed(), BLOB);
    assert.deepEqual(
      reg.log.filter((l) => !l.startsWith("GET /v2/ ") && l !== "GET /v2/"),
      [
        `HEAD /v2/dst/blobs/${DIGEST}`,
        "POST /v2/dst/blobs/uploads/",
        `GET /v2/src/blobs/${DIGEST}`,
        "PUT /v2/dst/blobs/uploads/u1",
      ],
    );
  });
});
