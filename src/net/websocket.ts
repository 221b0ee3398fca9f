// The client side of RFC 6455 WebSocket framing, as much as a Kubernetes stream needs: the opening
// handshake's key and its expected answer, masked frames out, frames in (unmasked from a server,
// fragmented or not), and a connection that reassembles messages, answers pings and closes.

import { createHash, randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";

const HANDSHAKE_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

export const OPCODE_CONTINUATION = 0x0;
export const OPCODE_TEXT = 0x1;
export const OPCODE_BINARY = 0x2;
export const OPCODE_CLOSE = 0x8;
export const OPCODE_PING = 0x9;
export const OPCODE_PONG = 0xa;

/** A message larger than this is a protocol error: no Kubernetes stream message comes near it. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface WebSocketFrame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
}

export class WebSocketProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebSocketProtocolError";
  }
}

/** A fresh Sec-WebSocket-Key. */
export function handshakeKey(): string {
  return randomBytes(16).toString("base64");
}

/** The Sec-WebSocket-Accept a server must answer `key` with. */
export function expectedAccept(key: string): string {
  return createHash("sha1")
    .update(key + HANDSHAKE_GUID)
    .digest("base64");
}

/** A frame as a client sends it: masked with a fresh key (RFC 6455 section 5.3). */
export function encodeFrame(frame: WebSocketFrame, mask: Buffer = randomBytes(4)): Buffer {
  const length = frame.payload.length;
  let head: Buffer;
  if (length < 126) {
    head = Buffer.alloc(2);
    head[1] = 0x80 | length;
  } else if (length < 0x10000) {
    head = Buffer.alloc(4);
    head[1] = 0x80 | 126;
    head.writeUInt16BE(length, 2);
  } else {
    head = Buffer.alloc(10);
    head[1] = 0x80 | 127;
    head.writeBigUInt64BE(BigInt(length), 2);
  }
  head[0] = (frame.fin ? 0x80 : 0) | (frame.opcode & 0x0f);
  const body = Buffer.alloc(length);
  for (let i = 0; i < length; i++) body[i] = frame.payload[i]! ^ mask[i & 3]!;
  return Buffer.concat([head, mask, body]);
}

/** Cuts a byte stream into frames, unmasking any masked payload. */
export class FrameDecoder {
  private buffered: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): WebSocketFrame[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: WebSocketFrame[] = [];
    for (;;) {
      const frame = this.next();
      if (frame === undefined) return frames;
      frames.push(frame);
    }
  }

  private next(): WebSocketFrame | undefined {
    const b = this.buffered;
    if (b.length < 2) return undefined;
    const masked = (b[1]! & 0x80) !== 0;
    let length = b[1]! & 0x7f;
    let at = 2;
    if (length === 126) {
      if (b.length < 4) return undefined;
      length = b.readUInt16BE(2);
      at = 4;
    } else if (length === 127) {
      if (b.length < 10) return undefined;
      const long = b.readBigUInt64BE(2);
      if (long > BigInt(MAX_MESSAGE_BYTES)) throw new WebSocketProtocolError(`frame of ${long} bytes`);
      length = Number(long);
      at = 10;
    }
    const maskAt = at;
    if (masked) at += 4;
    if (b.length < at + length) return undefined;
    const payload = Buffer.from(b.subarray(at, at + length));
    if (masked) for (let i = 0; i < length; i++) payload[i] = payload[i]! ^ b[maskAt + (i & 3)]!;
    this.buffered = b.subarray(at + length);
    return { fin: (b[0]! & 0x80) !== 0, opcode: b[0]! & 0x0f, payload };
  }
}

export interface WebSocketEvents {
  /** A whole data message (binary or text), reassembled from its fragments. */
  message: [Buffer];
  /** The socket closed; `code` is the peer's close code when it sent one. */
  close: [code: number | undefined];
  error: [Error];
}

/** A client connection over an upgraded socket. */
export class WebSocketConnection extends EventEmitter<WebSocketEvents> {
  private readonly decoder = new FrameDecoder();
  private fragments: Buffer[] = [];
  private fragmentBytes = 0;
  private closeSent = false;
  private closeCode: number | undefined;
  private readonly socket: Duplex;

  constructor(socket: Duplex, head: Buffer = Buffer.alloc(0)) {
    super();
    this.socket = socket;
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.once("close", () => this.emit("close", this.closeCode));
    socket.on("error", () => socket.destroy());
    if (head.length > 0) queueMicrotask(() => this.receive(head));
  }

  send(payload: Buffer, opcode = OPCODE_BINARY): void {
    if (this.closeSent || this.socket.destroyed) return;
    this.socket.write(encodeFrame({ fin: true, opcode, payload }));
  }

  /** Sends a close frame (1000, normal closure); the server then closes the socket. */
  close(code = 1000): void {
    if (this.closeSent || this.socket.destroyed) return;
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code, 0);
    this.socket.write(encodeFrame({ fin: true, opcode: OPCODE_CLOSE, payload }));
    this.closeSent = true;
  }

  destroy(): void {
    this.socket.destroy();
  }

  private receive(chunk: Buffer): void {
    let frames: WebSocketFrame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.emit("error", err as Error);
      this.socket.destroy();
      return;
    }
    for (const frame of frames) this.handle(frame);
  }

  private handle(frame: WebSocketFrame): void {
    switch (frame.opcode) {
      case OPCODE_PING:
        this.send(frame.payload, OPCODE_PONG);
        return;
      case OPCODE_PONG:
        return;
      case OPCODE_CLOSE:
        this.closeCode = frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : undefined;
        this.close(this.closeCode ?? 1000);
        this.socket.end();
        return;
      case OPCODE_TEXT:
      case OPCODE_BINARY:
      case OPCODE_CONTINUATION:
        this.fragments.push(frame.payload);
        this.fragmentBytes += frame.payload.length;
        if (this.fragmentBytes > MAX_MESSAGE_BYTES) {
          this.emit("error", new WebSocketProtocolError(`message over ${MAX_MESSAGE_BYTES} bytes`));
          this.socket.destroy();
          return;
        }
        if (frame.fin) {
          const message = Buffer.concat(this.fragments);
          this.fragments = [];
          this.fragmentBytes = 0;
          this.emit("message", message);
        }
        return;
      default:
        this.emit("error", new WebSocketProtocolError(`unknown opcode ${frame.opcode}`));
        this.socket.destroy();
    }
  }
}
