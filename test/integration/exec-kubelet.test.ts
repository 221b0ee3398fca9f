// Our exec client against the real kubelet's exec code (k8s.io/kubelet's streaming remotecommand, in
// test/env/gokubelet) behind the real API server: the WebSocket path through the API server's
// translation to SPDY, and our own SPDY client (behind a proxy that refuses WebSocket upgrades)
// speaking to the kubelet through the API server's upgrade proxy. A real kubelet reports a non-zero
// exit as NonZeroExitCode, and ends an exec by closing the connection with no FIN on its streams.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { ExecFailedError, KubeExecutor } from "../../src/controller/exec.ts";
import { apiRequest, createNamespace, testEnv } from "../env/testenv.ts";
import { type GoKubelet, startGoKubelet } from "../support/gokubelet.ts";
import { startUpgradeRefusingProxy, type UpgradeRefusingProxy } from "../support/upgradeproxy.ts";

const env = testEnv();
const nodeName = `gokubelet-${randomBytes(3).toString("hex")}`;
const nodeIP = "127.77.250.1";
let kubelet: GoKubelet;
let proxy: UpgradeRefusingProxy;
let direct: KubeClient;
let viaProxy: KubeClient;
let ns: string;

before(async () => {
  kubelet = await startGoKubelet(nodeIP);
  const node = await apiRequest(env, "POST", "/api/v1/nodes", {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: nodeName },
    spec: { taints: [{ key: "gokubelet", effect: "NoSchedule" }] },
    status: {
      addresses: [{ type: "InternalIP", address: nodeIP }],
      daemonEndpoints: { kubeletEndpoint: { Port: kubelet.port } },
    },
  });
  assert.equal(node.status, 201, JSON.stringify(node.body));
  ns = await createNamespace(env, "gokubelet");
  const pod = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p" },
    spec: {
      nodeName,
      tolerations: [{ operator: "Exists" }],
      containers: [{ name: "c", image: "placeholder" }],
    },
  });
  assert.equal(pod.status, 201, JSON.stringify(pod.body));
  const running = await apiRequest(
    env,
    "PATCH",
    `/api/v1/namespaces/${ns}/pods/p/status`,
    { status: { phase: "Running" } },
    "application/merge-patch+json",
  );
  assert.equal(running.status, 200, JSON.stringify(running.body));
  direct = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
  proxy = await startUpgradeRefusingProxy(env);
  viaProxy = new KubeClient({ kubeConfig: proxy.restConfig });
});

after(async () => {
  direct?.close();
  viaProxy?.close();
  await proxy?.stop();
  kubelet?.stop();
  if (ns !== undefined) await apiRequest(env, "DELETE", `/api/v1/nodes/${nodeName}`);
});

for (const [transport, client] of [
  ["websocket", () => direct],
  ["spdy", () => viaProxy],
] as const) {
  describe(`over ${transport}`, () => {
    const exec = (command: string[], stdin?: Buffer) =>
      new KubeExecutor(client()).exec({ namespace: ns, pod: "p", command, ...(stdin ? { stdin } : {}) });

    test("stdout, stderr and the transport", async () => {
      const out = await exec(["echo", "hello", "kubelet"]);
      assert.equal(out.stdout.toString(), "hello kubelet\n");
      assert.equal(out.exitCode, 0);
      assert.equal(out.transport, transport);
      const err = await exec(["other", "words"]);
      assert.equal(err.stderr.toString(), "other words\n");
    });

    test("stdin reaches the command and is closed after it", async () => {
      const content = randomBytes(100_000);
      const result = await exec(["cat"], content);
      assert.deepEqual(result.stdout, content);
    });

    test("a non-zero exit is the exit code", async () => {
      assert.equal((await exec(["exit", "3"])).exitCode, 3);
    });

    test("a provider error is a typed failure", async () => {
      await assert.rejects(
        exec(["fail", "no", "such", "container"]),
        (e: unknown) => e instanceof ExecFailedError && /no such container/.test(e.message),
      );
    });
  });
}
