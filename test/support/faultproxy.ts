// Fault-injecting proxies for the reliability suite.
//
// RegistryProxy: plain HTTP between the operator and docker-registry. It journals every request (so the
// invariant checker knows when the operator deleted a manifest) and, per knob, answers 5xx, holds the
// request past the client's timeout, answers 401 with a challenge no client can satisfy, or stops
// listening (connection refused). It also counts each request's body bytes, can refuse bodies above a
// size with 413 as a fronting nginx's client_max_body_size does (on Content-Length up front, else as the
// body arrives), can buffer bodies whole before forwarding them (nginx's default), and can cut one
// upload's connection once a given number of upload bytes has passed.
// The simulator talks to the registry directly.
//
// ApiProxy: TLS-terminating proxy in front of kube-apiserver (self-signed certificate from openssl).
// It scopes a client to one namespace (cluster-wide lists and watches of namespaced resources are
// rewritten to that namespace, writes elsewhere are refused), and injects 409 on PATCH/PUT of
// cocoonsets and pods, 429 with Retry-After, dropped watch streams and 410 on watch resumes, and
// loses the answer to a PUT/PATCH of a cocoonset the API server applied (the connection is reset
// once the server has answered), each with a seeded probability. Connection upgrades (pod exec) in its
// namespace pass through unfaulted.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { selfSignedCertificate } from "../env/certs.ts";
import type { ApiConnection } from "../env/kubeapi.ts";
import { tunnelUpgrade } from "./upgradetunnel.ts";

/** mulberry32: a small seeded PRNG, so a failing run can be replayed from its printed seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------------
// Registry proxy

export type RegistryFault = "none" | "5xx" | "timeout" | "401" | "refused";

export interface RegistryRequest {
  time: number;
  method: string;
  path: string;
  /** Status answered (0 when the request was held, refused or failed upstream). */
  status: number;
  /** The fault injected instead of forwarding, if any: a knob's, a body refused as too large, an upload cut. */
  fault?: RegistryFault | "413" | "cut";
  /** Request body bytes the proxy received from the client. */
  bytesIn: number;
  /** The registry's Docker-Content-Digest answer (manifest HEAD, GET and PUT), when it sent one. */
  digest?: string;
}

export interface RegistryProxy {
  /** "127.0.0.1:PORT": an OCI_REGISTRY base for the operator. */
  readonly host: string;
  readonly requests: RegistryRequest[];
  /** Sets the fault injected on every request from now on ("none" forwards). */
  setFault(fault: RegistryFault): Promise<void>;
  readonly fault: RegistryFault;
  /** Called for every request as it completes (in the order the proxy answered them). */
  onRequest(listener: (req: RegistryRequest) => void): void;
  /** Bodies above this many bytes are answered 413 (undefined: no limit). */
  setBodyLimit(bytes: number | undefined): void;
  /** Once this many more bytes of upload bodies (PATCH, PUT) have passed, that request's connection is cut; once. */
  cutUploadAfter(bytes: number): void;
  /**
   * On: each request body is read whole before it is forwarded, as nginx does by default
   * (proxy_request_buffering), so a body cut short never reaches the registry. Off (the default): bodies stream.
   */
  bufferBodies(on: boolean): void;
  /**
   * Each DELETE waits for `gate` (resolved or not) before it is handled: a test brings its view of
   * the API server up to date with what the operator saw when it sent the DELETE.
   */
  gateDeletes(gate: ((path: string) => Promise<void>) | undefined): void;
  stop(): Promise<void>;
}

