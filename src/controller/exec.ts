// A pod's exec subresource, as kubectl runs it: WebSocket first (subprotocol v5.channel.k8s.io, else
// v4), and SPDY/3.1 when the WebSocket upgrade fails, which is kubectl's FallbackExecutor rule (any
// answer that does not switch protocols, or a switch with no subprotocol of ours, is an upgrade
// failure; the same request then goes out as a SPDY POST). Both carry the same streams: stdin,
// stdout, stderr, and the error stream whose Status gives the exit code. Output is captured up to a
// bound per stream; what comes past it is read and dropped, and the result says it was truncated.

import type { IncomingHttpHeaders } from "node:http";
import type { Duplex } from "node:stream";
import type { Pod } from "../apis/core.ts";
import { type Clock, systemClock } from "../clock.ts";
import { SPDY_PROTOCOL, SpdyConnection, type SpdyStream } from "../net/spdy.ts";
import { expectedAccept, handshakeKey, WebSocketConnection } from "../net/websocket.ts";
import type { KubeClient, UpgradeOutcome } from "./client.ts";
import { apiErrorFromResponse } from "./errors.ts";
import { PODS } from "./resources.ts";

/** Stream protocols offered, preferred first: v5 adds closing stdin over a WebSocket. */
export const EXEC_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"] as const;

/** Default bound on each of stdout and stderr. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

const CHANNEL_STDIN = 0;
const CHANNEL_STDOUT = 1;
const CHANNEL_STDERR = 2;
const CHANNEL_ERROR = 3;
/** v5: a message on this channel closes the channel named by its next byte. */
const CHANNEL_CLOSE = 255;
/** A WebSocket message carries at most this much stdin. */
const STDIN_CHUNK = 32 * 1024;

export interface ExecRequest {
  namespace: string;
  pod: string;
  /** Default: the API server picks the pod's only (or default) container. */
  container?: string;
  command: string[];
  /** Sent to the command's stdin, which is then closed. No stdin stream without it. */
  stdin?: Uint8Array;
  /** Deadline on the executor's clock, from the call. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Bound on each of stdout and stderr; default DEFAULT_MAX_OUTPUT_BYTES. */
  maxOutputBytes?: number;
}

export interface ExecResult {
  /** 0 on Success; a NonZeroExitCode failure's ExitCode cause. */
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
  /** The command wrote more than maxOutputBytes to the stream; the first maxOutputBytes are kept. */
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** How the exec went: WebSocket, or SPDY after the WebSocket upgrade failed. */
  transport: "websocket" | "spdy";
}

/** Runs commands in pods: the API server's exec (KubeExecutor) or a scripted fake in tests. */
export interface PodExecutor {
  exec(request: ExecRequest): Promise<ExecResult>;
}

/** An exec that did not produce an exit code. */
export class ExecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The pod exists but is not Running, so it has no process to exec into. */
export class ExecPodNotRunningError extends ExecError {
  readonly phase: string;
  constructor(pod: string, phase: string) {
    super(`cannot exec in pod ${pod}: phase is ${phase || "unknown"}, not Running`);
    this.phase = phase;
  }
}

/** The deadline passed or the caller aborted; the output read until then is kept. */
export class ExecTimeoutError extends ExecError {
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  constructor(message: string, stdout: Buffer, stderr: Buffer) {
    super(message);
    this.stdout = stdout;
    this.stderr = stderr;
  }
}

/**
 * The exec ended with a failure Status that is not an exit code: the kubelet (or its provider)
 * could not run the command, e.g. vk-cocoon's "pod has no live VM" or an SSH error.
 */
export class ExecFailedError extends ExecError {
  readonly reason: string;
  readonly code: number;
  /** What the command wrote before it failed (vk-cocoon reports a non-zero exit this way). */
  readonly stdout: Buffer;
  readonly stderr: Buffer;
  constructor(
    reason: string,
    code: number,
    message: string,
    output: { stdout?: Buffer; stderr?: Buffer } = {},
  ) {
    super(message);
    this.reason = reason;
    this.code = code;
    this.stdout = output.stdout ?? Buffer.alloc(0);
    this.stderr = output.stderr ?? Buffer.alloc(0);
  }
}

