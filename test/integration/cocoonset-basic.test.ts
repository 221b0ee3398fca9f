// The CocoonSet controller end to end: the sample CocoonSet against a real API server, scheduler and
// registry, with the vk-cocoon simulator running the VMs. It comes up Running with pods carrying the
// contract's annotations, and its deletion takes the pods, the :hibernate tags and the finalizer.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_FORK_FROM,
  ANN_IMAGE,
  ANN_MANAGED,
  ANN_MODE,
  ANN_SNAPSHOT_POLICY,
  ANN_STORAGE,
  ANN_VM_ID,
  ANN_VM_NAME,
  FINALIZER_COCOONSET,
  LABEL_COCOONSET,
  LABEL_NODE_POOL,
  LABEL_ROLE,
  LABEL_SLOT,
  TAG_HIBERNATE,
  TAG_LATEST,
  TOLERATION_KEY,
} from "../../src/contract/keys.ts";
import { OciClient, pushSnapshot } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";
import { referenceSamplesDir } from "../support/shared.ts";

const SAMPLE = join(referenceSamplesDir, "test-cocoonset.yaml");
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `pool-${suffix}`;
let ns: string;
let e2e: SetEnv | undefined;

before(async () => {
  // A pool of its own, so the scheduler places this file's pods on this file's simulated node only.
  e2e = await startSetEnv(env, "csbasic", { nodes: [{ name: `sim-${suffix}`, pool }] });
  ns = e2e.ns;
});

after(async () => {
  await e2e?.stop();
});

const setPath = (name: string) => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets/${name}`;

async function getSet(name: string): Promise<CocoonSet | undefined> {
  const res = await apiRequest(env, "GET", setPath(name));
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonSet;
}

async function getPod(name: string): Promise<Pod | undefined> {
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as Pod;
}

async function hasTag(vm: string, tag: string): Promise<boolean> {
  return (await oci.getManifest(oci.repository(vm), tag)) !== null;
}

describe("CocoonSet basic lifecycle (sample test-cocoonset.yaml)", () => {
  let cs: CocoonSet;
  const vm = (slot: number) => `vk-${ns}-${cs.metadata.name}-${slot}`;

  it("comes up Running with two Ready pods that carry the contract", async () => {
    const sample = parse(readFileSync(SAMPLE, "utf8")) as CocoonSet;
    sample.metadata.namespace = ns;
    sample.spec.nodePool = pool;
    const created = await apiRequest(
      env,
      "POST",
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`,
      sample,
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const name = sample.metadata.name ?? "";

    cs = await waitFor(
      "the set to report Running with 2/2 agents ready",
      async () => {
        const current = await getSet(name);
        return current?.status?.phase === "Running" && current.status.readyAgents === 2 ? current : undefined;
      },
      60_000,
    );
    assert.deepEqual(cs.metadata.finalizers, [FINALIZER_COCOONSET]);
    assert.equal(cs.status?.desiredAgents, 2);
    assert.equal(cs.status?.observedGeneration, cs.metadata.generation);
    assert.deepEqual(
      cs.status?.agents?.map((a) => [a.slot, a.role, a.podName, a.vmName, a.forkedFrom ?? ""]),
      [
        [0, "main", `${name}-0`, vm(0), ""],
        [1, "sub-agent", `${name}-1`, vm(1), vm(0)],
      ],
    );
    assert.equal(cs.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");

    const main = await getPod(`${name}-0`);
    const sub = await getPod(`${name}-1`);
    assert.ok(main && sub);
    for (const [pod, slot, role] of [
      [main, 0, "main"],
      [sub, 1, "sub-agent"],
    ] as const) {
      const annotations = pod.metadata.annotations ?? {};
      assert.equal(annotations[ANN_VM_NAME], vm(slot));
      assert.equal(annotations[ANN_IMAGE], "ubuntu-dev-base");
      assert.equal(annotations[ANN_MODE], "clone");
      assert.equal(annotations[ANN_MANAGED], "true");
      assert.equal(annotations[ANN_SNAPSHOT_POLICY], "always");
      assert.equal(annotations[ANN_STORAGE], "20Gi");
      assert.equal(annotations[ANN_COCOONSET_GENERATION], String(cs.metadata.generation));
      assert.ok(annotations[ANN_VM_ID], "vk-cocoon reported a VM");
      assert.deepEqual(pod.metadata.labels?.[LABEL_COCOONSET], name);
      assert.deepEqual(pod.metadata.labels?.[LABEL_ROLE], role);
      assert.deepEqual(pod.metadata.labels?.[LABEL_SLOT], String(slot));
      assert.equal(pod.spec.nodeSelector?.[LABEL_NODE_POOL], pool);
      assert.ok(pod.spec.tolerations?.some((t) => t.key === TOLERATION_KEY && t.operator === "Exists"));
      const owner = pod.metadata.ownerReferences?.find((ref) => ref.controller === true);
      assert.equal(owner?.kind, "CocoonSet");
      assert.equal(owner?.uid, cs.metadata.uid);
    }
    assert.equal(main.metadata.annotations?.[ANN_FORK_FROM], undefined);
    assert.equal(sub.metadata.annotations?.[ANN_FORK_FROM], vm(0));
    assert.equal(sub.spec.nodeName, main.spec.nodeName, "the sub-agent is bound to the main's node");
  });

  it("on delete takes the pods, then the :hibernate tags, then the finalizer", async () => {
    assert.ok(cs, "the set came up");
    const name = cs.metadata.name ?? "";
    // A leftover :hibernate tag for each VM, as a suspend would have left; teardown must drop them.
    for (const slot of [0, 1]) {
      await pushSnapshot(oci, {
        vmName: vm(slot),
        vmID: `left-${slot}`,
        tag: TAG_HIBERNATE,
        baseImage: "ubuntu-dev-base",
        fromNode: "",
      });
    }

    const deleted = await apiRequest(env, "DELETE", setPath(name));
    assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body));

    await waitFor(
      "the set to be gone",
      async () => ((await getSet(name)) === undefined ? true : undefined),
      60_000,
    );
    for (const slot of [0, 1]) {
      assert.equal(await getPod(`${name}-${slot}`), undefined, `pod ${name}-${slot} is gone`);
      assert.equal(await hasTag(vm(slot), TAG_HIBERNATE), false, `${vm(slot)}:hibernate is dropped`);
      // snapshotPolicy always: vk-cocoon pushed :latest at delete, and teardown keeps it.
      assert.equal(await hasTag(vm(slot), TAG_LATEST), true, `${vm(slot)}:latest is kept`);
    }
  });
});
