// SPDY/3.1 as Kubernetes streams speak it (the kubelet's exec endpoint, and the API server's upgrade
// proxy in front of it): frames, header blocks compressed with zlib over the SPDY/3 dictionary, and a
// connection that opens, accepts, writes, half-closes and resets streams. Flow control is not
// implemented, as in the Go implementation Kubernetes uses (moby/spdystream ignores SETTINGS and
// WINDOW_UPDATE and never sends them), so neither side ever waits for a window.

import { EventEmitter } from "node:events";
import type { Duplex } from "node:stream";
import { inflateSync, constants as zlibConstants } from "node:zlib";

/** The Upgrade token of a SPDY/3.1 connection. */
export const SPDY_PROTOCOL = "SPDY/3.1";

const VERSION = 3;
/** A data frame's payload is at most 2^24-1 bytes; writes are cut into frames of this size. */
const MAX_DATA_CHUNK = 32 * 1024;

const FRAME_SYN_STREAM = 1;
const FRAME_SYN_REPLY = 2;
const FRAME_RST_STREAM = 3;
const FRAME_SETTINGS = 4;
const FRAME_PING = 6;
const FRAME_GOAWAY = 7;
const FRAME_HEADERS = 8;
const FRAME_WINDOW_UPDATE = 9;

const FLAG_FIN = 0x01;

/** RST_STREAM's status for a stream id the sender may not open, or one already open (SPDY/3 2.6.2). */
const RST_PROTOCOL_ERROR = 1;

/** The SPDY/3 header compression dictionary (SPDY/3 section 2.6.10.1), base64. */
export const SPDY_HEADER_DICTIONARY = Buffer.from(
  [
    "AAAAB29wdGlvbnMAAAAEaGVhZAAAAARwb3N0AAAAA3B1dAAAAAZkZWxldGUAAAAFdHJhY2UAAAAGYWNjZXB0AAAADmFjY2VwdC1j",
    "aGFyc2V0AAAAD2FjY2VwdC1lbmNvZGluZwAAAA9hY2NlcHQtbGFuZ3VhZ2UAAAANYWNjZXB0LXJhbmdlcwAAAANhZ2UAAAAFYWxs",
    "b3cAAAANYXV0aG9yaXphdGlvbgAAAA1jYWNoZS1jb250cm9sAAAACmNvbm5lY3Rpb24AAAAMY29udGVudC1iYXNlAAAAEGNvbnRl",
    "bnQtZW5jb2RpbmcAAAAQY29udGVudC1sYW5ndWFnZQAAAA5jb250ZW50LWxlbmd0aAAAABBjb250ZW50LWxvY2F0aW9uAAAAC2Nv",
    "bnRlbnQtbWQ1AAAADWNvbnRlbnQtcmFuZ2UAAAAMY29udGVudC10eXBlAAAABGRhdGUAAAAEZXRhZwAAAAZleHBlY3QAAAAHZXhw",
    "aXJlcwAAAARmcm9tAAAABGhvc3QAAAAIaWYtbWF0Y2gAAAARaWYtbW9kaWZpZWQtc2luY2UAAAANaWYtbm9uZS1tYXRjaAAAAAhp",
    "Zi1yYW5nZQAAABNpZi11bm1vZGlmaWVkLXNpbmNlAAAADWxhc3QtbW9kaWZpZWQAAAAIbG9jYXRpb24AAAAMbWF4LWZvcndhcmRz",
    "AAAABnByYWdtYQAAABJwcm94eS1hdXRoZW50aWNhdGUAAAATcHJveHktYXV0aG9yaXphdGlvbgAAAAVyYW5nZQAAAAdyZWZlcmVy",
    "AAAAC3JldHJ5LWFmdGVyAAAABnNlcnZlcgAAAAJ0ZQAAAAd0cmFpbGVyAAAAEXRyYW5zZmVyLWVuY29kaW5nAAAAB3VwZ3JhZGUA",
    "AAAKdXNlci1hZ2VudAAAAAR2YXJ5AAAAA3ZpYQAAAAd3YXJuaW5nAAAAEHd3dy1hdXRoZW50aWNhdGUAAAAGbWV0aG9kAAAAA2dl",
    "dAAAAAZzdGF0dXMAAAAGMjAwIE9LAAAAB3ZlcnNpb24AAAAISFRUUC8xLjEAAAADdXJsAAAABnB1YmxpYwAAAApzZXQtY29va2ll",
    "AAAACmtlZXAtYWxpdmUAAAAGb3JpZ2luMTAwMTAxMjAxMjAyMjA1MjA2MzAwMzAyMzAzMzA0MzA1MzA2MzA3NDAyNDA1NDA2NDA3",
    "NDA4NDA5NDEwNDExNDEyNDEzNDE0NDE1NDE2NDE3NTAyNTA0NTA1MjAzIE5vbi1BdXRob3JpdGF0aXZlIEluZm9ybWF0aW9uMjA0",
    "IE5vIENvbnRlbnQzMDEgTW92ZWQgUGVybWFuZW50bHk0MDAgQmFkIFJlcXVlc3Q0MDEgVW5hdXRob3JpemVkNDAzIEZvcmJpZGRl",
    "bjQwNCBOb3QgRm91bmQ1MDAgSW50ZXJuYWwgU2VydmVyIEVycm9yNTAxIE5vdCBJbXBsZW1lbnRlZDUwMyBTZXJ2aWNlIFVuYXZh",
    "aWxhYmxlSmFuIEZlYiBNYXIgQXByIE1heSBKdW4gSnVsIEF1ZyBTZXB0IE9jdCBOb3YgRGVjIDAwOjAwOjAwIE1vbiwgVHVlLCBX",
    "ZWQsIFRodSwgRnJpLCBTYXQsIFN1biwgR01UY2h1bmtlZCx0ZXh0L2h0bWwsaW1hZ2UvcG5nLGltYWdlL2pwZyxpbWFnZS9naWYs",
    "YXBwbGljYXRpb24veG1sLGFwcGxpY2F0aW9uL3hodG1sK3htbCx0ZXh0L3BsYWluLHRleHQvamF2YXNjcmlwdCxwdWJsaWNwcml2",
    "YXRlbWF4LWFnZT1nemlwLGRlZmxhdGUsc2RjaGNoYXJzZXQ9dXRmLThjaGFyc2V0PWlzby04ODU5LTEsdXRmLSwqLGVucT0wLg==",
  ].join(""),
  "base64",
);

