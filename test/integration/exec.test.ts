// Pod exec end to end: the real kube-apiserver proxying `kubectl exec` and our client's exec (WebSocket,
// and SPDY when a proxy refuses the WebSocket upgrade) to the simulator's kubelet API, which runs the
// command in the pod's simulated guest as vk-cocoon's RunInContainer does.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import { FakeClock } from "../../src/clock.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_FORK_FROM,
  ANN_HIBERNATE,
  ANN_IMAGE,
  ANN_LIFECYCLE_STATE,
  ANN_MANAGED,
  ANN_MODE,
  ANN_OS,
  ANN_VM_NAME,
  LABEL_NODE_POOL,
  TOLERATION_KEY,
} from "../../src/contract/keys.ts";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { isForbidden, NotFoundError } from "../../src/controller/errors.ts";
import {
  ExecFailedError,
  ExecPodNotRunningError,
  type ExecResult,
  ExecTimeoutError,
  KubeExecutor,
  type PodExecutor,
} from "../../src/controller/exec.ts";
import { kubeconfigFromDocument, restConfigFromKubeconfig } from "../../src/controller/kubeconfig.ts";
import { PODS } from "../../src/controller/resources.ts";
import { controlPlaneBinDir } from "../env/controlplane.ts";
import { type Simulator, startSimulator } from "../env/simulator/index.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { repoRoot } from "../support/build.ts";
import { FakeClient } from "../support/fakeclient.ts";
import { startTinyproxy } from "../support/proxyenv.ts";
import { serviceAccountToken } from "../support/serviceaccount.ts";
import { startUpgradeRefusingProxy, type UpgradeRefusingProxy } from "../support/upgradeproxy.ts";

const env = testEnv();
const nodeName = `exec-${randomBytes(3).toString("hex")}`;
/** A second node, in a pool of its own, that holds no node-local snapshot of the first one's VMs. */
const otherNode = `${nodeName}-b`;
let sim: Simulator;
let ns: string;
let client: KubeClient;
let executor: KubeExecutor;

before(async () => {
  ns = await createNamespace(env, "exec");
  sim = await startSimulator({
    ...env,
    nodes: [
      { name: nodeName, pool: nodeName },
      { name: otherNode, pool: otherNode },
    ],
    timings: { bootMs: 20, readyMs: 20, hibernateMs: 20, wakeMs: 20, deleteMs: 20, sshDialTimeoutMs: 50 },
  });
  client = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
  executor = new KubeExecutor(client);
});

after(async () => {
  client?.close();
  await sim?.stop({ removeNodes: true });
});

function vmName(pod: string): string {
  return `vk-${ns}-${pod}`;
}

async function createPod(
  name: string,
  annotations: Record<string, string> = {},
  pool = nodeName,
): Promise<void> {
  const res = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: ns,
      annotations: {
        [ANN_VM_NAME]: vmName(name),
        [ANN_MANAGED]: "true",
        [ANN_MODE]: "run",
        [ANN_IMAGE]: "ubuntu-dev-base",
        [ANN_COCOONSET_GENERATION]: "1",
        ...annotations,
      },
    },
    spec: {
      nodeSelector: { [LABEL_NODE_POOL]: pool },
      tolerations: [{ key: TOLERATION_KEY, operator: "Exists" }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "agent", image: "ghcr.io/cocoonstack/placeholder:latest" }],
    },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

async function podWhere(name: string, what: string, match: (pod: Pod) => boolean): Promise<Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
    const pod = res.body as Pod;
    return res.status === 200 && match(pod) ? pod : undefined;
  });
}

const ready = (pod: Pod) => pod.metadata.annotations?.[ANN_LIFECYCLE_STATE] === "ready";

async function runningPod(
  name: string,
  annotations: Record<string, string> = {},
  pool = nodeName,
): Promise<void> {
  await createPod(name, annotations, pool);
  await podWhere(name, "ready", ready);
}

