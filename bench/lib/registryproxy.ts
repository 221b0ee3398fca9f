// A timestamping reverse proxy in front of the test registry (plain HTTP on loopback both ways), for
// traces: the operator is given the proxy's host as OCI_REGISTRY and every exchange is reported.

import http from "node:http";
import { type Exchange, reportExchange } from "./countingproxy.ts";
import { onTeardown } from "./lifecycle.ts";

export interface RegistryProxy {
  /** `127.0.0.1:<port>`, the form OCI_REGISTRY takes. */
  readonly host: string;
  stop(): Promise<void>;
}

export async function startRegistryProxy(
  upstreamHost: string,
  onExchange: (exchange: Exchange) => void,
): Promise<RegistryProxy> {
  const [hostname, port] = upstreamHost.split(":");
  const agent = new http.Agent({ keepAlive: true });
  const server = http.createServer((req, res) => {
    const start = Date.now();
    const method = req.method ?? "GET";
    const up = http.request(
      { hostname, port, path: req.url, method, headers: { ...req.headers, host: upstreamHost }, agent },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
        ur.on("error", () => res.destroy());
        reportExchange(req, ur, start, "", onExchange);
      },
    );
    up.on("error", () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const host = `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const stop = onTeardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    agent.destroy();
  });
  return { host, stop };
}
