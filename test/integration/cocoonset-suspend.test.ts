// Steps 6, 9 and 10 end to end against the vk-cocoon simulator and a real registry: a retained
// suspend of a main, three sub-agents and a toolbox (tags pushed, pods hibernated, then woken and the
// tags dropped), and hibernatePolicy=release round trips that land back on the hinted node when it
// has a seat, elsewhere when it does not, and wait with WakeNoCapacity while no seat exists; and on
// roomy nodes, the wake lands on the hint even where the scheduler's own scoring prefers another node
// (so the weight-100 preference is what puts it there).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import {
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_LIFECYCLE_STATE,
  LIFECYCLE_HIBERNATED,
} from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  getSet as getSetFromApi,
  objectEvents,
  patchSetSpec,
  type SetEvent,
  setPods as setPodsFromApi,
} from "../support/setapi.ts";
import {
  createSet as createSetInApi,
  hasHibernateTag,
  E2E_IMAGE as IMAGE,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
// Retained suspends run on a roomy pool; the release pool has two nodes of one seat each; the
// preference pool has two nodes with room for several pods.
const roomyPool = `roomy-${suffix}`;
const seatPool = `seats-${suffix}`;
const nodeA = `seat-a-${suffix}`;
const nodeB = `seat-b-${suffix}`;
const preferPool = `prefer-${suffix}`;
const preferNodes = [`prefer-a-${suffix}`, `prefer-b-${suffix}`];
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "cssuspend", {
    nodes: [
      { name: `roomy-${suffix}`, pool: roomyPool },
      { name: nodeA, pool: seatPool, pods: 1 },
      { name: nodeB, pool: seatPool, pods: 1 },
      ...preferNodes.map((name) => ({ name, pool: preferPool, pods: 10 })),
    ],
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const setsPath = () => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;
const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;

function createSet(name: string, spec: Partial<CocoonSetSpec>): Promise<void> {
  return createSetInApi(env, ns, name, spec);
}

async function setSuspend(name: string, suspend: boolean): Promise<void> {
  await patchSetSpec(env, ns, name, { suspend });
}

async function deleteSet(name: string): Promise<void> {
  const res = await apiRequest(env, "DELETE", `${setsPath()}/${name}`);
  assert.ok(res.status === 200 || res.status === 202, JSON.stringify(res.body));
}

function getSet(name: string): Promise<CocoonSet> {
  return getSetFromApi(env, ns, name);
}

function setPods(name: string): Promise<Pod[]> {
  return setPodsFromApi(env, ns, name);
}

function events(name: string): Promise<SetEvent[]> {
  return objectEvents(env, ns, name);
}

function hasTag(vm: string): Promise<boolean> {
  return hasHibernateTag(oci, vm);
}

function phaseIs(name: string, phase: string, timeoutMs = 60_000): Promise<CocoonSet> {
  return waitPhase(env, ns, name, phase, timeoutMs);
}

/** Running with every agent and toolbox Ready at the current generation. */
function running(name: string, agents: number, toolboxes = 0): Promise<CocoonSet> {
  return waitRunning(env, ns, name, agents, toolboxes, 60_000);
}

async function mainNode(name: string): Promise<string> {
  const main = (await setPods(name)).find((pod) => pod.metadata.name === `${name}-0`);
  assert.ok(main?.spec.nodeName, `${name}-0 is scheduled`);
  return main.spec.nodeName;
}

/** A release suspend settled: no pods left, the hint stashed, the main's tag in the registry. */
async function released(name: string): Promise<string> {
  const cs = await waitFor(
    `${name} released`,
    async () => {
      const current = await getSet(name);
      const pods = await setPods(name);
      return current.status?.phase === "Suspended" && pods.length === 0 ? current : undefined;
    },
    60_000,
  );
  assert.ok(await hasTag(vmName(name, 0)), "the snapshot exists before the seat is freed");
  const hint = cs.metadata.annotations?.[ANN_HIBERNATED_ON_NODE];
  assert.ok(hint, "the main's node is stashed");
  return hint;
}

/** The wake finished: Running, hint cleared, snapshot dropped. */
async function wokenFromRelease(name: string): Promise<void> {
  const cs = await running(name, 1);
  assert.equal(cs.metadata.annotations?.[ANN_HIBERNATED_ON_NODE], undefined);
  await waitFor(`${name} tag dropped`, async () => !(await hasTag(vmName(name, 0))) || undefined, 30_000);
  const restored = sim.record.events({ kind: "restore", vmName: vmName(name, 0) });
  assert.ok(restored.length > 0, "the main was restored from its snapshot, not booted fresh");
}

describe("CocoonSet suspend (retain)", () => {
  it("hibernates a main, 3 sub-agents and a toolbox, then wakes them and drops every tag", {
    timeout: 150_000,
  }, async () => {
    await createSet("full", {
      nodePool: roomyPool,
      agent: { image: IMAGE, replicas: 3, mode: "clone" },
      toolboxes: [{ name: "tb", image: IMAGE, mode: "run" }],
    });
    await running("full", 4, 1);
    const vms = [0, 1, 2, 3, "tb"].map((slot) => vmName("full", slot));

    await setSuspend("full", true);
    const suspended = await phaseIs("full", "Suspended", 90_000);
    for (const vm of vms) assert.ok(await hasTag(vm), `${vm}:hibernate pushed`);
    const pods = await setPods("full");
    assert.equal(pods.length, 5);
    for (const pod of pods) {
      assert.equal(pod.metadata.annotations?.[ANN_HIBERNATE], "true", `${pod.metadata.name} annotated`);
      assert.equal(pod.metadata.annotations?.[ANN_LIFECYCLE_STATE], LIFECYCLE_HIBERNATED);
    }
    const record = JSON.parse(suspended.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] ?? "{}");
    assert.deepEqual([...record.vms].sort(), [...vms].sort());

    await setSuspend("full", false);
    await running("full", 4, 1);
    const reclaimed = await waitFor(
      "every tag dropped and the record gone",
      async () => {
        const cs = await getSet("full");
        const tags = await Promise.all(vms.map(hasTag));
        return !tags.some(Boolean) && cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] === undefined
          ? cs
          : undefined;
      },
      60_000,
    );
    assert.equal(reclaimed.metadata.annotations?.["cocoonset.cocoonstack.io/suspending-since"], undefined);
    for (const pod of await setPods("full"))
      assert.equal(pod.metadata.annotations?.[ANN_HIBERNATE], undefined);
    for (const vm of vms) {
      assert.ok(sim.record.events({ kind: "wake", vmName: vm }).length > 0, `${vm} woke from its snapshot`);
    }
  });

  it("suspends a set created suspended although vk-cocoon first sees its main late, already annotated", {
    timeout: 120_000,
  }, async () => {
    // vk-cocoon brings a pod it first sees annotated up and leaves it running (the annotation is
    // honoured in UpdatePod only), so the hibernate request must wait for its first report.
    sim.faults.seeNewPodsLate(1_500);
    try {
      await createSet("late", {
        nodePool: roomyPool,
        suspend: true,
        agent: { image: IMAGE, replicas: 0, mode: "clone" },
      });
      await phaseIs("late", "Suspended", 60_000);
    } finally {
      sim.faults.seeNewPodsLate(0);
    }
    const vm = vmName("late", 0);
    assert.deepEqual(
      sim.record.events({ vmName: vm }).map((e) => e.kind),
      ["boot", "hibernate"],
      "booted once, then hibernated",
    );
    assert.ok(await hasTag(vm), `${vm}:hibernate pushed`);
  });
});