/** Runs the testenv's kubectl in the test's namespace, with `stdin` as its input (closed after). */
function kubectl(
  args: string[],
  opts: { stdin?: string; env?: Record<string, string> } = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  const child = spawn(
    join(controlPlaneBinDir(), "kubectl"),
    ["--kubeconfig", env.kubeconfigPath, "-n", ns, ...args],
    {
      env: { ...process.env, ...opts.env },
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdin.end(opts.stdin ?? "");
  return new Promise((resolve) =>
    child.once("close", (code) => resolve({ stdout, stderr, code: code ?? 1 })),
  );
}

describe("kubectl exec through the API server", () => {
  test("answers cat /etc/machine-id and hostname from the pod's guest", async () => {
    await runningPod("kubectl-a");
    const guest = sim.guestOf(ns, "kubectl-a");
    assert.ok(guest);
    const machineId = await kubectl(["exec", "kubectl-a", "--", "cat", "/etc/machine-id"]);
    assert.equal(machineId.code, 0, machineId.stderr);
    assert.equal(machineId.stdout, `${guest.machineId()}\n`);
    assert.match(machineId.stdout, /^[0-9a-f]{32}\n$/);
    const hostname = await kubectl(["exec", "kubectl-a", "--", "hostname"]);
    assert.equal(hostname.stdout, `${vmName("kubectl-a")}\n`);
  });

  test("kubectl's own SPDY client, WebSockets turned off, reaches the guest through the upgrade proxy", async () => {
    const res = await kubectl(["exec", "-i", "kubectl-a", "--", "sh", "-c", "cat; hostname >&2"], {
      stdin: "through spdy\n",
      env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false" },
    });
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stdout, "through spdy\n");
    assert.equal(res.stderr, `${vmName("kubectl-a")}\n`);
  });

  test("a pod without a live VM answers vk-cocoon's error", async () => {
    await runningPod("kubectl-hib");
    await apiRequest(
      env,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/kubectl-hib`,
      { metadata: { annotations: { [ANN_HIBERNATE]: "true" } } },
      "application/merge-patch+json",
    );
    await podWhere(
      "kubectl-hib",
      "hibernated",
      (p) => p.metadata.annotations?.[ANN_LIFECYCLE_STATE] === "hibernated",
    );
    const res = await kubectl(["exec", "kubectl-hib", "--", "true"]);
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, new RegExp(`pod ${ns}/kubectl-hib has no live VM`));
  });
});

describe("our client's exec", () => {
  before(async () => {
    await runningPod("client-a");
  });

  test("returns stdout, stderr and exit code 0 over the WebSocket", async () => {
    const result = await executor.exec({
      namespace: ns,
      pod: "client-a",
      command: ["sh", "-c", "echo to-out; echo to-err >&2"],
    });
    assert.equal(result.exitCode, 0);
    assert.equal(result.stdout.toString(), "to-out\n");
    assert.equal(result.stderr.toString(), "to-err\n");
    assert.equal(result.transport, "websocket");
    assert.equal(result.stdoutTruncated, false);
  });

  test("a failing command is vk-cocoon's wrapped SSH exit, not an exit code", async () => {
    const failed = await executor
      .exec({ namespace: ns, pod: "client-a", command: ["sh", "-c", "echo half; exit 3"] })
      .then(
        () => assert.fail("a non-zero exit must not look like success"),
        (err: unknown) => err,
      );
    assert.ok(failed instanceof ExecFailedError, String(failed));
    assert.equal(failed.reason, "InternalError");
    assert.match(failed.message, /ssh exec sh on [0-9.]+: Process exited with status 3/);
    // What the command wrote before it failed comes with the error.
    assert.equal(failed.stdout.toString(), "half\n");
  });

  test("stdin is written to a file and read back", async () => {
    const content = randomBytes(50_000);
    const write = await executor.exec({
      namespace: ns,
      pod: "client-a",
      command: ["sh", "-c", "cat > /var/tmp/upload"],
      stdin: content,
    });
    assert.equal(write.exitCode, 0);
    const read = await executor.exec({ namespace: ns, pod: "client-a", command: ["cat", "/var/tmp/upload"] });
    assert.deepEqual(read.stdout, content);
  });

  test("output past the bound is dropped and flagged", async () => {
    const content = randomBytes(10_000);
    await executor.exec({
      namespace: ns,
      pod: "client-a",
      command: ["sh", "-c", "cat > /var/tmp/big"],
      stdin: content,
    });
    const result = await executor.exec({
      namespace: ns,
      pod: "client-a",
      command: ["cat", "/var/tmp/big"],
      maxOutputBytes: 1000,
    });
    assert.equal(result.stdoutTruncated, true);
    assert.deepEqual(result.stdout, content.subarray(0, 1000));
    assert.equal(result.stderrTruncated, false);
  });

  test("a hanging command ends at the caller's deadline with a timeout error", async () => {
    await runningPod("client-hang");
    sim.faults.hangExec(vmName("client-hang"), true);
    const abort = new AbortController();
    // The deadline is the test's: it passes once the guest shows the command running.
    const started = sim.record.waitFor((e) => e.kind === "exec" && e.podName === "client-hang");
    void started.then(() => abort.abort());
    const err = await executor
      .exec({ namespace: ns, pod: "client-hang", command: ["sleep", "1"], signal: abort.signal })
      .then(
        () => assert.fail("a hung exec must not succeed"),
        (e: unknown) => e,
      );
    // Whether the guest's session ends too is up to the API server noticing the client left (a hijacked
    // connection cancels nothing by itself); the client's own deadline is what this checks.
    assert.ok(err instanceof ExecTimeoutError, String(err));
  });

  test("timeoutMs runs on the executor's clock: a hung command ends when that clock passes it", async () => {
    await runningPod("client-deadline");
    sim.faults.hangExec(vmName("client-deadline"), true);
    const clock = new FakeClock();
    const timed = new KubeExecutor(client, clock);
    const outcome = timed
      .exec({ namespace: ns, pod: "client-deadline", command: ["true"], timeoutMs: 5_000 })
      .then(
        () => assert.fail("a hung exec must not succeed"),
        (e: unknown) => e,
      );
    let settled = false;
    void outcome.finally(() => {
      settled = true;
    });
    await sim.record.waitFor((e) => e.kind === "exec" && e.podName === "client-deadline");
    clock.advance(4_999);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(settled, false, "the deadline has not passed on the executor's clock");
    clock.advance(1);
    const err = await outcome;
    assert.ok(err instanceof ExecTimeoutError, String(err));
    assert.match(err.message, /no exit within 5000 ms/);
  });

  test("a guest that does not answer SSH fails after vk-cocoon's dial timeout", async () => {
    await runningPod("client-silent");
    sim.faults.silenceGuest(vmName("client-silent"), true);
    const err = await executor.exec({ namespace: ns, pod: "client-silent", command: ["true"] }).then(
      () => assert.fail("a silent guest must not answer"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ExecFailedError, String(err));
    assert.match(err.message, /dial [0-9.]+:22: i\/o timeout/);
  });

  test("a failing SSH handshake fails every exec before the command runs", async () => {
    await runningPod("client-nossh");
    sim.faults.failSshHandshake(vmName("client-nossh"), true);
    await assert.rejects(
      executor.exec({ namespace: ns, pod: "client-nossh", command: ["true"] }),
      (err: unknown) =>
        err instanceof ExecFailedError && /ssh handshake [0-9.]+:22: .*handshake failed/.test(err.message),
    );
    assert.equal(
      sim.record.events({ kind: "exec", podName: "client-nossh" }).some((e) => e.detail?.endsWith("started")),
      false,
    );
  });

  test("a pod with no VM and a pod that is gone are typed errors", async () => {
    await runningPod("client-hib");
    await apiRequest(
      env,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/client-hib`,
      { metadata: { annotations: { [ANN_HIBERNATE]: "true" } } },
      "application/merge-patch+json",
    );
    await podWhere("client-hib", "Pending", (p) => p.status?.phase === "Pending");
    await assert.rejects(
      executor.exec({ namespace: ns, pod: "client-hib", command: ["true"] }),
      (err: unknown) => err instanceof ExecPodNotRunningError && err.phase === "Pending",
    );
    await assert.rejects(
      executor.exec({ namespace: ns, pod: "no-such-pod", command: ["true"] }),
      (err: unknown) => err instanceof NotFoundError,
    );
  });

  test("a Windows guest answers that exec is not supported", async () => {
    await runningPod("client-win", { [ANN_OS]: "windows" });
    const result = await executor.exec({ namespace: ns, pod: "client-win", command: ["hostname"] });
    assert.equal(result.exitCode, 0);
    assert.match(
      result.stdout.toString(),
      /kubectl exec is not supported on Windows guests\. Connect via RDP to /,
    );
  });
});

describe("exec through a forward proxy", () => {
  test("a kubeconfig proxy-url tunnels the exec's upgrade as it does every request", async () => {
    await runningPod("proxied");
    const proxy = await startTinyproxy();
    const doc = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "c",
          cluster: { server: env.server, "certificate-authority": env.caFile, "proxy-url": proxy.url },
        },
      ],
      users: [{ name: "u", user: { token: env.token } }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    };
    const proxied = new KubeClient({
      kubeConfig: restConfigFromKubeconfig(kubeconfigFromDocument(doc, repoRoot), { env: {} }),
    });
    try {
      const before = proxy.requests().length;
      const result = await new KubeExecutor(proxied).exec({
        namespace: ns,
        pod: "proxied",
        command: ["hostname"],
      });
      assert.equal(result.stdout.toString(), `${vmName("proxied")}\n`);
      assert.equal(result.transport, "websocket");
      const port = new URL(env.server).port;
      assert.ok(
        proxy
          .requests()
          .slice(before)
          .some((line) => line.startsWith("CONNECT") && line.includes(`:${port}`)),
        "the exec went through the proxy",
      );
    } finally {
      proxied.close();
      await proxy.stop();
    }
  });
});

