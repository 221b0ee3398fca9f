// Kubeconfig loading and API-server auth, as client-go's clientcmd and rest packages do it (not
// @kubernetes/client-node, whose import alone costs ~80 MiB of RSS).
//
// Files: a KUBECONFIG path list is merged as kubectl merges it (per name the first file wins,
// current-context comes from the first file that sets it, missing files are skipped); relative paths
// in a file resolve against that file's directory. Supported: server, certificate-authority(-data),
// insecure-skip-tls-verify, tls-server-name, proxy-url (http:// or https://); user token, tokenFile,
// client-certificate(-data) and client-key(-data), username/password, and exec credential plugins
// (client.authentication.k8s.io/v1 and v1beta1, e.g. gke-gcloud-auth-plugin). auth-provider, socks5
// proxies and impersonation are refused with an error rather than silently ignored.
//
// In-cluster: KUBERNETES_SERVICE_HOST/PORT, the service account's ca.crt and its token, re-read every
// minute (bound tokens rotate), as client-go's in-cluster config does.

import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve, sep } from "node:path";
import { fixedProxy, ProxyConfigError } from "../net/proxy.ts";

/** Where a pod's service account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** client-go's cached file token source re-reads a token file this often. */
export const TOKEN_FILE_REFRESH_MS = 60_000;

/** An exec plugin that has not answered by then is killed and the request fails. */
export const EXEC_TIMEOUT_MS = 60_000;

const EXEC_API_VERSIONS = new Set([
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
]);

type Env = Readonly<Record<string, string | undefined>>;

export interface NowClock {
  now(): number;
}

/** What a request authenticates with: an Authorization header value and/or a TLS client certificate. */
export interface Credentials {
  authorization?: string;
  /** PEM client certificate and key. */
  cert?: string;
  key?: string;
}

/** A resolved connection: client-go's rest.Config, the part this operator uses. */
export interface RestConfig {
  /** API server URL, e.g. https://10.0.0.1:443. */
  readonly server: string;
  /** The context's namespace (in-cluster: the pod's), if any. */
  readonly namespace: string | undefined;
  /** PEM CA bundle that replaces the system roots; undefined = system roots. */
  readonly ca: string | undefined;
  readonly insecureSkipTLSVerify: boolean;
  /** SNI and certificate name to verify instead of the server's host. */
  readonly tlsServerName: string | undefined;
  /**
   * The cluster's proxy-url: every request goes through it (client-go's http.ProxyURL). Undefined:
   * HTTPS_PROXY / NO_PROXY decide, as Go's http.ProxyFromEnvironment does.
   */
  readonly proxyUrl?: string | undefined;
  /** Current credentials; cheap (cached) after the first call. */
  credentials(): Promise<Credentials>;
  /** The server answered 401 to a request sent with `used`: drop cached credentials if still current. */
  unauthorized(used: Credentials): void;
}

// --- kubeconfig file model (the YAML keys as written) ---

export interface KubeconfigCluster {
  server?: string;
  "certificate-authority"?: string;
  "certificate-authority-data"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "tls-server-name"?: string;
  "proxy-url"?: string;
  extensions?: { name?: string; extension?: unknown }[];
}

export interface KubeconfigExec {
  apiVersion?: string;
  command?: string;
  args?: string[] | null;
  env?: { name: string; value: string }[] | null;
  installHint?: string;
  provideClusterInfo?: boolean;
  interactiveMode?: string;
}

export interface KubeconfigUser {
  token?: string;
  tokenFile?: string;
  "client-certificate"?: string;
  "client-certificate-data"?: string;
  "client-key"?: string;
  "client-key-data"?: string;
  username?: string;
  password?: string;
  exec?: KubeconfigExec | null;
  "auth-provider"?: { name?: string } | null;
  as?: string;
  "as-uid"?: string;
  "as-groups"?: string[] | null;
  "as-user-extra"?: Record<string, string[]> | null;
}

export interface KubeconfigContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

