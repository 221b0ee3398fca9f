// Steps 11–13 end to end: scaling a set up and down, an image edit rebuilding every pod, a sub-agent
// whose VM never boots rebuilt within the budget and then dead-lettered, and a :hibernate tag pushed
// from another image dropped before the pod is created (vk-cocoon would refuse the pod over it).

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import {
  ANN_DEAD_LETTER,
  ANN_DELETE_VM_NAMES,
  ANN_FORK_FROM,
  ANN_IMAGE,
  ANN_REBUILD_HISTORY,
  ANN_RESTORE_FROM_HIBERNATE,
  TAG_HIBERNATE,
} from "../../src/contract/keys.ts";
import { OciClient, pushSnapshot, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  getSet as getSetFromApi,
  objectEvents,
  patchSetSpec,
  setPods as setPodsFromApi,
} from "../support/setapi.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const IMAGE = "ubuntu-dev-base";
const NEW_IMAGE = "ubuntu-dev-base:v2";
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `pool-${suffix}`;
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "csscale", { nodes: [{ name: `sim-${suffix}`, pool }] });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const setsPath = () => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;
const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;

async function createSet(name: string, replicas: number): Promise<void> {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns },
    spec: { nodePool: pool, agent: { image: IMAGE, replicas, mode: "clone" } },
  };
  const res = await apiRequest(env, "POST", setsPath(), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

async function patchAgent(name: string, agent: Record<string, unknown>): Promise<void> {
  await patchSetSpec(env, ns, name, { agent });
}

function getSet(name: string): Promise<CocoonSet> {
  return getSetFromApi(env, ns, name);
}

function setPods(name: string): Promise<Pod[]> {
  return setPodsFromApi(env, ns, name);
}

async function eventReasons(name: string): Promise<string[]> {
  return (await objectEvents(env, ns, name)).map((e) => e.reason);
}

/** The set Running with every agent Ready, its pods exactly `<name>-0..replicas`. */
function settled(name: string, replicas: number, image = IMAGE): Promise<CocoonSet> {
  const want = Array.from({ length: replicas + 1 }, (_, slot) => `${name}-${slot}`).sort();
  return waitFor(
    `${name} Running with ${replicas + 1} agents on ${image}`,
    async () => {
      const cs = await getSet(name);
      const pods = await setPods(name);
      const names = pods.map((p) => p.metadata.name ?? "").sort();
      const onImage = pods.every((p) => p.metadata.annotations?.[ANN_IMAGE] === image);
      return cs.status?.phase === "Running" &&
        cs.status.readyAgents === replicas + 1 &&
        cs.status.observedGeneration === cs.metadata.generation &&
        onImage &&
        JSON.stringify(names) === JSON.stringify(want)
        ? cs
        : undefined;
    },
    60_000,
  );
}

describe("CocoonSet scaling", () => {
  it("scales 1 → 5 → 2: sub-agents fork from the main on its node; departing VMs are stashed", async () => {
    await createSet("scale", 1);
    await settled("scale", 1);

    await patchAgent("scale", { replicas: 5 });
    await settled("scale", 5);
    const pods = await setPods("scale");
    const main = pods.find((p) => p.metadata.name === "scale-0");
    for (const pod of pods.filter((p) => p.metadata.name !== "scale-0")) {
      assert.equal(pod.metadata.annotations?.[ANN_FORK_FROM], vmName("scale", 0));
      assert.equal(pod.spec.nodeName, main?.spec.nodeName);
    }

    await patchAgent("scale", { replicas: 2 });
    const cs = await settled("scale", 2);
    const stashed = cs.metadata.annotations?.[ANN_DELETE_VM_NAMES]?.split(",") ?? [];
    for (const slot of [3, 4, 5]) assert.ok(stashed.includes(vmName("scale", slot)), `slot ${slot} stashed`);
  });

  it("an image edit rebuilds every pod on the new image", async () => {
    const before = new Map((await setPods("scale")).map((p) => [p.metadata.name, p.metadata.uid]));
    await patchAgent("scale", { image: NEW_IMAGE });
    await settled("scale", 2, NEW_IMAGE);
    for (const pod of await setPods("scale")) {
      assert.notEqual(pod.metadata.uid, before.get(pod.metadata.name), `${pod.metadata.name} was recreated`);
    }
    assert.ok((await eventReasons("scale")).includes("SubAgentRebuilding"));
  });

  it("a sub-agent whose VM never boots is rebuilt with backoff, then dead-lettered after 4 rebuilds", {
    timeout: 120_000,
  }, async () => {
    sim.faults.failBoot(vmName("flaky", 1), "disk image corrupt");
    await createSet("flaky", 1);
    const parked = await waitFor(
      "flaky-1 dead-lettered",
      async () => {
        const pod = (await setPods("flaky")).find((p) => p.metadata.name === "flaky-1");
        return pod?.metadata.annotations?.[ANN_DEAD_LETTER] ? pod : undefined;
      },
      90_000,
    );
    const cs = await getSet("flaky");
    assert.equal(parked.metadata.annotations?.[ANN_DEAD_LETTER], String(cs.metadata.generation));
    const history = JSON.parse(cs.metadata.annotations?.[ANN_REBUILD_HISTORY] ?? "{}");
    assert.equal(history["flaky-1"]?.count, 4);
    // The event is posted after the dead-letter annotation, so it may land a moment later.
    const reasons = await waitFor("SubAgentDeadLetter event", async () => {
      const seen = await eventReasons("flaky");
      return seen.includes("SubAgentDeadLetter") ? seen : undefined;
    });
    assert.ok(reasons.includes("SubAgentRebuilding"));
    assert.ok(reasons.includes("SubAgentDeadLetter"));
    // Backoff 0 / 1 / 5 / 30 s: the four rebuilds span at least 36 s of refused boots.
    const refusals = sim.record.events({ kind: "refuse", vmName: vmName("flaky", 1) });
    assert.ok(refusals.length >= 5, `${refusals.length} refused boots`);
    const first = refusals[0]?.time ?? 0;
    const last = refusals.at(-1)?.time ?? 0;
    assert.ok(last - first >= 36_000, `refusals spanned ${last - first} ms`);

    // Parked: the pod stays, and no further rebuild happens while the spec is unchanged.
    const uid = parked.metadata.uid;
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const still = (await setPods("flaky")).find((p) => p.metadata.name === "flaky-1");
    assert.equal(still?.metadata.uid, uid);
    sim.faults.failBoot(vmName("flaky", 1), null);
  });

  it("a :hibernate tag pushed from another image is dropped before the pod is created", async () => {
    await pushSnapshot(oci, {
      vmName: vmName("tagged", 0),
      vmID: "foreign",
      tag: TAG_HIBERNATE,
      baseImage: "some-other-image",
      fromNode: "",
    });
    await createSet("tagged", 0);
    await settled("tagged", 0);
    assert.equal(await oci.getManifest(oci.repository(vmName("tagged", 0)), TAG_HIBERNATE), null);
    const main = (await setPods("tagged"))[0];
    assert.equal(main?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
    assert.deepEqual(sim.record.events({ kind: "refuse", vmName: vmName("tagged", 0) }), []);
    const started = sim.record
      .events({ vmName: vmName("tagged", 0) })
      .filter((e) => e.kind !== "push-latest");
    assert.equal(started[0]?.source, "clone", "booted fresh, not restored");
  });
});
