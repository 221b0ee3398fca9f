// WebSocket framing from the client's side (RFC 6455): the handshake answer, masked frames out, frames
// in however the bytes are cut, and whole messages from fragments.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import {
  encodeFrame,
  expectedAccept,
  FrameDecoder,
  OPCODE_BINARY,
  OPCODE_CONTINUATION,
  type WebSocketFrame,
} from "../../../src/net/websocket.ts";

describe("WebSocket framing", () => {
  it("expects the accept value of RFC 6455's own example", () => {
    assert.equal(expectedAccept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  });

  it("masks what a client sends and decodes it back, however the bytes are cut", () => {
    const frame = fc.record({
      fin: fc.boolean(),
      opcode: fc.constantFrom(OPCODE_CONTINUATION, OPCODE_BINARY, 0x1, 0x8, 0x9, 0xa),
      payload: fc.uint8Array({ maxLength: 70_000 }).map((a) => Buffer.from(a)),
    });
    fc.assert(
      fc.property(
        fc.array(frame, { minLength: 1, maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (frames, cuts) => {
          const bytes = Buffer.concat(frames.map((f) => encodeFrame(f)));
          for (const f of frames) {
            // Every client frame has the mask bit and carries its payload XORed with the mask.
            const mask = Buffer.from([1, 2, 3, 4]);
            const encoded = encodeFrame(f, mask);
            assert.equal((encoded[1]! & 0x80) !== 0, true);
            const body = encoded.subarray(encoded.length - f.payload.length);
            assert.ok(body.every((b, k) => b === (f.payload[k]! ^ mask[k % 4]!)));
          }
          const decoder = new FrameDecoder();
          const decoded: WebSocketFrame[] = [];
          let from = 0;
          for (const at of [...new Set(cuts.map((c) => c % (bytes.length + 1)))]
            .sort((a, b) => a - b)
            .concat(bytes.length)) {
            decoded.push(...decoder.push(bytes.subarray(from, at)));
            from = at;
          }
          assert.deepEqual(
            decoded,
            frames.map((f) => ({ ...f })),
          );
        },
      ),
      { numRuns: 50 },
    );
  });

  it("reads a server's unmasked frame with a 16-bit length", () => {
    const payload = Buffer.alloc(300, 9);
    const head = Buffer.from([0x82, 126, 0x01, 0x2c]);
    assert.deepEqual(new FrameDecoder().push(Buffer.concat([head, payload])), [
      { fin: true, opcode: OPCODE_BINARY, payload },
    ]);
  });
});