export interface KubeconfigDocument {
  clusters?: { name: string; cluster?: KubeconfigCluster }[] | null;
  users?: { name: string; user?: KubeconfigUser }[] | null;
  contexts?: { name: string; context?: KubeconfigContext }[] | null;
  "current-context"?: string;
}

/** One or more kubeconfig files merged, with every relative path already made absolute. */
export interface Kubeconfig {
  clusters: Map<string, KubeconfigCluster>;
  users: Map<string, KubeconfigUser>;
  contexts: Map<string, KubeconfigContext>;
  currentContext: string | undefined;
  /** The files that were read, for error messages. */
  files: string[];
}

export class KubeconfigError extends Error {
  override name = "KubeconfigError";
}

/** yaml is needed only for kubeconfig files, never in a pod: load it on first use. */
let yamlParse: ((text: string) => unknown) | undefined;
function parseYaml(text: string): unknown {
  yamlParse ??= (createRequire(import.meta.url)("yaml") as typeof import("yaml")).parse;
  return yamlParse(text);
}

function resolvePath(dir: string, path: string | undefined): string | undefined {
  if (!path) return path;
  const expanded = path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
  return isAbsolute(expanded) ? expanded : resolve(dir, expanded);
}

/** A parsed kubeconfig document as a Kubeconfig; relative paths resolve against `dir`. */
export function kubeconfigFromDocument(doc: KubeconfigDocument, dir: string, file = "<inline>"): Kubeconfig {
  const out: Kubeconfig = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: doc["current-context"] || undefined,
    files: [file],
  };
  for (const { name, cluster = {} } of doc.clusters ?? []) {
    if (out.clusters.has(name)) continue;
    out.clusters.set(name, {
      ...cluster,
      "certificate-authority": resolvePath(dir, cluster["certificate-authority"]),
    });
  }
  for (const { name, user = {} } of doc.users ?? []) {
    if (out.users.has(name)) continue;
    const resolved: KubeconfigUser = {
      ...user,
      tokenFile: resolvePath(dir, user.tokenFile),
      "client-certificate": resolvePath(dir, user["client-certificate"]),
      "client-key": resolvePath(dir, user["client-key"]),
    };
    // client-go resolves an exec command against the file only when it names a path, not a PATH lookup.
    if (user.exec?.command?.includes(sep)) {
      resolved.exec = { ...user.exec, command: resolvePath(dir, user.exec.command) };
    }
    out.users.set(name, resolved);
  }
  for (const { name, context = {} } of doc.contexts ?? []) {
    if (!out.contexts.has(name)) out.contexts.set(name, { ...context });
  }
  return out;
}