/** Header names are lower case; a value list is joined with NUL bytes. */
export type SpdyHeaders = Record<string, string>;

export type SpdyFrame =
  | { type: "data"; streamId: number; fin: boolean; data: Buffer }
  | {
      type: "syn_stream";
      streamId: number;
      associatedId: number;
      priority: number;
      fin: boolean;
      headers: SpdyHeaders;
    }
  | { type: "syn_reply"; streamId: number; fin: boolean; headers: SpdyHeaders }
  | { type: "rst_stream"; streamId: number; status: number }
  | { type: "settings"; entries: { flags: number; id: number; value: number }[] }
  | { type: "ping"; id: number }
  | { type: "goaway"; lastGoodStreamId: number; status: number }
  | { type: "headers"; streamId: number; fin: boolean; headers: SpdyHeaders }
  | { type: "window_update"; streamId: number; delta: number };

export class SpdyProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SpdyProtocolError";
  }
}

// ---- header blocks ----

function encodeHeaderBlock(headers: SpdyHeaders): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [u32(entries.length)];
  for (const [name, value] of entries) {
    const n = Buffer.from(name.toLowerCase(), "utf8");
    const v = Buffer.from(value, "utf8");
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

function decodeHeaderBlock(block: Buffer): SpdyHeaders {
  const headers: SpdyHeaders = {};
  let at = 0;
  const take = (n: number): Buffer => {
    if (at + n > block.length) throw new SpdyProtocolError("truncated header block");
    const bytes = block.subarray(at, at + n);
    at += n;
    return bytes;
  };
  const count = take(4).readUInt32BE(0);
  for (let i = 0; i < count; i++) {
    const name = take(take(4).readUInt32BE(0)).toString("utf8");
    headers[name.toLowerCase()] = take(take(4).readUInt32BE(0)).toString("utf8");
  }
  return headers;
}

/**
 * The sending half of a connection's header compression: one zlib stream for the connection's life,
 * primed with the dictionary. Each block goes out as stored (uncompressed) deflate blocks ending
 * as a sync flush does, a valid zlib stream any SPDY peer inflates; compressing a handful of short
 * headers saves nothing.
 */
export class HeaderCompressor {
  private started = false;

  compress(headers: SpdyHeaders): Buffer {
    const block = encodeHeaderBlock(headers);
    const parts: Buffer[] = [];
    if (!this.started) {
      this.started = true;
      // CMF 0x78 (deflate, 32K window); FLG has FDICT set and the check bits that make CMF.FLG a
      // multiple of 31; then the dictionary's Adler-32.
      const cmf = 0x78;
      const flg = 0x20 + (31 - ((cmf * 256 + 0x20) % 31));
      parts.push(Buffer.from([cmf, flg]), u32(adler32(SPDY_HEADER_DICTIONARY)));
    }
    // A header block always has its 4-byte count, so there is at least one stored block.
    for (let at = 0; at < block.length; at += 0xffff) {
      const chunk = block.subarray(at, at + 0xffff);
      const head = Buffer.alloc(5);
      head[0] = 0; // BFINAL 0, BTYPE 00 (stored), padded to the byte boundary
      head.writeUInt16LE(chunk.length, 1);
      head.writeUInt16LE(~chunk.length & 0xffff, 3);
      parts.push(head, chunk);
    }
    // The empty stored block a sync flush ends with: it tells the reader the block is complete, so
    // an inflater (Go's among them) hands over the headers without reading past the frame.
    parts.push(Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff]));
    return Buffer.concat(parts);
  }
}

