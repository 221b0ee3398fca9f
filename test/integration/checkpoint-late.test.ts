// Checkpoints switched on without a restart. A control plane of its own, since the CocoonCheckpoint
// CRD is cluster-wide and the shared one has it: it starts with the v1 CRDs only, and the operator
// runs as its service account with the ClusterRole from before checkpoints. The operator probes again
// on its (here shortened) schedule: 403 while the RBAC lacks checkpoints, 404 once config/rbac is
// applied but the CRD is not, and once the test applies config/crd it starts the checkpoint informer
// and controller: a checkpoint made then goes Ready, and the set that waited to branch from it branches.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments, stringify } from "yaml";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type { CocoonCheckpoint } from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, CONDITION_BRANCHED } from "../../src/checkpoint/keys.ts";
import { type ControlPlane, kubeconfigYaml, startControlPlane } from "../env/controlplane.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import type { TestOperator } from "../support/operator.ts";
import { createMainOnlySet, getSet, objectEvents, patchSetSpec, setPods } from "../support/setapi.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const CHECKPOINT_CRD = join(repoRoot, "config/crd/bases/cocoonset.cocoonstack.io_cocooncheckpoints.yaml");
const V1_CRDS = [
  "cocoonset.cocoonstack.io_cocoonsets.yaml",
  "cocoonset.cocoonstack.io_cocoonhibernations.yaml",
];
const REPROBE_MS = 200;
const suffix = randomBytes(3).toString("hex");
const pool = `ckptlate-${suffix}`;
let workDir: string;
let cp: ControlPlane;
let ns: string;
let e2e: SetEnv | undefined;
let operator: TestOperator;
/** The status code of every CocoonCheckpoint LIST the operator made after it started. */
const listCodes: string[] = [];

function kubectl(...args: string[]): void {
  execFileSync(join(cp.binDir, "kubectl"), ["--kubeconfig", cp.kubeconfigPath, ...args], { stdio: "pipe" });
}

/** config/rbac/role.yaml as it was before checkpoints: no rule names cocooncheckpoints. */
function roleWithoutCheckpoints(): string {
  const docs = parseAllDocuments(readFileSync(join(repoRoot, "config/rbac/role.yaml"), "utf8")).map((d) =>
    d.toJS(),
  );
  for (const doc of docs.filter((d) => d.kind === "ClusterRole")) {
    doc.rules = doc.rules
      .map((rule: { resources: string[] }) => ({
        ...rule,
        resources: rule.resources.filter((r) => !r.startsWith("cocooncheckpoints")),
      }))
      .filter((rule: { resources: string[] }) => rule.resources.length > 0);
  }
  return docs.map((d) => stringify(d)).join("---\n");
}

before(async () => {
  workDir = mkdtempSync(join(tmpdir(), "cocoon-ckptlate-"));
  const crdsDir = join(workDir, "crds");
  mkdirSync(crdsDir);
  for (const name of V1_CRDS) copyFileSync(join(repoRoot, "config/crd/bases", name), join(crdsDir, name));
  cp = await startControlPlane({ crdsDir });

  kubectl("apply", "-f", join(repoRoot, "config/default/namespace.yaml"));
  kubectl("apply", "-f", join(repoRoot, "config/rbac/serviceaccount.yaml"));
  const oldRole = join(workDir, "role-before-checkpoints.yaml");
  writeFileSync(oldRole, roleWithoutCheckpoints());
  kubectl("apply", "-f", oldRole);
  const token = await apiRequest(
    cp,
    "POST",
    "/api/v1/namespaces/cocoon-system/serviceaccounts/cocoon-operator/token",
    {
      apiVersion: "authentication.k8s.io/v1",
      kind: "TokenRequest",
      spec: { expirationSeconds: 3600 },
    },
  );
  assert.equal(token.status, 201, JSON.stringify(token.body));
  const saKubeconfig = join(workDir, "kubeconfig");
  writeFileSync(saKubeconfig, kubeconfigYaml({ ...cp, token: token.body.status.token }), { mode: 0o600 });

  e2e = await startSetEnv({ ...cp, registry: testEnv().registry }, "ckptlate", {
    nodes: [{ name: `ckptlate-${suffix}`, pool }],
    kubeconfigPath: saKubeconfig,
    checkpointReprobeMs: REPROBE_MS,
  });
  ({ ns, operator } = e2e);
  operator.client.onRequest((request) => {
    if (request.verb === "list" && request.resource === "cocooncheckpoints") listCodes.push(request.code);
  });
});