describe("SPDY when the WebSocket upgrade is refused", () => {
  let proxy: UpgradeRefusingProxy;
  let viaProxy: KubeClient;

  before(async () => {
    await runningPod("spdy-a");
    proxy = await startUpgradeRefusingProxy(env);
    viaProxy = new KubeClient({ kubeConfig: proxy.restConfig });
  });

  after(async () => {
    viaProxy?.close();
    await proxy?.stop();
  });

  test("falls back to SPDY with stdout, stderr and stdin intact", async () => {
    const spdy = new KubeExecutor(viaProxy);
    const result = await spdy.exec({
      namespace: ns,
      pod: "spdy-a",
      command: ["sh", "-c", "cat; echo to-err >&2"],
      stdin: Buffer.from("from stdin\n"),
    });
    assert.equal(result.transport, "spdy");
    assert.equal(result.stdout.toString(), "from stdin\n");
    assert.equal(result.stderr.toString(), "to-err\n");
    assert.equal(result.exitCode, 0);
    assert.ok(proxy.refusedWebSockets() > 0, "the proxy saw and refused the WebSocket upgrade");
  });

  test("a failure comes back the same way over SPDY", async () => {
    const spdy = new KubeExecutor(viaProxy);
    await assert.rejects(
      spdy.exec({ namespace: ns, pod: "spdy-a", command: ["false"] }),
      (err: unknown) => err instanceof ExecFailedError && /Process exited with status 1/.test(err.message),
    );
  });
});