/**
 * The receiving half: the peer's header blocks form one zlib stream, each block ending on a sync
 * flush. The stream so far is inflated again for every block and the new output taken; header
 * blocks are few and small on an exec connection.
 */
export class HeaderDecompressor {
  private compressed: Buffer = Buffer.alloc(0);
  private produced = 0;

  decompress(block: Buffer): SpdyHeaders {
    this.compressed = Buffer.concat([this.compressed, block]);
    let all: Buffer;
    try {
      all = inflateSync(this.compressed, {
        dictionary: SPDY_HEADER_DICTIONARY,
        finishFlush: zlibConstants.Z_SYNC_FLUSH,
      });
    } catch (err) {
      throw new SpdyProtocolError(`header block does not inflate: ${(err as Error).message}`);
    }
    const fresh = all.subarray(this.produced);
    this.produced = all.length;
    return decodeHeaderBlock(fresh);
  }
}

// ---- frames ----

/** One frame's bytes. Header blocks go through the connection's compressor. */
export function encodeFrame(frame: SpdyFrame, compressor: HeaderCompressor): Buffer {
  if (frame.type === "data") {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(frame.streamId & 0x7fffffff, 0);
    head.writeUInt32BE((((frame.fin ? FLAG_FIN : 0) << 24) | frame.data.length) >>> 0, 4);
    return Buffer.concat([head, frame.data]);
  }
  let type: number;
  let flags = 0;
  let payload: Buffer;
  switch (frame.type) {
    case "syn_stream": {
      type = FRAME_SYN_STREAM;
      flags = frame.fin ? FLAG_FIN : 0;
      const fixed = Buffer.alloc(10);
      fixed.writeUInt32BE(frame.streamId & 0x7fffffff, 0);
      fixed.writeUInt32BE(frame.associatedId & 0x7fffffff, 4);
      fixed[8] = (frame.priority & 0x07) << 5;
      payload = Buffer.concat([fixed, compressor.compress(frame.headers)]);
      break;
    }
    case "syn_reply":
    case "headers":
      type = frame.type === "syn_reply" ? FRAME_SYN_REPLY : FRAME_HEADERS;
      flags = frame.fin ? FLAG_FIN : 0;
      payload = Buffer.concat([u32(frame.streamId & 0x7fffffff), compressor.compress(frame.headers)]);
      break;
    case "rst_stream":
      type = FRAME_RST_STREAM;
      payload = Buffer.concat([u32(frame.streamId & 0x7fffffff), u32(frame.status)]);
      break;
    case "settings":
      type = FRAME_SETTINGS;
      payload = Buffer.concat([
        u32(frame.entries.length),
        ...frame.entries.flatMap((e) => [u32(((e.flags & 0xff) << 24) | (e.id & 0xffffff)), u32(e.value)]),
      ]);
      break;
    case "ping":
      type = FRAME_PING;
      payload = u32(frame.id);
      break;
    case "goaway":
      type = FRAME_GOAWAY;
      payload = Buffer.concat([u32(frame.lastGoodStreamId & 0x7fffffff), u32(frame.status)]);
      break;
    case "window_update":
      type = FRAME_WINDOW_UPDATE;
      payload = Buffer.concat([u32(frame.streamId & 0x7fffffff), u32(frame.delta & 0x7fffffff)]);
      break;
  }
  const head = Buffer.alloc(8);
  head.writeUInt32BE(((0x8000 | VERSION) * 0x10000 + type) >>> 0, 0);
  head.writeUInt32BE(((flags << 24) | payload.length) >>> 0, 4);
  return Buffer.concat([head, payload]);
}

