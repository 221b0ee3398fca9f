// Where credentials come from, in upstream's order (authn.NewMultiKeychain(google.Keychain,
// authn.DefaultKeychain)): Google ADC for Google registry hosts, then the docker config.json.
// The first source that answers with something other than anonymous wins.
import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { hostname } from "./reference.ts";

export type Credential =
  | { kind: "anonymous" }
  | { kind: "basic"; username: string; password: string }
  /** docker config `identitytoken`: an OAuth2 refresh token exchanged at the token realm. */
  | { kind: "identityToken"; token: string }
  /** docker config `registrytoken`: a bearer token sent as is. */
  | { kind: "registryToken"; token: string };

export interface Keychain {
  resolve(host: string): Promise<Credential>;
}

export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

const ANONYMOUS: Credential = { kind: "anonymous" };

export function multiKeychain(keychains: Keychain[]): Keychain {
  return {
    async resolve(host) {
      for (const keychain of keychains) {
        const credential = await keychain.resolve(host);
        if (credential.kind !== "anonymous") return credential;
      }
      return ANONYMOUS;
    },
  };
}

export function defaultDockerConfigPath(): string {
  return join(process.env.DOCKER_CONFIG ?? join(homedir(), ".docker"), "config.json");
}

interface DockerAuthEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
}

interface DockerConfig {
  auths?: Record<string, DockerAuthEntry>;
  credHelpers?: Record<string, string>;
  credsStore?: string;
}

/** `https://index.docker.io/v1/` → `index.docker.io`: docker's own key normalisation. */
function configKeyHost(key: string): string {
  const withoutScheme = key.replace(/^[a-z]+:\/\//i, "");
  const slash = withoutScheme.indexOf("/");
  return (slash < 0 ? withoutScheme : withoutScheme.slice(0, slash)).toLowerCase();
}

export function credentialFromEntry(entry: DockerAuthEntry): Credential {
  if (entry.identitytoken) return { kind: "identityToken", token: entry.identitytoken };
  if (entry.registrytoken) return { kind: "registryToken", token: entry.registrytoken };
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon > 0)
      return { kind: "basic", username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (entry.username && entry.password) {
    return { kind: "basic", username: entry.username, password: entry.password };
  }
  return ANONYMOUS;
}

/**
 * Reads the docker config on every resolve (rare: once per token fetch or per Basic request) so a
 * rotated Secret is picked up. credHelpers and credsStore name external binaries that a pod
 * does not have: they are ignored, with one warning per host.
 */
export function dockerConfigKeychain(opts: { path?: string; logger?: WarnLogger } = {}): Keychain {
  const warned = new Set<string>();
  const warnOnce = (key: string, obj: object, msg: string): void => {
    if (warned.has(key)) return;
    warned.add(key);
    opts.logger?.warn(obj, msg);
  };
  return {
    async resolve(host) {
      const path = opts.path ?? defaultDockerConfigPath();
      let config: DockerConfig;
      try {
        config = JSON.parse(await readFile(path, "utf8")) as DockerConfig;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
          warnOnce(
            `unreadable:${path}`,
            { path },
            "docker config unreadable; using anonymous registry access",
          );
        }
        return ANONYMOUS;
      }
      const wanted = host.toLowerCase();
      for (const [key, entry] of Object.entries(config.auths ?? {})) {
        if (configKeyHost(key) === wanted && entry) {
          const credential = credentialFromEntry(entry);
          if (credential.kind !== "anonymous") return credential;
        }
      }
      if (config.credHelpers?.[host] !== undefined) {
        warnOnce(`helper:${host}`, { host, path }, "docker config credHelpers are not supported; ignored");
      } else if (config.credsStore) {
        warnOnce("store", { path }, "docker config credsStore is not supported; ignored");
      }
      return ANONYMOUS;
    },
  };
}

/** google.Keychain answers only for these hosts. */
export function isGoogleRegistry(host: string): boolean {
  const name = hostname(host).toLowerCase();
  return (
    name === "gcr.io" || name.endsWith(".gcr.io") || name.endsWith(".pkg.dev") || name.endsWith(".google.com")
  );
}

/** The one call we need from google-auth-library's GoogleAuth (which caches and refreshes tokens). */
export interface AccessTokenSource {
  getAccessToken(): Promise<string | null | undefined>;
}

async function defaultGoogleTokenSource(): Promise<AccessTokenSource> {
  const { GoogleAuth } = await import("google-auth-library");
  return new GoogleAuth({ scopes: ["https://www.googleapis.com/auth/cloud-platform"] });
}

/**
 * Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, then the metadata server) as
 * Basic `_token` / access token, like go-containerregistry's google.Keychain. Without ADC the
 * answer is anonymous, so the docker config gets its turn.
 */
export function googleKeychain(
  opts: { tokenSource?: () => Promise<AccessTokenSource>; logger?: WarnLogger } = {},
): Keychain {
  let source: Promise<AccessTokenSource> | undefined;
  let warned = false;
  return {
    async resolve(host) {
      if (!isGoogleRegistry(host)) return ANONYMOUS;
      source ??= (opts.tokenSource ?? defaultGoogleTokenSource)();
      try {
        const token = await (await source).getAccessToken();
        if (token) return { kind: "basic", username: "_token", password: token };
      } catch (err) {
        if (!warned) {
          warned = true;
          opts.logger?.warn(
            { host, reason: (err as Error).message },
            "no Google application default credentials",
          );
        }
      }
      return ANONYMOUS;
    },
  };
}
