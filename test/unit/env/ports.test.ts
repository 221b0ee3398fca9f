import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { describe, it } from "node:test";
import { freePortPair, retryOnPortClash } from "../../env/ports.ts";

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

describe("test ports", () => {
  it("hands out two distinct ports that are both free", async () => {
    for (let i = 0; i < 50; i++) {
      const [a, b] = await freePortPair();
      assert.notEqual(a, b);
      const servers = await Promise.all([listen(a), listen(b)]);
      await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
    }
  });

  it("starts again on a fresh port when the first was taken, and only then", async () => {
    const taken = await listen(0);
    const takenPort = (taken.address() as { port: number }).port;
    const tried: number[] = [];
    try {
      const server = await retryOnPortClash(() => {
        const port = tried.length === 0 ? takenPort : 0;
        tried.push(port);
        return listen(port);
      });
      server.close();
    } finally {
      taken.close();
    }
    assert.deepEqual(tried, [takenPort, 0]);

    let calls = 0;
    await assert.rejects(
      retryOnPortClash(async () => {
        calls += 1;
        throw new Error("etcd exited (1): permission denied");
      }),
      /permission denied/,
    );
    assert.equal(calls, 1, "a failure that is not a port clash is not retried");

    calls = 0;
    await assert.rejects(
      retryOnPortClash(async () => {
        calls += 1;
        throw new Error("listen tcp 127.0.0.1:1: bind: address already in use");
      }),
      /address already in use/,
    );
    assert.equal(calls, 3, "gives up after three attempts");
  });
});
