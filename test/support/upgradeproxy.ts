// A TLS-terminating proxy in front of kube-apiserver that refuses WebSocket upgrades (400) and passes
// everything else, SPDY upgrades included, as a load balancer without WebSocket support does: the
// case kubectl's fallback from WebSocket to SPDY exists for.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import {
  type KubeconfigDocument,
  kubeconfigFromDocument,
  type RestConfig,
  restConfigFromKubeconfig,
} from "../../src/controller/kubeconfig.ts";
import { selfSignedCertificate } from "../env/certs.ts";
import type { ApiConnection } from "../env/kubeapi.ts";
import { tunnelUpgrade } from "./upgradetunnel.ts";

export interface UpgradeRefusingProxy {
  /** The proxy as a client's server, CA and the admin token. */
  readonly restConfig: RestConfig;
  /** WebSocket upgrades refused so far. */
  refusedWebSockets(): number;
  stop(): Promise<void>;
}

export async function startUpgradeRefusingProxy(upstream: ApiConnection): Promise<UpgradeRefusingProxy> {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-upgrade-proxy-"));
  const files = selfSignedCertificate(dir, "proxy", {
    subject: "/CN=upgrade-proxy",
    altNames: "IP:127.0.0.1",
  });
  const cert = readFileSync(files.certFile);
  const key = readFileSync(files.keyFile);
  rmSync(dir, { recursive: true, force: true });
  const target = new URL(upstream.server);
  const ca = readFileSync(upstream.caFile);
  const sockets = new Set<Duplex>();
  let refused = 0;

  const server = https.createServer({ cert, key }, (req, res) => {
    const forward = https.request(
      {
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: target.host },
        ca,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", () => res.destroy());
    req.pipe(forward);
  });
  server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    if ((req.headers.upgrade ?? "").toLowerCase() === "websocket") {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      refused++;
      const body = "websocket upgrades are not allowed here\n";
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
      return;
    }
    tunnelUpgrade(req, socket, head, { server: target, ca }, sockets);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "proxy",
        cluster: {
          server: `https://127.0.0.1:${port}`,
          "certificate-authority-data": cert.toString("base64"),
        },
      },
    ],
    users: [{ name: "admin", user: { token: upstream.token } }],
    contexts: [{ name: "proxy", context: { cluster: "proxy", user: "admin" } }],
    "current-context": "proxy",
  } as KubeconfigDocument;
  return {
    restConfig: restConfigFromKubeconfig(kubeconfigFromDocument(kubeconfig, tmpdir()), { env: {} }),
    refusedWebSockets: () => refused,
    async stop() {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
