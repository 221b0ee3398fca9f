// The SDK end to end on the real API server, registry and vk-cocoon simulator with the in-process
// operator, connected the way a program connects: through a kubeconfig. A claim from a Running pool
// gives a group whose members run commands and hold files; it suspends and resumes, checkpoints,
// branches two ways, restores and is released; a claim from a missing pool fails with its typed
// reason, and a wait that cannot finish in time fails with CocoonTimeoutError.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { CocoonPoolSpec } from "../../src/apis/v1alpha1/types.ts";
import { CocoonClient, CocoonNotFoundError, CocoonTimeoutError } from "../../src/sdk/index.ts";
import { testEnv } from "../env/testenv.ts";
import { createPool, waitPoolReady } from "../support/poolapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv } from "../support/setwait.ts";

const env = testEnv();
const suffix = randomBytes(3).toString("hex");
const nodePool = `sdk-${suffix}`;
let e2e: SetEnv | undefined;
let client: CocoonClient;

before(async () => {
  e2e = await startSetEnv(env, "sdk", { nodes: [{ name: `sdk-node-${suffix}`, pool: nodePool }] });
  client = await CocoonClient.connect({ kubeconfig: env.kubeconfigPath, namespace: e2e.ns });
});

after(async () => {
  await e2e?.stop();
});

const poolSpec: CocoonPoolSpec = {
  replicas: 1,
  warmth: "Running",
  template: { spec: { nodePool, agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } } },
};

describe("the SDK on a real cluster", () => {
  it("claims, runs, stores files, suspends, checkpoints, branches, restores and releases", {
    timeout: 300_000,
  }, async () => {
    const ns = e2e?.ns ?? "";
    assert.equal(client.namespace, ns);
    await createPool(env, ns, "warm", poolSpec);
    await waitPoolReady(env, ns, "warm", 1);

    const progress: string[] = [];
    const group = await client.claim("warm", { timeoutMs: 60_000, onProgress: (t) => progress.push(t) });
    assert.ok(group.claim?.startsWith("warm-"), group.claim);
    assert.match(progress.at(-1) ?? "", /is Running/);
    assert.deepEqual(
      group.members.map((m) => [m.name, m.role]),
      [["main", "main"]],
    );
    assert.ok(group.members[0]?.node, "the main is placed");

    const hi = await group.exec("main", ["sh", "-c", "echo hi; echo err >&2"], { timeoutMs: 10_000 });
    assert.deepEqual([hi.exitCode, hi.stdout, hi.stderr], [0, "hi\n", "err\n"]);
    const failed = await group.exec("main", ["sh", "-c", "exit 3"], { timeoutMs: 10_000 });
    assert.equal(failed.exitCode, 3);

    const data = randomBytes(4096);
    await group.writeFile("main", "/var/tmp/task.bin", data);
    assert.deepEqual(Buffer.from(await group.readFile("main", "/var/tmp/task.bin")), data);

    await group.suspend({ timeoutMs: 120_000 });
    await group.resume({ timeoutMs: 120_000 });
    await group.touch();

    const ck = await group.checkpoint(`step-${suffix}`, { timeoutMs: 180_000 });
    assert.equal(ck.status?.phase, "Ready");

    const forks = await client.branch(`step-${suffix}`, { count: 2, timeoutMs: 180_000 });
    assert.equal(forks.length, 2);
    assert.notEqual(forks[0]?.name, forks[1]?.name);
    for (const fork of forks) assert.equal(fork.members[0]?.name, "main");

    await group.restore(`step-${suffix}`, { timeoutMs: 180_000 });
    for (const fork of forks) await fork.release({ timeoutMs: 120_000 });
    await group.release({ timeoutMs: 120_000 });
    await assert.rejects(client.group(group.name), CocoonNotFoundError);
  });

  it("a claim from a missing pool is CocoonNotFoundError, and a wait past its time CocoonTimeoutError", {
    timeout: 60_000,
  }, async () => {
    await assert.rejects(client.claim("no-such-pool"), (err: unknown) => {
      assert.ok(err instanceof CocoonNotFoundError, String(err));
      assert.equal(err.reason, "NotFound");
      return true;
    });
    await createPool(env, e2e?.ns ?? "", "empty", { ...poolSpec, replicas: 0 });
    await assert.rejects(client.claim("empty", { timeoutMs: 2_000 }), (err: unknown) => {
      assert.ok(err instanceof CocoonTimeoutError, String(err));
      assert.equal(err.reason, "Timeout");
      assert.match(err.progress, /^Pending/);
      return true;
    });
  });
});
