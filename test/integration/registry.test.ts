// The registry client against the real docker-registry (distribution 2.8) of the test environment.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  createRegistryClient,
  type FetchLike,
  ManifestNotFoundError,
  type RegistryClientOptions,
  RegistryError,
  referencedBlobs,
} from "../../src/registry/index.ts";
import { createTransport } from "../../src/registry/transport.ts";
import { freePort } from "../env/ports.ts";
import { startRegistry, type TestRegistry } from "../env/registry.ts";
import { pushTestManifest } from "../env/registry-push.ts";

interface Call {
  method: string;
  path: string;
  status: number;
}

function recording(opts: RegistryClientOptions = {}): { calls: Call[]; opts: RegistryClientOptions } {
  const calls: Call[] = [];
  return {
    calls,
    opts: { ...opts, onRequest: (method, path, status) => calls.push({ method, path, status }) },
  };
}

async function rejectsWith(
  promise: Promise<unknown>,
  expected: Partial<RegistryError>,
): Promise<RegistryError> {
  const err = await promise.then(
    () => assert.fail("expected a RegistryError"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RegistryError, `not a RegistryError: ${String(err)}`);
  for (const [key, value] of Object.entries(expected)) {
    assert.equal((err as unknown as Record<string, unknown>)[key], value, `${key} of ${err.message}`);
  }
  return err;
}

const configDir = mkdtempSync(join(tmpdir(), "registry-test-config-"));
after(() => rmSync(configDir, { recursive: true, force: true }));

function dockerConfig(name: string, host: string, user: string, password: string): string {
  const path = join(configDir, `${name}.json`);
  const auth = Buffer.from(`${user}:${password}`).toString("base64");
  writeFileSync(path, JSON.stringify({ auths: { [host]: { auth } } }));
  return path;
}

const noConfig = join(configDir, "absent.json");

describe("anonymous registry", () => {
  let reg: TestRegistry;
  before(async () => {
    reg = await startRegistry();
  });
  after(() => reg.stop());

  it("reports a pushed tag present and other tags and repositories absent", async () => {
    await pushTestManifest(reg, "proj/vk-ns-a-0", "hibernate");
    const client = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    assert.equal(await client.hasManifest("vk-ns-a-0", "hibernate"), true);
    assert.equal(await client.hasManifest("vk-ns-a-0", "latest"), false);
    assert.equal(await client.hasManifest("vk-ns-never-0", "hibernate"), false);
  });

  it("reads the manifest, its digest and the base image annotation", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-b-0", "hibernate", {
      "cocoonstack.snapshot.baseimage": "ghcr.io/cocoonstack/cocoon/ubuntu:24.04",
    });
    const client = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    const manifest = await client.getManifest("vk-ns-b-0", "hibernate");
    assert.equal(manifest.digest, pushed.digest);
    assert.equal(manifest.mediaType, "application/vnd.oci.image.manifest.v1+json");
    assert.deepEqual(manifest.raw, pushed.raw);
    assert.equal(manifest.manifest.artifactType, "application/vnd.cocoonstack.snapshot.v1+json");
    const snapshot = await client.getSnapshot("vk-ns-b-0", "hibernate");
    assert.equal(snapshot?.baseImage, "ghcr.io/cocoonstack/cocoon/ubuntu:24.04");
    assert.equal(snapshot?.digest, pushed.digest);
    assert.equal(await client.getSnapshot("vk-ns-b-0", "latest"), null);
    await assert.rejects(client.getManifest("vk-ns-b-0", "latest"), ManifestNotFoundError);
  });

  it("turns error statuses into RegistryError with status and code", async () => {
    await pushTestManifest(reg, "proj/vk-ns-c-0", "hibernate");
    const client = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    // distribution answers a malformed digest with 500 UNKNOWN.
    await rejectsWith(client.hasManifest("vk-ns-c-0", "sha256:zz"), { status: 500, code: "HTTP_500" });
    await rejectsWith(client.getManifest("vk-ns-c-0", "sha256:zz"), { status: 500, code: "UNKNOWN" });
  });

  it("falls back to a digest delete when the registry refuses a tag delete", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-d-0", "hibernate");
    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    await client.deleteManifest("vk-ns-d-0", "hibernate");
    assert.deepEqual(
      calls.filter((c) => c.path !== "/v2/"),
      [
        { method: "DELETE", path: "/v2/proj/vk-ns-d-0/manifests/hibernate", status: 400 },
        { method: "HEAD", path: "/v2/proj/vk-ns-d-0/manifests/hibernate", status: 200 },
        { method: "GET", path: "/v2/proj/vk-ns-d-0/tags/list", status: 200 },
        { method: "DELETE", path: `/v2/proj/vk-ns-d-0/manifests/${pushed.digest}`, status: 202 },
      ],
    );
    assert.equal(await client.hasManifest("vk-ns-d-0", "hibernate"), false);
  });

  it("treats the delete of an absent tag or digest as success", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-e-0", "latest");
    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    await client.deleteManifest("vk-ns-e-0", "hibernate");
    await client.deleteTagAt("vk-ns-e-0", "latest", pushed.digest);
    await client.deleteManifest("vk-ns-e-0", pushed.digest);
    assert.deepEqual(
      calls.filter((c) => c.path !== "/v2/").map((c) => `${c.method} ${c.status}`),
      ["DELETE 400", "HEAD 404", "GET 200", "DELETE 202", "GET 200", "DELETE 404"],
    );
  });

  it("deletes one of two tags naming one digest and leaves the manifest to the other", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-s-0", "ckpt-c2");
    const setup = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    const source = await setup.getManifest("vk-ns-s-0", "ckpt-c2");
    await setup.putManifest("vk-ns-s-0", "hibernate", source.raw, source.mediaType);
    assert.equal((await setup.headManifest("vk-ns-s-0", "hibernate"))?.digest, pushed.digest);

    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    await client.deleteIfPresent("vk-ns-s-0", "hibernate");
    assert.equal(await client.headManifest("vk-ns-s-0", "hibernate"), null);
    assert.equal((await client.headManifest("vk-ns-s-0", "ckpt-c2"))?.digest, pushed.digest);
    assert.equal((await client.getManifest("vk-ns-s-0", pushed.digest)).digest, pushed.digest);
    assert.deepEqual(await client.listTags("vk-ns-s-0"), ["ckpt-c2"]);
    assert.deepEqual(
      calls
        .filter((c) => c.path !== "/v2/")
        .slice(0, 8)
        .map(
          (c) =>
            `${c.method} ${c.path.replace(pushed.digest, "<shared>").replace(/sha256:\w+/, "<own>")} ${c.status}`,
        ),
      [
        "HEAD /v2/proj/vk-ns-s-0/manifests/hibernate 200",
        "DELETE /v2/proj/vk-ns-s-0/manifests/hibernate 400",
        "GET /v2/proj/vk-ns-s-0/tags/list 200",
        "HEAD /v2/proj/vk-ns-s-0/manifests/ckpt-c2 200",
        "HEAD /v2/proj/vk-ns-s-0/manifests/hibernate 200",
        "GET /v2/proj/vk-ns-s-0/manifests/<shared> 200",
        "PUT /v2/proj/vk-ns-s-0/manifests/hibernate 201",
        "DELETE /v2/proj/vk-ns-s-0/manifests/<own> 202",
      ],
    );
  });

  it("deleteIfPresent sends no DELETE for an absent tag and deletes a present one", async () => {
    await pushTestManifest(reg, "proj/vk-ns-f-0", "hibernate");
    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    assert.equal(await client.deleteIfPresent("vk-ns-f-0", "latest"), false);
    assert.equal(calls.filter((c) => c.method === "DELETE").length, 0);
    assert.equal(await client.deleteIfPresent("vk-ns-f-0", "hibernate"), true);
    assert.equal(await client.hasManifest("vk-ns-f-0", "hibernate"), false);
  });

  it("deleteTagAt deletes the digest a probe saw: a snapshot pushed under the tag after the probe survives", async () => {
    await pushTestManifest(reg, "proj/vk-ns-g-0", "hibernate", { cycle: "1" });
    const client = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    const probed = await client.headManifest("vk-ns-g-0", "hibernate");
    assert.ok(probed);
    const newer = await pushTestManifest(reg, "proj/vk-ns-g-0", "hibernate", { cycle: "2" });
    assert.notEqual(newer.digest, probed.digest);
    // distribution refuses the tag delete; the overwritten manifest, still held by digest, is what goes.
    await client.deleteTagAt("vk-ns-g-0", "hibernate", probed.digest);
    assert.equal((await client.headManifest("vk-ns-g-0", "hibernate"))?.digest, newer.digest);
    await client.deleteTagAt("vk-ns-g-0", "hibernate", newer.digest);
    assert.equal(await client.hasManifest("vk-ns-g-0", "hibernate"), false);
    await client.deleteTagAt("vk-ns-g-0", "hibernate", newer.digest);
  });

  it("pings once and reuses the scheme it found", async () => {
    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    await client.hasManifest("vk-ns-g-0", "hibernate");
    await client.hasManifest("vk-ns-g-0", "latest");
    // https is tried first on a loopback host, then plain http answers.
    assert.deepEqual(
      calls.filter((c) => c.path === "/v2/").map((c) => c.status),
      [0, 200],
    );
  });
});

