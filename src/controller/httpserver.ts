// The small HTTP servers of the runtime (metrics, probes): bind-address parsing in the
// controller-runtime form (":8080", "host:port", "[::1]:8080"; "0" disables) and a listening server
// that reports its bound port (port 0 picks a free one, for tests), over HTTP or, given a certificate,
// HTTPS.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { http, https } from "../builtins.ts";

export interface BindAddress {
  host: string | undefined;
  port: number;
}

/** undefined when the address is "0" (the controller-runtime way to switch a server off). */
export function parseBindAddress(address: string): BindAddress | undefined {
  if (address === "0") return undefined;
  const colon = address.lastIndexOf(":");
  if (colon < 0) throw new Error(`bind address ${JSON.stringify(address)} lacks a port`);
  const port = Number(address.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`bind address ${JSON.stringify(address)} has an invalid port`);
  }
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  return { host: host === "" ? undefined : host, port };
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface HttpEndpoint {
  /** The port actually bound. */
  port: number;
  close(): Promise<void>;
}

/** PEM certificate (chain) and key of an HTTPS server. */
export interface ServingCertificate {
  cert: string;
  key: string;
}

/** Serves the exact paths given; anything else is 404, a failing handler 500. HTTPS when tls is given. */
export async function serve(
  bind: BindAddress,
  routes: Record<string, RouteHandler>,
  tls?: ServingCertificate,
): Promise<HttpEndpoint> {
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const handler = routes[path];
    if (!handler) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    Promise.resolve(handler(req, res)).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end(`${err instanceof Error ? err.message : String(err)}\n`);
    });
  };
  const server = tls
    ? https.createServer({ cert: tls.cert, key: tls.key, minVersion: "TLSv1.2" }, listener)
    : http.createServer(listener);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(bind.port, bind.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
