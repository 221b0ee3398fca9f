// Reference formation as go-containerregistry's name.ParseReference does it for
// `<OCI_REGISTRY>/<vm>:<tag>`.

export interface RegistryBase {
  /** host[:port] as used in URLs and docker config keys, e.g. "127.0.0.1:5000", "[::1]:5000". */
  host: string;
  /** The repository prefix after the host, without slashes at either end; may be "". */
  path: string;
  /** Plain http is allowed (loopback and RFC 1918 hosts); https is still tried first. */
  insecure: boolean;
}

const DOCKER_HUB = "index.docker.io";

export function parseRegistryBase(base: string): RegistryBase {
  const trimmed = base.trim().replace(/\/+$/, "");
  if (trimmed === "") throw new Error("registry base is empty");
  if (/^[a-z]+:\/\//i.test(trimmed)) {
    throw new Error(`registry base ${JSON.stringify(base)} must not have a scheme (host[:port]/path)`);
  }
  const slash = trimmed.indexOf("/");
  const first = slash < 0 ? trimmed : trimmed.slice(0, slash);
  const rest = slash < 0 ? "" : trimmed.slice(slash + 1);
  // The first segment names a host only if it looks like one; otherwise Docker Hub is meant.
  if (!(first.includes(".") || first.includes(":") || first === "localhost" || first.startsWith("["))) {
    return { host: DOCKER_HUB, path: trimmed, insecure: false };
  }
  const host = first === "docker.io" ? DOCKER_HUB : first;
  return { host, path: rest, insecure: isInsecureHost(host) };
}

/** host without its port (and without IPv6 brackets). */
export function hostname(host: string): string {
  if (host.startsWith("[")) return host.slice(1, host.indexOf("]"));
  const colon = host.lastIndexOf(":");
  // A bare IPv6 address has several colons and no port.
  if (colon >= 0 && host.indexOf(":") === colon) return host.slice(0, colon);
  return host;
}

export function isInsecureHost(host: string): boolean {
  const name = hostname(host).toLowerCase();
  if (name === "localhost" || name.endsWith(".localhost") || name === "::1" || name === "127.0.0.1")
    return true;
  const octets = name.split(".").map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o) || o < 0 || o > 255)) return false;
  const [a = 0, b = 0] = octets;
  return a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
}

/** The repository path on the registry for a VM: `<base path>/<repo>`. */
export function repositoryPath(base: RegistryBase, repo: string): string {
  return base.path === "" ? repo : `${base.path}/${repo}`;
}

/** The printable reference: `host/path/repo:tag`, or `…@sha256:…` for digests. */
export function referenceString(base: RegistryBase, repo: string, ref: string): string {
  return `${base.host}/${repositoryPath(base, repo)}${isDigest(ref) ? "@" : ":"}${ref}`;
}

export function isDigest(ref: string): boolean {
  return ref.includes(":");
}

export function manifestPath(base: RegistryBase, repo: string, ref: string): string {
  return `/v2/${repositoryPath(base, repo)}/manifests/${ref}`;
}
