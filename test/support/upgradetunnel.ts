// Passing a connection upgrade (a SPDY or WebSocket exec) through a test proxy to kube-apiserver: the
// request line and headers go upstream over a TLS socket of their own, then bytes flow both ways
// until either side closes. The proxies that tunnel this way: upgradeproxy.ts and faultproxy.ts.

import type http from "node:http";
import type { Duplex } from "node:stream";
import tls from "node:tls";

export interface TunnelTarget {
  /** kube-apiserver's URL. */
  server: URL;
  ca: Buffer;
  /** The path to send upstream; default the request's. */
  path?: string;
  /** Replaces the client's Authorization header. */
  token?: string;
}

/** Tunnels the upgrade; every socket it opens is added to `sockets` until it closes. */
export function tunnelUpgrade(
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: TunnelTarget,
  sockets: Set<Duplex>,
): void {
  const { server } = target;
  const upstream = tls.connect({
    host: server.hostname,
    port: Number(server.port),
    ca: target.ca,
    servername: server.hostname === "127.0.0.1" ? undefined : server.hostname,
  });
  sockets.add(socket);
  sockets.add(upstream);
  socket.once("close", () => {
    sockets.delete(socket);
    upstream.destroy();
  });
  upstream.once("close", () => {
    sockets.delete(upstream);
    socket.destroy();
  });
  upstream.on("error", () => socket.destroy());
  socket.on("error", () => upstream.destroy());
  const lines = [`${req.method} ${target.path ?? req.url} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] ?? "";
    const lower = name.toLowerCase();
    if (lower === "authorization" && target.token !== undefined) continue;
    lines.push(`${name}: ${lower === "host" ? server.host : req.rawHeaders[i + 1]}`);
  }
  if (target.token !== undefined) lines.push(`Authorization: Bearer ${target.token}`);
  upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
  if (head.length > 0) upstream.write(head);
  upstream.pipe(socket);
  socket.pipe(upstream);
}
