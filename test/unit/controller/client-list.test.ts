// KubeClient.list on the wire, against a local HTTP server playing the API server: gzip asked for
// and decoded, resourceVersion on the first page only, continue tokens followed, the per-item transform.

import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { gzipSync } from "node:zlib";
import type { KubeClient } from "../../../src/controller/client.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { anonymousClient } from "../../support/kubeclient.ts";

interface Seen {
  query: URLSearchParams;
  acceptEncoding: string | undefined;
}

const pods = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    metadata: { name: `p${from + i}`, namespace: "ns", managedFields: [{ manager: "m" }] },
  }));

let server: http.Server;
let seen: Seen[] = [];
/** Answers the next list requests in order. */
let answers: ((res: http.ServerResponse) => void)[] = [];

function page(body: unknown, gzip: boolean): (res: http.ServerResponse) => void {
  return (res) => {
    const json = Buffer.from(JSON.stringify(body));
    if (!gzip) {
      res.writeHead(200, { "Content-Type": "application/json" }).end(json);
      return;
    }
    const compressed = gzipSync(json);
    res.writeHead(200, { "Content-Type": "application/json", "Content-Encoding": "gzip" });
    // In small pieces, so the gunzip stream and the decoder both see split input.
    for (let i = 0; i < compressed.length; i += 7) res.write(compressed.subarray(i, i + 7));
    res.end();
  };
}

function client(): KubeClient {
  const address = server.address() as AddressInfo;
  return anonymousClient(`http://127.0.0.1:${address.port}`);
}

before(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const encoding = req.headers["accept-encoding"];
    seen.push({ query: url.searchParams, acceptEncoding: Array.isArray(encoding) ? encoding[0] : encoding });
    const answer = answers.shift();
    if (answer) answer(res);
    else res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("KubeClient.list", () => {
  it("asks for gzip, decodes a compressed and an uncompressed page, and follows continue", async () => {
    seen = [];
    answers = [
      page(
        { kind: "PodList", metadata: { resourceVersion: "10", continue: "next" }, items: pods(0, 3) },
        true,
      ),
      page({ kind: "PodList", metadata: { resourceVersion: "10" }, items: pods(3, 2) }, false),
    ];
    const kube = client();
    const result = await kube.list<{ metadata: { name: string } }>(PODS, "ns", {
      limit: 3,
      resourceVersion: "0",
    });
    kube.close();
    assert.deepEqual(
      result.items.map((p) => p.metadata.name),
      ["p0", "p1", "p2", "p3", "p4"],
    );
    assert.equal(result.resourceVersion, "10");
    assert.deepEqual(
      seen.map((s) => s.acceptEncoding),
      ["gzip", "gzip"],
    );
    assert.deepEqual(
      seen.map((s) => [s.query.get("resourceVersion"), s.query.get("continue"), s.query.get("limit")]),
      [
        ["0", null, "3"],
        [null, "next", "3"],
      ],
      "resourceVersion goes with the first page only; the continue token carries it after that",
    );
  });

  it("applies the transform to each item as it is decoded", async () => {
    seen = [];
    answers = [page({ kind: "PodList", metadata: { resourceVersion: "5" }, items: pods(0, 2) }, true)];
    const kube = client();
    const decoded: string[] = [];
    const result = await kube.list<{ metadata: { name: string; managedFields?: unknown } }>(PODS, "ns", {
      transform: (pod) => {
        decoded.push(pod.metadata.name);
        return { metadata: { name: pod.metadata.name.toUpperCase() } };
      },
    });
    kube.close();
    assert.deepEqual(decoded, ["p0", "p1"]);
    assert.deepEqual(result.items, [{ metadata: { name: "P0" } }, { metadata: { name: "P1" } }]);
    assert.equal(seen[0]?.query.has("resourceVersion"), false, "no resourceVersion: a consistent read");
  });

  it("turns a compressed error answer into the typed error", async () => {
    seen = [];
    answers = [
      (res) => {
        const status = { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" };
        res.writeHead(410, { "Content-Encoding": "gzip" }).end(gzipSync(JSON.stringify(status)));
      },
    ];
    const kube = client();
    await assert.rejects(kube.list(PODS, "ns", { resourceVersion: "3" }), { name: "GoneError", status: 410 });
    kube.close();
  });
});