/** vk-cocoon's words for a command that ran and exited non-zero (it reports no exit code). */
const VK_EXIT_STATUS = /Process exited with status (\d+)/;

/**
 * The exit code a failed exec carries when the command itself ran and exited non-zero: vk-cocoon
 * wraps it as "ssh exec CMD on IP: Process exited with status N". Undefined for any other failure.
 */
export function exitStatusOf(err: unknown): number | undefined {
  if (!(err instanceof ExecFailedError)) return undefined;
  const match = VK_EXIT_STATUS.exec(err.message);
  return match ? Number(match[1]) : undefined;
}

/** The streams broke before the error stream gave a Status, or the server spoke no protocol of ours. */
export class ExecProtocolError extends ExecError {}

/** Keeps the first `max` bytes of a stream and notes whether more came. */
export class BoundedCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  write(chunk: Buffer): void {
    const room = this.max - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const taken = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(taken);
    this.kept += taken.length;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

interface ExecStatus {
  status?: string;
  reason?: string;
  code?: number;
  message?: string;
  /** A cause's type is serialized as "reason" (metav1.StatusCause). */
  details?: { causes?: { reason?: string; message?: string }[] };
}

/** The exit code a v4/v5 error stream's content stands for; an empty stream is success. */
export function exitCodeFromStatus(raw: Buffer): number {
  if (raw.length === 0) return 0;
  let status: ExecStatus;
  try {
    status = JSON.parse(raw.toString("utf8")) as ExecStatus;
  } catch {
    throw new ExecProtocolError(`error stream is not a Status: ${raw.toString("utf8").slice(0, 200)}`);
  }
  if (status.status === "Success") return 0;
  if (status.status === "Failure" && status.reason === "NonZeroExitCode") {
    const cause = status.details?.causes?.find((c) => c.reason === "ExitCode");
    const code = Number(cause?.message);
    if (Number.isInteger(code)) return code;
    throw new ExecProtocolError(`NonZeroExitCode without an exit code: ${status.message ?? ""}`);
  }
  throw new ExecFailedError(status.reason ?? "", status.code ?? 0, status.message ?? "exec failed");
}

/** The exec subresource's query: the command, the container, and which streams exist. */
export function execQuery(request: ExecRequest): URLSearchParams {
  const query = new URLSearchParams();
  for (const arg of request.command) query.append("command", arg);
  if (request.container) query.set("container", request.container);
  query.set("stdin", String(request.stdin !== undefined));
  query.set("stdout", "true");
  query.set("stderr", "true");
  query.set("tty", "false");
  return query;
}

/** Checks the pod the way kubectl does before it execs: it must exist (NotFoundError) and be Running. */
export function requireRunning(pod: Pod, key: string): void {
  const phase = pod.status?.phase ?? "";
  if (phase !== "Running") throw new ExecPodNotRunningError(key, phase);
}

/** Exec through the API server with the client's connection. */
export class KubeExecutor implements PodExecutor {
  private readonly client: KubeClient;
  private readonly clock: Clock;

  constructor(client: KubeClient, clock: Clock = systemClock) {
    this.client = client;
    this.clock = clock;
  }

