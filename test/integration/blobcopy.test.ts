// Streamed blob copies on the real docker-registry (distribution 2.8), through the fault proxy: a
// blob the target holds is not sent, the rest goes in chunked PATCHes, a cut upload resumes from what
// the session holds, and a body-size limit refuses a monolithic PUT the chunked copy passes.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, beforeEach, describe, it } from "node:test";
import {
  createRegistryClient,
  type FetchLike,
  RegistryError,
  referencedBlobs,
} from "../../src/registry/index.ts";
import { createTransport } from "../../src/registry/transport.ts";
import { backoffMs } from "../../src/registry/upload.ts";
import { startRegistry, type TestRegistry } from "../env/registry.ts";
import { pushTestManifest } from "../env/registry-push.ts";
import { type RegistryProxy, startRegistryProxy } from "../support/faultproxy.ts";

const MiB = 1024 * 1024;

/** A blob of `size` bytes whose every MiB differs, pushed monolithically straight to the registry. */
async function pushBlob(reg: TestRegistry, repo: string, size: number, seed: number): Promise<string> {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (Math.imul(i, 2654435761) + seed * 97 + (i >> 20)) & 255;
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  const start = await fetch(`${reg.url}/v2/${repo}/blobs/uploads/`, { method: "POST" });
  await start.arrayBuffer();
  const location = new URL(start.headers.get("location") ?? "", reg.url);
  location.searchParams.set("digest", digest);
  const put = await fetch(location, { method: "PUT", body: bytes });
  await put.arrayBuffer();
  assert.equal(put.status, 201, "blob pushed");
  return digest;
}

interface Call {
  method: string;
  path: string;
  /** The answer's status; 0 while none came, or for none at all. */
  status: number;
}

/**
 * The transport with the mount query dropped (a registry that answers a mount with an upload session),
 * every request noted as it is sent, and the Range of every blob GET.
 */
function streaming(calls: Call[], ranges: string[]): FetchLike {
  const transport = createTransport();
  return async (url, init) => {
    const target = new URL(url);
    target.searchParams.delete("mount");
    target.searchParams.delete("from");
    if (init.method === "GET" && target.pathname.includes("/blobs/sha256:"))
      ranges.push(init.headers.range ?? "whole");
    const call = { method: init.method, path: target.pathname, status: 0 };
    calls.push(call);
    const res = await transport(target.href, init);
    call.status = res.status;
    return res;
  };
}

