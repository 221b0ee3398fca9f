// Which HTTP proxy a request goes through, decided as the Go operator decides it: Go's
// http.ProxyFromEnvironment (golang.org/x/net/http/httpproxy) for HTTPS_PROXY / HTTP_PROXY /
// NO_PROXY, and client-go's http.ProxyURL for a kubeconfig's proxy-url. The tunnel itself (CONNECT
// for https targets, absolute-form requests for http ones) is Node's own: an Agent given `proxyEnv`.
import { domainToASCII } from "node:url";

export type Env = Readonly<Record<string, string | undefined>>;

/** The proxy for a request to target, or undefined to connect directly. */
export type ProxySelector = (target: URL) => URL | undefined;

/** The proxy schemes Node's agents tunnel through; Go also speaks socks5, which is refused here. */
const SUPPORTED_SCHEMES = new Set(["http:", "https:"]);

const DEFAULT_PORTS: Readonly<Record<string, string>> = { "http:": "80", "https:": "443" };

export class ProxyConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ProxyConfigError";
  }
}

// --- IP addresses, as Go's net.ParseIP and net.ParseCIDR read them (16 bytes; IPv4 as ::ffff:a.b.c.d) ---

function parseIPv4(s: string): number[] | undefined {
  const parts = s.split(".");
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    // Go rejects leading zeros (ambiguous octal) since 1.17.
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return undefined;
    bytes.push(Number(part));
  }
  return bytes;
}

/** 16 bytes, or undefined when s is no IP address. Zones (fe80::1%eth0) are not addresses, as in Go. */
export function parseIP(s: string): number[] | undefined {
  const v4 = parseIPv4(s);
  if (v4) return [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...v4];
  if (!s.includes(":") || s.includes("%")) return undefined;
  let tail: number[] = [];
  let text = s;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const embedded = parseIPv4(s.slice(lastColon + 1));
    if (!embedded) return undefined;
    tail = embedded;
    text = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string | undefined) => (half ? half.split(":") : []);
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const all = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => "0"), ...rest];
  const bytes: number[] = [];
  for (const group of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return undefined;
    const n = Number.parseInt(group, 16);
    bytes.push(n >> 8, n & 0xff);
  }
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

const isIPv4Mapped = (ip: number[]) =>
  ip.slice(0, 10).every((b) => b === 0) && ip[10] === 0xff && ip[11] === 0xff;

function isLoopback(ip: number[]): boolean {
  if (isIPv4Mapped(ip)) return ip[12] === 127;
  return ip.slice(0, 15).every((b) => b === 0) && ip[15] === 1;
}

interface Cidr {
  ip: number[];
  bits: number;
  v4: boolean;
}

function parseCIDR(s: string): Cidr | undefined {
  const slash = s.indexOf("/");
  if (slash < 0) return undefined;
  const addr = s.slice(0, slash);
  const prefix = s.slice(slash + 1);
  const ip = parseIP(addr);
  const v4 = parseIPv4(addr) !== undefined;
  const max = v4 ? 32 : 128;
  if (!ip || !/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return undefined;
  return { ip, bits: (v4 ? 96 : 0) + Number(prefix), v4 };
}

function cidrContains(cidr: Cidr, ip: number[]): boolean {
  // Go compares an IPv4 network only with IPv4 (or v4-mapped) addresses, an IPv6 one only with IPv6.
  if (cidr.v4 !== isIPv4Mapped(ip)) return false;
  for (let bit = 0; bit < cidr.bits; bit++) {
    const mask = 0x80 >> (bit % 8);
    if (((cidr.ip[bit >> 3] ?? 0) & mask) !== ((ip[bit >> 3] ?? 0) & mask)) return false;
  }
  return true;
}

const sameIP = (a: number[], b: number[]) => a.every((byte, i) => byte === b[i]);

// --- NO_PROXY ---

type Matcher = (host: string, port: string, ip: number[] | undefined) => boolean;

/** Go's net.SplitHostPort, enough for NO_PROXY entries: [v6]:port or host:port with one colon. */
function splitHostPort(s: string): { host: string; port: string } | undefined {
  if (s.startsWith("[")) {
    const m = /^\[([^\]]*)\]:([^:]*)$/.exec(s);
    return m ? { host: m[1] ?? "", port: m[2] ?? "" } : undefined;
  }
  const colon = s.indexOf(":");
  if (colon < 0 || colon !== s.lastIndexOf(":")) return undefined;
  return { host: s.slice(0, colon), port: s.slice(colon + 1) };
}

