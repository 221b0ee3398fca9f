// The operator as users run it: two processes of the compiled build (the image's layout and Node
// flags) with leader election on, running as the cocoon-operator service account under the RBAC from
// config/rbac, against a control plane of
// their own (they watch every namespace, so they must not share the suite's API server). Exactly one
// leads and brings a CocoonSet to Running; SIGKILL it and the other takes over and converges a
// replica change; SIGTERM the new leader and it releases the lease and exits 0.

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type { Lease } from "../../src/controller/leaderelection.ts";
import { type ControlPlane, kubeconfigYaml, startControlPlane } from "../env/controlplane.ts";
import { freePortPair } from "../env/ports.ts";
import { type Simulator, startSimulator } from "../env/simulator/index.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { buildImageLayout, IMAGE_NODE_FLAGS, repoRoot } from "../support/build.ts";
import { applyOperatorRbac, serviceAccountToken } from "../support/serviceaccount.ts";

const LEASE_NAME = "cocoon-operator.cocoonset.cocoonstack.io";
const LEASE_NS = "cocoon-system";
const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NS}/leases/${LEASE_NAME}`;
/** Lease 15 s + up to 2.2 retry periods of 2 s, with room for a loaded machine. */
const TAKEOVER_TIMEOUT_MS = 45_000;

interface OperatorProcess {
  name: string;
  child: ChildProcess;
  metricsPort: number;
  probePort: number;
  output: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const registry = testEnv().registry;
const suffix = randomBytes(3).toString("hex");
let cp: ControlPlane;
let sim: Simulator | undefined;
let workDir: string;
let mainJs: string;
let saKubeconfig: string;
const operators: OperatorProcess[] = [];

async function startOperator(name: string): Promise<OperatorProcess> {
  const [metricsPort, probePort] = await freePortPair();
  const child = spawn(
    process.execPath,
    [
      ...IMAGE_NODE_FLAGS,
      mainJs,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      "--health-probe-bind-address",
      `127.0.0.1:${probePort}`,
      "--leader-elect",
    ],
    {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH,
        HOME: workDir,
        KUBECONFIG: saKubeconfig,
        OCI_REGISTRY: registry,
        POD_NAMESPACE: LEASE_NS,
        OPERATOR_LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const output: string[] = [];
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => output.push(chunk));
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => output.push(chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => done({ code, signal })),
  );
  const op = { name, child, metricsPort, probePort, output, exit };
  operators.push(op);
  return op;
}

async function scrape(port: number, path: string): Promise<{ status: number; text: string } | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, text: await res.text() };
  } catch {
    return undefined;
  }
}

/** leader_election_master_status for our lease: 1 leading, 0 or absent not. */
async function leads(op: OperatorProcess): Promise<boolean> {
  const metrics = await scrape(op.metricsPort, "/metrics");
  const line = metrics?.text
    .split("\n")
    .find((l) => l.startsWith(`leader_election_master_status{name="${LEASE_NAME}"}`));
  return line?.trim().endsWith(" 1") ?? false;
}

async function ready(op: OperatorProcess): Promise<boolean> {
  return (await scrape(op.probePort, "/readyz"))?.status === 200;
}

async function lease(): Promise<Lease> {
  const res = await apiRequest(cp, "GET", leasePath);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as Lease;
}

function logsOf(op: OperatorProcess): string {
  return op.output.join("").split("\n").slice(-30).join("\n");
}

async function getSet(ns: string, name: string): Promise<CocoonSet> {
  const res = await apiRequest(
    cp,
    "GET",
    `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets/${name}`,
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonSet;
}

/** Running, with every desired agent ready, for the set's current generation. */
async function converged(ns: string, name: string, desired: number): Promise<true | undefined> {
  const cs = await getSet(ns, name);
  const s = cs.status;
  const done =
    s?.phase === "Running" &&
    s.desiredAgents === desired &&
    s.readyAgents === desired &&
    (s.observedGeneration ?? 0) >= (cs.metadata.generation ?? 0);
  return done ? true : undefined;
}

before(async () => {
  workDir = mkdtempSync(join(tmpdir(), "cocoon-leader-e2e-"));
  mainJs = buildImageLayout(workDir);
  cp = await startControlPlane();
  applyOperatorRbac(cp);
  saKubeconfig = join(workDir, "kubeconfig");
  writeFileSync(
    saKubeconfig,
    kubeconfigYaml({ ...cp, token: await serviceAccountToken(cp, LEASE_NS, "cocoon-operator") }),
    { mode: 0o600 },
  );
  sim = await startSimulator({ ...cp, registry, nodes: [{ name: `sim-${suffix}`, pool: "default" }] });
});

after(async () => {
  for (const op of operators) {
    if (op.child.exitCode === null && op.child.signalCode === null) op.child.kill("SIGKILL");
    await op.exit;
  }
  await sim?.stop({ removeNodes: true });
  await cp?.stop();
  rmSync(workDir, { recursive: true, force: true });
});

describe("two operator processes with leader election", { timeout: 240_000 }, () => {
  let leader: OperatorProcess;
  let standby: OperatorProcess;
  let ns: string;
  const setName = "demo";

  it("exactly one leads; the other is ready and waiting", async () => {
    const a = await startOperator("a");
    const b = await startOperator("b");
    leader = await waitFor(
      "a leader",
      async () => {
        for (const op of [a, b]) {
          assert.equal(op.child.exitCode, null, `operator ${op.name} exited:\n${logsOf(op)}`);
          if (await leads(op)) return op;
        }
        return undefined;
      },
      30_000,
    );
    standby = leader === a ? b : a;
    await waitFor("both ready", async () => ((await ready(a)) && (await ready(b)) ? true : undefined));
    assert.equal(await leads(standby), false);
    assert.equal(await leads(leader), true);
    const holder = (await lease()).spec?.holderIdentity ?? "";
    assert.notEqual(holder, "");
    assert.ok(leader.output.join("").includes(holder), "the Lease names the process that reports leading");
  });

  it("the leader brings a CocoonSet to Running", async () => {
    ns = await createNamespace(cp, "leader-e2e");
    const res = await apiRequest(
      cp,
      "POST",
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`,
      {
        apiVersion: "cocoonset.cocoonstack.io/v1",
        kind: "CocoonSet",
        metadata: { name: setName, namespace: ns },
        spec: { nodePool: "default", agent: { image: "ubuntu-dev-base", replicas: 1 } },
      },
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await waitFor("Running with 2 agents", () => converged(ns, setName, 2), 60_000);
  });

  it("SIGKILL the leader: the standby takes over and converges a replica change", async () => {
    const before = await lease();
    leader.child.kill("SIGKILL");
    await leader.exit;
    await waitFor(
      "the standby leads",
      async () => {
        assert.equal(standby.child.exitCode, null, `standby exited:\n${logsOf(standby)}`);
        return (await leads(standby)) ? true : undefined;
      },
      TAKEOVER_TIMEOUT_MS,
    );
    const after = await lease();
    assert.notEqual(after.spec?.holderIdentity, before.spec?.holderIdentity);
    assert.equal(after.spec?.leaseTransitions, (before.spec?.leaseTransitions ?? 0) + 1);

    const patch = await apiRequest(
      cp,
      "PATCH",
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets/${setName}`,
      { spec: { agent: { replicas: 2 } } },
      "application/merge-patch+json",
    );
    assert.equal(patch.status, 200, JSON.stringify(patch.body));
    await waitFor("Running with 3 agents", () => converged(ns, setName, 3), 60_000);
  });

  it("SIGTERM the new leader: it releases the lease and exits 0", async () => {
    standby.child.kill("SIGTERM");
    const { code, signal } = await standby.exit;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, logsOf(standby));
    assert.equal((await lease()).spec?.holderIdentity ?? "", "");
    assert.match(standby.output.join(""), /released leadership/);
  });

  it("the service account's RBAC covered every call either process made", () => {
    for (const op of operators) {
      const refusals = op.output
        .join("")
        .split("\n")
        .filter((line) => /forbidden/i.test(line));
      assert.deepEqual(refusals, [], `operator ${op.name}`);
    }
  });
});