describe("CocoonSet suspend with hibernatePolicy release", () => {
  it("frees the seat, then wakes back on the hinted node while it has room", {
    timeout: 120_000,
  }, async () => {
    await createSet("rel", { nodePool: seatPool, hibernatePolicy: "release" });
    await running("rel", 1);
    const node = await mainNode("rel");

    await setSuspend("rel", true);
    assert.equal(await released("rel"), node);

    await setSuspend("rel", false);
    await wokenFromRelease("rel");
    assert.equal(await mainNode("rel"), node, "back on its snapshot's node");
  });

  it("wakes elsewhere in the pool when the hinted node has no seat left", { timeout: 120_000 }, async () => {
    await setSuspend("rel", true);
    const hint = await released("rel");
    // Take the freed seat.
    await createSet("filler", { nodePool: seatPool, nodeName: hint });
    await running("filler", 1);

    await setSuspend("rel", false);
    await wokenFromRelease("rel");
    const other = hint === nodeA ? nodeB : nodeA;
    assert.equal(await mainNode("rel"), other);
  });

  it("waits Waking with WakeNoCapacity while no seat exists, then lands once one frees", {
    timeout: 150_000,
  }, async () => {
    await setSuspend("rel", true);
    const hint = await released("rel");
    await createSet("filler2", { nodePool: seatPool, nodeName: hint });
    await running("filler2", 1);

    await setSuspend("rel", false);
    await phaseIs("rel", "Waking");
    const warning = await waitFor(
      "WakeNoCapacity",
      async () => (await events("rel")).find((e) => e.reason === "WakeNoCapacity"),
      30_000,
    );
    assert.match(warning.message, /^main pod rel-0 unschedulable: /);
    assert.ok(await hasTag(vmName("rel", 0)), "the snapshot stays while the main has no seat");

    await deleteSet("filler2");
    await wokenFromRelease("rel");
    assert.equal(await mainNode("rel"), hint);
  });
});

