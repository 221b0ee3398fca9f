import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, it } from "node:test";
import {
  type Credential,
  createRegistryClient,
  DROPPED_TAG_ANNOTATION,
  type FetchInit,
  type FetchLike,
  MANIFEST_ACCEPT,
  ManifestNotFoundError,
  RegistryError,
} from "../../../src/registry/index.ts";

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

type Route = (req: Seen) => Response | undefined;

/** A fake fetch answering from `routes` (first match wins) and recording every request. */
function fakeFetch(...routes: Route[]): { fetch: FetchLike; seen: Seen[] } {
  const seen: Seen[] = [];
  const fetch: FetchLike = async (url: string, init: FetchInit) => {
    const req: Seen = { method: init.method, url, headers: init.headers, body: init.body?.toString() };
    seen.push(req);
    for (const route of routes) {
      const res = route(req);
      if (res) return res;
    }
    throw new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } });
  };
  return { fetch, seen };
}

const MANIFEST = Buffer.from(
  JSON.stringify(
    {
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      annotations: { "cocoonstack.snapshot.baseimage": "ghcr.io/x/ubuntu:24.04", other: "1" },
    },
    null,
    2,
  ),
);
const DIGEST = `sha256:${createHash("sha256").update(MANIFEST).digest("hex")}`;
const OCI = "application/vnd.oci.image.manifest.v1+json";

const on =
  (method: string, pathOrPrefix: string, make: (req: Seen) => Response): Route =>
  (req) => {
    const url = new URL(req.url);
    const target = url.origin + url.pathname;
    const matches = pathOrPrefix.endsWith("*")
      ? target.startsWith(pathOrPrefix.slice(0, -1))
      : target === pathOrPrefix;
    return req.method === method && matches ? make(req) : undefined;
  };

const ping200 = on("GET", "https://reg.example.com/v2/", () => new Response("{}", { status: 200 }));
const headPresent = (path: string) =>
  on(
    "HEAD",
    `https://reg.example.com${path}`,
    () =>
      new Response(null, {
        status: 200,
        headers: {
          "content-type": OCI,
          "content-length": String(MANIFEST.length),
          "docker-content-digest": DIGEST,
        },
      }),
  );
const errorBody = (status: number, code: string, message = "") =>
  new Response(JSON.stringify({ errors: [{ code, message }] }), { status });

const acceptsDelete = (ref: string): Route =>
  on("DELETE", `https://reg.example.com/v2/vm/manifests/${ref}`, () => new Response(null, { status: 202 }));
/** distribution 2.8: a DELETE of the tag is refused (400 DIGEST_INVALID), the DELETE of DIGEST accepted. */
const refusesTagDelete = (tag: string): Route[] => [
  on("DELETE", `https://reg.example.com/v2/vm/manifests/${tag}`, () => errorBody(400, "DIGEST_INVALID")),
  on(
    "DELETE",
    `https://reg.example.com/v2/vm/manifests/${DIGEST}`,
    () => new Response(null, { status: 202 }),
  ),
];
/** distribution's tag list of repository `vm`: these tags. */
const tagList = (...tags: string[]): Route =>
  on("GET", "https://reg.example.com/v2/vm/tags/list", () => Response.json({ name: "vm", tags }));
const sha256Of = (bytes: Buffer): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

/** A snapshot-shaped manifest; `id` makes its bytes (and digest) its own. */
const snapshotManifest = (id: string): Buffer =>
  Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI,
      config: { mediaType: "config", digest: sha256Of(Buffer.from(`config-${id}`)), size: 10 },
      layers: [{ mediaType: "layer", digest: sha256Of(Buffer.from(`layer-${id}`)), size: 100 }],
      annotations: { "cocoonstack.snapshot.baseimage": "img" },
    }),
  );

/**
 * Repository `vm` of distribution 2.8 in memory: manifests by digest, tags naming them, a tag list,
 * PUT by tag, and DELETE by digest only (400 DIGEST_INVALID by tag), which takes every tag naming
 * that digest with the manifest.
 */