/** Cuts a byte stream into frames; header blocks go through the connection's decompressor. */
export class FrameDecoder {
  private buffered: Buffer = Buffer.alloc(0);
  private readonly decompressor: HeaderDecompressor;

  constructor(decompressor: HeaderDecompressor) {
    this.decompressor = decompressor;
  }

  /** Every frame complete after `chunk`, in order. */
  push(chunk: Buffer): SpdyFrame[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: SpdyFrame[] = [];
    while (this.buffered.length >= 8) {
      const length = this.buffered.readUInt32BE(4) & 0xffffff;
      if (this.buffered.length < 8 + length) break;
      const frame = this.buffered.subarray(0, 8 + length);
      this.buffered = this.buffered.subarray(8 + length);
      const decoded = this.decode(frame);
      if (decoded !== undefined) frames.push(decoded);
    }
    return frames;
  }

  private decode(bytes: Buffer): SpdyFrame | undefined {
    const first = bytes.readUInt32BE(0);
    const fin = (bytes[4]! & FLAG_FIN) !== 0;
    const payload = Buffer.from(bytes.subarray(8));
    if ((first & 0x80000000) === 0) {
      return { type: "data", streamId: first & 0x7fffffff, fin, data: payload };
    }
    const version = (first >>> 16) & 0x7fff;
    if (version !== VERSION) throw new SpdyProtocolError(`unsupported SPDY version ${version}`);
    const type = first & 0xffff;
    const need = (n: number) => {
      if (payload.length < n) throw new SpdyProtocolError(`control frame ${type} too short`);
    };
    switch (type) {
      case FRAME_SYN_STREAM:
        need(10);
        return {
          type: "syn_stream",
          streamId: payload.readUInt32BE(0) & 0x7fffffff,
          associatedId: payload.readUInt32BE(4) & 0x7fffffff,
          priority: payload[8]! >> 5,
          fin,
          headers: this.decompressor.decompress(payload.subarray(10)),
        };
      case FRAME_SYN_REPLY:
      case FRAME_HEADERS:
        need(4);
        return {
          type: type === FRAME_SYN_REPLY ? "syn_reply" : "headers",
          streamId: payload.readUInt32BE(0) & 0x7fffffff,
          fin,
          headers: this.decompressor.decompress(payload.subarray(4)),
        };
      case FRAME_RST_STREAM:
        need(8);
        return {
          type: "rst_stream",
          streamId: payload.readUInt32BE(0) & 0x7fffffff,
          status: payload.readUInt32BE(4),
        };
      case FRAME_SETTINGS: {
        need(4);
        const count = payload.readUInt32BE(0);
        need(4 + 8 * count);
        const entries = Array.from({ length: count }, (_, i) => {
          const word = payload.readUInt32BE(4 + 8 * i);
          return { flags: word >>> 24, id: word & 0xffffff, value: payload.readUInt32BE(8 + 8 * i) };
        });
        return { type: "settings", entries };
      }
      case FRAME_PING:
        need(4);
        return { type: "ping", id: payload.readUInt32BE(0) };
      case FRAME_GOAWAY:
        need(8);
        return {
          type: "goaway",
          lastGoodStreamId: payload.readUInt32BE(0) & 0x7fffffff,
          status: payload.readUInt32BE(4),
        };
      case FRAME_WINDOW_UPDATE:
        need(8);
        return {
          type: "window_update",
          streamId: payload.readUInt32BE(0) & 0x7fffffff,
          delta: payload.readUInt32BE(4) & 0x7fffffff,
        };
      default:
        // SPDY/3: a control frame of an unknown type is ignored.
        return undefined;
    }
  }
}

