// SPDY/3.1 framing and connections: frames survive encoding and any cut of the byte stream, header
// blocks are a zlib stream over the SPDY dictionary that zlib itself reads (and ours reads zlib's
// sync-flushed blocks, as a Go peer sends them), and two connections over a socket open, answer,
// carry, half-close and end streams.

import assert from "node:assert/strict";
import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";
import { describe, it } from "node:test";
import { constants, createDeflate, inflateSync } from "node:zlib";
import fc from "fast-check";
import {
  encodeFrame,
  FrameDecoder,
  HeaderCompressor,
  HeaderDecompressor,
  SPDY_HEADER_DICTIONARY,
  SpdyConnection,
  type SpdyFrame,
  type SpdyStream,
} from "../../../src/net/spdy.ts";

const streamId = fc.integer({ min: 1, max: 0x7fffffff });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const headers = fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), fc.string({ maxLength: 100 }), {
  maxKeys: 6,
});

const frame: fc.Arbitrary<SpdyFrame> = fc.oneof(
  fc.record({
    type: fc.constant("data" as const),
    streamId,
    fin: fc.boolean(),
    data: fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
  }),
  fc.record({
    type: fc.constant("syn_stream" as const),
    streamId,
    associatedId: fc.integer({ min: 0, max: 0x7fffffff }),
    priority: fc.integer({ min: 0, max: 7 }),
    fin: fc.boolean(),
    headers,
  }),
  fc.record({ type: fc.constant("syn_reply" as const), streamId, fin: fc.boolean(), headers }),
  fc.record({ type: fc.constant("headers" as const), streamId, fin: fc.boolean(), headers }),
  fc.record({ type: fc.constant("rst_stream" as const), streamId, status: u32 }),
  fc.record({ type: fc.constant("ping" as const), id: u32 }),
  fc.record({
    type: fc.constant("goaway" as const),
    lastGoodStreamId: fc.integer({ min: 0, max: 0x7fffffff }),
    status: u32,
  }),
  fc.record({
    type: fc.constant("window_update" as const),
    streamId,
    delta: fc.integer({ min: 0, max: 0x7fffffff }),
  }),
  fc.record({
    type: fc.constant("settings" as const),
    entries: fc.array(
      fc.record({
        flags: fc.integer({ min: 0, max: 255 }),
        id: fc.integer({ min: 0, max: 0xffffff }),
        value: u32,
      }),
      { maxLength: 4 },
    ),
  }),
);