describe("guest state follows the VM", () => {
  test("a fork is the same machine as its parent", async () => {
    await runningPod("state-main");
    await runningPod("state-fork", { [ANN_FORK_FROM]: vmName("state-main") });
    const id = async (pod: string) =>
      (await executor.exec({ namespace: ns, pod, command: ["cat", "/etc/machine-id"] })).stdout.toString();
    assert.equal(await id("state-fork"), await id("state-main"));
  });

  test("clones of one image start as the same machine", async () => {
    await runningPod("state-clone-1", { [ANN_MODE]: "clone", [ANN_IMAGE]: "shared-image" });
    await runningPod("state-clone-2", { [ANN_MODE]: "clone", [ANN_IMAGE]: "shared-image" });
    const identity = async (pod: string) =>
      (
        await executor.exec({
          namespace: ns,
          pod,
          command: ["sh", "-c", "cat /etc/machine-id; ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"],
        })
      ).stdout.toString();
    assert.equal(await identity("state-clone-2"), await identity("state-clone-1"));
  });

  test("a restore from the registry on another node brings the guest back", async () => {
    await runningPod("state-move");
    const path = `/api/v1/namespaces/${ns}/pods/state-move`;
    await executor.exec({
      namespace: ns,
      pod: "state-move",
      command: ["sh", "-c", "echo moved > /var/tmp/note"],
    });
    const before = (
      await executor.exec({
        namespace: ns,
        pod: "state-move",
        command: ["cat", "/etc/machine-id", "/var/tmp/note"],
      })
    ).stdout.toString();
    await apiRequest(
      env,
      "PATCH",
      path,
      { metadata: { annotations: { [ANN_HIBERNATE]: "true" } } },
      "application/merge-patch+json",
    );
    await podWhere(
      "state-move",
      "hibernated",
      (p) => p.metadata.annotations?.[ANN_LIFECYCLE_STATE] === "hibernated",
    );
    await apiRequest(env, "DELETE", path);
    await waitFor("state-move deleted", async () =>
      (await apiRequest(env, "GET", path)).status === 404 ? true : undefined,
    );
    // The same VM name on the other node: its :hibernate tag is restored through a registry import.
    await runningPod("state-move", {}, otherNode);
    const restored = sim.record.events({ kind: "restore", podName: "state-move" }).at(-1);
    assert.equal(restored?.node, otherNode);
    assert.equal(restored?.snapshot?.imported, true);
    const after = (
      await executor.exec({
        namespace: ns,
        pod: "state-move",
        command: ["cat", "/etc/machine-id", "/var/tmp/note"],
      })
    ).stdout.toString();
    assert.equal(after, before);
  });

  test("a hibernate and wake bring back machine-id, hostname and files", async () => {
    await runningPod("state-hib");
    await executor.exec({
      namespace: ns,
      pod: "state-hib",
      command: ["sh", "-c", "hostnamectl set-hostname renamed && echo kept > /var/tmp/note"],
    });
    const before = await executor.exec({
      namespace: ns,
      pod: "state-hib",
      command: ["sh", "-c", "cat /etc/machine-id; hostname; cat /var/tmp/note"],
    });
    const path = `/api/v1/namespaces/${ns}/pods/state-hib`;
    const patch = (value: string | null) =>
      apiRequest(
        env,
        "PATCH",
        path,
        { metadata: { annotations: { [ANN_HIBERNATE]: value } } },
        "application/merge-patch+json",
      );
    await patch("true");
    await podWhere(
      "state-hib",
      "hibernated",
      (p) => p.metadata.annotations?.[ANN_LIFECYCLE_STATE] === "hibernated",
    );
    await patch(null);
    await podWhere("state-hib", "woken", (p) => ready(p) && p.status?.phase === "Running");
    const after = await executor.exec({
      namespace: ns,
      pod: "state-hib",
      command: ["sh", "-c", "cat /etc/machine-id; hostname; cat /var/tmp/note"],
    });
    assert.equal(after.stdout.toString(), before.stdout.toString());
    assert.match(after.stdout.toString(), /\nrenamed\nkept\n$/);
  });
});