// ---- connection and streams ----

export interface SpdyStreamEvents {
  data: [Buffer];
  /** The peer half-closed the stream (FIN), or the connection ended. */
  end: [];
  /** The peer reset the stream. */
  reset: [number];
}

export class SpdyStream extends EventEmitter<SpdyStreamEvents> {
  private localClosed = false;
  private remoteClosed = false;
  /** The socket closed before the peer ended this stream (no FIN, no GOAWAY). */
  cutOff = false;
  private readonly replied: Promise<void>;
  private settleReply!: (err?: Error) => void;
  private readonly conn: SpdyConnection;
  readonly id: number;
  readonly headers: SpdyHeaders;

  constructor(conn: SpdyConnection, id: number, headers: SpdyHeaders) {
    super();
    this.conn = conn;
    this.id = id;
    this.headers = headers;
    this.replied = new Promise((resolve, reject) => {
      this.settleReply = (err) => (err ? reject(err) : resolve());
    });
    this.replied.catch(() => undefined);
  }

  /** Resolves when the peer answered a stream this side opened (SYN_REPLY). */
  waitReply(): Promise<void> {
    return this.replied;
  }

  write(data: Uint8Array): void {
    if (this.localClosed) return;
    for (let at = 0; at < data.length; at += MAX_DATA_CHUNK) {
      const chunk = Buffer.from(data.subarray(at, at + MAX_DATA_CHUNK));
      this.conn.send({ type: "data", streamId: this.id, fin: false, data: chunk });
    }
  }

  /** Half-closes this side (an empty data frame with FIN). */
  end(): void {
    if (this.localClosed) return;
    this.localClosed = true;
    this.conn.send({ type: "data", streamId: this.id, fin: true, data: Buffer.alloc(0) });
    this.conn.settle(this);
  }

  get closed(): boolean {
    return this.localClosed && this.remoteClosed;
  }

  /** Frames the connection routes to this stream. */
  receive(frame: SpdyFrame): void {
    switch (frame.type) {
      case "syn_reply":
        this.settleReply();
        if (frame.fin) this.remoteEnd();
        return;
      case "data":
        if (frame.data.length > 0) this.emit("data", frame.data);
        if (frame.fin) this.remoteEnd();
        return;
      case "headers":
        if (frame.fin) this.remoteEnd();
        return;
      case "rst_stream":
        this.localClosed = true;
        this.remoteClosed = true;
        this.settleReply(new SpdyProtocolError(`stream ${this.id} reset by peer (status ${frame.status})`));
        this.emit("reset", frame.status);
        this.conn.settle(this);
        return;
      default:
        return;
    }
  }

  /** The socket is gone: whatever the peer had not closed ends now, cut off. */
  connectionEnded(): void {
    this.settleReply(new SpdyProtocolError(`connection closed before stream ${this.id} was answered`));
    this.localClosed = true;
    if (!this.remoteClosed) this.cutOff = true;
    this.remoteEnd();
  }

  /**
   * The peer sent GOAWAY: as in spdystream, nothing more is read and every stream's reader sees its
   * end, which is how a Kubernetes server ends an exec (it writes the status, then closes).
   */
  peerWentAway(): void {
    this.remoteEnd();
  }

  /** A stream the peer opened counts as answered once this side replied. */
  answered(): void {
    this.settleReply();
  }

  private remoteEnd(): void {
    if (this.remoteClosed) return;
    this.remoteClosed = true;
    this.emit("end");
    this.conn.settle(this);
  }
}

export interface SpdyConnectionEvents {
  /** A stream the peer opened; the connection has already answered it. */
  stream: [SpdyStream];
  /** The socket closed; every stream has ended. */
  close: [];
  error: [Error];
}

/**
 * One SPDY connection over an upgraded socket. A client opens odd stream ids, a server even ones;
 * a stream the peer opens is answered at once with an empty SYN_REPLY, as the Kubernetes server
 * side does. Pings from the peer are echoed.
 */