export async function startRegistryProxy(upstreamHost: string): Promise<RegistryProxy> {
  const requests: RegistryRequest[] = [];
  const listeners: ((r: RegistryRequest) => void)[] = [];
  const sockets = new Set<Socket>();
  const held = new Set<http.ServerResponse>();
  let fault: RegistryFault = "none";
  let bodyLimit: number | undefined;
  let cutAfter: number | undefined;
  let bufferBodies = false;
  let deleteGate: ((path: string) => Promise<void>) | undefined;
  const agent = new http.Agent({ keepAlive: true });

  const record = (r: RegistryRequest): void => {
    requests.push(r);
    for (const l of listeners) l(r);
  };

  const handle = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    const current = fault;
    if (current === "5xx") {
      req.resume();
      const status = requests.length % 2 === 0 ? 503 : 500;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ errors: [{ code: "UNAVAILABLE", message: "injected fault" }] }));
      record({ time: Date.now(), method, path, status, fault: current, bytesIn: 0 });
      return;
    }
    if (current === "401") {
      req.resume();
      // A Bearer challenge whose realm refuses connections: no client can get a token.
      res.writeHead(401, {
        "content-type": "application/json",
        "www-authenticate": 'Bearer realm="http://127.0.0.1:9/token",service="injected"',
      });
      res.end(JSON.stringify({ errors: [{ code: "UNAUTHORIZED", message: "injected fault" }] }));
      record({ time: Date.now(), method, path, status: 401, fault: current, bytesIn: 0 });
      return;
    }
    if (current === "timeout") {
      req.resume();
      // Held until the client gives up (its socket closes) or the fault is lifted / proxy stops.
      held.add(res);
      res.on("close", () => held.delete(res));
      record({ time: Date.now(), method, path, status: 0, fault: current, bytesIn: 0 });
      return;
    }
    const declared = Number(req.headers["content-length"] ?? Number.NaN);
    if (bodyLimit !== undefined && declared > bodyLimit) {
      req.resume();
      res.writeHead(413, { "content-type": "text/html", connection: "close" });
      res.end("<html><body>413 Request Entity Too Large</body></html>");
      record({ time: Date.now(), method, path, status: 413, fault: "413", bytesIn: 0 });
      return;
    }
    let bytesIn = 0;
    let stopped = false;
    const buffered = bufferBodies;
    const body: Buffer[] = [];
    const forward = (): http.ClientRequest => {
      const upstream = http.request(
        {
          host: upstreamHost.split(":")[0],
          port: Number(upstreamHost.split(":")[1]),
          method,
          path,
          headers: req.headers,
          agent,
        },
        (up) => {
          if (res.destroyed || res.headersSent) {
            up.resume();
            return;
          }
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
          const header = up.headers["docker-content-digest"];
          const digest = typeof header === "string" ? { digest: header } : {};
          up.on("end", () =>
            record({ time: Date.now(), method, path, status: up.statusCode ?? 0, bytesIn, ...digest }),
          );
        },
      );
      upstream.on("error", () => {
        if (stopped) return;
        if (!res.headersSent) res.writeHead(502);
        res.end();
        record({ time: Date.now(), method, path, status: 502, bytesIn });
      });
      return upstream;
    };
    // Unbuffered, the body streams upstream as it arrives; buffered, it goes only once whole.
    const streamed = buffered ? undefined : forward();
    const stop = (): void => {
      stopped = true;
      if (streamed) {
        req.unpipe(streamed);
        streamed.destroy();
      }
    };
    const upload = method === "PATCH" || method === "PUT";
    req.on("data", (bytes: Buffer) => {
      if (stopped) return;
      bytesIn += bytes.length;
      if (buffered) body.push(bytes);
      if (bodyLimit !== undefined && bytesIn > bodyLimit) {
        stop();
        req.resume();
        res.writeHead(413, { "content-type": "text/html", connection: "close" });
        res.end("<html><body>413 Request Entity Too Large</body></html>");
        record({ time: Date.now(), method, path, status: 413, fault: "413", bytesIn });
        return;
      }
      if (upload && cutAfter !== undefined) {
        cutAfter -= bytes.length;
        if (cutAfter <= 0) {
          cutAfter = undefined;
          stop();
          req.socket.destroy();
          record({ time: Date.now(), method, path, status: 0, fault: "cut", bytesIn });
        }
      }
    });
    if (streamed) req.pipe(streamed);
    else
      req.on("end", () => {
        if (!stopped) forward().end(Buffer.concat(body));
      });
  };
  const server = http.createServer((req, res) => {
    const gate = deleteGate;
    if (gate === undefined || req.method !== "DELETE") {
      handle(req, res);
      return;
    }
    req.pause();
    gate(req.url ?? "/").then(
      () => handle(req, res),
      () => handle(req, res),
    );
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await listen(server, 0);
  const port = (server.address() as AddressInfo).port;
  let listening = true;

  const closeAll = async (): Promise<void> => {
    for (const res of held) res.destroy();
    held.clear();
    const closed = new Promise<void>((r) => server.close(() => r()));
    for (const s of sockets) s.destroy();
    await closed;
  };

  return {
    host: `127.0.0.1:${port}`,
    requests,
    get fault() {
      return fault;
    },
    async setFault(next) {
      fault = next;
      // Lifting a timeout releases held requests as a dropped connection.
      if (next !== "timeout") {
        for (const res of held) res.destroy();
        held.clear();
      }
      if (next === "refused" && listening) {
        listening = false;
        await closeAll();
      } else if (next !== "refused" && !listening) {
        await listen(server, port);
        listening = true;
      }
    },
    onRequest(listener) {
      listeners.push(listener);
    },
    setBodyLimit(bytes) {
      bodyLimit = bytes;
    },
    cutUploadAfter(bytes) {
      cutAfter = bytes;
    },
    bufferBodies(on) {
      bufferBodies = on;
    },
    gateDeletes(gate) {
      deleteGate = gate;
    },
    async stop() {
      if (listening) await closeAll();
      listening = false;
      agent.destroy();
    },
  };
}

function listen(server: http.Server | https.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
}

// ---------------------------------------------------------------------------------------------------
// API proxy

export interface ApiFaults {
  /** Probability of a 409 Conflict on PATCH/PUT of cocoonsets and pods. */
  conflict: number;
  /** Probability of a 429 (Retry-After: 1) on any non-watch request. */
  throttle: number;
  /** Probability that a watch stream is cut after a random 0.2–3 s. */
  dropWatch: number;
  /** Probability that a watch resuming from a resourceVersion is answered 410 Gone. */
  goneOnResume: number;
  /**
   * Probability that a PUT/PATCH of a cocoonset is applied by the API server but its answer is lost:
   * the client's connection is reset once the server has answered.
   */
  lostReply?: number;
}

export interface ApiProxyCounts {
  requests: number;
  conflicts: number;
  throttles: number;
  droppedWatches: number;
  gones: number;
  lostReplies: number;
  refusedOutOfScope: number;
}

export interface ApiProxy {
  readonly server: string;
  /** A kubeconfig file pointing at the proxy (its CA, the upstream token). */
  readonly kubeconfigPath: string;
  readonly counts: ApiProxyCounts;
  faults: ApiFaults;
  stop(): Promise<void>;
}

const NO_FAULTS: ApiFaults = { conflict: 0, throttle: 0, dropWatch: 0, goneOnResume: 0 };
/** Namespaced resources the operator lists or watches cluster-wide: the proxy scopes them. */
const NAMESPACED = [
  "pods",
  "cocoonsets",
  "cocoonhibernations",
  "cocooncheckpoints",
  "cocoonpools",
  "cocoonclaims",
  "cocoonrestores",
  "leases",
  "events",
];

function status(code: number, reason: string, message: string, extra: object = {}): string {
  return JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
    ...extra,
  });
}