export function readKubeconfigFile(path: string): Kubeconfig {
  const abs = resolve(path);
  let text: string;
  try {
    text = readFileSync(abs, "utf8");
  } catch (err) {
    throw new KubeconfigError(`reading kubeconfig ${abs}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new KubeconfigError(`parsing kubeconfig ${abs}: ${(err as Error).message}`);
  }
  if (doc !== null && doc !== undefined && (typeof doc !== "object" || Array.isArray(doc))) {
    throw new KubeconfigError(`parsing kubeconfig ${abs}: not a mapping`);
  }
  return kubeconfigFromDocument((doc ?? {}) as KubeconfigDocument, dirname(abs), abs);
}

/** kubectl's merge: per name the first file wins; current-context from the first file that sets one. */
export function mergeKubeconfigs(configs: Kubeconfig[]): Kubeconfig {
  const out: Kubeconfig = {
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
    currentContext: undefined,
    files: [],
  };
  for (const c of configs) {
    for (const [k, v] of c.clusters) if (!out.clusters.has(k)) out.clusters.set(k, v);
    for (const [k, v] of c.users) if (!out.users.has(k)) out.users.set(k, v);
    for (const [k, v] of c.contexts) if (!out.contexts.has(k)) out.contexts.set(k, v);
    out.currentContext ??= c.currentContext;
    out.files.push(...c.files);
  }
  return out;
}

/** A KUBECONFIG value: ":"-separated, empty entries and duplicates dropped, missing files skipped. */
export function readKubeconfigPathList(list: string): Kubeconfig {
  const paths = [...new Set(list.split(delimiter).filter((p) => p !== ""))];
  const present = paths.filter((p) => existsSync(p));
  if (present.length === 0) throw new KubeconfigError(`none of the KUBECONFIG files exist: ${list}`);
  return mergeKubeconfigs(present.map(readKubeconfigFile));
}

function decodeBase64(value: string, what: string): string {
  const text = Buffer.from(value.replace(/\s+/g, ""), "base64").toString("utf8");
  if (!text) throw new KubeconfigError(`${what}: not base64 data`);
  return text;
}

/** `-data` wins over the file, as in client-go's dataFromSliceOrFile. */
function dataOrFile(data: string | undefined, file: string | undefined, what: string): string | undefined {
  if (data) return decodeBase64(data, `${what}-data`);
  if (!file) return undefined;
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new KubeconfigError(`reading ${what} ${file}: ${(err as Error).message}`);
  }
}

/** The RestConfig of `context` (default: the current context). */
export function restConfigFromKubeconfig(
  kc: Kubeconfig,
  opts: { context?: string; clock?: NowClock; env?: Env } = {},
): RestConfig {
  const where = kc.files.join(delimiter) || "kubeconfig";
  const contextName = opts.context ?? kc.currentContext;
  if (!contextName) throw new KubeconfigError(`${where}: no current-context is set`);
  const context = kc.contexts.get(contextName);
  if (!context) throw new KubeconfigError(`${where}: context "${contextName}" not found`);
  if (!context.cluster) throw new KubeconfigError(`${where}: context "${contextName}" names no cluster`);
  const cluster = kc.clusters.get(context.cluster);
  if (!cluster) throw new KubeconfigError(`${where}: cluster "${context.cluster}" not found`);
  if (!cluster.server) throw new KubeconfigError(`${where}: cluster "${context.cluster}" has no server`);
  const proxyUrl = cluster["proxy-url"] || undefined;
  if (proxyUrl) {
    try {
      fixedProxy(proxyUrl, `cluster "${context.cluster}"`);
    } catch (err) {
      if (err instanceof ProxyConfigError) throw new KubeconfigError(`${where}: ${err.message}`);
      throw err;
    }
  }
  let user: KubeconfigUser = {};
  if (context.user) {
    const found = kc.users.get(context.user);
    if (!found) throw new KubeconfigError(`${where}: user "${context.user}" not found`);
    user = found;
  }
  const userWhere = `${where}: user "${context.user ?? ""}"`;
  const provider = user["auth-provider"];
  if (provider) {
    throw new KubeconfigError(
      `${userWhere}: auth-provider "${provider.name ?? ""}" is not supported; use an exec credential plugin (e.g. gke-gcloud-auth-plugin, kubelogin)`,
    );
  }
  if (
    user.as ||
    user["as-uid"] ||
    user["as-groups"]?.length ||
    Object.keys(user["as-user-extra"] ?? {}).length
  ) {
    throw new KubeconfigError(
      `${userWhere}: impersonation (as, as-groups, as-uid, as-user-extra) is not supported`,
    );
  }
  const hasToken = Boolean(user.token || user.tokenFile);
  const hasBasic = Boolean(user.username || user.password);
  if (hasToken && hasBasic) {
    throw new KubeconfigError(`${userWhere}: more than one authentication method (token and basic auth)`);
  }
  const cert = dataOrFile(user["client-certificate-data"], user["client-certificate"], "client-certificate");
  const key = dataOrFile(user["client-key-data"], user["client-key"], "client-key");
  if (Boolean(cert) !== Boolean(key)) {
    throw new KubeconfigError(`${userWhere}: client-certificate and client-key must be given together`);
  }
  const ca = dataOrFile(
    cluster["certificate-authority-data"],
    cluster["certificate-authority"],
    "certificate-authority",
  );
  const server = withScheme(cluster.server);
  const tls: TLSSettings = {
    server,
    ca,
    insecureSkipTLSVerify: cluster["insecure-skip-tls-verify"] === true,
    tlsServerName: cluster["tls-server-name"] || undefined,
    proxyUrl,
  };
  const clock = opts.clock ?? Date;
  const base: Credentials = cert && key ? { cert, key } : {};
  let source: CredentialSource;
  if (user.tokenFile) {
    source = new TokenFileSource(user.tokenFile, clock, base, user.token);
  } else if (user.token) {
    source = staticSource({ ...base, authorization: `Bearer ${user.token}` });
  } else if (hasBasic) {
    const basic = Buffer.from(`${user.username ?? ""}:${user.password ?? ""}`).toString("base64");
    source = staticSource({ ...base, authorization: `Basic ${basic}` });
  } else if (user.exec) {
    source = new ExecSource(user.exec, cluster, tls, clock, base, opts.env ?? process.env, userWhere);
  } else {
    source = staticSource(base);
  }
  return restConfig(tls, context.namespace || undefined, source);
}

/** In a pod: KUBERNETES_SERVICE_HOST/PORT and the service account under `root`. */
export function inClusterRestConfig(opts: { env?: Env; root?: string; clock?: NowClock } = {}): RestConfig {
  const env = opts.env ?? process.env;
  const root = opts.root ?? SERVICE_ACCOUNT_DIR;
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError(
      "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined",
    );
  }
  // client-go carries on without the CA when ca.crt is unreadable (the system roots then apply).
  let ca: string | undefined;
  try {
    ca = readFileSync(join(root, "ca.crt"), "utf8");
  } catch {
    ca = undefined;
  }
  let namespace: string | undefined;
  try {
    namespace = readFileSync(join(root, "namespace"), "utf8").trim() || undefined;
  } catch {
    namespace = undefined;
  }
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  const source = new TokenFileSource(join(root, "token"), opts.clock ?? Date, {}, undefined);
  return restConfig(
    { server, ca, insecureSkipTLSVerify: false, tlsServerName: undefined },
    namespace,
    source,
  );
}

/**
 * controller-runtime's lookup order: --kubeconfig, then KUBECONFIG, then the in-cluster service
 * account, then ~/.kube/config. Undefined when none of them is there.
 */
export function loadRestConfig(
  opts: {
    explicitPath?: string;
    env?: Env;
    home?: string;
    serviceAccountRoot?: string;
    clock?: NowClock;
  } = {},
): RestConfig | undefined {
  const env = opts.env ?? process.env;
  const clock = opts.clock;
  if (opts.explicitPath)
    return restConfigFromKubeconfig(readKubeconfigFile(opts.explicitPath), { clock, env });
  if (env.KUBECONFIG) return restConfigFromKubeconfig(readKubeconfigPathList(env.KUBECONFIG), { clock, env });
  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    return inClusterRestConfig({ env, root: opts.serviceAccountRoot, clock });
  }
  const home = join(opts.home ?? homedir(), ".kube", "config");
  if (existsSync(home)) return restConfigFromKubeconfig(readKubeconfigFile(home), { clock, env });
  return undefined;
}

// --- credentials ---

interface TLSSettings {
  server: string;
  ca: string | undefined;
  insecureSkipTLSVerify: boolean;
  tlsServerName: string | undefined;
  proxyUrl?: string | undefined;
}

interface CredentialSource {
  get(): Promise<Credentials>;
  unauthorized(used: Credentials): void;
}

function withScheme(server: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `https://${server}`;
}

function restConfig(tls: TLSSettings, namespace: string | undefined, source: CredentialSource): RestConfig {
  return {
    ...tls,
    namespace,
    credentials: () => source.get(),
    unauthorized: (used) => source.unauthorized(used),
  };
}

function staticSource(credentials: Credentials): CredentialSource {
  const resolved = Promise.resolve(credentials);
  return { get: () => resolved, unauthorized: () => {} };
}

/**
 * A token file read at start (it must be readable then) and again once a minute, or at the next
 * request after a 401. A failed re-read keeps the last token (client-go's cachingTokenSource); a
 * file that never read falls back to the kubeconfig's inline token.
 */
class TokenFileSource implements CredentialSource {
  private readonly path: string;
  private readonly clock: NowClock;
  private readonly base: Credentials;
  private current: Credentials;
  private readAt: number;
  private reading: Promise<Credentials> | undefined;

  constructor(path: string, clock: NowClock, base: Credentials, fallbackToken: string | undefined) {
    this.path = path;
    this.clock = clock;
    this.base = base;
    let token: string | undefined;
    try {
      token = readFileSync(path, "utf8").trim() || undefined;
    } catch (err) {
      if (fallbackToken === undefined) {
        throw new KubeconfigError(`reading token file ${path}: ${(err as Error).message}`);
      }
    }
    token ??= fallbackToken;
    if (!token) throw new KubeconfigError(`token file ${path} is empty`);
    this.current = { ...base, authorization: `Bearer ${token}` };
    this.readAt = clock.now();
  }

  get(): Promise<Credentials> {
    if (this.clock.now() - this.readAt < TOKEN_FILE_REFRESH_MS) return Promise.resolve(this.current);
    this.reading ??= this.reread().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  unauthorized(used: Credentials): void {
    if (used === this.current) this.readAt = Number.NEGATIVE_INFINITY;
  }

  private async reread(): Promise<Credentials> {
    try {
      const token = (await readFile(this.path, "utf8")).trim();
      if (token && `Bearer ${token}` !== this.current.authorization) {
        this.current = { ...this.base, authorization: `Bearer ${token}` };
      }
    } catch {
      // Keep the last token; the next period tries again.
    }
    this.readAt = this.clock.now();
    return this.current;
  }
}

interface ExecCredentialStatus {
  expirationTimestamp?: string;
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
}

/**
 * An exec credential plugin: run on first use, its answer cached until status.expirationTimestamp
 * (forever without one) or until the server answers 401 to it; one run at a time.
 */
class ExecSource implements CredentialSource {
  private cached: { credentials: Credentials; expiresAt: number } | undefined;
  private running: Promise<Credentials> | undefined;
  private readonly exec: KubeconfigExec;
  private readonly cluster: KubeconfigCluster;
  private readonly tls: TLSSettings;
  private readonly clock: NowClock;
  private readonly base: Credentials;
  private readonly env: Env;
  private readonly where: string;
  private readonly apiVersion: string;
  private readonly command: string;

  constructor(
    exec: KubeconfigExec,
    cluster: KubeconfigCluster,
    tls: TLSSettings,
    clock: NowClock,
    base: Credentials,
    env: Env,
    where: string,
  ) {
    this.exec = exec;
    this.cluster = cluster;
    this.tls = tls;
    this.clock = clock;
    this.base = base;
    this.env = env;
    this.where = where;
    if (!exec.command) throw new KubeconfigError(`${where}: exec plugin has no command`);
    if (!exec.apiVersion || !EXEC_API_VERSIONS.has(exec.apiVersion)) {
      throw new KubeconfigError(
        `${where}: exec plugin apiVersion "${exec.apiVersion ?? ""}" is not supported (use client.authentication.k8s.io/v1 or v1beta1)`,
      );
    }
    if (exec.interactiveMode === "Always") {
      throw new KubeconfigError(
        `${where}: exec plugin ${exec.command} requires an interactive terminal (interactiveMode: Always)`,
      );
    }
    this.apiVersion = exec.apiVersion;
    this.command = exec.command;
  }

  get(): Promise<Credentials> {
    if (this.cached && this.clock.now() < this.cached.expiresAt)
      return Promise.resolve(this.cached.credentials);
    this.running ??= this.run().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  unauthorized(used: Credentials): void {
    if (this.cached?.credentials === used) this.cached = undefined;
  }

  private execInfo(): string {
    const spec: Record<string, unknown> = { interactive: false };
    if (this.exec.provideClusterInfo) {
      const cluster: Record<string, unknown> = { server: this.tls.server };
      if (this.tls.tlsServerName) cluster["tls-server-name"] = this.tls.tlsServerName;
      if (this.tls.insecureSkipTLSVerify) cluster["insecure-skip-tls-verify"] = true;
      if (this.tls.proxyUrl) cluster["proxy-url"] = this.tls.proxyUrl;
      if (this.tls.ca) cluster["certificate-authority-data"] = Buffer.from(this.tls.ca).toString("base64");
      const config = this.cluster.extensions?.find((e) => e.name === "client.authentication.k8s.io/exec");
      if (config) cluster.config = config.extension;
      spec.cluster = cluster;
    }
    return JSON.stringify({ apiVersion: this.apiVersion, kind: "ExecCredential", spec });
  }

  private async run(): Promise<Credentials> {
    const env: NodeJS.ProcessEnv = { ...this.env };
    for (const { name, value } of this.exec.env ?? []) env[name] = value;
    env.KUBERNETES_EXEC_INFO = this.execInfo();
    const stdout = await new Promise<string>((resolveOut, reject) => {
      execFile(
        this.command,
        this.exec.args ?? [],
        { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024, encoding: "utf8" },
        (err, out, stderr) => {
          if (!err) {
            resolveOut(out);
            return;
          }
          const code = (err as NodeJS.ErrnoException).code;
          const hint = code === "ENOENT" && this.exec.installHint ? `\n${this.exec.installHint}` : "";
          const detail = stderr.trim() ? `: ${stderr.trim()}` : "";
          reject(
            new KubeconfigError(`${this.where}: exec plugin ${this.command}: ${err.message}${detail}${hint}`),
          );
        },
      );
    });
    let parsed: { apiVersion?: string; kind?: string; status?: ExecCredentialStatus };
    try {
      parsed = JSON.parse(stdout) as typeof parsed;
    } catch (err) {
      throw new KubeconfigError(
        `${this.where}: exec plugin ${this.command}: output is not JSON: ${(err as Error).message}`,
      );
    }
    if (parsed.kind !== "ExecCredential" || parsed.apiVersion !== this.apiVersion) {
      throw new KubeconfigError(
        `${this.where}: exec plugin ${this.command} returned ${parsed.apiVersion ?? "?"}/${parsed.kind ?? "?"}, want ${this.apiVersion}/ExecCredential`,
      );
    }
    const status = parsed.status;
    if (!status) throw new KubeconfigError(`${this.where}: exec plugin ${this.command} returned no status`);
    const hasCert = Boolean(status.clientCertificateData);
    if (hasCert !== Boolean(status.clientKeyData)) {
      throw new KubeconfigError(
        `${this.where}: exec plugin ${this.command} returned only one of clientCertificateData and clientKeyData`,
      );
    }
    if (!status.token && !hasCert) {
      throw new KubeconfigError(
        `${this.where}: exec plugin ${this.command} returned neither a token nor a certificate`,
      );
    }
    let expiresAt = Number.POSITIVE_INFINITY;
    if (status.expirationTimestamp) {
      expiresAt = Date.parse(status.expirationTimestamp);
      if (Number.isNaN(expiresAt)) {
        throw new KubeconfigError(
          `${this.where}: exec plugin ${this.command} returned expirationTimestamp "${status.expirationTimestamp}"`,
        );
      }
    }
    const credentials: Credentials = hasCert
      ? { cert: status.clientCertificateData, key: status.clientKeyData }
      : { ...this.base };
    if (status.token) credentials.authorization = `Bearer ${status.token}`;
    this.cached = { credentials, expiresAt };
    return credentials;
  }
}
