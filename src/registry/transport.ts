// HTTP transport: a small fetch-compatible function on node:https with keep-alive Agents (HTTP/1.1),
// rather than the built-in fetch, because it must do what Go's default transport does and fetch
// cannot: trust the system roots as Go finds them (SSL_CERT_FILE, SSL_CERT_DIR; src/net/roots.ts)
// plus an optional CA bundle, and go through HTTPS_PROXY / HTTP_PROXY unless NO_PROXY says
// otherwise (src/net/proxy.ts), per request URL: the token server may sit on another host than the
// registry. TLS verification stays on. Request and response bodies stream with backpressure: a blob
// copy (checkpoint branching) holds one chunk, not the blob (undici's fetch kept every chunk of a
// streamed request body: a 1 GiB copy held 1 GiB).
import type { Agent } from "node:http";
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

/** The part of the fetch API the client uses, so tests can pass a fake. */
export type FetchLike = (url: string, init: FetchInit) => Promise<Response>;

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

/** Go's transport keeps up to 32 idle connections per host (contract.md §4.4). */
const MAX_SOCKETS_PER_HOST = 32;

function bodyAllowed(method: string, status: number): boolean {
  return method !== "HEAD" && status !== 204 && status !== 205 && status !== 304;
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
    new Promise<Response>((resolve, reject) => {
      const target = new URL(url);
      const secure = target.protocol === "https:";
      const request = (secure ? https : http).request(
        target,
        { method: init.method, headers: init.headers, agent: agentFor(target), signal: init.signal },
        (res) => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
          }
          const status = res.statusCode ?? 0;
          if (!bodyAllowed(init.method, status)) res.resume();
          const body = bodyAllowed(init.method, status)
            ? (Readable.toWeb(res) as unknown as ReadableStream<Uint8Array>)
            : null;
          resolve(new Response(body, { status, statusText: res.statusMessage ?? "", headers }));
        },
      );
      request.on("error", reject);
      if (init.body instanceof ReadableStream) {
        // pipeline, not pipe: a source that fails mid-blob must fail the request too.
        pipeline(Readable.fromWeb(init.body as NodeReadableStream<Uint8Array>), request, (err) => {
          if (err) reject(err);
        });
      } else {
        request.end(init.body);
      }
    });
}