export class SpdyConnection extends EventEmitter<SpdyConnectionEvents> {
  private readonly compressor = new HeaderCompressor();
  private readonly decoder = new FrameDecoder(new HeaderDecompressor());
  private readonly streams = new Map<number, SpdyStream>();
  private nextId: number;
  private ended = false;
  private goneAway = false;
  private readonly socket: Duplex;
  private readonly role: "client" | "server";

  constructor(socket: Duplex, role: "client" | "server", head: Buffer = Buffer.alloc(0)) {
    super();
    this.socket = socket;
    this.role = role;
    this.nextId = role === "client" ? 1 : 2;
    socket.on("data", (chunk: Buffer) => this.receive(chunk));
    socket.once("close", () => this.closed());
    socket.on("error", () => socket.destroy());
    if (head.length > 0) queueMicrotask(() => this.receive(head));
  }

  /** Opens a stream with these headers; `waitReply()` resolves on the peer's answer. */
  open(headers: SpdyHeaders): SpdyStream {
    if (this.ended || this.goneAway) throw new SpdyProtocolError("connection closed");
    const id = this.nextId;
    this.nextId += 2;
    const stream = new SpdyStream(this, id, headers);
    this.streams.set(id, stream);
    this.send({ type: "syn_stream", streamId: id, associatedId: 0, priority: 0, fin: false, headers });
    return stream;
  }

  /** Sends GOAWAY; the socket closes once every stream has closed both ways. */
  close(): void {
    if (!this.goneAway && !this.ended) {
      this.goneAway = true;
      this.send({ type: "goaway", lastGoodStreamId: this.lastPeerStream(), status: 0 });
    }
    if (this.streams.size === 0) this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Writes one frame (nothing once the socket is gone). */
  send(frame: SpdyFrame): void {
    if (this.ended || this.socket.destroyed) return;
    this.socket.write(encodeFrame(frame, this.compressor));
  }

  /** A stream closed both ways is forgotten; the last one finishes a pending close. */
  settle(stream: SpdyStream): void {
    if (!stream.closed) return;
    this.streams.delete(stream.id);
    if (this.goneAway && this.streams.size === 0) this.socket.end();
  }

  private lastPeerStream(): number {
    let last = 0;
    for (const id of this.streams.keys()) if (this.isPeerId(id) && id > last) last = id;
    return last;
  }

  private isPeerId(id: number): boolean {
    return (id % 2 === 1) === (this.role === "server");
  }

  private receive(chunk: Buffer): void {
    let frames: SpdyFrame[];
    try {
      frames = this.decoder.push(chunk);
    } catch (err) {
      this.emit("error", err as Error);
      this.socket.destroy();
      return;
    }
    for (const frame of frames) this.handle(frame);
  }

  private handle(frame: SpdyFrame): void {
    switch (frame.type) {
      case "syn_stream": {
        if (!this.isPeerId(frame.streamId) || this.streams.has(frame.streamId)) {
          this.send({ type: "rst_stream", streamId: frame.streamId, status: RST_PROTOCOL_ERROR });
          return;
        }
        const stream = new SpdyStream(this, frame.streamId, frame.headers);
        this.streams.set(frame.streamId, stream);
        this.send({ type: "syn_reply", streamId: frame.streamId, fin: false, headers: {} });
        stream.answered();
        this.emit("stream", stream);
        if (frame.fin)
          stream.receive({ type: "data", streamId: frame.streamId, fin: true, data: Buffer.alloc(0) });
        return;
      }
      case "ping":
        // Echo the peer's pings: odd ids come from the client, even ones from the server.
        if (this.isPeerId(frame.id)) this.send(frame);
        return;
      case "goaway":
        this.goneAway = true;
        for (const stream of [...this.streams.values()]) stream.peerWentAway();
        return;
      case "settings":
      case "window_update":
        return;
      default:
        this.streams.get(frame.streamId)?.receive(frame);
    }
  }

  private closed(): void {
    if (this.ended) return;
    this.ended = true;
    for (const stream of [...this.streams.values()]) stream.connectionEnded();
    this.streams.clear();
    this.emit("close");
  }
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}
