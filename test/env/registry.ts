// Launches the Debian `docker-registry` (distribution 2.8) on a free loopback port with a
// throw-away storage root and deletes enabled. Auth modes:
//  - "none": anonymous.
//  - "basic": the registry's own htpasswd auth (WWW-Authenticate: Basic). The registry only reads
//    bcrypt entries and nothing here can make one (no htpasswd, no bcrypt library), so we let the
//    registry provision its default user: with a missing htpasswd file it writes one for user
//    "docker" with a random password and logs that password, which we read back. One user only.
//  - "token": our token server (./registry-tokenserver.ts) over HTTPS with a self-signed CA.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { freePort, retryOnPortClash } from "./ports.ts";
import { type Daemon, forgetDirectory, removeDirectoryOnExit, startDaemon, waitUntil } from "./process.ts";
import {
  startTokenServer,
  type TestUser,
  type TokenRequest,
  type TokenServer,
} from "./registry-tokenserver.ts";

export type { RepositoryAccess, TestUser, TokenRequest } from "./registry-tokenserver.ts";

export interface TestRegistry {
  /** "127.0.0.1:PORT": what OCI_REGISTRY starts with. */
  host: string;
  /** "http://127.0.0.1:PORT". */
  url: string;
  /** Token mode: the CA (self-signed certificate) of the token server, to pass as the client's caFile. */
  caFile?: string;
  /** Basic mode: the provisioned user; token mode: the first configured user. */
  credentials?: { user: string; password: string };
  /** Token mode: every token request the token server answered, in order. */
  tokenRequests?: TokenRequest[];
  stop(): Promise<void>;
}

export interface StartRegistryOptions {
  auth?: "none" | "basic" | "token";
  /** Token mode only; default one user "admin" allowed everything. */
  users?: TestUser[];
}

const REGISTRY_BINARY = "/usr/bin/docker-registry";

export async function startRegistry(opts: StartRegistryOptions = {}): Promise<TestRegistry> {
  const mode = opts.auth ?? "none";
  if (opts.users && mode !== "token")
    throw new Error("startRegistry: users are only supported in token mode");
  const dir = mkdtempSync(join(tmpdir(), "cocoon-registry-"));
  removeDirectoryOnExit(dir);
  let tokenServer: TokenServer | undefined;
  const cleanUp = async (): Promise<void> => {
    await tokenServer?.stop();
    rmSync(dir, { recursive: true, force: true });
    forgetDirectory(dir);
  };
  try {
    const htpasswdFile = join(dir, "htpasswd");
    const users = opts.users ?? [{ user: "admin", password: "admin-secret" }];
    let auth: object | undefined;
    if (mode === "basic") auth = { htpasswd: { realm: "test-registry", path: htpasswdFile } };
    if (mode === "token") {
      tokenServer = await startTokenServer(dir, users);
      auth = {
        token: {
          realm: tokenServer.realm,
          service: tokenServer.service,
          issuer: tokenServer.issuer,
          rootcertbundle: tokenServer.certFile,
        },
      };
    }
    const { daemon, host } = await retryOnPortClash(() => startRegistryDaemon(dir, auth));
    const url = `http://${host}`;
    let credentials: { user: string; password: string } | undefined;
    if (mode === "basic") credentials = provisionedUser(daemon.logFile);
    if (mode === "token") credentials = users[0];
    return {
      host,
      url,
      caFile: tokenServer?.certFile,
      credentials,
      tokenRequests: tokenServer?.requests,
      async stop() {
        await daemon.stop(5000);
        await cleanUp();
      },
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

/** Writes the config for a fresh port, starts docker-registry on it and waits until /v2/ answers. */
async function startRegistryDaemon(
  dir: string,
  auth: object | undefined,
): Promise<{ daemon: Daemon; host: string }> {
  const host = `127.0.0.1:${await freePort()}`;
  const config = {
    version: 0.1,
    log: { level: "warn", accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: join(dir, "data") }, delete: { enabled: true } },
    http: { addr: host, secret: "test-registry-secret" },
    ...(auth ? { auth } : {}),
  };
  const configFile = join(dir, "config.yml");
  writeFileSync(configFile, stringify(config));
  const daemon = startDaemon(
    "docker-registry",
    REGISTRY_BINARY,
    ["serve", configFile],
    join(dir, "registry.log"),
  );
  try {
    await waitUntil(
      "docker-registry to answer /v2/",
      async () => {
        const res = await fetch(`http://${host}/v2/`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        return res.status === 200 || res.status === 401;
      },
      { timeoutMs: 20_000, intervalMs: 50, daemon },
    );
  } catch (err) {
    await daemon.stop(2000);
    throw err;
  }
  return { daemon, host };
}

/** The registry logs `htpasswd is missing, provisioning with default user … password=X … user=docker`. */
function provisionedUser(logFile: string): { user: string; password: string } {
  const line = readFileSync(logFile, "utf8")
    .split("\n")
    .find((l) => l.includes("provisioning with default user"));
  const password = line && /\bpassword=(\S+)/.exec(line)?.[1];
  const user = line && /\buser=(\S+)/.exec(line)?.[1];
  if (!password || !user) throw new Error("docker-registry did not log its provisioned htpasswd user");
  return { user, password };
}