describe("streamed blob copies", () => {
  let reg: TestRegistry;
  let proxy: RegistryProxy;
  let ranges: string[];
  let sleeps: number[];
  const calls: Call[] = [];
  const client = (chunkSize: number) =>
    createRegistryClient(`${proxy.host}/proj`, {
      dockerConfigPath: "/nonexistent",
      fetch: streaming(calls, ranges),
      chunkSize,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
  /** Where the client's calls and the proxy's journal stand now. */
  const mark = () => ({ calls: calls.length, proxied: proxy.requests.length });
  type Mark = ReturnType<typeof mark>;
  /** The client's requests since `from`, in the order sent, without the /v2/ ping. */
  const journal = (from: Mark) =>
    calls
      .slice(from.calls)
      .filter((r) => r.path !== "/v2/")
      .map((r) => `${r.method} ${r.path.replace(/\/uploads\/[^/]+$/, "/uploads/<id>")} ${r.status}`);
  /** Bytes of upload bodies the proxy received since `from`. */
  const uploadedBytes = (from: Mark) =>
    proxy.requests
      .slice(from.proxied)
      .filter((r) => (r.method === "PATCH" || r.method === "PUT") && r.path.includes("/blobs/uploads/"))
      .reduce((sum, r) => sum + r.bytesIn, 0);

  before(async () => {
    reg = await startRegistry();
    proxy = await startRegistryProxy(reg.host);
  });
  after(async () => {
    await proxy.stop();
    await reg.stop();
  });
  beforeEach(() => {
    ranges = [];
    sleeps = [];
    proxy.setBodyLimit(undefined);
    proxy.bufferBodies(false);
  });

  it("goes in PATCHes of the chunk size, after a HEAD finds it absent, and lands the blob's digest", async () => {
    const size = 5 * MiB + 123;
    const digest = await pushBlob(reg, "proj/vk-ns-a-0", size, 1);
    const from = mark();
    const copied = await client(MiB).copyBlob("vk-ns-a-0", "vk-ns-b-0", { digest, size });
    assert.deepEqual(copied, { method: "streamed", bytesSent: size });
    assert.deepEqual(journal(from), [
      `HEAD /v2/proj/vk-ns-b-0/blobs/${digest} 404`,
      "POST /v2/proj/vk-ns-b-0/blobs/uploads/ 202",
      `GET /v2/proj/vk-ns-a-0/blobs/${digest} 200`,
      ...Array.from({ length: 6 }, () => "PATCH /v2/proj/vk-ns-b-0/blobs/uploads/<id> 202"),
      "PUT /v2/proj/vk-ns-b-0/blobs/uploads/<id> 201",
    ]);
    const patches = proxy.requests.slice(from.proxied).filter((r) => r.method === "PATCH");
    assert.deepEqual(
      patches.map((r) => r.bytesIn),
      [MiB, MiB, MiB, MiB, MiB, 123],
    );
    const landed = await fetch(`${reg.url}/v2/proj/vk-ns-b-0/blobs/${digest}`, { method: "HEAD" });
    assert.equal(landed.status, 200);
    assert.equal(landed.headers.get("docker-content-digest"), digest);
    assert.equal(landed.headers.get("content-length"), String(size));
  });

  it("sends nothing for a blob the target already holds, and counts it as present", async () => {
    const size = 2 * MiB;
    const digest = await pushBlob(reg, "proj/vk-ns-a-1", size, 2);
    await client(MiB).copyBlob("vk-ns-a-1", "vk-ns-b-1", { digest, size });
    const from = mark();
    const again = await client(MiB).copyBlob("vk-ns-a-1", "vk-ns-b-1", { digest, size });
    assert.deepEqual(again, { method: "present", bytesSent: 0 });
    assert.deepEqual(journal(from), [`HEAD /v2/proj/vk-ns-b-1/blobs/${digest} 200`]);
    assert.equal(uploadedBytes(from), 0);
  });

  it("copies a manifest sending only the blobs the target lacks", async () => {
    const pushed = await pushTestManifest(reg, "proj/vk-ns-a-5", "ckpt-a");
    const [config, layer] = referencedBlobs(JSON.parse(pushed.raw.toString("utf8")));
    assert.ok(config && layer);
    await client(MiB).copyBlob("vk-ns-a-5", "vk-ns-b-5", config);
    const from = mark();
    const copied = await client(MiB).copyManifest("vk-ns-a-5", pushed.digest, "vk-ns-b-5", "hibernate");
    assert.deepEqual(copied.blobs, ["present", "streamed"]);
    assert.equal(copied.bytesSent, layer.size);
    assert.equal(uploadedBytes(from), layer.size, "only the layer's bytes were uploaded");
    const uploads = journal(from).filter((r) => r.startsWith("POST "));
    assert.equal(uploads.length, 1, "one upload session, the layer's");
    const landed = await fetch(`${reg.url}/v2/proj/vk-ns-b-5/manifests/hibernate`, {
      method: "HEAD",
      headers: { accept: "application/vnd.oci.image.manifest.v1+json" },
    });
    assert.equal(landed.headers.get("docker-content-digest"), pushed.digest);
  });

  it("resumes an upload cut at 90 % from the byte after what the session holds: at most 15 % is sent again", async () => {
    const size = 20 * MiB;
    const digest = await pushBlob(reg, "proj/vk-ns-a-2", size, 3);
    const from = mark();
    // A front that buffers request bodies (nginx's default): the cut chunk never reaches the registry.
    proxy.bufferBodies(true);
    proxy.cutUploadAfter(Math.floor(size * 0.9));
    const copied = await client(4 * MiB).copyBlob("vk-ns-a-2", "vk-ns-b-2", { digest, size });
    assert.equal(copied.method, "streamed");
    const sent = uploadedBytes(from);
    assert.ok(sent >= size, `${sent} bytes reached the proxy`);
    assert.ok(sent - size <= size * 0.15, `re-sent ${sent - size} of ${size}`);
    assert.ok(copied.bytesSent - size <= size * 0.15, `the client counts ${copied.bytesSent - size} re-sent`);
    assert.deepEqual(sleeps, [backoffMs(2)], "one backoff, through the injected sleep");
    const steps = journal(from);
    const cut = steps.indexOf("PATCH /v2/proj/vk-ns-b-2/blobs/uploads/<id> 0");
    assert.ok(cut > 0, steps.join("\n"));
    // The session's status is asked before the source is read again, from the byte it names.
    assert.equal(steps[cut + 1], "GET /v2/proj/vk-ns-b-2/blobs/uploads/<id> 204");
    assert.equal(steps[cut + 2], `GET /v2/proj/vk-ns-a-2/blobs/${digest} 206`);
    assert.equal(steps.at(-1), "PUT /v2/proj/vk-ns-b-2/blobs/uploads/<id> 201");
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(ranges[1] ?? "")?.[1]);
    assert.deepEqual(ranges[0], "whole");
    assert.equal(resumedAt, 16 * MiB, "from the first byte of the chunk that was cut");
    const landed = await fetch(`${reg.url}/v2/proj/vk-ns-b-2/blobs/${digest}`, { method: "HEAD" });
    assert.equal(landed.headers.get("docker-content-digest"), digest);
  });

  it("starts the blob again in a new session where the registry dropped the one whose chunk was cut", async () => {
    // Straight to distribution, the cut chunk's first bytes land in the session: a request after that
    // finds the session's size off its state and cancels it (404 BLOB_UPLOAD_INVALID).
    const size = 6 * MiB;
    const digest = await pushBlob(reg, "proj/vk-ns-a-4", size, 5);
    const from = mark();
    proxy.cutUploadAfter(Math.floor(size * 0.9));
    const copied = await client(2 * MiB)
      .copyBlob("vk-ns-a-4", "vk-ns-b-4", { digest, size })
      .catch((err: unknown) => assert.fail(`${err}\n${journal(from).join("\n")}`));
    assert.equal(copied.method, "streamed");
    const steps = journal(from);
    const cut = steps.indexOf("PATCH /v2/proj/vk-ns-b-4/blobs/uploads/<id> 0");
    assert.ok(cut > 0, steps.join("\n"));
    // The session may still answer its status before the registry has seen the cut; its next PATCH
    // then finds it cancelled. Either way the session's 404 comes before a new one is opened.
    const gone = steps.findIndex(
      (s, i) => i > cut && s.endsWith(" 404") && s.includes("/blobs/uploads/<id>"),
    );
    const reopened = steps.indexOf("POST /v2/proj/vk-ns-b-4/blobs/uploads/ 202", cut);
    assert.ok(gone > cut && reopened > gone, steps.join("\n"));
    assert.equal(steps[reopened + 1], `GET /v2/proj/vk-ns-a-4/blobs/${digest} 200`);
    assert.equal(ranges.at(-1), "whole", "the new session is sent from byte 0");
    assert.ok(copied.bytesSent >= size + 4 * MiB, `${copied.bytesSent} bytes sent`);
    assert.equal(steps.at(-1), "PUT /v2/proj/vk-ns-b-4/blobs/uploads/<id> 201");
    const landed = await fetch(`${reg.url}/v2/proj/vk-ns-b-4/blobs/${digest}`, { method: "HEAD" });
    assert.equal(landed.headers.get("docker-content-digest"), digest);
  });

  it("passes a body-size limit in chunks where a monolithic PUT of the blob is refused", async () => {
    const size = 12 * MiB;
    const digest = await pushBlob(reg, "proj/vk-ns-a-3", size, 4);
    proxy.setBodyLimit(8 * MiB);
    const refused = await client(0)
      .copyBlob("vk-ns-a-3", "vk-ns-b-3", { digest, size })
      .then(
        () => assert.fail("a monolithic PUT over the limit must be refused"),
        (err: unknown) => err,
      );
    // The 413 comes while the body is still being sent: the client sees it, or the connection closing.
    assert.ok(refused instanceof RegistryError, String(refused));
    assert.ok(refused.status === 413 || refused.code === "UNREACHABLE", refused.message);
    assert.ok(proxy.requests.some((r) => r.method === "PUT" && r.status === 413));
    const absent = await fetch(`${reg.url}/v2/proj/vk-ns-b-3/blobs/${digest}`, { method: "HEAD" });
    assert.equal(absent.status, 404);
    const from = mark();
    const copied = await client(4 * MiB).copyBlob("vk-ns-a-3", "vk-ns-b-3", { digest, size });
    assert.deepEqual(copied, { method: "streamed", bytesSent: size });
    assert.ok(!proxy.requests.slice(from.proxied).some((r) => r.status === 413));
    const landed = await fetch(`${reg.url}/v2/proj/vk-ns-b-3/blobs/${digest}`, { method: "HEAD" });
    assert.equal(landed.headers.get("docker-content-digest"), digest);
  });
});