describe("token auth registry", () => {
  let reg: TestRegistry;
  before(async () => {
    reg = await startRegistry({
      auth: "token",
      users: [
        { user: "admin", password: "admin-secret" },
        { user: "reader", password: "reader-secret", access: [{ repository: "proj/*", actions: ["pull"] }] },
      ],
    });
  });
  after(() => reg.stop());

  const clientFor = (user: string, password: string, extra: RegistryClientOptions = {}) =>
    createRegistryClient(`${reg.host}/proj`, {
      caFile: reg.caFile,
      dockerConfigPath: dockerConfig(`token-${user}-${password}`, reg.host, user, password),
      ...extra,
    });

  it("fetches a pull token for reads, caches it, and a push,pull token for deletes", async () => {
    await pushTestManifest(reg, "proj/vk-ns-t-0", "hibernate");
    const requests = reg.tokenRequests ?? [];
    const before = requests.length;
    const client = clientFor("admin", "admin-secret");
    assert.equal(await client.hasManifest("vk-ns-t-0", "hibernate"), true);
    assert.equal(await client.hasManifest("vk-ns-t-0", "latest"), false);
    const reads = requests.slice(before);
    assert.equal(reads.length, 1, "the second HEAD reuses the cached token");
    assert.equal(reads[0]?.user, "admin");
    assert.equal(reads[0]?.service, "test-registry");
    assert.deepEqual(reads[0]?.scopes, ["repository:proj/vk-ns-t-0:pull"]);

    await client.deleteManifest("vk-ns-t-0", "hibernate");
    const scopes = requests.slice(before + 1).flatMap((r) => r.scopes);
    assert.ok(scopes.includes("repository:proj/vk-ns-t-0:push,pull"), scopes.join(" "));
    // distribution asks for the delete action in its 401 challenge; the client adds that scope.
    assert.ok(scopes.includes("repository:proj/vk-ns-t-0:delete"), scopes.join(" "));
    assert.equal(await client.hasManifest("vk-ns-t-0", "hibernate"), false);
  });

  it("lets a pull-only user read but not delete", async () => {
    await pushTestManifest(reg, "proj/vk-ns-r-0", "hibernate");
    const client = clientFor("reader", "reader-secret");
    assert.equal(await client.hasManifest("vk-ns-r-0", "hibernate"), true);
    await rejectsWith(client.deleteManifest("vk-ns-r-0", "hibernate"), { status: 401, code: "UNAUTHORIZED" });
    assert.equal(await client.hasManifest("vk-ns-r-0", "hibernate"), true);
  });

  it("denies a repository outside the user's access", async () => {
    await pushTestManifest(reg, "other/vk-ns-o-0", "hibernate");
    const client = createRegistryClient(`${reg.host}/other`, {
      caFile: reg.caFile,
      dockerConfigPath: dockerConfig("token-reader-other", reg.host, "reader", "reader-secret"),
    });
    await rejectsWith(client.hasManifest("vk-ns-o-0", "hibernate"), { status: 401 });
  });

  it("reports wrong credentials as the token server's 401", async () => {
    await rejectsWith(clientFor("admin", "wrong").hasManifest("vk-ns-t-0", "hibernate"), {
      status: 401,
      code: "UNAUTHORIZED",
    });
  });

  it("verifies TLS: without the CA bundle the token server is not trusted", async () => {
    const client = createRegistryClient(`${reg.host}/proj`, {
      dockerConfigPath: dockerConfig("token-no-ca", reg.host, "admin", "admin-secret"),
    });
    await rejectsWith(client.hasManifest("vk-ns-t-0", "hibernate"), { status: 0, code: "UNREACHABLE" });
  });
});