describe("RBAC: pods/exec", () => {
  /** A client authenticated as the service account `namespace/name`. */
  async function clientAs(namespace: string, name: string): Promise<KubeClient> {
    const token = await serviceAccountToken(env, namespace, name);
    const doc = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "env", cluster: { server: env.server, "certificate-authority": env.caFile } }],
      users: [{ name, user: { token } }],
      contexts: [{ name: "sa", context: { cluster: "env", user: name } }],
      "current-context": "sa",
    };
    return new KubeClient({
      kubeConfig: restConfigFromKubeconfig(kubeconfigFromDocument(doc, repoRoot), { env: {} }),
    });
  }

  /** A service account in the test's namespace whose Role grants `rules`. */
  async function accountWith(name: string, rules: object[]): Promise<void> {
    const post = async (path: string, body: object) => {
      const res = await apiRequest(env, "POST", path, body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    };
    await post(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name } });
    await post(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, { metadata: { name }, rules });
    await post(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
    });
  }

  const readPods = { apiGroups: [""], resources: ["pods"], verbs: ["get"] };

  before(async () => {
    await runningPod("rbac-a");
    // The operator's namespace and RBAC (a later -n wins); idempotent, so a sandbox that has them is fine.
    for (const apply of [
      ["apply", "-f", join(repoRoot, "config/default/namespace.yaml")],
      ["apply", "-n", "cocoon-system", "-k", join(repoRoot, "config/rbac")],
    ]) {
      const res = await kubectl(apply);
      assert.equal(res.code, 0, res.stderr);
    }
  });

  test("the operator's service account execs over the WebSocket", async () => {
    const operator = await clientAs("cocoon-system", "cocoon-operator");
    try {
      const result = await new KubeExecutor(operator).exec({
        namespace: ns,
        pod: "rbac-a",
        command: ["true"],
      });
      assert.equal(result.exitCode, 0);
      assert.equal(result.transport, "websocket");
    } finally {
      operator.close();
    }
  });

  test("without a pods/exec rule the exec is forbidden", async () => {
    await accountWith("no-exec", [readPods]);
    const denied = await clientAs(ns, "no-exec");
    try {
      await assert.rejects(
        new KubeExecutor(denied).exec({ namespace: ns, pod: "rbac-a", command: ["true"] }),
        (err: unknown) => isForbidden(err),
      );
    } finally {
      denied.close();
    }
  });

  test("create alone is refused over the WebSocket, which also needs get, and SPDY runs", async () => {
    await accountWith("create-only", [
      readPods,
      { apiGroups: [""], resources: ["pods/exec"], verbs: ["create"] },
    ]);
    const createOnly = await clientAs(ns, "create-only");
    try {
      const result = await new KubeExecutor(createOnly).exec({
        namespace: ns,
        pod: "rbac-a",
        command: ["true"],
      });
      assert.equal(result.transport, "spdy");
    } finally {
      createOnly.close();
    }
  });

  test("get alone is refused: the API server checks create on a WebSocket exec too", async () => {
    await accountWith("get-only", [readPods, { apiGroups: [""], resources: ["pods/exec"], verbs: ["get"] }]);
    const getOnly = await clientAs(ns, "get-only");
    try {
      await assert.rejects(
        new KubeExecutor(getOnly).exec({ namespace: ns, pod: "rbac-a", command: ["true"] }),
        (err: unknown) => isForbidden(err),
      );
    } finally {
      getOnly.close();
    }
  });
});

