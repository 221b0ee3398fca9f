// The operator's API client: server, TLS and credentials from ./kubeconfig.ts; raw JSON REST over
// keep-alive connections (plain objects, string timestamps), plus streaming watches. Every request
// is counted and reported to listeners (metrics, "a settled pass makes no writes" assertions).

import type {
  Agent,
  ClientRequest,
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
} from "node:http";
import type { AgentOptions } from "node:https";
import type { Socket } from "node:net";
import type { Duplex, Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { http, https } from "../builtins.ts";
import { type Clock, systemClock } from "../clock.ts";
import { agentProxyOptions, type Env, fixedProxy, proxyFromEnvironment } from "../net/proxy.ts";
import { systemRootCertificates } from "../net/roots.ts";
import { apiErrorFromResponse, apiErrorFromStatus } from "./errors.ts";
import {
  type Credentials,
  type RestConfig,
  readKubeconfigFile,
  restConfigFromKubeconfig,
} from "./kubeconfig.ts";
import { ListDecoder } from "./listdecoder.ts";
import { TokenBucket } from "./ratelimit.ts";
import { type ResourceType, resourcePath } from "./resources.ts";

export interface ObjectWithMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface ListOptions<T = unknown> {
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size; the client follows `continue` tokens and returns every page. */
  limit?: number;
  /**
   * Sent with the first page only (later pages carry the continue token): "0" takes any version
   * the API server's watch cache holds, a version takes one not older than it (from the cache once it
   * has caught up), none is a consistent (quorum) read. The watch cache ignores `limit` for both.
   */
  resourceVersion?: string;
  /** Applied to every item as it is decoded, so the raw items of a large list never all exist at once. */
  transform?(item: T): T;
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface DeleteOptions {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: "Background";
}

/** Every read and write the reconcilers make; an in-memory fake of it serves unit tests. */
export interface WriteOptions {
  /** dryRun=All: the API server validates and admits the write (webhooks and policies included) and stores nothing. */
  dryRun?: boolean;
}

export interface Client {
  /** Uncached read, straight from the API server. */
  get<T>(rt: ResourceType, namespace: string, name: string): Promise<T>;
  list<T>(rt: ResourceType, namespace: string | undefined, opts?: ListOptions<T>): Promise<ListResult<T>>;
  create<T>(rt: ResourceType, namespace: string, obj: T, opts?: WriteOptions): Promise<T>;
  update<T>(rt: ResourceType, obj: T & { metadata: { name?: string; namespace?: string } }): Promise<T>;
  /** JSON merge patch (application/merge-patch+json), on the object or its status subresource. */
  patch<T>(
    rt: ResourceType,
    namespace: string,
    name: string,
    mergePatch: unknown,
    opts?: { subresource?: "status" } & WriteOptions,
  ): Promise<T>;
  /** Throws NotFoundError when the object is already gone; callers decide whether that matters. */
  delete(rt: ResourceType, namespace: string, name: string, opts?: DeleteOptions): Promise<void>;
}

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export interface WatchOptions {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Server-side timeout; the stream then ends normally and the caller re-watches. */
  timeoutSeconds?: number;
  allowWatchBookmarks?: boolean;
  /** No byte for this long means a dead connection: the stream fails so the caller reconnects. */
  inactivityTimeoutMs?: number;
  signal?: AbortSignal;
}

/** The list and watch half of the client, which the list-watch cache needs. */
export interface WatchClient {
  list<T>(rt: ResourceType, namespace: string | undefined, opts?: ListOptions<T>): Promise<ListResult<T>>;
  /**
   * Streams watch events. A non-200 answer throws the typed error (GoneError for 410); ERROR events are
   * yielded as they come. Ends normally on server timeout or abort.
   */
  watch<T>(rt: ResourceType, namespace: string | undefined, opts: WatchOptions): AsyncIterable<WatchEvent<T>>;
}

export interface RequestInfo {
  /** Kubernetes verb: get, list, watch, create, update, patch, delete. */
  verb: string;
  /** Plural, with "/subresource" when one is addressed (e.g. "cocoonsets/status"). */
  resource: string;
  namespace: string | undefined;
  /** HTTP method, as in client-go's rest_client_requests_total. */
  method: string;
  host: string;
  /** HTTP status code as a string, or "<error>" when no response arrived (client-go's label values). */
  code: string;
  durationMs: number;
}

export interface KubeClientConfig {
  /** Server, TLS and credentials (src/controller/kubeconfig.ts). */
  kubeConfig: RestConfig;
  /**
   * Client-side rate limit. controller-runtime disables it by default (QPS -1) and relies on the
   * server's priority and fairness; so do we. A positive qps installs a token bucket.
   */
  qps?: number;
  burst?: number;
  /** Per-request timeout for everything but watches; default 60 s. */
  requestTimeoutMs?: number;
  /** client-go's DisableCompression: lists are not asked for gzip (default: they are). */
  disableCompression?: boolean;
  userAgent?: string;
  clock?: Clock;
  /**
   * Where HTTPS_PROXY / NO_PROXY (unless the kubeconfig names a proxy-url) and, without a
   * configured CA, SSL_CERT_FILE / SSL_CERT_DIR are read; default process.env.
   */
  env?: Env;
}

/** The current context of one kubeconfig file. */
export function kubeConfigFromFile(path: string): KubeClientConfig {
  return { kubeConfig: restConfigFromKubeconfig(readKubeconfigFile(path)) };
}

interface Connection {
  agent: Agent;
  credentials: Credentials;
}

/** How the API server answered a connection upgrade (a pod's exec): switched, or an ordinary answer. */
export type UpgradeOutcome =
  | { upgraded: true; headers: IncomingHttpHeaders; socket: Duplex; head: Buffer }
  | { upgraded: false; status: number; headers: IncomingHttpHeaders; body: string };

/** A connection upgrade on a subresource, counted as `verb` like any request. */
export interface UpgradeRequest {
  method: "GET" | "POST";
  verb: string;
  rt: ResourceType;
  namespace: string;
  name: string;
  subresource: string;
  query: URLSearchParams;
  /** Upgrade, Connection and the protocol's own headers; a list is sent as one header line per value. */
  headers: Record<string, string | string[]>;
  signal?: AbortSignal;
}

export class KubeClient implements Client, WatchClient {
  private readonly kubeConfig: RestConfig;
  private readonly server: URL;
  private readonly hostLabel: string;
  private readonly env: Env;
  /** The proxy every request goes through, chosen once as client-go does; undefined = direct. */
  private readonly proxy: URL | undefined;
  private readonly basePath: string;
  private readonly limiter: TokenBucket | undefined;
  private readonly requestTimeoutMs: number;
  private readonly compression: boolean;
  private readonly userAgent: string;
  private readonly clock: Clock;
  private readonly counts = new Map<string, number>();
  private readonly listeners = new Set<(info: RequestInfo) => void>();
  private lastServerDateMs: number | undefined;
  private agent: Agent | undefined;
  /** The client certificate the agent presents (exec plugins may rotate it). */
  private agentCert: string | undefined;

  constructor(config: KubeClientConfig) {
    this.kubeConfig = config.kubeConfig;
    this.server = new URL(this.kubeConfig.server);
    this.basePath = this.server.pathname.replace(/\/+$/, "");
    this.hostLabel = authorityAsWritten(this.kubeConfig.server);
    this.env = config.env ?? process.env;
    const proxyUrl = this.kubeConfig.proxyUrl;
    this.proxy = (proxyUrl ? fixedProxy(proxyUrl, "kubeconfig") : proxyFromEnvironment(this.env))(
      this.server,
    );
    this.clock = config.clock ?? systemClock;
    const qps = config.qps ?? -1;
    this.limiter =
      qps > 0 ? new TokenBucket(qps, config.burst ?? Math.ceil(qps * 1.5), this.clock) : undefined;
    this.requestTimeoutMs = config.requestTimeoutMs ?? 60_000;
    this.compression = !config.disableCompression;
    this.userAgent = config.userAgent ?? "cocoon-operator";
  }

  /** The API server's host:port, as in the `host` label of rest_client_requests_total. */
  get host(): string {
    return this.hostLabel;
  }

  /** Requests made so far, keyed `${verb} ${resource}` (e.g. "patch cocoonsets/status"). */
  requestCounts(): Map<string, number> {
    return new Map(this.counts);
  }

  resetRequestCounts(): void {
    this.counts.clear();
  }

  /** Calls listener after every request (watches: when the response headers arrive); returns an unsubscribe. */
  onRequest(listener: (info: RequestInfo) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Closes idle keep-alive connections (open watches end through their own signals). */
  /**
   * The API server's clock as of its last answer to a request/response call (its Date header, to the
   * second); undefined before any answer.
   */
  serverDateMs(): number | undefined {
    return this.lastServerDateMs;
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  async get<T>(rt: ResourceType, namespace: string, name: string): Promise<T> {
    return (await this.json("GET", "get", rt, namespace, name)) as T;
  }

  /**
   * Every page of a list, decoded as it streams in (gzip-compressed where the API server compresses,
   * as client-go's transport asks for); items pass through `opts.transform` one by one.
   */
  async list<T>(
    rt: ResourceType,
    namespace: string | undefined,
    opts: ListOptions<T> = {},
  ): Promise<ListResult<T>> {
    const items: T[] = [];
    const onItem = (item: unknown) => items.push(opts.transform ? opts.transform(item as T) : (item as T));
    let cont: string | undefined;
    let resourceVersion = "";
    do {
      const query = new URLSearchParams();
      if (opts.labelSelector) query.set("labelSelector", opts.labelSelector);
      if (opts.fieldSelector) query.set("fieldSelector", opts.fieldSelector);
      if (opts.limit) query.set("limit", String(opts.limit));
      if (cont) query.set("continue", cont);
      else if (opts.resourceVersion !== undefined) query.set("resourceVersion", opts.resourceVersion);
      const page = await this.listPage(rt, namespace, query, onItem);
      resourceVersion = page.resourceVersion ?? resourceVersion;
      cont = page.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  async create<T>(rt: ResourceType, namespace: string, obj: T, opts: WriteOptions = {}): Promise<T> {
    return (await this.json("POST", "create", rt, namespace, undefined, {
      body: obj,
      query: dryRunQuery(opts),
    })) as T;
  }

  async update<T>(
    rt: ResourceType,
    obj: T & { metadata: { name?: string; namespace?: string } },
  ): Promise<T> {
    const name = obj.metadata.name;
    if (!name) throw new Error(`update ${rt.plural}: object has no metadata.name`);
    return (await this.json("PUT", "update", rt, obj.metadata.namespace, name, { body: obj })) as T;
  }

  async patch<T>(
    rt: ResourceType,
    namespace: string,
    name: string,
    mergePatch: unknown,
    opts: { subresource?: "status" } & WriteOptions = {},
  ): Promise<T> {
    return (await this.json("PATCH", "patch", rt, namespace, name, {
      body: mergePatch,
      contentType: "application/merge-patch+json",
      subresource: opts.subresource,
      query: dryRunQuery(opts),
    })) as T;
  }

  async delete(rt: ResourceType, namespace: string, name: string, opts: DeleteOptions = {}): Promise<void> {
    const body: Record<string, unknown> = { apiVersion: "v1", kind: "DeleteOptions" };
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    await this.json("DELETE", "delete", rt, namespace, name, { body });
  }

  async *watch<T>(
    rt: ResourceType,
    namespace: string | undefined,
    opts: WatchOptions,
  ): AsyncGenerator<WatchEvent<T>, void, undefined> {
    const query = new URLSearchParams({ watch: "true" });
    if (opts.resourceVersion) query.set("resourceVersion", opts.resourceVersion);
    if (opts.labelSelector) query.set("labelSelector", opts.labelSelector);
    if (opts.fieldSelector) query.set("fieldSelector", opts.fieldSelector);
    if (opts.allowWatchBookmarks) query.set("allowWatchBookmarks", "true");
    if (opts.timeoutSeconds) query.set("timeoutSeconds", String(opts.timeoutSeconds));
    const signal = opts.signal;
    if (signal?.aborted) return;
    const { req, res } = await this.send("GET", "watch", rt, namespace, undefined, { query, signal });
    if (res.statusCode !== 200) {
      const text = await readBody(res);
      throw apiErrorFromResponse(res.statusCode ?? 0, text);
    }
    // Everything below ends the stream by destroying the request; `stop` records why.
    let stop: "abort" | "inactive" | undefined;
    const inactivityMs = opts.inactivityTimeoutMs ?? 0;
    let watchdog: NodeJS.Timeout | undefined;
    const arm = () => {
      if (inactivityMs <= 0) return;
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        stop ??= "inactive";
        req.destroy();
      }, inactivityMs);
    };
    const onAbort = () => {
      stop ??= "abort";
      req.destroy();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    arm();
    res.setEncoding("utf8");
    let buffered = "";
    try {
      for await (const chunk of res as AsyncIterable<string>) {
        arm();
        buffered += chunk;
        let newline = buffered.indexOf("\n");
        while (newline >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line) yield JSON.parse(line) as WatchEvent<T>;
          newline = buffered.indexOf("\n");
        }
      }
    } catch (e) {
      if (stop === "abort") return;
      if (stop === "inactive") throw new Error(`watch ${rt.plural}: no data for ${inactivityMs} ms`);
      throw e;
    } finally {
      clearTimeout(watchdog);
      signal?.removeEventListener("abort", onAbort);
      req.destroy();
    }
    if (stop === "inactive") throw new Error(`watch ${rt.plural}: no data for ${inactivityMs} ms`);
  }

  private async listPage(
    rt: ResourceType,
    namespace: string | undefined,
    query: URLSearchParams,
    onItem: (item: unknown) => void,
  ): Promise<{ resourceVersion?: string; continue?: string }> {
    for (let attempt = 0; ; attempt++) {
      const { req, res } = await this.send("GET", "list", rt, namespace, undefined, {
        query,
        timeoutMs: this.requestTimeoutMs,
        acceptGzip: this.compression,
      });
      try {
        const status = res.statusCode ?? 0;
        if (status !== 200) {
          const text = await readBody(res);
          const retryAfter = retryAfterSeconds(status, res.headers["retry-after"]);
          if (retryAfter !== undefined && attempt < MAX_RETRY_AFTER_RETRIES) {
            await this.clock.sleep(retryAfter * 1000);
            continue;
          }
          throw apiErrorFromResponse(status, text);
        }
        const decoder = new ListDecoder(onItem);
        for await (const chunk of decodedBody(res)) decoder.write(chunk as Buffer);
        return decoder.end();
      } finally {
        req.setTimeout(0);
      }
    }
  }

  private async json(
    method: string,
    verb: string,
    rt: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
    opts: { query?: URLSearchParams; body?: unknown; contentType?: string; subresource?: string } = {},
  ): Promise<unknown> {
    for (let attempt = 0; ; attempt++) {
      const { req, res } = await this.send(method, verb, rt, namespace, name, {
        ...opts,
        timeoutMs: this.requestTimeoutMs,
      });
      let text: string;
      try {
        text = await readBody(res);
      } finally {
        req.setTimeout(0);
      }
      const date = Date.parse(res.headers.date ?? "");
      if (!Number.isNaN(date)) this.lastServerDateMs = date;
      const status = res.statusCode ?? 0;
      // client-go's checkWait: a 429 or 5xx carrying Retry-After is retried after that many seconds,
      // at most MAX_RETRY_AFTER_RETRIES times, before the error reaches the caller.
      const retryAfter = retryAfterSeconds(status, res.headers["retry-after"]);
      if (retryAfter !== undefined && attempt < MAX_RETRY_AFTER_RETRIES) {
        await this.clock.sleep(retryAfter * 1000);
        continue;
      }
      if (status >= 400) throw apiErrorFromResponse(status, text);
      return text ? JSON.parse(text) : undefined;
    }
  }

  /**
   * Sends a connection upgrade through the client's own transport (server, CA, client certificate,
   * credentials, proxy) and resolves with the switched socket, or with the answer when the server
   * (or a proxy) did not switch. An abort destroys the request.
   */
  async upgrade(request: UpgradeRequest): Promise<UpgradeOutcome> {
    const conn = await this.connection();
    const query = request.query.toString();
    const path =
      this.basePath +
      resourcePath(request.rt, request.namespace, request.name, request.subresource) +
      (query ? `?${query}` : "");
    const headers: Record<string, string | string[]> = { "User-Agent": this.userAgent, ...request.headers };
    if (conn.credentials.authorization) headers.Authorization = conn.credentials.authorization;
    const report = this.reporter(
      request.verb,
      `${request.rt.plural}/${request.subresource}`,
      request.namespace,
      request.method,
    );
    return new Promise((resolve, reject) => {
      const req = this.request(conn, request.method, path, headers, request.signal);
      let answered = false;
      req.once("upgrade", (res, socket, head) => {
        answered = true;
        report(String(res.statusCode ?? 101));
        resolve({ upgraded: true, headers: res.headers, socket, head });
      });
      req.once("response", (res) => {
        answered = true;
        report(String(res.statusCode ?? 0));
        if (res.statusCode === 401) this.kubeConfig.unauthorized(conn.credentials);
        readBody(res).then(
          (body) => resolve({ upgraded: false, status: res.statusCode ?? 0, headers: res.headers, body }),
          reject,
        );
      });
      req.on("error", (err) => {
        if (answered) return;
        answered = true;
        report("<error>");
        reject(err);
      });
      req.end();
    });
  }

  /** Sends one request and resolves with the response once its headers arrive. */
  private async send(
    method: string,
    verb: string,
    rt: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
    opts: {
      query?: URLSearchParams;
      body?: unknown;
      contentType?: string;
      subresource?: string;
      timeoutMs?: number;
      signal?: AbortSignal;
      /** Lists only: their bodies are large and compress ~12x; watch events are sent one by one. */
      acceptGzip?: boolean;
    },
  ): Promise<{ req: ClientRequest; res: IncomingMessage }> {
    await this.limiter?.take(opts.signal);
    const conn = await this.connection();
    const query = opts.query?.toString();
    const path =
      this.basePath + resourcePath(rt, namespace, name, opts.subresource) + (query ? `?${query}` : "");
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = {
      Accept: "application/json",
      "User-Agent": this.userAgent,
    };
    if (conn.credentials.authorization) headers.Authorization = conn.credentials.authorization;
    if (opts.acceptGzip) headers["Accept-Encoding"] = "gzip";
    if (payload !== undefined) {
      headers["Content-Type"] = opts.contentType ?? "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(payload));
    }
    const resource = opts.subresource ? `${rt.plural}/${opts.subresource}` : rt.plural;
    const report = this.reporter(verb, resource, namespace, method);
    return new Promise((resolve, reject) => {
      const req = this.request(conn, method, path, headers);
      if (opts.timeoutMs) {
        req.setTimeout(opts.timeoutMs, () => {
          req.destroy(new Error(`${method} ${path}: no response within ${opts.timeoutMs} ms`));
        });
      }
      let responded = false;
      req.once("response", (res) => {
        responded = true;
        report(String(res.statusCode ?? 0));
        if (res.statusCode === 401) this.kubeConfig.unauthorized(conn.credentials);
        resolve({ req, res });
      });
      // Stays attached: a request destroyed mid-stream may emit more errors, which the reader handles.
      req.on("error", (err) => {
        if (responded) return;
        responded = true;
        report("<error>");
        reject(err);
      });
      req.end(payload);
    });
  }

  /** Starts timing a request; the function returned counts it and tells the listeners its code. */
  private reporter(
    verb: string,
    resource: string,
    namespace: string | undefined,
    method: string,
  ): (code: string) => void {
    const started = performance.now();
    return (code) => {
      const key = `${verb} ${resource}`;
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
      const info: RequestInfo = {
        verb,
        resource,
        namespace,
        method,
        host: this.hostLabel,
        code,
        durationMs: performance.now() - started,
      };
      for (const listener of this.listeners) listener(info);
    };
  }

  /** A request to the API server over the connection's agent (CA, client certificate, proxy). */
  private request(
    conn: Connection,
    method: string,
    path: string,
    headers: OutgoingHttpHeaders,
    signal?: AbortSignal,
  ): ClientRequest {
    const transport = this.server.protocol === "http:" ? http : https;
    return transport.request({
      protocol: this.server.protocol,
      hostname: this.server.hostname.replace(/^\[|\]$/g, ""),
      port: this.server.port || undefined,
      method,
      path,
      headers,
      agent: conn.agent,
      signal,
    });
  }

  /**
   * The current credentials (the kubeconfig caches them: token files re-read every minute, exec
   * plugins re-run at expiry or after a 401) and a keep-alive agent presenting their client certificate.
   */
  private async connection(): Promise<Connection> {
    const credentials = await this.kubeConfig.credentials();
    const cert = credentials.cert && `${credentials.cert}\n${credentials.key ?? ""}`;
    if (!this.agent || cert !== this.agentCert) {
      if (this.agent) retire(this.agent);
      const agentOptions: AgentOptions = {
        keepAlive: true,
        keepAliveMsecs: 30_000,
        maxFreeSockets: 16,
        ca: this.kubeConfig.ca ?? systemRootCertificates(this.env),
        cert: credentials.cert,
        key: credentials.key,
        servername: this.kubeConfig.tlsServerName,
        rejectUnauthorized: !this.kubeConfig.insecureSkipTLSVerify,
        ...agentProxyOptions(this.proxy),
      };
      this.agent =
        this.server.protocol === "http:" ? new http.Agent(agentOptions) : new https.Agent(agentOptions);
      this.agentCert = cert;
    }
    return { agent: this.agent, credentials };
  }
}

/**
 * The server URL's host[:port] as written: client-go labels requests with Go's url.URL.Host, which
 * keeps a default port (in-cluster: 10.96.0.1:443), where WHATWG URL.host drops it.
 */
function authorityAsWritten(server: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]*)/i.exec(server)?.[1] ?? server;
}

/** An agent whose client certificate was replaced: idle sockets close now, busy ones when they finish. */
function retire(agent: Agent): void {
  for (const sockets of Object.values(agent.freeSockets))
    for (const socket of sockets ?? []) socket.destroy();
  agent.on("free", (socket: Socket) => socket.destroy());
}

/** client-go's rest client retries a Retry-After answer up to 10 times. */
export const MAX_RETRY_AFTER_RETRIES = 10;

/** The Retry-After delay of a 429 or 5xx answer, in whole seconds (client-go reads integers only). */
export function retryAfterSeconds(status: number, header: string | string[] | undefined): number | undefined {
  if (status !== 429 && status < 500) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}

/** The response body, gunzipped as it streams when the server compressed it. */
function decodedBody(res: IncomingMessage): Readable {
  const encoding = res.headers["content-encoding"]?.trim().toLowerCase();
  if (encoding !== "gzip") return res;
  const gunzip = createGunzip();
  res.once("error", (err) => gunzip.destroy(err));
  res.once("aborted", () => gunzip.destroy(new Error("response aborted")));
  return res.pipe(gunzip);
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const body = decodedBody(res);
    const chunks: Buffer[] = [];
    body.on("data", (c: Buffer) => chunks.push(c));
    body.once("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    body.once("error", reject);
    res.once("aborted", () => reject(new Error("response aborted")));
  });
}

/** The typed error an ERROR watch event carries (its object is a Status). */
export function watchErrorToApiError(status: unknown) {
  const s = (status ?? {}) as { code?: number; reason?: string; message?: string };
  return apiErrorFromStatus(s.code ?? 500, s.reason, s.message ?? "watch error");
}

function dryRunQuery(opts: WriteOptions): URLSearchParams | undefined {
  return opts.dryRun ? new URLSearchParams({ dryRun: "All" }) : undefined;
}
