// The kubelet API of a simulated node, as virtual-kubelet serves it for vk-cocoon: HTTPS on the node's
// address and daemonEndpoints port, self-signed and asking no client certificate (vk-cocoon's
// main.go: nodeutil.WithTLSConfig, ClientAuth NoClientCert), with `/exec/{namespace}/{pod}/{container}`
// over SPDY/3.1 (virtual-kubelet's node/api/exec.go and internal/kubernetes/remotecommand). The API
// server reaches it for `kubectl exec`: it proxies a SPDY client's upgrade as it is, and translates a
// WebSocket client's v5.channel.k8s.io into SPDY towards the kubelet, so SPDY is all a kubelet needs.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { SPDY_PROTOCOL, SpdyConnection, type SpdyStream } from "../../../src/net/spdy.ts";
import { selfSignedCertificate } from "../certs.ts";

/** virtual-kubelet's default StreamCreationTimeout: the client must open its streams within it. */
const STREAM_CREATION_TIMEOUT_MS = 30_000;

/** One exec the kubelet hands to the provider (vk-cocoon's RunInContainer). */
export interface ExecSession {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
  /** The client's stdin to its end; empty when the exec has no stdin stream. */
  stdin(): Promise<Buffer>;
  stdout(data: Buffer | string): void;
  stderr(data: Buffer | string): void;
  /** The client went away: virtual-kubelet cancels the provider's context. */
  signal: AbortSignal;
}

/**
 * Runs the command; resolving is Success, throwing is the provider's error. The kubelet reports a
 * thrown error as InternalError "error executing command in container: <message>", since only an
 * exit error of k8s.io/utils/exec becomes NonZeroExitCode and vk-cocoon's SSH errors are not one.
 */
export type ExecHandler = (session: ExecSession) => Promise<void>;

export interface KubeletServer {
  readonly port: number;
  close(): Promise<void>;
}

/** The kubelet's serving certificate, made once per process like vk-cocoon's LoadOrGenerateCert. */
let servingCertificate: { cert: Buffer; key: Buffer } | undefined;