/** httpproxy's config.init: "*", CIDRs, IPs (with optional port), domains and .domain / *.domain suffixes. */
function noProxyMatchers(noProxy: string): { ip: Matcher[]; domain: Matcher[] } {
  const ip: Matcher[] = [];
  const domain: Matcher[] = [];
  for (const raw of noProxy.split(",")) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === "*") {
      const all: Matcher = () => true;
      return { ip: [all], domain: [all] };
    }
    const cidr = parseCIDR(entry);
    if (cidr) {
      ip.push((_h, _p, addr) => addr !== undefined && cidrContains(cidr, addr));
      continue;
    }
    const split = splitHostPort(entry);
    // splitHostPort drops the brackets of [v6]:port; a bracketed address without a port stays a
    // (never matching) domain, as in Go.
    let host = split ? split.host : entry;
    const port = split ? split.port : "";
    if (split && !host) continue;
    const entryIP = parseIP(host);
    if (entryIP) {
      ip.push((_h, p, addr) => addr !== undefined && sameIP(entryIP, addr) && (port === "" || port === p));
      continue;
    }
    if (!host) continue;
    if (host.startsWith("*.")) host = host.slice(1);
    const matchHost = !host.startsWith(".");
    if (matchHost) host = `.${host}`;
    // Go converts internationalised names to their ASCII (punycode) form, as URL hostnames are.
    const ascii = domainToASCII(host.slice(1));
    const suffix = ascii ? `.${ascii}` : host;
    domain.push((h, p, addr) => {
      if (addr !== undefined) return false;
      const hit = h.endsWith(suffix) || (matchHost && h === suffix.slice(1));
      return hit && (port === "" || port === p);
    });
  }
  return { ip, domain };
}

/** httpproxy's parseProxy: a value without a scheme (proxy.corp:3128) means http://; unparsable → none. */
function parseProxy(value: string): URL | undefined {
  if (!value) return undefined;
  const tryParse = (s: string) => {
    try {
      return new URL(s);
    } catch {
      return undefined;
    }
  };
  const parsed = tryParse(value);
  return parsed?.host ? parsed : tryParse(`http://${value}`);
}

function checkScheme(proxy: URL | undefined, source: string): URL | undefined {
  if (proxy && !SUPPORTED_SCHEMES.has(proxy.protocol)) {
    throw new ProxyConfigError(
      `${source}=${proxy.href}: only http:// and https:// proxies are supported (not ${proxy.protocol.replace(/:$/, "")})`,
    );
  }
  return proxy;
}

/** Go's getEnvAny: the upper-case name first, then the lower-case one; empty counts as unset. */
function envAny(env: Env, name: string): [string, string] {
  for (const key of [name, name.toLowerCase()]) {
    const value = env[key];
    if (value) return [key, value];
  }
  return [name, ""];
}

/**
 * http.ProxyFromEnvironment: HTTPS_PROXY for https targets, HTTP_PROXY for http ones (never the
 * other), none for localhost, loopback addresses and NO_PROXY matches. Read once, as Go does.
 */
export function proxyFromEnvironment(env: Env): ProxySelector {
  const [httpsName, httpsValue] = envAny(env, "HTTPS_PROXY");
  const [httpName, httpValue] = envAny(env, "HTTP_PROXY");
  const httpsProxy = checkScheme(parseProxy(httpsValue), httpsName);
  const httpProxy = checkScheme(parseProxy(httpValue), httpName);
  const matchers = noProxyMatchers(envAny(env, "NO_PROXY")[1]);
  // A CGI process must not trust HTTP_PROXY: it may come from the request's Proxy header (httpoxy).
  const cgi = Boolean(env.REQUEST_METHOD);
  if (!httpsProxy && !httpProxy) return () => undefined;
  return (target) => {
    let proxy: URL | undefined;
    if (target.protocol === "https:") proxy = httpsProxy;
    else if (target.protocol === "http:") {
      if (httpProxy && cgi) {
        throw new ProxyConfigError(
          "refusing to use HTTP_PROXY value in CGI environment (REQUEST_METHOD is set)",
        );
      }
      proxy = httpProxy;
    }
    if (!proxy) return undefined;
    return useProxy(target, matchers) ? proxy : undefined;
  };
}

function useProxy(target: URL, matchers: { ip: Matcher[]; domain: Matcher[] }): boolean {
  const host = target.hostname.replace(/^\[|\]$/g, "");
  const port = target.port || DEFAULT_PORTS[target.protocol] || "";
  if (host === "localhost") return false;
  const ip = parseIP(host);
  if (ip && isLoopback(ip)) return false;
  const name = host.toLowerCase();
  if (ip && matchers.ip.some((m) => m(name, port, ip))) return false;
  return !matchers.domain.some((m) => m(name, port, ip));
}

/** client-go for a kubeconfig proxy-url: every request through it, NO_PROXY and loopback included. */
export function fixedProxy(proxyUrl: string, where: string): ProxySelector {
  let proxy: URL;
  try {
    proxy = new URL(proxyUrl);
  } catch {
    throw new ProxyConfigError(`${where}: proxy-url ${JSON.stringify(proxyUrl)} is not a URL`);
  }
  if (!["http:", "https:", "socks5:"].includes(proxy.protocol)) {
    throw new ProxyConfigError(
      `${where}: proxy-url: unsupported scheme "${proxy.protocol.replace(/:$/, "")}", must be http, https, or socks5`,
    );
  }
  checkScheme(proxy, `${where}: proxy-url`);
  return () => proxy;
}

/** The Agent option that makes Node tunnel through proxy (undefined: connect directly). */
export function agentProxyOptions(proxy: URL | undefined): { proxyEnv?: Env } {
  return proxy ? { proxyEnv: { HTTPS_PROXY: proxy.href, HTTP_PROXY: proxy.href } } : {};
}
