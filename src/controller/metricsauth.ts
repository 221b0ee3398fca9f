// The guard of the secure metrics endpoint, as controller-runtime's WithAuthenticationAndAuthorization
// filter: the caller's bearer token is checked by the API server (a TokenReview); the user it names must
// be allowed the request's verb on its path as a non-resource URL (a SubjectAccessReview), e.g. `get`
// on `/metrics`. No or an unknown token is 401, a user without the grant 403; a failed review is 500, so
// a scrape never succeeds unchecked. Answers are cached with controller-runtime's lifetimes: a token
// review 1 minute, an allow 5 minutes, a deny 30 seconds; a failed review is not cached.
// docs/observability.md, "Secure metrics".
import type { IncomingMessage } from "node:http";
import type { Clock } from "../clock.ts";
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

export const TOKEN_REVIEW_TTL_MS = 60_000;
export const ALLOW_TTL_MS = 5 * 60_000;
export const DENY_TTL_MS = 30_000;

/** Entries one cache holds at most, so callers sending ever new tokens cannot grow it without bound. */
const MAX_CACHED = 1024;

/** Answers kept until their expiry; past MAX_CACHED, expired entries go first, then the oldest. */
class ExpiringCache<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();
  private readonly clock: Clock;
  constructor(clock: Clock) {
    this.clock = clock;
  }

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt > this.clock.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: T, ttlMs: number): void {
    const now = this.clock.now();
    if (this.entries.size >= MAX_CACHED) {
      for (const [k, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(k);
      for (const k of this.entries.keys()) {
        if (this.entries.size < MAX_CACHED) break;
        this.entries.delete(k);
      }
    }
    this.entries.set(key, { value, expiresAt: now + ttlMs });
  }
}

function bearerToken(req: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
  return match?.[1];
}

type Authentication = { user: UserInfo } | { error: string };

/** Asks the API server about each request, remembering its answers for their lifetimes. */
export class RequestReviewer {
  private readonly tokens: ExpiringCache<Authentication>;
  private readonly access: ExpiringCache<Verdict>;

  private readonly client: Pick<Client, "create">;

  constructor(client: Pick<Client, "create">, clock: Clock) {
    this.client = client;
    this.tokens = new ExpiringCache(clock);
    this.access = new ExpiringCache(clock);
  }

  /** Authenticated, then authorized for the request's verb and path. */
  async review(req: IncomingMessage): Promise<Verdict> {
    const token = bearerToken(req);
    if (!token) return { allowed: false, status: 401, reason: "no bearer token" };
    const authentication = await this.authenticate(token);
    if ("error" in authentication) return { allowed: false, status: 401, reason: authentication.error };
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const verb = (req.method ?? "GET").toLowerCase();
    return this.authorize(authentication.user, verb, path);
  }

  private async authenticate(token: string): Promise<Authentication> {
    const cached = this.tokens.get(token);
    if (cached) return cached;
    const review = await this.client.create<TokenReview>(TOKENREVIEWS, "", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenReview",
      spec: { token },
    });
    const user = review.status?.user;
    const answer: Authentication =
      review.status?.authenticated && user
        ? { user }
        : { error: review.status?.error || "token not authenticated" };
    this.tokens.set(token, answer, TOKEN_REVIEW_TTL_MS);
    return answer;
  }

  private async authorize(user: UserInfo, verb: string, path: string): Promise<Verdict> {
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, verb, path]);
    const cached = this.access.get(key);
    if (cached) return cached;
    const access = await this.client.create<SubjectAccessReview>(SUBJECTACCESSREVIEWS, "", {
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
    const verdict: Verdict = access.status?.allowed
      ? { allowed: true }
      : {
          allowed: false,
          status: 403,
          reason: access.status?.reason || `${user.username} may not ${verb} ${path}`,
        };
    this.access.set(key, verdict, verdict.allowed ? ALLOW_TTL_MS : DENY_TTL_MS);
    return verdict;
  }
}

/** Wraps a handler so it runs only for requests the reviewer lets through. */
export function withAuthenticationAndAuthorization(
  reviewer: RequestReviewer,
  handler: RouteHandler,
): RouteHandler {
  return async (req, res) => {
    const verdict = await reviewer.review(req);
    if (!verdict.allowed) {
      res
        .writeHead(verdict.status, { "content-type": "text/plain; charset=utf-8" })
        .end(`${verdict.reason}\n`);
      return;
    }
    await handler(req, res);
  };
}