/**
 * Rewrites a cluster-wide path of a namespaced resource to the namespace; undefined when the path
 * addresses another namespace (refused).
 */
export function scopePath(path: string, namespace: string): string | undefined {
  const [pathname = "", query] = path.split("?", 2);
  const m = /^(\/api\/v1|\/apis\/[^/]+\/[^/]+)\/(.*)$/.exec(pathname);
  if (!m) return path;
  const [, prefix, rest = ""] = m;
  const parts = rest.split("/");
  if (parts[0] === "namespaces" && parts.length >= 3) {
    return parts[1] === namespace ? path : undefined;
  }
  if (parts.length === 1 && NAMESPACED.includes(parts[0] ?? "")) {
    return `${prefix}/namespaces/${namespace}/${parts[0]}${query !== undefined ? `?${query}` : ""}`;
  }
  return path;
}

export async function startApiProxy(
  upstream: ApiConnection,
  opts: {
    namespace: string;
    seed: number;
    faults?: Partial<ApiFaults>;
    /** "group/version"s answered as a server without them answers: 404 "404 page not found". */
    unservedGroupVersions?: string[];
  },
): Promise<ApiProxy> {
  const dir = mkdtempSync(join(tmpdir(), "cocoon-apiproxy-"));
  const { certFile, keyFile } = selfSignedCertificate(dir, "proxy", {
    subject: "/CN=127.0.0.1",
    altNames: "IP:127.0.0.1",
  });
  const random = seededRandom(opts.seed);
  const counts: ApiProxyCounts = {
    requests: 0,
    conflicts: 0,
    throttles: 0,
    droppedWatches: 0,
    gones: 0,
    lostReplies: 0,
    refusedOutOfScope: 0,
  };
  const upstreamUrl = new URL(upstream.server);
  const agent = new https.Agent({ keepAlive: true, ca: readFileSync(upstream.caFile) });
  const sockets = new Set<Duplex>();
  const timers = new Set<NodeJS.Timeout>();
  const state = { faults: { ...NO_FAULTS, ...opts.faults } };
  let watchDropForced = false;

  const server = https.createServer(
    { key: readFileSync(keyFile), cert: readFileSync(certFile) },
    (req, res) => {
      counts.requests++;
      const method = req.method ?? "GET";
      const scoped = scopePath(req.url ?? "/", opts.namespace);
      const send = (code: number, body: string, headers: Record<string, string> = {}) => {
        req.resume();
        res.writeHead(code, { "content-type": "application/json", ...headers });
        res.end(body);
      };
      if (scoped === undefined) {
        counts.refusedOutOfScope++;
        send(403, status(403, "Forbidden", "outside the proxy's namespace"));
        return;
      }
      const url = new URL(scoped, "https://proxy");
      if (opts.unservedGroupVersions?.some((gv) => url.pathname.startsWith(`/apis/${gv}/`))) {
        req.resume();
        res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
        res.end("404 page not found\n");
        return;
      }
      const isWatch = url.searchParams.get("watch") === "true" || url.searchParams.get("watch") === "1";
      const f = state.faults;
      // The first watch resume (and, below, the first watch stream) gets its fault whenever that fault
      // is on, so a run that asks for a fault kind exercises it whatever the seed.
      if (
        isWatch &&
        url.searchParams.get("resourceVersion") &&
        ((f.goneOnResume > 0 && counts.gones === 0) || random() < f.goneOnResume)
      ) {
        counts.gones++;
        send(410, status(410, "Expired", "too old resource version (injected)"));
        return;
      }
      if (!isWatch && random() < f.throttle) {
        counts.throttles++;
        send(
          429,
          status(429, "TooManyRequests", "injected throttle", { details: { retryAfterSeconds: 1 } }),
          {
            "retry-after": "1",
          },
        );
        return;
      }
      if (
        (method === "PATCH" || method === "PUT") &&
        /\/(cocoonsets|pods)\//.test(url.pathname) &&
        random() < f.conflict
      ) {
        counts.conflicts++;
        send(
          409,
          status(409, "Conflict", "Operation cannot be fulfilled: the object has been modified (injected)"),
        );
        return;
      }
      const loseReply =
        (method === "PATCH" || method === "PUT") &&
        /\/cocoonsets\/[^/]+$/.test(url.pathname) &&
        (f.lostReply ?? 0) > 0 &&
        random() < (f.lostReply ?? 0);
      const headers = { ...req.headers, host: upstreamUrl.host, authorization: `Bearer ${upstream.token}` };
      const up = https.request(
        {
          hostname: upstreamUrl.hostname,
          port: upstreamUrl.port,
          method,
          path: scoped,
          headers,
          agent: isWatch ? undefined : agent,
          ca: readFileSync(upstream.caFile),
        },
        (upRes) => {
          if (loseReply) {
            counts.lostReplies++;
            upRes.resume();
            upRes.on("end", () => res.destroy());
            return;
          }
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          upRes.pipe(res);
          if (
            isWatch &&
            upRes.statusCode === 200 &&
            ((f.dropWatch > 0 && !watchDropForced) || random() < f.dropWatch)
          ) {
            watchDropForced = true;
            const timer = setTimeout(
              () => {
                timers.delete(timer);
                counts.droppedWatches++;
                up.destroy();
                res.destroy();
              },
              200 + Math.floor(random() * 2800),
            );
            timers.add(timer);
          }
        },
      );
      up.on("error", () => {
        if (!res.headersSent) send(502, status(502, "BadGateway", "upstream error"));
        else res.destroy();
      });
      res.on("close", () => up.destroy());
      req.pipe(up);
    },
  );
  // A pod exec (the operator's guest hooks) is an upgrade: passed through unfaulted, in scope only.
  server.on("upgrade", (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    counts.requests++;
    const scoped = scopePath(req.url ?? "/", opts.namespace);
    if (scoped === undefined) {
      counts.refusedOutOfScope++;
      socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    tunnelUpgrade(
      req,
      socket,
      head,
      { server: upstreamUrl, ca: readFileSync(upstream.caFile), path: scoped, token: upstream.token },
      sockets,
    );
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await listen(server, 0);
  const port = (server.address() as AddressInfo).port;
  const serverUrl = `https://127.0.0.1:${port}`;
  const kubeconfigPath = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfigPath,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "proxy",
          cluster: {
            server: serverUrl,
            "certificate-authority-data": readFileSync(certFile).toString("base64"),
          },
        },
      ],
      users: [{ name: "admin", user: { token: upstream.token } }],
      contexts: [{ name: "proxy", context: { cluster: "proxy", user: "admin", namespace: opts.namespace } }],
      "current-context": "proxy",
    }),
  );
  return {
    server: serverUrl,
    kubeconfigPath,
    counts,
    get faults() {
      return state.faults;
    },
    set faults(next: ApiFaults) {
      state.faults = next;
    },
    async stop() {
      for (const t of timers) clearTimeout(t);
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
      agent.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
