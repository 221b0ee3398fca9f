// HTTP transport: a small fetch-compatible function on node:https with keep-alive Agents (HTTP/1.1),
// rather than the built-in fetch, because it must do what Go's default transport does and fetch
// cannot: trust the system roots as Go finds them (SSL_CERT_FILE, SSL_CERT_DIR; src/net/roots.ts)
// plus an optional CA bundle, and go through HTTPS_PROXY / HTTP_PROXY unless NO_PROXY says
// otherwise (src/net/proxy.ts), per request URL: the token server may sit on another host than the
// registry. TLS verification stays on. Request and response bodies stream with backpressure: a blob
// copy (checkpoint branching) holds one chunk, not the blob (undici's fetch kept every chunk of a
// streamed request body: a 1 GiB copy held 1 GiB).
import type { Agent, IncomingHttpHeaders, IncomingMessage } from "node:http";
import { pipeline, Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { http, https } from "../builtins.ts";
import { agentProxyOptions, type Env, type ProxySelector } from "../net/proxy.ts";
import { systemRootCertificates } from "../net/roots.ts";

export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  /** A stream is sent as it is read (a blob copied from another repository). */
  body?: string | Buffer | ReadableStream<Uint8Array>;
  signal?: AbortSignal;
}

/**
 * The part of a fetch Response the client reads; the built-in Response has this shape, so a test's
 * fake may return one. The transport answers with its own (NodeResponse): the built-in Headers and
 * Response would load Node's bundled undici (~5 MiB resident) at the first registry request.
 */
export interface FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  /** The unread body as a stream; null when the response has none. */
  readonly body: ReadableStream<Uint8Array> | null;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** The part of the fetch API the client uses, so tests can pass a fake. */
export type FetchLike = (url: string, init: FetchInit) => Promise<FetchResponse>;

/** Whether a request body is a stream, without touching the ReadableStream global (web streams load on first use). */
export function isStreamBody(body: FetchInit["body"]): body is ReadableStream<Uint8Array> {
  return body !== undefined && typeof body !== "string" && !Buffer.isBuffer(body);
}

export interface TransportOptions {
  /** Trusted roots (PEM); default the system roots (src/net/roots.ts) as `env` locates them. */
  roots?: readonly string[];
  /** Where SSL_CERT_FILE and SSL_CERT_DIR are read; default process.env. */
  env?: Env;
  /** PEM bundle trusted in addition to the roots (a private registry's or token server's CA). */
  extraCa?: string;
  /** The proxy of each request; default none. */
  proxy?: ProxySelector;
}

/** Go's transport keeps up to 32 idle connections per host. */
const MAX_SOCKETS_PER_HOST = 32;

function bodyAllowed(method: string, status: number): boolean {
  return method !== "HEAD" && status !== 204 && status !== 205 && status !== 304;
}

/** A node:http response as a FetchResponse; the body is either streamed or read whole, once. */
class NodeResponse implements FetchResponse {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  readonly #res: IncomingMessage | undefined;
  #body: ReadableStream<Uint8Array> | undefined;

  /** `res` undefined: a response without a body (HEAD, 204, 304), already drained. */
  constructor(status: number, headers: IncomingHttpHeaders, res: IncomingMessage | undefined) {
    this.status = status;
    // Repeated headers as Headers.get gives them: joined with ", ".
    this.headers = {
      get: (name) => {
        const value = headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
      },
    };
    this.#res = res;
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (!this.#res) return null;
    this.#body ??= Readable.toWeb(this.#res) as unknown as ReadableStream<Uint8Array>;
    return this.#body;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const chunks: Buffer[] = [];
    if (this.#res) for await (const chunk of this.#res) chunks.push(chunk as Buffer);
    const whole = Buffer.concat(chunks);
    return whole.buffer.slice(whole.byteOffset, whole.byteOffset + whole.byteLength) as ArrayBuffer;
  }
}

export function createTransport(opts: TransportOptions = {}): FetchLike {
  // Read at the first HTTPS request, not here: the system bundle parsed costs ~6 MiB of resident
  // memory, which an operator talking to a plain-HTTP in-cluster registry never needs.
  let ca: string[] | undefined;
  const trusted = (): string[] => {
    ca ??= [...(opts.roots ?? systemRootCertificates(opts.env)), ...(opts.extraCa ? [opts.extraCa] : [])];
    return ca;
  };
  // One agent per scheme and proxy, so keep-alive pools never mix direct and tunnelled connections.
  const agents = new Map<string, Agent>();
  const agentFor = (target: URL): Agent => {
    const proxy = opts.proxy?.(target);
    const key = `${target.protocol} ${proxy?.href ?? "direct"}`;
    let agent = agents.get(key);
    if (!agent) {
      const common = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST, ...agentProxyOptions(proxy) };
      agent =
        target.protocol === "https:"
          ? new https.Agent({ ...common, ca: trusted(), minVersion: "TLSv1.2", ALPNProtocols: ["http/1.1"] })
          : new http.Agent(common);
      agents.set(key, agent);
    }
    return agent;
  };
  return (url, init) =>
    new Promise<FetchResponse>((resolve, reject) => {
      const target = new URL(url);
      const secure = target.protocol === "https:";
      const request = (secure ? https : http).request(
        target,
        { method: init.method, headers: init.headers, agent: agentFor(target), signal: init.signal },
        (res) => {
          const status = res.statusCode ?? 0;
          const hasBody = bodyAllowed(init.method, status);
          if (!hasBody) res.resume();
          resolve(new NodeResponse(status, res.headers, hasBody ? res : undefined));
        },
      );
      request.on("error", reject);
      if (isStreamBody(init.body)) {
        // pipeline, not pipe: a source that fails mid-blob must fail the request too.
        pipeline(Readable.fromWeb(init.body as NodeReadableStream<Uint8Array>), request, (err) => {
          if (err) reject(err);
        });
      } else {
        request.end(init.body);
      }
    });
}
