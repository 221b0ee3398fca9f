// The registry transport's responses (src/registry/transport.ts): headers read as Headers.get reads
// them, bodies read whole or streamed, and none of it through the built-in fetch classes, whose first
// use loads Node's bundled undici.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { createTransport } from "../../../src/registry/transport.ts";
import { repoRoot } from "../../support/build.ts";

let server: Server;
let base: string;

before(async () => {
  server = createServer((req, res) => {
    res.setHeader("www-authenticate", ['Bearer realm="a"', 'Basic realm="b"']);
    res.setHeader("docker-content-digest", "sha256:abc");
    res.statusCode = req.url === "/missing" ? 404 : 200;
    res.end(req.method === "HEAD" ? undefined : JSON.stringify({ path: req.url }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

describe("createTransport", () => {
  const transport = createTransport();

  it('answers with the status, the headers (repeated ones joined with ", ", any case) and the body', async () => {
    const res = await transport(`${base}/v2/`, { method: "GET", headers: {} });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("WWW-Authenticate"), 'Bearer realm="a", Basic realm="b"');
    assert.equal(res.headers.get("docker-content-digest"), "sha256:abc");
    assert.equal(res.headers.get("location"), null);
    assert.deepEqual(JSON.parse(Buffer.from(await res.arrayBuffer()).toString("utf8")), { path: "/v2/" });
  });

  it("streams the body when asked for it, once", async () => {
    const res = await transport(`${base}/missing`, { method: "GET", headers: {} });
    assert.equal(res.status, 404);
    assert.equal(res.body, res.body);
    const chunks: Uint8Array[] = [];
    for await (const chunk of res.body ?? []) chunks.push(chunk);
    assert.deepEqual(JSON.parse(Buffer.concat(chunks).toString("utf8")), { path: "/missing" });
  });

  it("has no body for HEAD", async () => {
    const res = await transport(`${base}/v2/`, { method: "HEAD", headers: {} });
    assert.equal(res.status, 200);
    assert.equal(res.body, null);
    assert.equal((await res.arrayBuffer()).byteLength, 0);
  });

  it("does not load undici (the built-in fetch's Response and Headers) for a request", async () => {
    const transportUrl = pathToFileURL(join(repoRoot, "src/registry/transport.ts")).href;
    const probe = `
      const { createTransport } = await import(${JSON.stringify(transportUrl)});
      const res = await createTransport()(${JSON.stringify(`${base}/v2/`)}, { method: "GET", headers: {} });
      await res.arrayBuffer();
      process.stdout.write(JSON.stringify({ status: res.status, builtins: process.moduleLoadList }));`;
    // Asynchronous: the child's request is answered by this process's server.
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", probe], {
      encoding: "utf8",
      env: { PATH: process.env.PATH },
    });
    const { status, builtins } = JSON.parse(stdout) as { status: number; builtins: string[] };
    assert.equal(status, 200);
    assert.ok(builtins.includes("NativeModule http"), "the probe saw no built-in load");
    assert.ok(!builtins.includes("NativeModule internal/deps/undici/undici"), "undici is loaded");
  });
});
