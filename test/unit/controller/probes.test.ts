import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cachesSynced, HealthProbes } from "../../../src/controller/probes.ts";

async function probe(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

describe("HealthProbes", () => {
  it("/healthz answers while /readyz waits for the caches to sync", async () => {
    const informers = [{ synced: false }, { synced: false }].map((state) => ({
      state,
      hasSynced: () => state.synced,
    }));
    const probes = new HealthProbes();
    probes.addHealthCheck("ping", () => {});
    probes.addReadyCheck("informers", cachesSynced(informers));
    const endpoint = await probes.start("127.0.0.1:0");
    assert.ok(endpoint);
    try {
      assert.deepEqual(await probe(endpoint.port, "/healthz"), { status: 200, body: "ok\n" });
      const notReady = await probe(endpoint.port, "/readyz");
      assert.equal(notReady.status, 500);
      assert.match(notReady.body, /informers: informer caches not synced/);

      informers[0]!.state.synced = true;
      assert.equal((await probe(endpoint.port, "/readyz")).status, 500);
      informers[1]!.state.synced = true;
      assert.deepEqual(await probe(endpoint.port, "/readyz"), { status: 200, body: "ok\n" });
    } finally {
      await endpoint.close();
    }
  });

  it("fails a probe whose async check rejects", async () => {
    const probes = new HealthProbes();
    probes.addHealthCheck("loop", async () => {
      throw new Error("stalled");
    });
    assert.deepEqual(await probes.failing("healthz"), ["loop: stalled"]);
    assert.deepEqual(await probes.failing("readyz"), []);
  });
});
