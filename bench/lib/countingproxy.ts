// A counting reverse proxy in front of the API server, for the operator process only: plain HTTP on
// loopback to the operator, HTTPS to the API server, every request counted by method, by Kubernetes
// verb and by response code. It counts what the operator sent whatever the operator exports, so the
// same numbers exist for any binary (the operator's own rest_client_requests_total is read too and
// shown beside them). Watches stream through. The proxy adds the bearer token itself.

import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { stringify } from "yaml";
import type { ApiConnection } from "../../test/env/testenv.ts";
import { onTeardown } from "./lifecycle.ts";

export interface ProxyCounts {
  byMethod: Record<string, number>;
  byVerb: Record<string, number>;
  byCode: Record<string, number>;
  total: number;
  /** Response body bytes as sent by the API server (compressed when gzip was negotiated). */
  responseBytes: number;
}

/** One request through the proxy: when it was sent and answered (epoch ms), and what it was. */
export interface Exchange {
  start: number;
  end: number;
  method: string;
  path: string;
  status: number;
  /** The request body (a patch's content), for writes. */
  body: string;
}

export interface CountingProxy {
  readonly url: string;
  /** A kubeconfig pointing at the proxy with the API server's token. */
  readonly kubeconfigPath: string;
  counts(): ProxyCounts;
  stop(): Promise<void>;
}

/**
 * The segments of an API path after the group version and the namespace:
 * /api/v1/namespaces/x/pods/p/status → ["pods", "p", "status"].
 */
export function resourceSegments(pathname: string): string[] {
  const parts = pathname.split("/").filter(Boolean);
  const afterVersion = parts.slice(parts[0] === "api" ? 2 : 3);
  return afterVersion[0] === "namespaces" && afterVersion.length >= 3 ? afterVersion.slice(2) : afterVersion;
}

function verbOf(method: string, url: URL): string {
  const watch = url.searchParams.get("watch");
  if (method === "GET") {
    if (watch === "1" || watch === "true") return "watch";
    // Collections end in a plural with no name after it; /api/v1/namespaces/x/pods vs .../pods/p.
    return resourceSegments(url.pathname).length % 2 === 1 ? "list" : "get";
  }
  return { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[method] ?? method.toLowerCase();
}

/** Hands `onExchange` the exchange once the upstream response has ended. */
export function reportExchange(
  req: http.IncomingMessage,
  upstream: http.IncomingMessage,
  start: number,
  body: string,
  onExchange: (exchange: Exchange) => void,
): void {
  upstream.on("end", () =>
    onExchange({
      start,
      end: Date.now(),
      method: req.method ?? "GET",
      path: req.url ?? "/",
      status: upstream.statusCode ?? 0,
      body,
    }),
  );
}

export async function startCountingProxy(
  conn: ApiConnection,
  kubeconfigPath: string,
  onExchange?: (exchange: Exchange) => void,
): Promise<CountingProxy> {
  const upstream = new URL(conn.server);
  const agent = new https.Agent({ keepAlive: true, ca: readFileSync(conn.caFile), maxSockets: 256 });
  let counts: ProxyCounts = { byMethod: {}, byVerb: {}, byCode: {}, total: 0, responseBytes: 0 };
  const bump = (rec: Record<string, number>, key: string) => {
    rec[key] = (rec[key] ?? 0) + 1;
  };

  const server = http.createServer((req, res) => {
    const start = Date.now();
    const method = req.method ?? "GET";
    const requestBody: Buffer[] = [];
    if (onExchange && method !== "GET") req.on("data", (chunk: Buffer) => requestBody.push(chunk));
    const target = new URL(req.url ?? "/", upstream);
    const verb = verbOf(method, target);
    // client-go sends no bearer token to a plain-HTTP server, so the proxy authenticates every
    // request with the environment's admin token (the same identity the operator would use).
    const headers = { ...req.headers, host: upstream.host, authorization: `Bearer ${conn.token}` };
    const up = https.request(
      {
        protocol: "https:",
        hostname: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method,
        headers,
        agent,
      },
      (ur) => {
        const code = String(ur.statusCode ?? 0);
        bump(counts.byMethod, method);
        bump(counts.byVerb, verb);
        bump(counts.byCode, code);
        counts.total++;
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.on("data", (chunk: Buffer) => {
          counts.responseBytes += chunk.length;
        });
        ur.pipe(res);
        ur.on("error", () => res.destroy());
        if (onExchange && verb !== "watch") {
          reportExchange(req, ur, start, Buffer.concat(requestBody).toString("utf8"), onExchange);
        }
      },
    );
    up.on("error", () => {
      bump(counts.byCode, "<error>");
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on("close", () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  writeFileSync(
    kubeconfigPath,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "bench", cluster: { server: url } }],
      users: [{ name: "admin", user: { token: conn.token } }],
      contexts: [{ name: "bench", context: { cluster: "bench", user: "admin", namespace: "default" } }],
      "current-context": "bench",
    }),
  );
  const stop = onTeardown(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    agent.destroy();
  });
  return {
    url,
    kubeconfigPath,
    counts: () => structuredClone(counts),
    stop: async () => {
      await stop();
      counts = { byMethod: {}, byVerb: {}, byCode: {}, total: 0, responseBytes: 0 };
    },
  };
}

export function diffProxyCounts(after: ProxyCounts, before: ProxyCounts): ProxyCounts {
  const sub = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(a)
        .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
        .filter(([, v]) => v !== 0),
    );
  return {
    byMethod: sub(after.byMethod, before.byMethod),
    byVerb: sub(after.byVerb, before.byVerb),
    byCode: sub(after.byCode, before.byCode),
    total: after.total - before.total,
    responseBytes: after.responseBytes - before.responseBytes,
  };
}