describe("basic auth registry", () => {
  let reg: TestRegistry;
  before(async () => {
    reg = await startRegistry({ auth: "basic" });
  });
  after(() => reg.stop());

  it("sends docker config credentials on a Basic challenge", async () => {
    await pushTestManifest(reg, "proj/vk-ns-b-0", "hibernate");
    const creds = reg.credentials;
    assert.ok(creds);
    const client = createRegistryClient(`${reg.host}/proj`, {
      dockerConfigPath: dockerConfig("basic", reg.host, creds.user, creds.password),
    });
    assert.equal(await client.hasManifest("vk-ns-b-0", "hibernate"), true);
    await client.deleteManifest("vk-ns-b-0", "hibernate");
    assert.equal(await client.hasManifest("vk-ns-b-0", "hibernate"), false);
  });

  it("fails with 401 without credentials", async () => {
    const client = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    await rejectsWith(client.hasManifest("vk-ns-b-0", "hibernate"), { status: 401, code: "UNAUTHORIZED" });
  });
});

describe("registry that is down", () => {
  it("connection refused gives an UNREACHABLE error", async () => {
    const port = await freePort();
    const client = createRegistryClient(`127.0.0.1:${port}/proj`, { dockerConfigPath: noConfig });
    await rejectsWith(client.hasManifest("vk-ns-x-0", "hibernate"), { status: 0, code: "UNREACHABLE" });
    await rejectsWith(client.deleteManifest("vk-ns-x-0", "hibernate"), { status: 0, code: "UNREACHABLE" });
  });

  describe("a listener that never answers", () => {
    let server: Server;
    const sockets = new Set<Socket>();
    let host = "";
    before(async () => {
      server = createServer((socket) => {
        sockets.add(socket);
        socket.on("close", () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const address = server.address();
      host = `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    });
    after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it("times out with a TIMEOUT error", async () => {
      const client = createRegistryClient(`${host}/proj`, { timeoutMs: 300, dockerConfigPath: noConfig });
      await rejectsWith(client.hasManifest("vk-ns-x-0", "hibernate"), { status: 0, code: "TIMEOUT" });
    });

    it("honours cancellation with a CANCELLED error", async () => {
      const client = createRegistryClient(`${host}/proj`, { dockerConfigPath: noConfig });
      const controller = new AbortController();
      const pending = client.hasManifest("vk-ns-x-0", "hibernate", controller.signal);
      setTimeout(() => controller.abort(), 50);
      await rejectsWith(pending, { status: 0, code: "CANCELLED" });
    });
  });
});

// Checkpoints and branching (docs/checkpoints.md): manifest PUT within a repository, blob copies across them.

/** A registry without cross-repository mounts: it ignores mount= and opens an ordinary upload (202). */
function withoutMount(transport: FetchLike): FetchLike {
  return (url, init) => {
    const target = new URL(url);
    target.searchParams.delete("mount");
    target.searchParams.delete("from");
    return transport(target.href, init);
  };
}

describe("manifest copies", () => {
  let reg: TestRegistry;
  before(async () => {
    reg = await startRegistry();
  });
  after(() => reg.stop());

  const blobStatus = async (repo: string, digest: string): Promise<number> => {
    const res = await fetch(`${reg.url}/v2/proj/${repo}/blobs/${digest}`, { method: "HEAD" });
    return res.status;
  };

  it("putManifest tags new manifest bytes in the same repository without moving a blob", async () => {
    await pushTestManifest(reg, "proj/vk-ns-ck-0", "hibernate");
    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    const source = await client.getManifest("vk-ns-ck-0", "hibernate");
    const copy = JSON.parse(source.raw.toString("utf8"));
    copy.annotations = { ...copy.annotations, "cocoonset.cocoonstack.io/checkpoint": "ns/one" };
    const raw = Buffer.from(JSON.stringify(copy));
    const digest = await client.putManifest("vk-ns-ck-0", "ckpt-one", raw, source.mediaType);
    assert.notEqual(digest, source.digest);
    assert.equal((await client.headManifest("vk-ns-ck-0", "ckpt-one"))?.digest, digest);
    assert.equal(
      (await client.getManifest("vk-ns-ck-0", "hibernate")).digest,
      source.digest,
      "source untouched",
    );
    const writes = calls.filter((c) => c.method !== "GET" && c.method !== "HEAD");
    assert.deepEqual(writes, [
      { method: "PUT", path: "/v2/proj/vk-ns-ck-0/manifests/ckpt-one", status: 201 },
    ]);
  });

  it("copyManifest mounts each blob into the target repository, then PUTs the same manifest", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-src-0", "ckpt-a");
    const { calls, opts } = recording({ dockerConfigPath: noConfig });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    const result = await client.copyManifest("vk-ns-src-0", pushed.digest, "vk-ns-dst-0", "hibernate");
    assert.deepEqual(result.blobs, ["mounted", "mounted"]);
    assert.equal(result.digest, pushed.digest);
    assert.equal((await client.headManifest("vk-ns-dst-0", "hibernate"))?.digest, pushed.digest);
    for (const { digest } of referencedBlobs(
      (await client.getManifest("vk-ns-dst-0", "hibernate")).manifest,
    )) {
      assert.equal(await blobStatus("vk-ns-dst-0", digest), 200, `${digest} is in the target repository`);
    }
    const order = calls
      .map((c) => `${c.method} ${c.path} ${c.status}`)
      .filter((c) => !c.startsWith("GET /v2/ "));
    const [config, layer] = referencedBlobs(JSON.parse(pushed.raw.toString("utf8"))).map((b) => b.digest);
    // Each blob is looked for in the target first (HEAD), then mounted.
    assert.deepEqual(order.slice(0, 6), [
      `GET /v2/proj/vk-ns-src-0/manifests/${pushed.digest} 200`,
      `HEAD /v2/proj/vk-ns-dst-0/blobs/${config} 404`,
      "POST /v2/proj/vk-ns-dst-0/blobs/uploads/ 201",
      `HEAD /v2/proj/vk-ns-dst-0/blobs/${layer} 404`,
      "POST /v2/proj/vk-ns-dst-0/blobs/uploads/ 201",
      "PUT /v2/proj/vk-ns-dst-0/manifests/hibernate 201",
    ]);
    assert.ok(
      !calls.some((c) => c.method === "GET" && c.path.includes("/blobs/sha256:")),
      "no blob was read",
    );
  });

  it("streams each blob through when the registry answers the mount with a plain upload session", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-src-1", "ckpt-b");
    const { calls, opts } = recording({ dockerConfigPath: noConfig, fetch: withoutMount(createTransport()) });
    const client = createRegistryClient(`${reg.host}/proj`, opts);
    const result = await client.copyManifest("vk-ns-src-1", pushed.digest, "vk-ns-dst-1", "hibernate");
    assert.deepEqual(result.blobs, ["streamed", "streamed"]);
    assert.equal((await client.headManifest("vk-ns-dst-1", "hibernate"))?.digest, pushed.digest);
    for (const { digest } of referencedBlobs(
      (await client.getManifest("vk-ns-dst-1", "hibernate")).manifest,
    )) {
      assert.equal(await blobStatus("vk-ns-dst-1", digest), 200, `${digest} is in the target repository`);
      assert.ok(calls.some((c) => c.method === "GET" && c.path === `/v2/proj/vk-ns-src-1/blobs/${digest}`));
    }
    assert.equal(calls.filter((c) => c.method === "PUT" && c.path.includes("/blobs/uploads/")).length, 2);
  });

  it("fails a copy whose source is missing, leaving no tag in the target", async () => {
    const client = createRegistryClient(`${reg.host}/proj`, { dockerConfigPath: noConfig });
    await assert.rejects(
      client.copyManifest("vk-ns-none-0", "ckpt-gone", "vk-ns-dst-2", "hibernate"),
      ManifestNotFoundError,
    );
    assert.equal(await client.hasManifest("vk-ns-dst-2", "hibernate"), false);
  });
});

describe("manifest copies on a token auth registry", () => {
  let reg: TestRegistry;
  before(async () => {
    reg = await startRegistry({
      auth: "token",
      users: [
        { user: "admin", password: "admin-secret" },
        {
          user: "brancher",
          password: "brancher-secret",
          access: [
            { repository: "proj/vk-ns-from-*", actions: ["pull"] },
            { repository: "proj/vk-ns-to-*", actions: ["pull", "push"] },
          ],
        },
      ],
    });
  });
  after(() => reg.stop());

  it("asks one token for push,pull on the target and pull on the source for a mount", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-from-0", "ckpt-c");
    const client = createRegistryClient(`${reg.host}/proj`, {
      caFile: reg.caFile,
      dockerConfigPath: dockerConfig("token-brancher", reg.host, "brancher", "brancher-secret"),
    });
    const requests = reg.tokenRequests ?? [];
    const before = requests.length;
    const result = await client.copyManifest("vk-ns-from-0", pushed.digest, "vk-ns-to-0", "hibernate");
    assert.deepEqual(result.blobs, ["mounted", "mounted"]);
    const mountToken = requests
      .slice(before)
      .find((r) => r.scopes.includes("repository:proj/vk-ns-to-0:push,pull"));
    assert.ok(mountToken, "a push token for the target was requested");
    assert.ok(mountToken.scopes.includes("repository:proj/vk-ns-from-0:pull"), mountToken.scopes.join(" "));
    assert.equal((await client.headManifest("vk-ns-to-0", "hibernate"))?.digest, pushed.digest);
  });

  it("streams with bearer tokens over the CA-bundle transport where the mount is not taken", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-from-1", "ckpt-d");
    const client = createRegistryClient(`${reg.host}/proj`, {
      fetch: withoutMount(createTransport({ extraCa: readFileSync(reg.caFile ?? "", "utf8") })),
      dockerConfigPath: dockerConfig("token-brancher-stream", reg.host, "brancher", "brancher-secret"),
    });
    const result = await client.copyManifest("vk-ns-from-1", pushed.digest, "vk-ns-to-1", "hibernate");
    assert.deepEqual(result.blobs, ["streamed", "streamed"]);
    assert.equal((await client.headManifest("vk-ns-to-1", "hibernate"))?.digest, pushed.digest);
  });
});