function distribution() {
  const manifests = new Map<string, Buffer>();
  const tagged = new Map<string, string>();
  const push = (tag: string, raw: Buffer): string => {
    const digest = sha256Of(raw);
    manifests.set(digest, raw);
    tagged.set(tag, digest);
    return digest;
  };
  const route: Route = (req) => {
    const { pathname } = new URL(req.url);
    if (pathname === "/v2/vm/tags/list" && req.method === "GET") {
      return Response.json({ name: "vm", tags: [...tagged.keys()] });
    }
    if (!pathname.startsWith("/v2/vm/manifests/")) return undefined;
    const ref = pathname.slice("/v2/vm/manifests/".length);
    const byDigest = ref.startsWith("sha256:");
    const digest = byDigest ? (manifests.has(ref) ? ref : undefined) : tagged.get(ref);
    const raw = digest === undefined ? undefined : manifests.get(digest);
    switch (req.method) {
      case "HEAD":
      case "GET":
        if (digest === undefined || raw === undefined) return errorBody(404, "MANIFEST_UNKNOWN");
        return new Response(req.method === "GET" ? raw : null, {
          status: 200,
          headers: {
            "content-type": OCI,
            "content-length": String(raw.length),
            "docker-content-digest": digest,
          },
        });
      case "PUT": {
        const put = push(ref, Buffer.from(req.body ?? ""));
        return new Response(null, { status: 201, headers: { "docker-content-digest": put } });
      }
      case "DELETE":
        if (!byDigest) return errorBody(400, "DIGEST_INVALID");
        if (digest === undefined) return errorBody(404, "MANIFEST_UNKNOWN");
        manifests.delete(digest);
        for (const [tag, named] of tagged) if (named === digest) tagged.delete(tag);
        return new Response(null, { status: 202 });
      default:
        return undefined;
    }
  };
  return {
    route,
    push,
    tags: () => Object.fromEntries(tagged),
    has: (digest: string) => manifests.has(digest),
    body: (digest: string) => JSON.parse(manifests.get(digest)?.toString("utf8") ?? "null"),
  };
}

/** The requests a fake fetch saw, as "METHOD path", without the /v2/ ping. */
const requestLines = (seen: Seen[]) =>
  seen.filter((r) => !r.url.endsWith("/v2/")).map((r) => `${r.method} ${new URL(r.url).pathname}`);
const anonymous = { resolve: async (): Promise<Credential> => ({ kind: "anonymous" }) };
const basicCreds = {
  resolve: async (): Promise<Credential> => ({ kind: "basic", username: "alice", password: "s3cret" }),
};

