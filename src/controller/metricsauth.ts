// The guard of the secure metrics endpoint, as controller-runtime's WithAuthenticationAndAuthorization
// filter: the caller's bearer token is checked by the API server (a TokenReview); the user it names must
// be allowed the request's verb on its path as a non-resource URL (a SubjectAccessReview), e.g. `get`
// on `/metrics`. No or an unknown token is 401, a user without the grant 403; a failed review is 500, so
// a scrape never succeeds unchecked. docs/observability.md, "Secure metrics".
import type { IncomingMessage } from "node:http";
import type { Client } from "./client.ts";
import type { RouteHandler } from "./httpserver.ts";
import { SUBJECTACCESSREVIEWS, TOKENREVIEWS } from "./resources.ts";

interface UserInfo {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

interface TokenReview {
  apiVersion: "authentication.k8s.io/v1";
  kind: "TokenReview";
  spec: { token: string };
  status?: { authenticated?: boolean; user?: UserInfo; error?: string };
}

interface SubjectAccessReview {
  apiVersion: "authorization.k8s.io/v1";
  kind: "SubjectAccessReview";
  spec: Omit<UserInfo, "username"> & { user?: string; nonResourceAttributes: { path: string; verb: string } };
  status?: { allowed?: boolean; reason?: string };
}

export type Verdict = { allowed: true } | { allowed: false; status: 401 | 403; reason: string };

function bearerToken(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
  return match?.[1];
}

/** What the API server says of this request: authenticated, then authorized for its verb and path. */
export async function reviewRequest(client: Pick<Client, "create">, req: IncomingMessage): Promise<Verdict> {
  const token = bearerToken(req);
  if (!token) return { allowed: false, status: 401, reason: "no bearer token" };
  const review = await client.create<TokenReview>(TOKENREVIEWS, "", {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenReview",
    spec: { token },
  });
  const user = review.status?.user;
  if (!review.status?.authenticated || !user) {
    return { allowed: false, status: 401, reason: review.status?.error || "token not authenticated" };
  }
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  const verb = (req.method ?? "GET").toLowerCase();
  const access = await client.create<SubjectAccessReview>(SUBJECTACCESSREVIEWS, "", {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    spec: {
      user: user.username,
      uid: user.uid,
      groups: user.groups,
      extra: user.extra,
      nonResourceAttributes: { path, verb },
    },
  });
  if (access.status?.allowed) return { allowed: true };
  const reason = access.status?.reason || `${user.username} may not ${verb} ${path}`;
  return { allowed: false, status: 403, reason };
}

/** Wraps a handler so it runs only for requests the API server authenticates and authorizes. */
export function withAuthenticationAndAuthorization(
  client: Pick<Client, "create">,
  handler: RouteHandler,
): RouteHandler {
  return async (req, res) => {
    const verdict = await reviewRequest(client, req);
    if (!verdict.allowed) {
      res
        .writeHead(verdict.status, { "content-type": "text/plain; charset=utf-8" })
        .end(`${verdict.reason}\n`);
      return;
    }
    await handler(req, res);
  };
}
