// HTTP transport. The default is the built-in fetch (undici: keep-alive connection reuse,
// HTTP/1.1, system CA roots plus NODE_EXTRA_CA_CERTS), streamed uploads excepted (builtinFetch says
// why). The built-in fetch takes no per-request CA,
// and Node does not export undici's Agent to pass as a dispatcher, so an explicit CA bundle
// switches to a small fetch-compatible function on node:https with keep-alive Agents that trust
// the system roots plus the bundle. TLS verification stays on in both.
import http from "node:http";
import https from "node:https";
import { pipeline, Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { rootCertificates } from "node:tls";

export interface FetchInit {
  method: string;
  headers: Record<string, string>;
  /** A stream is sent as it is read (a blob copied from another repository). */
  body?: string | Buffer | ReadableStream<Uint8Array>;
  signal?: AbortSignal;
}

/** The part of the fetch API the client uses, so tests can pass a fake. */
export type FetchLike = (url: string, init: FetchInit) => Promise<Response>;

/**
 * The built-in fetch, except for a streamed request body: undici's fetch keeps every chunk of one
 * until the request ends (a 1 GiB blob copy held 1 GiB), so those go through node:http(s), whose
 * request applies backpressure, with the default trust (system roots plus NODE_EXTRA_CA_CERTS).
 */
export const builtinFetch: FetchLike = (url, init) =>
  init.body instanceof ReadableStream
    ? streamingFetch()(url, init)
    : fetch(url, { method: init.method, headers: init.headers, body: init.body, signal: init.signal });

let defaultTrustFetch: FetchLike | undefined;
function streamingFetch(): FetchLike {
  defaultTrustFetch ??= nodeFetch({
    "https:": new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST, minVersion: "TLSv1.2" }),
    "http:": new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST }),
  });
  return defaultTrustFetch;
}

/** Go's transport keeps up to 32 idle connections per host (contract.md §4.4). */
const MAX_SOCKETS_PER_HOST = 32;

function bodyAllowed(method: string, status: number): boolean {
  return method !== "HEAD" && status !== 204 && status !== 205 && status !== 304;
}

export function createCaBundleFetch(caPem: string): FetchLike {
  return nodeFetch({
    "https:": new https.Agent({
      keepAlive: true,
      maxSockets: MAX_SOCKETS_PER_HOST,
      ca: [...rootCertificates, caPem],
      minVersion: "TLSv1.2",
      ALPNProtocols: ["http/1.1"],
    }),
    "http:": new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST }),
  });
}

/** A fetch-compatible function on node:http(s) with the given agents; the response is read in full. */
function nodeFetch(agents: { "https:": https.Agent; "http:": http.Agent }): FetchLike {
  return (url, init) =>
    new Promise<Response>((resolve, reject) => {
      const target = new URL(url);
      const secure = target.protocol === "https:";
      const request = (secure ? https : http).request(
        target,
        {
          method: init.method,
          headers: init.headers,
          agent: secure ? agents["https:"] : agents["http:"],
          signal: init.signal,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("error", reject);
          res.on("end", () => {
            const headers = new Headers();
            for (const [name, value] of Object.entries(res.headers)) {
              if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
            }
            const status = res.statusCode ?? 0;
            const body = bodyAllowed(init.method, status) ? Buffer.concat(chunks) : null;
            resolve(new Response(body, { status, statusText: res.statusMessage ?? "", headers }));
          });
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
