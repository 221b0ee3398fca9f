// A docker distribution token server for tests: HTTPS with a self-signed certificate, Basic
// credentials checked against a user list, and RS256 JWTs (x5c header) granting each requested
// action only when the user is allowed it — so scope handling can be tested against the real
// registry.

import { createPrivateKey, randomUUID, sign, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { type CertificateFiles, selfSignedCertificate } from "./certs.ts";

export interface RepositoryAccess {
  /** An exact repository path, or a prefix ending in "*" ("*" alone matches every repository). */
  repository: string;
  /** Actions granted there: "pull", "push", "delete" or "*". */
  actions: string[];
}

export interface TestUser {
  user: string;
  password: string;
  /** Omitted: every action on every repository. */
  access?: RepositoryAccess[];
}

/** One token request as the server saw it, for scope assertions. */
export interface TokenRequest {
  /** The authenticated user, or "" for an anonymous request. */
  user: string;
  service: string;
  scopes: string[];
  granted: { type: string; name: string; actions: string[] }[];
}

export interface TokenServer {
  realm: string;
  service: string;
  issuer: string;
  /** PEM of the self-signed certificate: TLS trust anchor for clients, token root for the registry. */
  certFile: string;
  requests: TokenRequest[];
  stop(): Promise<void>;
}

export const TOKEN_SERVICE = "test-registry";
const ISSUER = "test-token-server";
const TOKEN_SECONDS = 300;

/** A self-signed RSA certificate (the token signer's) for 127.0.0.1 and localhost, written into `dir`. */
function makeCertificate(dir: string): CertificateFiles {
  return selfSignedCertificate(dir, "token", {
    subject: "/CN=127.0.0.1",
    altNames: "IP:127.0.0.1,DNS:localhost",
    rsa: true,
    days: 2,
  });
}

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

function allowedActions(user: TestUser | undefined, repository: string, requested: string[]): string[] {
  if (!user) return [];
  if (!user.access) return requested;
  const allowed = new Set<string>();
  for (const rule of user.access) {
    const matches = rule.repository.endsWith("*")
      ? repository.startsWith(rule.repository.slice(0, -1))
      : repository === rule.repository;
    if (matches) for (const action of rule.actions) allowed.add(action);
  }
  return requested.filter((action) => allowed.has("*") || allowed.has(action));
}

export async function startTokenServer(dir: string, users: TestUser[]): Promise<TokenServer> {
  const { certFile, keyFile } = makeCertificate(dir);
  const certPem = readFileSync(certFile, "utf8");
  const keyPem = readFileSync(keyFile, "utf8");
  const privateKey = createPrivateKey(keyPem);
  const x5c = new X509Certificate(certPem).raw.toString("base64");
  const requests: TokenRequest[] = [];

  const server: Server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    if (url.pathname !== "/token" || req.method !== "GET") {
      res.writeHead(404).end();
      return;
    }
    let user: TestUser | undefined;
    let userName = "";
    const header = req.headers.authorization ?? "";
    if (header.startsWith("Basic ")) {
      const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      userName = decoded.slice(0, colon);
      user = users.find((u) => u.user === userName && u.password === decoded.slice(colon + 1));
      if (!user) {
        res.writeHead(401, { "content-type": "application/json" });
        res.end(JSON.stringify({ errors: [{ code: "UNAUTHORIZED", message: "bad credentials" }] }));
        return;
      }
    }
    const scopes = url.searchParams.getAll("scope");
    const granted = scopes.flatMap((scope) => {
      const [type = "", name = "", actions = ""] = scope.split(":");
      return type ? [{ type, name, actions: allowedActions(user, name, actions.split(",")) }] : [];
    });
    const service = url.searchParams.get("service") ?? "";
    requests.push({ user: userName, service, scopes, granted });
    const now = Math.floor(Date.now() / 1000);
    const headerPart = base64url(JSON.stringify({ typ: "JWT", alg: "RS256", x5c: [x5c] }));
    const claims = base64url(
      JSON.stringify({
        iss: ISSUER,
        sub: userName,
        aud: service,
        exp: now + TOKEN_SECONDS,
        nbf: now - 10,
        iat: now,
        jti: randomUUID(),
        access: granted,
      }),
    );
    const signature = base64url(sign("sha256", Buffer.from(`${headerPart}.${claims}`), privateKey));
    const token = `${headerPart}.${claims}.${signature}`;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        token,
        access_token: token,
        expires_in: TOKEN_SECONDS,
        issued_at: new Date().toISOString(),
      }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    realm: `https://127.0.0.1:${port}/token`,
    service: TOKEN_SERVICE,
    issuer: ISSUER,
    certFile,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
