// The secure metrics guard over a recording stand-in for the API server: the TokenReview and the
// SubjectAccessReview it sends, the 401 / 403 / allowed verdicts, and the answers it keeps for
// controller-runtime's lifetimes (token 1 min, allow 5 min, deny 30 s), failed reviews not kept.
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import {
  ALLOW_TTL_MS,
  DENY_TTL_MS,
  RequestReviewer,
  TOKEN_REVIEW_TTL_MS,
} from "../../../src/controller/metricsauth.ts";
import type { ResourceType } from "../../../src/controller/resources.ts";

interface Review {
  kind: string;
  // biome-ignore lint/suspicious/noExplicitAny: review bodies are free-form here
  spec: any;
}

/** Tokens "good" (user alice, allowed when `allow`) and "other" (user bob); anything else unauthenticated. */
function apiServer(opts: { allow: () => boolean; fail?: () => boolean }) {
  const sent: Review[] = [];
  const client = {
    async create<T>(_rt: ResourceType, _ns: string, body: T): Promise<T> {
      const review = body as Review;
      sent.push(review);
      if (opts.fail?.()) throw new Error("apiserver unavailable");
      if (review.kind === "TokenReview") {
        const users: Record<string, object> = {
          good: { username: "alice", uid: "u1", groups: ["system:authenticated"] },
          other: { username: "bob", groups: ["system:authenticated"] },
        };
        const user = users[review.spec.token];
        return { ...review, status: user ? { authenticated: true, user } : { authenticated: false } } as T;
      }
      const allowed = review.spec.user === "alice" && opts.allow();
      return {
        ...review,
        status: { allowed, ...(allowed ? {} : { reason: "no RBAC policy matched" }) },
      } as T;
    },
  };
  return { client, sent };
}

const request = (token?: string, url = "/metrics") =>
  ({ url, method: "GET", headers: token ? { authorization: `Bearer ${token}` } : {} }) as IncomingMessage;

describe("RequestReviewer", () => {
  it("401 without a token (asking nothing) or with one the API server does not authenticate", async () => {
    const { client, sent } = apiServer({ allow: () => true });
    const reviewer = new RequestReviewer(client, new FakeClock(0));
    assert.deepEqual(await reviewer.review(request()), {
      allowed: false,
      status: 401,
      reason: "no bearer token",
    });
    assert.equal(sent.length, 0);
    assert.equal((await reviewer.review(request("forged"))).allowed, false);
    assert.deepEqual(
      sent.map((r) => r.kind),
      ["TokenReview"],
    );
  });

  it("asks for get on the request's path as a non-resource URL for the reviewed user, then lets it through", async () => {
    const { client, sent } = apiServer({ allow: () => true });
    const reviewer = new RequestReviewer(client, new FakeClock(0));
    assert.deepEqual(await reviewer.review(request("good", "/metrics?x=1")), { allowed: true });
    assert.deepEqual(sent[0]?.spec, { token: "good" });
    assert.deepEqual(sent[1]?.spec, {
      user: "alice",
      uid: "u1",
      groups: ["system:authenticated"],
      extra: undefined,
      nonResourceAttributes: { path: "/metrics", verb: "get" },
    });
  });

  it("403 with the API server's reason for an authenticated user without the grant", async () => {
    const { client } = apiServer({ allow: () => true });
    const reviewer = new RequestReviewer(client, new FakeClock(0));
    assert.deepEqual(await reviewer.review(request("other")), {
      allowed: false,
      status: 403,
      reason: "no RBAC policy matched",
    });
  });

  it("keeps a token review 1 minute and an allow 5 minutes, then asks again", async () => {
    const clock = new FakeClock(0);
    const { client, sent } = apiServer({ allow: () => true });
    const reviewer = new RequestReviewer(client, clock);
    await reviewer.review(request("good"));
    clock.advance(TOKEN_REVIEW_TTL_MS - 1);
    await reviewer.review(request("good"));
    assert.equal(sent.length, 2, "both answers from the cache");
    clock.advance(1);
    await reviewer.review(request("good"));
    assert.deepEqual(
      sent.slice(2).map((r) => r.kind),
      ["TokenReview"],
      "the token reviewed again, the allow still kept",
    );
    clock.advance(ALLOW_TTL_MS);
    await reviewer.review(request("good"));
    assert.deepEqual(
      sent.slice(3).map((r) => r.kind),
      ["TokenReview", "SubjectAccessReview"],
    );
  });

  it("keeps a deny 30 seconds, so a new grant lets the user in after that", async () => {
    const clock = new FakeClock(0);
    let granted = false;
    const { client } = apiServer({ allow: () => granted });
    const reviewer = new RequestReviewer(client, clock);
    assert.equal((await reviewer.review(request("good"))).allowed, false);
    granted = true;
    clock.advance(DENY_TTL_MS - 1);
    assert.equal((await reviewer.review(request("good"))).allowed, false, "the deny is still kept");
    clock.advance(1);
    assert.equal((await reviewer.review(request("good"))).allowed, true);
  });

  it("a failed review is an error, and not kept", async () => {
    let failing = true;
    const { client, sent } = apiServer({ allow: () => true, fail: () => failing });
    const reviewer = new RequestReviewer(client, new FakeClock(0));
    await assert.rejects(reviewer.review(request("good")), /apiserver unavailable/);
    failing = false;
    assert.deepEqual(await reviewer.review(request("good")), { allowed: true });
    assert.equal(sent.length, 3);
  });
});