function certificate(): { cert: Buffer; key: Buffer } {
  if (servingCertificate !== undefined) return servingCertificate;
  const dir = mkdtempSync(join(tmpdir(), "cocoon-kubelet-"));
  try {
    const files = selfSignedCertificate(dir, "kubelet", {
      subject: "/CN=cocoon-sim-kubelet",
      altNames: "IP:127.0.0.1,DNS:localhost",
    });
    servingCertificate = { cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) };
    return servingCertificate;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Listens on `host` (a free port) and serves exec to `handler`. */
export async function startKubelet(host: string, handler: ExecHandler): Promise<KubeletServer> {
  const server: Server = createServer({ ...certificate() }, (_req, res) => {
    res.writeHead(404, { "Content-Type": "text/plain" });
    res.end("404 page not found\n");
  });
  const sessions = new Set<Duplex>();
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    sessions.add(socket);
    socket.once("close", () => sessions.delete(socket));
    serveExec(req, socket, head, handler);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      for (const socket of sessions) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function refuse(socket: Duplex, status: number, message: string): void {
  const body = `${message}\n`;
  socket.end(
    `HTTP/1.1 ${status} ${status === 400 ? "Bad Request" : status === 403 ? "Forbidden" : "Not Found"}\r\n` +
      `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

function serveExec(req: IncomingMessage, socket: Duplex, head: Buffer, handler: ExecHandler): void {
  const url = new URL(req.url ?? "/", "https://kubelet");
  const match = /^\/exec\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
  if (match === null || req.method !== "POST") {
    refuse(socket, 404, "404 page not found");
    return;
  }
  const [namespace, pod, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
  // getExecOptions: "1" turns a stream on; tty with stderr, or no stream at all, is refused.
  const opts = {
    stdin: url.searchParams.get("input") === "1",
    stdout: url.searchParams.get("output") === "1",
    stderr: url.searchParams.get("error") === "1",
    tty: url.searchParams.get("tty") === "1",
  };
  if (opts.tty && opts.stderr) {
    refuse(socket, 400, "cannot exec with tty and stderr");
    return;
  }
  if (!opts.stdin && !opts.stdout && !opts.stderr) {
    refuse(socket, 400, "you must specify at least one of stdin, stdout, stderr");
    return;
  }
  if (!(req.headers.upgrade ?? "").toLowerCase().split(/,\s*/).includes(SPDY_PROTOCOL.toLowerCase())) {
    refuse(socket, 400, "unable to upgrade: missing upgrade headers in request");
    return;
  }
  const protocol = negotiate(req);
  if (protocol === undefined) {
    refuse(socket, 403, "unable to upgrade: unable to negotiate protocol");
    return;
  }
  socket.write(
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n" +
      `Upgrade: ${SPDY_PROTOCOL}\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
  );
  const conn = new SpdyConnection(socket, "server", head);
  const expected = 1 + Number(opts.stdin) + Number(opts.stdout) + Number(opts.stderr);
  const streams = new Map<string, SpdyStream>();
  const timer = setTimeout(() => conn.destroy(), STREAM_CREATION_TIMEOUT_MS);
  timer.unref();
  conn.once("close", () => clearTimeout(timer));
  conn.on("error", () => undefined);
  conn.on("stream", (stream) => {
    streams.set(stream.headers.streamtype ?? "", stream);
    if (streams.size < expected) return;
    clearTimeout(timer);
    void run(
      conn,
      streams,
      { namespace, pod, container, command: url.searchParams.getAll("command") },
      handler,
    );
  });
}

/**
 * httpstream.Handshake as virtual-kubelet calls it: the protocols it serves are the first
 * X-Stream-Protocol-Version value split at commas (HandleContainerExec), the client's are every
 * value of the header, and the first of the client's that is served wins.
 */
function negotiate(req: IncomingMessage): string | undefined {
  const values = req.headersDistinct["x-stream-protocol-version"] ?? [];
  const served = (values[0] ?? "").split(",");
  return values.find((p) => served.includes(p));
}

async function run(
  conn: SpdyConnection,
  streams: Map<string, SpdyStream>,
  target: { namespace: string; pod: string; container: string; command: string[] },
  handler: ExecHandler,
): Promise<void> {
  const cancel = new AbortController();
  conn.once("close", () => cancel.abort());
  const stdinStream = streams.get("stdin");
  const stdinChunks: Buffer[] = [];
  const stdinEnded = new Promise<Buffer>((resolve) => {
    if (stdinStream === undefined) {
      resolve(Buffer.alloc(0));
      return;
    }
    stdinStream.on("data", (chunk) => stdinChunks.push(chunk));
    stdinStream.once("end", () => resolve(Buffer.concat(stdinChunks)));
    stdinStream.once("reset", () => resolve(Buffer.concat(stdinChunks)));
  });
  const write = (type: string) => (data: Buffer | string) => streams.get(type)?.write(Buffer.from(data));
  let status: object;
  try {
    await handler({
      ...target,
      stdin: () => stdinEnded,
      stdout: write("stdout"),
      stderr: write("stderr"),
      signal: cancel.signal,
    });
    status = { metadata: {}, status: "Success" };
  } catch (err) {
    // apierrors.NewInternalError(fmt.Errorf("error executing command in container: %v", err)).
    const message = `error executing command in container: ${(err as Error).message}`;
    status = {
      metadata: {},
      status: "Failure",
      message: `Internal error occurred: ${message}`,
      reason: "InternalError",
      details: { causes: [{ message }] },
      code: 500,
    };
  }
  streams.get("stdout")?.end();
  streams.get("stderr")?.end();
  const errorStream = streams.get("error");
  errorStream?.write(Buffer.from(JSON.stringify(status)));
  errorStream?.end();
  conn.close();
}
