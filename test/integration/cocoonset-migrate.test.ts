// Steps 7 and 8 end to end on virtual nodes: a running main migrated between two nodes (the target
// VM restored from the old VM's snapshot, the old VM never destroyed live, the tag dropped only after
// the restore), a migration to a full node that waits with MigrateNoCapacity until a seat frees, and
// a main whose VM fails putting the set in Failed until it recovers.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { ANN_RESTORE_FROM_HIBERNATE, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { createRegistryClient, type SnapshotRegistry } from "../../src/registry/index.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { getSet as getSetFromApi, objectEvents, patchSetSpec, type SetEvent } from "../support/setapi.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const IMAGE = "ubuntu-dev-base";
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `pool-${suffix}`;
const nodeA = `sim-a-${suffix}`;
const nodeB = `sim-b-${suffix}`;
/** One seat only, so a second main does not fit. */
const nodeFull = `sim-full-${suffix}`;
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

/** The operator's tag deletes, timed, so their order against the simulator's VM record is checked. */
const tagDeletes: { time: number; repo: string; ref: string }[] = [];

function journaledRegistry(inner: SnapshotRegistry): SnapshotRegistry {
  return {
    hasManifest: (repo, tag, signal) => inner.hasManifest(repo, tag, signal),
    getSnapshot: (repo, tag, signal) => inner.getSnapshot(repo, tag, signal),
    deleteManifest: async (repo, ref, signal) => {
      await inner.deleteManifest(repo, ref, signal);
      tagDeletes.push({ time: Date.now(), repo, ref });
    },
    headManifest: (repo, ref, signal) => inner.headManifest(repo, ref, signal),
    deleteTagAt: async (repo, tag, digest, signal) => {
      await inner.deleteTagAt(repo, tag, digest, signal);
      tagDeletes.push({ time: Date.now(), repo, ref: tag });
    },
    deleteIfPresent: async (repo, tag, signal) => {
      const deleted = await inner.deleteIfPresent(repo, tag, signal);
      if (deleted) tagDeletes.push({ time: Date.now(), repo, ref: tag });
      return deleted;
    },
  };
}