describe("SPDY frames", () => {
  it("decode to what was encoded, however the byte stream is cut", () => {
    fc.assert(
      fc.property(
        fc.array(frame, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (frames, cuts) => {
          const compressor = new HeaderCompressor();
          const bytes = Buffer.concat(frames.map((f) => encodeFrame(f, compressor)));
          const decoder = new FrameDecoder(new HeaderDecompressor());
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          const decoded: SpdyFrame[] = [];
          let from = 0;
          for (const at of [...points, bytes.length]) {
            decoded.push(...decoder.push(bytes.subarray(from, at)));
            from = at;
          }
          // fast-check's records have no prototype; the decoder's frames are plain objects.
          const plain = frames.map((f) =>
            "headers" in f
              ? { ...f, headers: { ...f.headers } }
              : "entries" in f
                ? { ...f, entries: f.entries.map((e) => ({ ...e })) }
                : { ...f },
          );
          assert.deepEqual(decoded, plain);
        },
      ),
    );
  });

  it("a control frame of an unknown type is skipped", () => {
    const unknown = Buffer.from([0x80, 0x03, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x02, 0xab, 0xcd]);
    const ping = encodeFrame({ type: "ping", id: 7 }, new HeaderCompressor());
    const decoded = new FrameDecoder(new HeaderDecompressor()).push(Buffer.concat([unknown, ping]));
    assert.deepEqual(decoded, [{ type: "ping", id: 7 }]);
  });

  it("a control frame of another SPDY version is refused", () => {
    const v2 = Buffer.from([0x80, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1]);
    assert.throws(() => new FrameDecoder(new HeaderDecompressor()).push(v2), /unsupported SPDY version 2/);
  });
});

describe("SPDY header blocks", () => {
  it("are one zlib stream that our reader reads back block by block", () => {
    const compressor = new HeaderCompressor();
    const first = compressor.compress({ streamtype: "error" });
    const second = compressor.compress({ streamtype: "stdout", port: "80" });
    const decompressor = new HeaderDecompressor();
    assert.deepEqual(decompressor.decompress(first), { streamtype: "error" });
    assert.deepEqual(decompressor.decompress(second), { streamtype: "stdout", port: "80" });
  });

  it("from a real deflater, sync-flushed block by block, read back in order", async () => {
    // What a Go peer sends: one deflate stream at best compression over the dictionary, each header
    // block ending on a sync flush.
    const deflate = createDeflate({ dictionary: SPDY_HEADER_DICTIONARY, level: 9 });
    const out: Buffer[] = [];
    deflate.on("data", (chunk: Buffer) => out.push(chunk));
    const blocks: Record<string, string>[] = [
      { streamtype: "error" },
      { streamtype: "stdin" },
      { streamtype: "stdout", port: "8080" },
    ];
    const decompressor = new HeaderDecompressor();
    for (const block of blocks) {
      deflate.write(rawBlock(block));
      await new Promise<void>((resolve) => deflate.flush(constants.Z_SYNC_FLUSH, () => resolve()));
      const compressed = Buffer.concat(out.splice(0));
      assert.deepEqual(decompressor.decompress(compressed), block);
    }
    deflate.close();
  });

  it("ours end as a sync flush does, so an inflater stops at each block", () => {
    const block = new HeaderCompressor().compress({ streamtype: "error" });
    assert.deepEqual([...block.subarray(-5)], [0x00, 0x00, 0x00, 0xff, 0xff]);
    const inflated = inflateSync(block, {
      dictionary: SPDY_HEADER_DICTIONARY,
      finishFlush: constants.Z_SYNC_FLUSH,
    });
    assert.deepEqual(inflated, rawBlock({ streamtype: "error" }));
  });
});

/** The header block before compression: count, then length-prefixed names and values. */
function rawBlock(headers: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  const u32be = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const entries = Object.entries(headers);
  parts.push(u32be(entries.length));
  for (const [k, v] of entries) parts.push(u32be(k.length), Buffer.from(k), u32be(v.length), Buffer.from(v));
  return Buffer.concat(parts);
}

describe("SPDY connections", () => {
  async function pair(): Promise<{ client: SpdyConnection; server: SpdyConnection; close(): void }> {
    const accepted = new Promise<Socket>((resolve) => {
      const listener = createServer((socket) => {
        resolve(socket);
        listener.close();
      });
      listener.listen(0, "127.0.0.1", () => {
        const address = listener.address();
        if (address === null || typeof address === "string") return;
        clientSocket = connect(address.port, "127.0.0.1");
      });
    });
    let clientSocket: Socket | undefined;
    const serverSocket = await accepted;
    const client = new SpdyConnection(clientSocket as unknown as Socket, "client");
    const server = new SpdyConnection(serverSocket, "server");
    return {
      client,
      server,
      close: () => {
        client.destroy();
        server.destroy();
      },
    };
  }

  it("open, answer, carry data both ways, half-close, and GOAWAY ends the peer's streams", async () => {
    const { client, server, close } = await pair();
    try {
      const accepted = once(server, "stream") as Promise<[SpdyStream]>;
      const stream = client.open({ streamtype: "stdout" });
      const [remote] = await accepted;
      assert.deepEqual(remote.headers, { streamtype: "stdout" });
      await stream.waitReply();
      const got: Buffer[] = [];
      stream.on("data", (d) => got.push(d));
      const ended = once(stream, "end");
      remote.write(Buffer.alloc(70_000, 7));
      remote.write(Buffer.from("tail"));
      server.close();
      await ended;
      assert.deepEqual(Buffer.concat(got), Buffer.concat([Buffer.alloc(70_000, 7), Buffer.from("tail")]));
      assert.equal(stream.cutOff, false);
    } finally {
      close();
    }
  });

  it("a socket closed under a stream cuts it off", async () => {
    const { client, server, close } = await pair();
    try {
      const accepted = once(server, "stream");
      const stream = client.open({ streamtype: "error" });
      await accepted;
      const ended = once(stream, "end");
      server.destroy();
      await ended;
      assert.equal(stream.cutOff, true);
    } finally {
      close();
    }
  });

  it("FIN from the peer ends the stream without cutting it off", async () => {
    const { client, server, close } = await pair();
    try {
      const accepted = once(server, "stream") as Promise<[SpdyStream]>;
      const stream = client.open({ streamtype: "stdin" });
      const [remote] = await accepted;
      const remoteGot: Buffer[] = [];
      remote.on("data", (d) => remoteGot.push(d));
      const remoteEnded = once(remote, "end");
      stream.write(Buffer.from("input"));
      stream.end();
      await remoteEnded;
      assert.equal(Buffer.concat(remoteGot).toString(), "input");
      assert.equal(remote.cutOff, false);
    } finally {
      close();
    }
  });
});
