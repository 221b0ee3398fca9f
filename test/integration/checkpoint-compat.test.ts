// A branch whose spec a checkpoint's snapshots cannot restore under, end to end on the real API server
// and registry with the vk-cocoon simulator (which refuses another hypervisor's snapshot): the
// checkpoint records per member the image, backend, OS and snapshot compatibility class its snapshot
// was taken under; a branch asking for another backend, or another image, is refused before any copy
// (no tag in its VMs' repositories, no pod, nothing recorded) with a Branched=False condition and a
// Warning that name the member and the field; one that matches restores every VM it counts.

import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import type { AgentSpec, CocoonSet } from "../../src/apis/v1/types.ts";
import type { CocoonCheckpoint } from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, CONDITION_BRANCHED } from "../../src/checkpoint/keys.ts";
import { ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { getSet, objectEvents, patchSetSpec, setPods, setsPath } from "../support/setapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv, waitPhase, waitRunning } from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "ckcompat");
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const AGENT: AgentSpec = { image: E2E_IMAGE, replicas: 0, mode: "run" };
const checkpointsPath = () => `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`;
const vmName = (set: string) => `vk-${ns}-${set}-0`;

async function createSet(name: string, agent: AgentSpec, annotations?: Record<string, string>) {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
    spec: { nodePool: pool, agent },
  };
  const res = await apiRequest(env, "POST", setsPath(ns), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

function branchedFalse(name: string): Promise<CocoonSet> {
  return waitFor(
    `${name} refused its branch`,
    async () => {
      const cs = await getSet(env, ns, name);
      const branched = cs.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
      return branched?.reason === "Incompatible" && cs.status?.phase === "Failed" ? cs : undefined;
    },
    30_000,
  );
}

it("a branch asking for another backend or image than a member was taken under is refused before any copy", {
  timeout: 240_000,
}, async () => {
  await createSet("src", AGENT);
  await waitRunning(env, ns, "src", 1);
  await patchSetSpec(env, ns, "src", { suspend: true });
  await waitPhase(env, ns, "src", "Suspended");
  const res = await apiRequest(env, "POST", checkpointsPath(), {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name: "ck", namespace: ns },
    spec: { cocoonSetRef: { name: "src" } },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const ready = await waitFor(
    "checkpoint ck Ready",
    async () => {
      const ck = (await apiRequest(env, "GET", `${checkpointsPath()}/ck`)).body as CocoonCheckpoint;
      return ck.status?.phase === "Ready" ? ck : undefined;
    },
    60_000,
  );
  assert.deepEqual(
    ready.status?.members?.map((m) => [m.vmName, m.image, m.backend, m.os, m.snapshotCompatibilityClass]),
    [[vmName("src"), E2E_IMAGE, "cloud-hypervisor", "linux", ""]],
    "the member records what its restore depends on",
  );

  const refused = [
    {
      name: "fc",
      agent: { ...AGENT, backend: "firecracker" },
      field: "backend cloud-hypervisor \\(the spec asks for firecracker\\)",
    },
    {
      name: "img",
      agent: { ...AGENT, image: `${E2E_IMAGE}:v2` },
      field: `image ${E2E_IMAGE} \\(the spec asks for ${E2E_IMAGE}:v2\\)`,
    },
  ];
  for (const { name, agent } of refused) await createSet(name, agent, { [ANN_FROM_CHECKPOINT]: "ck" });
  for (const { name, field } of refused) {
    const cs = await branchedFalse(name);
    const message = cs.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED)?.message ?? "";
    assert.match(message, new RegExp(`member main \\(slot 0\\), VM ${vmName("src")}: ${field}`));
    const warnings = (await objectEvents(env, ns, name)).filter((e) => e.reason === "BranchIncompatible");
    assert.equal(warnings.length, 1, "one Warning says why");
    assert.match(warnings[0]?.message ?? "", new RegExp(field));
    assert.equal(await oci.getManifest(oci.repository(vmName(name)), TAG_HIBERNATE), null, "nothing copied");
    assert.deepEqual(await setPods(env, ns, name), [], "no pod");
    assert.equal(cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined, "nothing recorded");
    assert.deepEqual(sim.record.events({ vmName: vmName(name) }), [], "vk-cocoon was asked nothing");
  }

  // The backend set to the member's: the branch goes ahead and its one VM restores from the checkpoint.
  await patchSetSpec(env, ns, "fc", { agent: { ...AGENT, backend: "cloud-hypervisor" } });
  const branched = await waitRunning(env, ns, "fc", 1);
  const condition = branched.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
  assert.equal(condition?.status, "True");
  assert.match(condition?.message ?? "", /: 1 VMs restore from it/);
  const starts = sim.record.events({ vmName: vmName("fc") }).filter((e) => e.kind !== "hibernate");
  assert.deepEqual(
    starts.map((e) => `${e.kind} ${e.snapshot?.takenOf}`),
    [`restore ${vmName("src")}`],
    "restored from the checkpointed snapshot of the source's main",
  );
});