before(async () => {
  e2e = await startSetEnv(env, "csmigrate", {
    nodes: [
      { name: nodeA, pool },
      { name: nodeB, pool },
      { name: nodeFull, pool, pods: 1 },
    ],
    registry: journaledRegistry(createRegistryClient(env.registry)),
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const setsPath = () => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;
const vmName = (set: string) => `vk-${ns}-${set}-0`;

async function createSet(name: string, nodeName?: string): Promise<void> {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns },
    spec: { nodePool: pool, agent: { image: IMAGE, replicas: 0 }, ...(nodeName ? { nodeName } : {}) },
  };
  const res = await apiRequest(env, "POST", setsPath(), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

async function pin(name: string, nodeName: string): Promise<void> {
  await patchSetSpec(env, ns, name, { nodeName });
}

function getSet(name: string): Promise<CocoonSet> {
  return getSetFromApi(env, ns, name);
}

async function getPod(name: string): Promise<Pod | undefined> {
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as Pod;
}

function events(name: string): Promise<SetEvent[]> {
  return objectEvents(env, ns, name);
}

async function hasTag(vm: string): Promise<boolean> {
  return (await oci.getManifest(oci.repository(vm), TAG_HIBERNATE)) !== null;
}

/** The set Running with its main Ready on `node`, and no :hibernate tag left. */
function settledOn(name: string, node: string, timeoutMs = 60_000): Promise<Pod> {
  return waitFor(
    `${name} Running with its main on ${node}`,
    async () => {
      const cs = await getSet(name);
      const main = await getPod(`${name}-0`);
      if (cs.status?.phase !== "Running" || !main || main.metadata.deletionTimestamp) return undefined;
      if (main.spec.nodeName !== node || cs.status.readyAgents !== 1) return undefined;
      return (await hasTag(vmName(name))) ? undefined : main;
    },
    timeoutMs,
  );
}

describe("CocoonSet migration across virtual nodes (step 8)", () => {
  it("moves a running main from node A to node B on its snapshot, never destroying the live VM", async () => {
    await createSet("mover", nodeA);
    const before = await settledOn("mover", nodeA);
    const vm = vmName("mover");
    const [booted] = sim.record.events({ vmName: vm, kind: "boot" });
    assert.ok(booted, "the main booted on node A");
    assert.equal(booted.node, nodeA);

    await pin("mover", nodeB);
    const seen = await waitFor("mover to enter Migrating", async () =>
      (await getSet("mover")).status?.phase === "Migrating" ? true : undefined,
    );
    assert.ok(seen);
    const after = await settledOn("mover", nodeB);
    assert.notEqual(after.metadata.uid, before.metadata.uid, "the main was recreated");
    assert.equal(after.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");

    const journal = sim.record.events({ vmName: vm });
    const kinds = journal.map((e) => `${e.kind}@${e.node === nodeA ? "A" : e.node === nodeB ? "B" : e.node}`);
    assert.deepEqual(kinds, ["boot@A", "hibernate@A", "destroy@A", "restore@B"], JSON.stringify(journal));
    const [, hibernated, deleted, restored] = journal;
    assert.ok(hibernated && deleted && restored);
    assert.equal(hibernated.vmID, booted.vmID, "the old VM ended by pushing its snapshot");
    assert.equal(deleted.vmID, "", "the old pod was deleted only once it had no live VM");
    assert.equal(deleted.keptLocalSnapshot, true, "flagged keep-snapshot-on-delete before the delete");
    assert.equal(restored.source, "restore");
    assert.ok(hibernated.time <= deleted.time && deleted.time <= restored.time);

    const drops = tagDeletes.filter((d) => d.repo === vm);
    assert.equal(drops.length, 1, "the snapshot is dropped once");
    assert.ok((drops[0]?.time ?? 0) >= restored.time, "the tag is dropped only after the new VM runs");
  });

  it("waits with MigrateNoCapacity on a full node and completes once a seat frees", async () => {
    await createSet("squatter", nodeFull);
    await settledOn("squatter", nodeFull);
    await createSet("tenant", nodeA);
    await settledOn("tenant", nodeA);

    await pin("tenant", nodeFull);
    const warning = await waitFor("a MigrateNoCapacity Warning", async () =>
      (await events("tenant")).find((e) => e.reason === "MigrateNoCapacity"),
    );
    assert.equal(warning.type, "Warning");
    assert.match(warning.message, /^main pod tenant-0 unschedulable: .+/);
    assert.equal((await getSet("tenant")).status?.phase, "Migrating");
    assert.ok(await hasTag(vmName("tenant")), "the snapshot waits with the set");

    const res = await apiRequest(env, "DELETE", `${setsPath()}/squatter`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await settledOn("tenant", nodeFull);
    const journal = sim.record.events({ vmName: vmName("tenant") });
    assert.deepEqual(
      journal.map((e) => [e.kind, e.vmID === "" ? "no VM" : "VM"]),
      [
        ["boot", "VM"],
        ["hibernate", "VM"],
        ["destroy", "no VM"],
        ["restore", "VM"],
      ],
    );
  });
});

describe("A failed main (step 7)", () => {
  it("puts the set in Failed with the VM's message, keeps the main, and returns to Running once the VM recovers", async () => {
    const vm = vmName("fragile");
    sim.faults.failBoot(vm, "bring-up refused by the test");
    await createSet("fragile");
    await waitFor("fragile to report Failed", async () =>
      (await getSet("fragile")).status?.phase === "Failed" ? true : undefined,
    );
    const warning = await waitFor("a PodLifecycleFailed Warning", async () =>
      (await events("fragile")).find((e) => e.reason === "PodLifecycleFailed"),
    );
    assert.equal(warning.type, "Warning");
    assert.match(warning.message, new RegExp(`^main pod ${ns}/fragile-0: .*bring-up refused by the test`));
    const failedMain = await getPod("fragile-0");
    assert.ok(failedMain, "a failed main that matches its spec is kept");

    sim.faults.failBoot(vm, null);
    await waitFor("fragile to report Running", async () =>
      (await getSet("fragile")).status?.phase === "Running" ? true : undefined,
    );
    assert.equal((await getPod("fragile-0"))?.metadata.uid, failedMain.metadata.uid, "recovered in place");
  });
});