after(async () => {
  await e2e?.stop();
  await cp?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
});

function mainRunning(name: string): Promise<CocoonSet> {
  return waitFor(
    `${name} Running`,
    async () => {
      const cs = await getSet(cp, ns, name);
      return cs.status?.phase === "Running" && cs.status.readyAgents === 1 ? cs : undefined;
    },
    90_000,
  );
}

/** Waits for `count` more CocoonCheckpoint LISTs answered `code` than there were when called. */
function probesAnswered(code: string, count: number): Promise<true> {
  const before = listCodes.filter((c) => c === code).length;
  return waitFor(`${count} more probes answered ${code}`, async () =>
    listCodes.filter((c) => c === code).length >= before + count ? true : undefined,
  );
}

const checkpointsPath = () => `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`;

describe("checkpoints switched on while the operator runs", { timeout: 240_000 }, () => {
  it("without the CRD or its RBAC: sets run, a set asking to branch waits, the probe repeats (403)", async () => {
    assert.equal(operator.operator.checkpoints.isAvailable, false);
    await createMainOnlySet(cp, ns, pool, "plain");
    await createMainOnlySet(cp, ns, pool, "branch", { [ANN_FROM_CHECKPOINT]: "ck1" });
    await mainRunning("plain");
    const event = await waitFor("BranchWaiting event", async () =>
      (await objectEvents(cp, ns, "branch")).find((e) => e.reason === "BranchWaiting"),
    );
    assert.match(event.message, /CocoonCheckpoint API is not served/);
    assert.deepEqual(await setPods(cp, ns, "branch"), []);
    await probesAnswered("403", 2);
    assert.equal(operator.client.requestCounts().get("watch cocooncheckpoints"), undefined);
  });

  it("with config/rbac applied but no CRD: still off, the probe now answered 404", async () => {
    kubectl("apply", "-k", join(repoRoot, "config/rbac"));
    await probesAnswered("404", 2);
    assert.equal(operator.operator.checkpoints.isAvailable, false);
    assert.equal(operator.client.requestCounts().get("watch cocooncheckpoints"), undefined);
    assert.deepEqual(await setPods(cp, ns, "branch"), [], "the waiting set still creates nothing");
  });

  it("once config/crd is applied: checkpoints run, one goes Ready, the waiting set branches from it", async () => {
    kubectl("apply", "-f", CHECKPOINT_CRD);
    await waitFor("checkpoints enabled", async () =>
      operator.operator.checkpoints.isAvailable ? true : undefined,
    );
    assert.equal(listCodes.at(-1), "200", "the informer listed the kind");
    // The reflector opens its watch after the list it synced from, so the watch may come a moment later.
    await waitFor("the informer watches the kind", async () =>
      (operator.client.requestCounts().get("watch cocooncheckpoints") ?? 0) >= 1 ? true : undefined,
    );
    const listsWhenEnabled = listCodes.length;

    await createMainOnlySet(cp, ns, pool, "src");
    await mainRunning("src");
    const created = await apiRequest(cp, "POST", checkpointsPath(), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonCheckpoint",
      metadata: { name: "ck1", namespace: ns },
      spec: { cocoonSetRef: { name: "src" } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await patchSetSpec(cp, ns, "src", { suspend: true });
    const ready = await waitFor(
      "ck1 Ready",
      async () => {
        const res = await apiRequest(cp, "GET", `${checkpointsPath()}/ck1`);
        const ck = res.body as CocoonCheckpoint;
        return ck.status?.phase === "Ready" ? ck : undefined;
      },
      90_000,
    );
    assert.deepEqual(
      ready.status?.members?.map((m) => m.vmName),
      [`vk-${ns}-src-0`],
    );

    const branched = await mainRunning("branch");
    const condition = branched.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
    assert.equal(condition?.status, "True");
    assert.match(condition?.message ?? "", /CocoonCheckpoint ck1 of CocoonSet src: 1 VMs restore from it/);
    assert.equal(listCodes.length, listsWhenEnabled, "no probe once the kind is served");
  });
});