describe("a released-seat wake that a cancelled suspend interrupted", () => {
  it("clears the hibernate request the suspend left on the restored main, then finishes the wake", {
    timeout: 120_000,
  }, async () => {
    await createSet("cut", { nodePool: preferPool, hibernatePolicy: "release" });
    await running("cut", 1);
    await setSuspend("cut", true);
    await released("cut");

    // The restore is held back while the suspend's write lands on the restore pod: the state an
    // operator killed between step 6's annotation and its Suspending write leaves behind, with the
    // set still Waking once the suspend is withdrawn.
    const vm = vmName("cut", 0);
    sim.faults.refuseWake(vm, true);
    await setSuspend("cut", false);
    await phaseIs("cut", "Waking");
    await waitFor("the restore pod", async () =>
      (await setPods("cut")).find((p) => p.metadata.name === "cut-0"),
    );
    const res = await apiRequest(
      env,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/cut-0`,
      { metadata: { annotations: { [ANN_HIBERNATE]: "true" } } },
      "application/merge-patch+json",
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    sim.faults.refuseWake(vm, false);
    await sim.record.waitFor((e) => e.kind === "hibernate" && e.vmName === vm, 60_000);

    await wokenFromRelease("cut");
    const main = (await setPods("cut")).find((p) => p.metadata.name === "cut-0");
    assert.equal(main?.metadata.annotations?.[ANN_HIBERNATE], undefined);
  });
});

describe("released-seat wake preference", () => {
  it("wakes on the hinted node although the scheduler alone would pick the emptier one", {
    timeout: 150_000,
  }, async () => {
    // Each simulated node has 64 CPUs and 256Gi. The main asks for a quarter of one.
    const resources = { requests: { cpu: "16", memory: "64Gi" }, limits: { cpu: "16", memory: "64Gi" } };
    await createSet("pref", {
      nodePool: preferPool,
      hibernatePolicy: "release",
      agent: { image: IMAGE, replicas: 0, mode: "clone", resources },
    });
    await running("pref", 1);
    await setSuspend("pref", true);
    const hint = await released("pref");
    // Load the hinted node: it keeps room for the main, but least-allocated scoring now favours the
    // other node by far, so only the weight-100 preference can bring the main back to the hint.
    const heavy = { requests: { cpu: "40", memory: "160Gi" }, limits: { cpu: "40", memory: "160Gi" } };
    await createSet("load", {
      nodePool: preferPool,
      nodeName: hint,
      agent: { image: IMAGE, replicas: 0, mode: "clone", resources: heavy },
    });
    await running("load", 1);

    await setSuspend("pref", false);
    await wokenFromRelease("pref");
    assert.equal(await mainNode("pref"), hint, "the wake preferred the snapshot's node");
  });
});