async function registryError(promise: Promise<unknown>): Promise<RegistryError> {
  const err = await promise.then(
    () => assert.fail("expected a rejection"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RegistryError, String(err));
  return err;
}

describe("hasManifest / headManifest", () => {
  it("sends the full Accept list and reads the descriptor", async () => {
    const { fetch, seen } = fakeFetch(ping200, headPresent("/v2/proj/vm/manifests/hibernate"));
    const client = createRegistryClient("reg.example.com/proj", { fetch, keychain: anonymous });
    assert.deepEqual(await client.headManifest("vm", "hibernate"), {
      digest: DIGEST,
      mediaType: OCI,
      size: MANIFEST.length,
    });
    assert.equal(await client.hasManifest("vm", "hibernate"), true);
    const head = seen.find((r) => r.method === "HEAD");
    assert.equal(head?.headers.accept, MANIFEST_ACCEPT);
    assert.equal(MANIFEST_ACCEPT.split(",").length, 6);
  });

  it("maps 404 to absent and other statuses to RegistryError", async () => {
    const { fetch } = fakeFetch(
      ping200,
      on("HEAD", "https://reg.example.com/v2/vm/manifests/latest", () => new Response(null, { status: 404 })),
      on(
        "HEAD",
        "https://reg.example.com/v2/vm/manifests/hibernate",
        () => new Response(null, { status: 503 }),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    assert.equal(await client.hasManifest("vm", "latest"), false);
    const err = await registryError(client.hasManifest("vm", "hibernate"));
    assert.equal(err.status, 503);
    assert.equal(err.code, "HTTP_503");
    assert.equal(err.method, "HEAD");
  });

  it("rejects a 200 without the descriptor headers", async () => {
    const { fetch } = fakeFetch(
      ping200,
      on("HEAD", "https://reg.example.com/v2/vm/manifests/x", () => new Response(null, { status: 200 })),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    assert.equal((await registryError(client.hasManifest("vm", "x"))).code, "MANIFEST_HEADERS_MISSING");
  });
});

describe("getManifest / getSnapshot", () => {
  const get = (status: number, headers: Record<string, string> = {}, body: Buffer | string = MANIFEST) =>
    on("GET", "https://reg.example.com/v2/vm/manifests/*", () => new Response(body, { status, headers }));

  it("parses the manifest and computes the digest when the header is missing", async () => {
    const { fetch } = fakeFetch(ping200, get(200, { "content-type": OCI }));
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    const manifest = await client.getManifest("vm", "hibernate");
    assert.equal(manifest.digest, DIGEST);
    assert.equal(manifest.mediaType, OCI);
    assert.deepEqual(manifest.raw, MANIFEST);
    assert.equal(manifest.manifest.schemaVersion, 2);
    assert.deepEqual(await client.getSnapshot("vm", "hibernate"), {
      digest: DIGEST,
      baseImage: "ghcr.io/x/ubuntu:24.04",
      annotations: { "cocoonstack.snapshot.baseimage": "ghcr.io/x/ubuntu:24.04", other: "1" },
    });
  });

  it("reads a manifest without the annotation as base image ''", async () => {
    const { fetch } = fakeFetch(ping200, get(200, {}, JSON.stringify({ schemaVersion: 2 })));
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    assert.equal((await client.getSnapshot("vm", "hibernate"))?.baseImage, "");
  });

  it("throws ManifestNotFoundError on 404; getSnapshot returns null", async () => {
    const { fetch } = fakeFetch(
      ping200,
      on("GET", "https://reg.example.com/v2/vm/*", () =>
        errorBody(404, "MANIFEST_UNKNOWN", "manifest unknown"),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    const err = await registryError(client.getManifest("vm", "hibernate"));
    assert.ok(err instanceof ManifestNotFoundError);
    assert.equal(err.code, "MANIFEST_UNKNOWN");
    assert.equal(await client.getSnapshot("vm", "hibernate"), null);
  });

  it("carries the registry's error code and rejects bodies that are not a manifest", async () => {
    const { fetch } = fakeFetch(
      ping200,
      get(403, {}, JSON.stringify({ errors: [{ code: "DENIED", message: "no" }] })),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    const err = await registryError(client.getManifest("vm", "hibernate"));
    assert.deepEqual([err.status, err.code], [403, "DENIED"]);
    assert.match(err.message, /no/);

    const bad = fakeFetch(ping200, get(200, {}, "not json"));
    const badClient = createRegistryClient("reg.example.com", { fetch: bad.fetch, keychain: anonymous });
    assert.equal((await registryError(badClient.getManifest("vm", "hibernate"))).code, "MANIFEST_INVALID");
    const wrongDigest = `sha256:${"0".repeat(64)}`;
    const mismatch = fakeFetch(ping200, get(200));
    const mismatchClient = createRegistryClient("reg.example.com", {
      fetch: mismatch.fetch,
      keychain: anonymous,
    });
    assert.equal(
      (await registryError(mismatchClient.getManifest("vm", wrongDigest))).code,
      "MANIFEST_INVALID",
    );
  });
});

describe("deleteManifest / deleteIfPresent", () => {
  const calls = requestLines;

  it("deletes by tag when the registry allows it, and treats 404 as success", async () => {
    const { fetch, seen } = fakeFetch(
      ping200,
      acceptsDelete("hibernate"),
      on("DELETE", "https://reg.example.com/v2/vm/manifests/latest", () =>
        errorBody(404, "MANIFEST_UNKNOWN"),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteManifest("vm", "hibernate");
    await client.deleteManifest("vm", "latest");
    assert.deepEqual(calls(seen), ["DELETE /v2/vm/manifests/hibernate", "DELETE /v2/vm/manifests/latest"]);
    assert.equal(seen.find((r) => r.method === "DELETE")?.headers.accept, undefined);
  });

  it("resolves the digest and deletes by digest when a tag delete is refused with 405", async () => {
    const { fetch, seen } = fakeFetch(
      ping200,
      headPresent("/v2/vm/manifests/hibernate"),
      tagList("hibernate"),
      on("DELETE", "https://reg.example.com/v2/vm/manifests/hibernate", () => errorBody(405, "UNSUPPORTED")),
      on(
        "DELETE",
        `https://reg.example.com/v2/vm/manifests/${DIGEST}`,
        () => new Response(null, { status: 202 }),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteManifest("vm", "hibernate");
    assert.deepEqual(calls(seen), [
      "DELETE /v2/vm/manifests/hibernate",
      "HEAD /v2/vm/manifests/hibernate",
      "GET /v2/vm/tags/list",
      `DELETE /v2/vm/manifests/${DIGEST}`,
    ]);
  });

  it("fails when the digest delete is refused too, or on any other status", async () => {
    const { fetch } = fakeFetch(
      ping200,
      headPresent("/v2/vm/manifests/hibernate"),
      tagList("hibernate"),
      on("DELETE", "https://reg.example.com/v2/vm/manifests/*", () =>
        errorBody(405, "UNSUPPORTED", "disabled"),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    const err = await registryError(client.deleteManifest("vm", "hibernate"));
    assert.deepEqual([err.status, err.code, err.method], [405, "UNSUPPORTED", "DELETE"]);

    const broken = fakeFetch(
      ping200,
      on("DELETE", "https://reg.example.com/v2/vm/manifests/*", () => errorBody(500, "UNKNOWN")),
    );
    const brokenClient = createRegistryClient("reg.example.com", {
      fetch: broken.fetch,
      keychain: anonymous,
    });
    assert.equal((await registryError(brokenClient.deleteManifest("vm", "hibernate"))).status, 500);
    assert.equal(broken.seen.filter((r) => r.method === "HEAD").length, 0);
  });

  it("once the registry refused a tag delete, deleteIfPresent deletes what it saw by digest at once", async () => {
    const registry = distribution();
    const hibernate = registry.push("hibernate", snapshotManifest("one"));
    const latest = registry.push("latest", snapshotManifest("two"));
    const { fetch, seen } = fakeFetch(ping200, registry.route);
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    assert.equal(await client.deleteIfPresent("vm", "hibernate"), true);
    assert.equal(await client.deleteIfPresent("vm", "latest"), true);
    assert.deepEqual(calls(seen), [
      "HEAD /v2/vm/manifests/hibernate",
      "DELETE /v2/vm/manifests/hibernate",
      "GET /v2/vm/tags/list",
      "HEAD /v2/vm/manifests/latest",
      `DELETE /v2/vm/manifests/${hibernate}`,
      "HEAD /v2/vm/manifests/latest",
      "GET /v2/vm/tags/list",
      `DELETE /v2/vm/manifests/${latest}`,
    ]);
    assert.deepEqual(registry.tags(), {});
  });

  it("reports one outcome per delete asked for: a refused tag delete retried by digest is one deletion", async () => {
    const { fetch } = fakeFetch(
      ping200,
      headPresent("/v2/vm/manifests/hibernate"),
      tagList(),
      ...refusesTagDelete("hibernate"),
      on("DELETE", "https://reg.example.com/v2/other/manifests/*", () => errorBody(500, "UNKNOWN")),
    );
    const outcomes: string[] = [];
    const client = createRegistryClient("reg.example.com", {
      fetch,
      keychain: anonymous,
      onDelete: (outcome) => outcomes.push(outcome),
    });
    await client.deleteManifest("vm", "hibernate");
    await client.deleteManifest("vm", DIGEST);
    await registryError(client.deleteManifest("other", "latest"));
    await registryError(client.deleteTagAt("other", "latest", DIGEST));
    assert.deepEqual(outcomes, ["deleted", "deleted", "failed", "failed"]);
  });

  it("a registry that accepts tag deletes keeps getting them", async () => {
    const { fetch, seen } = fakeFetch(
      ping200,
      headPresent("/v2/vm/manifests/hibernate"),
      acceptsDelete("hibernate"),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteIfPresent("vm", "hibernate");
    await client.deleteIfPresent("vm", "hibernate");
    assert.deepEqual(calls(seen), [
      "HEAD /v2/vm/manifests/hibernate",
      "DELETE /v2/vm/manifests/hibernate",
      "HEAD /v2/vm/manifests/hibernate",
      "DELETE /v2/vm/manifests/hibernate",
    ]);
  });

  it("deleteIfPresent probes first and deletes only what it saw, by its digest on fallback", async () => {
    const absent = fakeFetch(
      ping200,
      on("HEAD", "https://reg.example.com/v2/vm/*", () => new Response(null, { status: 404 })),
    );
    const absentClient = createRegistryClient("reg.example.com", {
      fetch: absent.fetch,
      keychain: anonymous,
    });
    assert.equal(await absentClient.deleteIfPresent("vm", "latest"), false);
    assert.deepEqual(calls(absent.seen), ["HEAD /v2/vm/manifests/latest"]);

    const present = fakeFetch(
      ping200,
      headPresent("/v2/vm/manifests/latest"),
      tagList("latest"),
      on("DELETE", "https://reg.example.com/v2/vm/manifests/latest", () => errorBody(400, "DIGEST_INVALID")),
      on(
        "DELETE",
        `https://reg.example.com/v2/vm/manifests/${DIGEST}`,
        () => new Response(null, { status: 202 }),
      ),
    );
    const presentClient = createRegistryClient("reg.example.com", {
      fetch: present.fetch,
      keychain: anonymous,
    });
    assert.equal(await presentClient.deleteIfPresent("vm", "latest"), true);
    assert.deepEqual(calls(present.seen), [
      "HEAD /v2/vm/manifests/latest",
      "DELETE /v2/vm/manifests/latest",
      "GET /v2/vm/tags/list",
      `DELETE /v2/vm/manifests/${DIGEST}`,
    ]);
  });
});

describe("deleteTagAt", () => {
  const calls = requestLines;
  const OTHER = `sha256:${"0".repeat(64)}`;

  it("deletes by tag without probing again; a registry refusing tag deletes gets the given digest, at once from then on", async () => {
    const { fetch, seen } = fakeFetch(
      ping200,
      tagList("hibernate"),
      ...refusesTagDelete("hibernate"),
      on("DELETE", `https://reg.example.com/v2/vm/manifests/${OTHER}`, () =>
        errorBody(404, "MANIFEST_UNKNOWN"),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteTagAt("vm", "hibernate", DIGEST);
    await client.deleteTagAt("vm", "hibernate", OTHER);
    assert.deepEqual(calls(seen), [
      "DELETE /v2/vm/manifests/hibernate",
      "GET /v2/vm/tags/list",
      `DELETE /v2/vm/manifests/${DIGEST}`,
      "GET /v2/vm/tags/list",
      `DELETE /v2/vm/manifests/${OTHER}`,
    ]);
  });

  it("a registry that deletes tags gets the tag alone; a refused DELETE is a RegistryError", async () => {
    const { fetch, seen } = fakeFetch(
      ping200,
      acceptsDelete("hibernate"),
      on("DELETE", "https://reg.example.com/v2/vm/manifests/latest", () => errorBody(403, "DENIED")),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteTagAt("vm", "hibernate", DIGEST);
    const refused = await registryError(client.deleteTagAt("vm", "latest", DIGEST));
    assert.equal(refused.status, 403);
    assert.deepEqual(calls(seen), ["DELETE /v2/vm/manifests/hibernate", "DELETE /v2/vm/manifests/latest"]);
  });
});

describe("the delete rule: no delete removes a manifest another tag still names", () => {
  const calls = requestLines;

  it("a tag sharing its digest with another is re-pointed to a manifest of its own, and only that goes", async () => {
    const registry = distribution();
    const raw = snapshotManifest("c2");
    const shared = registry.push("hibernate", raw);
    assert.equal(registry.push("ckpt-c2", raw), shared, "two tags, one digest");
    const { fetch, seen } = fakeFetch(ping200, registry.route);
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });

    await client.deleteTagAt("vm", "hibernate", shared);
    assert.deepEqual(registry.tags(), { "ckpt-c2": shared }, "the other tag keeps its manifest");
    assert.ok(registry.has(shared));
    const put = seen.find((r) => r.method === "PUT");
    const own = sha256Of(Buffer.from(put?.body ?? ""));
    assert.notEqual(own, shared);
    assert.equal(registry.has(own), false, "the re-pointed manifest went in the tag's place");
    const body = JSON.parse(put?.body ?? "{}");
    const original = JSON.parse(raw.toString("utf8"));
    assert.deepEqual(
      [body.config, body.layers],
      [original.config, original.layers],
      "same config and layers",
    );
    assert.deepEqual(body.annotations, { ...original.annotations, [DROPPED_TAG_ANNOTATION]: "hibernate" });
    assert.deepEqual(calls(seen), [
      "DELETE /v2/vm/manifests/hibernate",
      "GET /v2/vm/tags/list",
      "HEAD /v2/vm/manifests/ckpt-c2",
      "HEAD /v2/vm/manifests/hibernate",
      `GET /v2/vm/manifests/${shared}`,
      "PUT /v2/vm/manifests/hibernate",
      `DELETE /v2/vm/manifests/${own}`,
    ]);

    // The last tag naming it goes by its digest, probe first.
    seen.length = 0;
    assert.equal(await client.deleteIfPresent("vm", "ckpt-c2"), true);
    assert.deepEqual(registry.tags(), {});
    assert.deepEqual(calls(seen), [
      "HEAD /v2/vm/manifests/ckpt-c2",
      "GET /v2/vm/tags/list",
      `DELETE /v2/vm/manifests/${shared}`,
    ]);
  });

  it("a digest no other tag names goes at once: one tag list and a HEAD per other tag more than before", async () => {
    const registry = distribution();
    const hibernate = registry.push("hibernate", snapshotManifest("h"));
    const latest = registry.push("latest", snapshotManifest("l"));
    const ckpt = registry.push("ckpt-a", snapshotManifest("a"));
    const { fetch, seen } = fakeFetch(ping200, registry.route);
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteTagAt("vm", "hibernate", hibernate);
    assert.deepEqual(registry.tags(), { latest, "ckpt-a": ckpt });
    assert.deepEqual(calls(seen), [
      "DELETE /v2/vm/manifests/hibernate",
      "GET /v2/vm/tags/list",
      "HEAD /v2/vm/manifests/latest",
      "HEAD /v2/vm/manifests/ckpt-a",
      `DELETE /v2/vm/manifests/${hibernate}`,
    ]);
  });

  it("a tag pushed over since the caller's probe is left, and the other tag with it", async () => {
    const registry = distribution();
    const raw = snapshotManifest("old");
    const old = registry.push("ckpt-c2", raw);
    const fresh = registry.push("hibernate", snapshotManifest("new"));
    const { fetch, seen } = fakeFetch(ping200, registry.route);
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await client.deleteTagAt("vm", "hibernate", old);
    assert.deepEqual(registry.tags(), { "ckpt-c2": old, hibernate: fresh });
    assert.equal(seen.filter((r) => r.method === "PUT").length, 0);
  });

  it("a delete by digest that a tag still names is refused, touching nothing; an untagged one goes", async () => {
    const registry = distribution();
    const tagged = registry.push("ckpt-c2", snapshotManifest("c2"));
    const loose = sha256Of(snapshotManifest("loose"));
    registry.push("scratch", snapshotManifest("loose"));
    const { fetch, seen } = fakeFetch(ping200, registry.route);
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    const refused = await registryError(client.deleteManifest("vm", tagged));
    assert.equal(refused.code, "MANIFEST_TAGGED");
    assert.match(refused.message, /ckpt-c2/);
    assert.deepEqual(registry.tags()["ckpt-c2"], tagged);
    assert.equal(seen.filter((r) => r.method === "DELETE").length, 0);

    await client.deleteTagAt("vm", "scratch", loose);
    assert.deepEqual(registry.tags(), { "ckpt-c2": tagged });
  });
});

describe("listTags", () => {
  it("follows distribution's Link pages under the base path", async () => {
    const { fetch, seen } = fakeFetch(ping200, (req) => {
      const url = new URL(req.url);
      if (req.method !== "GET" || url.pathname !== "/v2/proj/vm/tags/list") return undefined;
      if (url.searchParams.get("last") === "hibernate")
        return new Response(JSON.stringify({ name: "proj/vm", tags: ["latest"] }), { status: 200 });
      return new Response(JSON.stringify({ name: "proj/vm", tags: ["hibernate"] }), {
        status: 200,
        headers: { link: '</v2/proj/vm/tags/list?last=hibernate&n=1>; rel="next"' },
      });
    });
    const client = createRegistryClient("reg.example.com/proj", { fetch, keychain: anonymous });
    assert.deepEqual(await client.listTags("vm"), ["hibernate", "latest"]);
    assert.deepEqual(
      seen.filter((r) => !r.url.endsWith("/v2/")).map((r) => new URL(r.url).search),
      ["", "?last=hibernate&n=1"],
    );
  });

  it("answers [] for an unknown repository and RegistryError for a refusal", async () => {
    const { fetch } = fakeFetch(
      ping200,
      on("GET", "https://reg.example.com/v2/gone/tags/list", () => errorBody(404, "NAME_UNKNOWN")),
      on("GET", "https://reg.example.com/v2/secret/tags/list", () => errorBody(403, "DENIED", "no")),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    assert.deepEqual(await client.listTags("gone"), []);
    const err = await registryError(client.listTags("secret"));
    assert.equal(err.code, "DENIED");
  });
});

describe("authentication", () => {
  const bearerPing = (realm = "https://auth.example.com/token") =>
    on(
      "GET",
      "https://reg.example.com/v2/",
      () =>
        new Response("{}", {
          status: 401,
          headers: { "www-authenticate": `Bearer realm="${realm}",service="reg.example.com"` },
        }),
    );
  const tokenRoute = (expiresIn: number) => {
    let issued = 0;
    return on("*", "https://auth.example.com/token", () => {
      issued++;
      return Response.json({ token: `tok-${issued}`, expires_in: expiresIn });
    });
  };
  const anyMethod =
    (route: Route): Route =>
    (req) =>
      route({ ...req, method: "*" });
  const authorizedHead = on("HEAD", "https://reg.example.com/v2/*", (req) =>
    req.headers.authorization?.startsWith("Bearer tok-")
      ? new Response(null, { status: 404 })
      : new Response(null, { status: 401 }),
  );

  it("exchanges Basic credentials for a pull token and caches it per scope", async () => {
    const { fetch, seen } = fakeFetch(bearerPing(), anyMethod(tokenRoute(300)), authorizedHead);
    const client = createRegistryClient("reg.example.com/proj", { fetch, keychain: basicCreds });
    assert.equal(await client.hasManifest("vm", "hibernate"), false);
    assert.equal(await client.hasManifest("vm", "latest"), false);
    assert.equal(await client.hasManifest("vm2", "latest"), false);
    const tokenRequests = seen.filter((r) => r.url.startsWith("https://auth.example.com/"));
    assert.equal(tokenRequests.length, 2, "one token per repository scope");
    const first = new URL(tokenRequests[0]?.url ?? "");
    assert.equal(first.searchParams.get("service"), "reg.example.com");
    assert.deepEqual(first.searchParams.getAll("scope"), ["repository:proj/vm:pull"]);
    assert.equal(
      tokenRequests[0]?.headers.authorization,
      `Basic ${Buffer.from("alice:s3cret").toString("base64")}`,
    );
    assert.equal(seen.filter((r) => r.url.endsWith("/v2/")).length, 1, "one ping per client");
  });

  it("fetches a new token once the cached one expires", async () => {
    const { fetch, seen } = fakeFetch(bearerPing(), anyMethod(tokenRoute(1)), authorizedHead);
    const client = createRegistryClient("reg.example.com", { fetch, keychain: basicCreds });
    await client.hasManifest("vm", "a");
    await client.hasManifest("vm", "b");
    assert.equal(seen.filter((r) => r.url.startsWith("https://auth.example.com/")).length, 2);
  });

  it("asks for push,pull to delete, retries a 401 with the challenge's scope added and remembers it", async () => {
    const { fetch, seen } = fakeFetch(
      bearerPing(),
      anyMethod(tokenRoute(300)),
      on("DELETE", "https://reg.example.com/v2/vm/manifests/*", (req) =>
        req.headers.authorization === "Bearer tok-2"
          ? new Response(null, { status: 202 })
          : new Response(null, {
              status: 401,
              headers: {
                "www-authenticate":
                  'Bearer realm="https://auth.example.com/token",service="reg.example.com",scope="repository:vm:delete",error="insufficient_scope"',
              },
            }),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: basicCreds });
    await client.deleteManifest("vm", "hibernate");
    const scopes = seen
      .filter((r) => r.url.startsWith("https://auth.example.com/"))
      .map((r) => new URL(r.url).searchParams.getAll("scope"));
    assert.deepEqual(scopes, [
      ["repository:vm:push,pull"],
      ["repository:vm:push,pull", "repository:vm:delete"],
    ]);
    // The learned scope is requested up front next time, so the cached token serves it.
    await client.deleteManifest("vm", "hibernate");
    assert.deepEqual(
      seen.filter((r) => r.method === "DELETE").map((r) => r.headers.authorization),
      ["Bearer tok-1", "Bearer tok-2", "Bearer tok-2"],
    );
  });

  it("exchanges an identity token with an OAuth2 refresh_token POST", async () => {
    const { fetch, seen } = fakeFetch(
      bearerPing(),
      on("POST", "https://auth.example.com/token", () => Response.json({ access_token: "tok-9" })),
      on(
        "HEAD",
        "https://reg.example.com/v2/*",
        (req) => new Response(null, { status: req.headers.authorization === "Bearer tok-9" ? 404 : 401 }),
      ),
    );
    const keychain = {
      resolve: async (): Promise<Credential> => ({ kind: "identityToken", token: "refresh-1" }),
    };
    const client = createRegistryClient("reg.example.com", { fetch, keychain });
    assert.equal(await client.hasManifest("vm", "x"), false);
    const form = new URLSearchParams(seen.find((r) => r.method === "POST")?.body ?? "");
    assert.equal(form.get("grant_type"), "refresh_token");
    assert.equal(form.get("refresh_token"), "refresh-1");
    assert.equal(form.get("scope"), "repository:vm:pull");
  });

  it("sends a registry token as the bearer without a token request", async () => {
    const { fetch, seen } = fakeFetch(
      bearerPing(),
      on(
        "HEAD",
        "https://reg.example.com/v2/*",
        (req) => new Response(null, { status: req.headers.authorization === "Bearer fixed" ? 404 : 401 }),
      ),
    );
    const keychain = {
      resolve: async (): Promise<Credential> => ({ kind: "registryToken", token: "fixed" }),
    };
    const client = createRegistryClient("reg.example.com", { fetch, keychain });
    assert.equal(await client.hasManifest("vm", "x"), false);
    assert.equal(seen.filter((r) => r.url.includes("auth.example.com")).length, 0);
  });

  it("answers a Basic challenge with Basic credentials on every request", async () => {
    const { fetch, seen } = fakeFetch(
      on(
        "GET",
        "https://reg.example.com/v2/",
        () => new Response("", { status: 401, headers: { "www-authenticate": 'Basic realm="r"' } }),
      ),
      on(
        "HEAD",
        "https://reg.example.com/v2/*",
        (req) => new Response(null, { status: req.headers.authorization?.startsWith("Basic ") ? 404 : 401 }),
      ),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: basicCreds });
    assert.equal(await client.hasManifest("vm", "a"), false);
    assert.equal(await client.hasManifest("vm", "b"), false);
    assert.equal(seen.filter((r) => r.method === "HEAD").length, 2);
  });

  it("refuses to send credentials to a plain-http realm on a remote host", async () => {
    const { fetch, seen } = fakeFetch(bearerPing("http://auth.example.com/token"));
    const client = createRegistryClient("reg.example.com", { fetch, keychain: basicCreds });
    assert.equal((await registryError(client.hasManifest("vm", "x"))).code, "TOKEN_REALM_INSECURE");
    assert.equal(seen.filter((r) => r.url.includes("auth.example.com")).length, 0);
  });

  it("does not put credentials in a token error", async () => {
    const { fetch } = fakeFetch(
      bearerPing(),
      on("GET", "https://auth.example.com/token", () => errorBody(401, "UNAUTHORIZED", "bad credentials")),
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: basicCreds });
    const err = await registryError(client.hasManifest("vm", "x"));
    assert.deepEqual([err.status, err.code], [401, "UNAUTHORIZED"]);
    assert.doesNotMatch(`${err.message} ${err.url}`, /s3cret|alice|scope=/);
  });
});

describe("transport", () => {
  it("tries https then http for a loopback registry, and https only for others", async () => {
    const local = fakeFetch(
      on("GET", "http://127.0.0.1:5000/v2/", () => new Response("{}", { status: 200 })),
      on("HEAD", "http://127.0.0.1:5000/v2/*", () => new Response(null, { status: 404 })),
    );
    const calls: string[] = [];
    const client = createRegistryClient("127.0.0.1:5000", {
      fetch: local.fetch,
      keychain: anonymous,
      onRequest: (method, path, status) => calls.push(`${method} ${path} ${status}`),
    });
    assert.equal(await client.hasManifest("vm", "x"), false);
    assert.deepEqual(calls, ["GET /v2/ 0", "GET /v2/ 200", "HEAD /v2/vm/manifests/x 404"]);

    const remote = fakeFetch(
      on("GET", "http://reg.example.com/v2/", () => new Response("{}", { status: 200 })),
    );
    const remoteClient = createRegistryClient("reg.example.com", {
      fetch: remote.fetch,
      keychain: anonymous,
    });
    const err = await registryError(remoteClient.hasManifest("vm", "x"));
    assert.deepEqual([err.status, err.code], [0, "UNREACHABLE"]);
    assert.match(err.message, /ECONNREFUSED/);
    assert.deepEqual(
      remote.seen.map((r) => r.url),
      ["https://reg.example.com/v2/"],
    );
  });

  it("pings again after a failed ping", async () => {
    let up = false;
    const { fetch } = fakeFetch((req) =>
      up ? new Response(null, { status: req.method === "GET" ? 200 : 404 }) : undefined,
    );
    const client = createRegistryClient("reg.example.com", { fetch, keychain: anonymous });
    await registryError(client.hasManifest("vm", "x"));
    up = true;
    assert.equal(await client.hasManifest("vm", "x"), false);
  });
});