  async exec(request: ExecRequest): Promise<ExecResult> {
    const key = `${request.namespace}/${request.pod}`;
    const stop = new AbortController();
    const outputs = {
      stdout: new BoundedCapture(request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES),
      stderr: new BoundedCapture(request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES),
    };
    let why: string | undefined;
    const onAbort = () => {
      why ??= `exec in ${key} aborted`;
      stop.abort();
    };
    request.signal?.addEventListener("abort", onAbort, { once: true });
    if (request.signal?.aborted) onAbort();
    if (request.timeoutMs !== undefined) {
      this.clock.sleep(request.timeoutMs, stop.signal).then(
        () => {
          why ??= `exec in ${key}: no exit within ${request.timeoutMs} ms`;
          stop.abort();
        },
        () => undefined,
      );
    }
    try {
      const pod = await this.client.get<Pod>(PODS, request.namespace, request.pod);
      requireRunning(pod, key);
      const query = execQuery(request);
      const websocket = await this.openWebSocket(request, query, stop.signal);
      const result =
        websocket !== undefined
          ? {
              exitCode: await runWebSocket(websocket, request, outputs, stop.signal),
              transport: "websocket" as const,
            }
          : {
              exitCode: await runSpdy(
                await this.openSpdy(request, query, stop.signal),
                request,
                outputs,
                stop.signal,
              ),
              transport: "spdy" as const,
            };
      return {
        ...result,
        stdout: outputs.stdout.bytes(),
        stderr: outputs.stderr.bytes(),
        stdoutTruncated: outputs.stdout.truncated,
        stderrTruncated: outputs.stderr.truncated,
      };
    } catch (err) {
      if (why !== undefined) throw new ExecTimeoutError(why, outputs.stdout.bytes(), outputs.stderr.bytes());
      // The output came before the failure: the caller may need it (a command's own error message).
      if (err instanceof ExecFailedError)
        throw new ExecFailedError(err.reason, err.code, err.message, {
          stdout: outputs.stdout.bytes(),
          stderr: outputs.stderr.bytes(),
        });
      throw err;
    } finally {
      request.signal?.removeEventListener("abort", onAbort);
      stop.abort();
    }
  }

  /** The WebSocket connection, or undefined when the upgrade failed and SPDY is next. */
  private async openWebSocket(
    request: ExecRequest,
    query: URLSearchParams,
    signal: AbortSignal,
  ): Promise<{ conn: WebSocketConnection; protocol: string } | undefined> {
    const key = handshakeKey();
    const outcome = await this.client.upgrade({
      method: "GET",
      // What the API server authorizes a GET upgrade as; it checks create on top.
      verb: "get",
      rt: PODS,
      namespace: request.namespace,
      name: request.pod,
      subresource: "exec",
      query,
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Protocol": EXEC_PROTOCOLS.join(", "),
      },
      signal,
    });
    if (!outcome.upgraded) return undefined;
    const protocol = header(outcome.headers, "sec-websocket-protocol");
    const accepted =
      header(outcome.headers, "upgrade").toLowerCase() === "websocket" &&
      header(outcome.headers, "sec-websocket-accept") === expectedAccept(key) &&
      (EXEC_PROTOCOLS as readonly string[]).includes(protocol);
    if (!accepted) {
      outcome.socket.destroy();
      return undefined;
    }
    return { conn: new WebSocketConnection(outcome.socket, outcome.head), protocol };
  }

  private async openSpdy(
    request: ExecRequest,
    query: URLSearchParams,
    signal: AbortSignal,
  ): Promise<SpdyConnection> {
    const outcome: UpgradeOutcome = await this.client.upgrade({
      method: "POST",
      verb: "create",
      rt: PODS,
      namespace: request.namespace,
      name: request.pod,
      subresource: "exec",
      query,
      headers: {
        Connection: "Upgrade",
        Upgrade: SPDY_PROTOCOL,
        "X-Stream-Protocol-Version": [...EXEC_PROTOCOLS],
      },
      signal,
    });
    if (!outcome.upgraded) throw apiErrorFromResponse(outcome.status, outcome.body);
    const protocol = header(outcome.headers, "x-stream-protocol-version");
    if (!(EXEC_PROTOCOLS as readonly string[]).includes(protocol)) {
      outcome.socket.destroy();
      throw new ExecProtocolError(
        `server chose stream protocol "${protocol}", none of ${EXEC_PROTOCOLS.join(", ")}`,
      );
    }
    return new SpdyConnection(outcome.socket as Duplex, "client", outcome.head);
  }
}

interface Outputs {
  stdout: BoundedCapture;
  stderr: BoundedCapture;
}