describe("FakeClient's exec answers as the API server in front of vk-cocoon does", () => {
  const pods = ["parity-run", "parity-hib"];
  let fake: FakeClient;

  before(async () => {
    await runningPod("parity-run");
    await runningPod("parity-hib");
    await apiRequest(
      env,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/parity-hib`,
      { metadata: { annotations: { [ANN_HIBERNATE]: "true" } } },
      "application/merge-patch+json",
    );
    await podWhere("parity-hib", "Pending", (p) => p.status?.phase === "Pending");
    fake = new FakeClient();
    for (const name of pods) {
      fake.seed(PODS, (await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).body as Pod);
    }
    // The fake's guest is the simulator's own, so only the answer's path differs.
    fake.onExec(async (request) => {
      const guest = sim.guestOf(request.namespace, request.pod);
      assert.ok(guest);
      let stdout = "";
      let stderr = "";
      const exitCode = await guest.run(request.command, {
        stdin: async () => Buffer.from(request.stdin ?? []),
        stdout: (d) => {
          stdout += d.toString();
        },
        stderr: (d) => {
          stderr += d.toString();
        },
        signal: new AbortController().signal,
        clock: { now: Date.now, sleep: async () => undefined },
      });
      return { stdout, stderr, exitCode };
    });
  });

  const outcome = (
    executor: PodExecutor,
    command: string[],
    more: { pod?: string; maxOutputBytes?: number } = {},
  ) =>
    executor
      .exec({ namespace: ns, pod: more.pod ?? "parity-run", command, maxOutputBytes: more.maxOutputBytes })
      .then(
        (r: ExecResult) => ({ ok: { ...r, stdout: r.stdout.toString(), stderr: r.stderr.toString() } }),
        (e: Error) => ({ error: { type: e.constructor.name, message: e.message } }),
      );

  for (const [what, command, more] of [
    ["output and success", ["sh", "-c", "echo out; echo err >&2"], {}],
    ["a non-zero exit", ["sh", "-c", "echo half; exit 3"], {}],
    ["output past the bound", ["sh", "-c", "echo 0123456789"], { maxOutputBytes: 4 }],
    ["a pod that is not Running", ["true"], { pod: "parity-hib" }],
    ["a pod that is gone", ["true"], { pod: "parity-gone" }],
  ] as const) {
    test(what, async () => {
      const real = await outcome(executor, [...command], more);
      const scripted = await outcome(fake, [...command], more);
      if ("error" in real && real.error.type === "NotFoundError") {
        // The messages of a missing pod differ (the fake names its store); the type is the contract.
        assert.equal("error" in scripted && scripted.error.type, "NotFoundError");
        return;
      }
      assert.deepEqual(scripted, real);
    });
  }
});