/** Channel-prefixed messages; resolves with the exit code once the server closes the connection. */
function runWebSocket(
  ws: { conn: WebSocketConnection; protocol: string },
  request: ExecRequest,
  outputs: Outputs,
  signal: AbortSignal,
): Promise<number> {
  const { conn } = ws;
  return new Promise((resolve, reject) => {
    const status: Buffer[] = [];
    let statusSeen = false;
    const onAbort = () => conn.destroy();
    signal.addEventListener("abort", onAbort, { once: true });
    conn.on("message", (message) => {
      const payload = message.subarray(1);
      switch (message[0]) {
        case CHANNEL_STDOUT:
          outputs.stdout.write(payload);
          return;
        case CHANNEL_STDERR:
          outputs.stderr.write(payload);
          return;
        case CHANNEL_ERROR:
          statusSeen = true;
          status.push(payload);
          return;
        default:
          return;
      }
    });
    conn.on("error", () => undefined);
    conn.once("close", () => {
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) {
        reject(new ExecProtocolError("exec aborted"));
        return;
      }
      if (!statusSeen) {
        reject(
          new ExecProtocolError(
            `exec in ${request.namespace}/${request.pod}: connection closed without a status`,
          ),
        );
        return;
      }
      try {
        resolve(exitCodeFromStatus(Buffer.concat(status)));
      } catch (err) {
        reject(err);
      }
    });
    if (request.stdin !== undefined) {
      for (let at = 0; at < request.stdin.length; at += STDIN_CHUNK) {
        const chunk = request.stdin.subarray(at, at + STDIN_CHUNK);
        conn.send(Buffer.concat([Buffer.from([CHANNEL_STDIN]), chunk]));
      }
      // v4 has no way to close stdin over a WebSocket; the command sees it open until it exits.
      if (ws.protocol === EXEC_PROTOCOLS[0]) conn.send(Buffer.from([CHANNEL_CLOSE, CHANNEL_STDIN]));
    }
  });
}

/**
 * client-go's stream order: the error stream, stdin, stdout, stderr, each answered before any data.
 * Resolves once stdout, stderr and the error stream have ended.
 */
async function runSpdy(
  conn: SpdyConnection,
  request: ExecRequest,
  outputs: Outputs,
  signal: AbortSignal,
): Promise<number> {
  const onAbort = () => conn.destroy();
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const ended = (stream: SpdyStream, sink?: BoundedCapture): Promise<void> =>
      new Promise((resolve) => {
        if (sink !== undefined) stream.on("data", (chunk) => sink.write(chunk));
        stream.once("end", resolve);
        stream.once("reset", () => resolve());
      });
    const status: Buffer[] = [];
    conn.on("error", () => undefined);
    const errorStream = conn.open({ streamtype: "error" });
    errorStream.on("data", (chunk) => status.push(chunk));
    const errorEnded = ended(errorStream);
    const stdin = request.stdin === undefined ? undefined : conn.open({ streamtype: "stdin" });
    const stdout = conn.open({ streamtype: "stdout" });
    const stderr = conn.open({ streamtype: "stderr" });
    const outputsEnded = Promise.all([ended(stdout, outputs.stdout), ended(stderr, outputs.stderr)]);
    await Promise.all([errorStream, stdin, stdout, stderr].map((s) => s?.waitReply()));
    if (stdin !== undefined && request.stdin !== undefined) {
      stdin.write(request.stdin);
      stdin.end();
    }
    await Promise.all([outputsEnded, errorEnded]);
    if (signal.aborted) throw new ExecProtocolError("exec aborted");
    if (status.length === 0 && errorStream.cutOff) {
      throw new ExecProtocolError(
        `exec in ${request.namespace}/${request.pod}: connection closed without a status`,
      );
    }
    return exitCodeFromStatus(Buffer.concat(status));
  } finally {
    signal.removeEventListener("abort", onAbort);
    conn.close();
    conn.destroy();
  }
}

function header(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value)?.trim() ?? "";
}
