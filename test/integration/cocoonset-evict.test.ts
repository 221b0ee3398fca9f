// vk-cocoon's eviction end to end: the simulator loses a VM the way vk-cocoon reports it (the pod is
// deleted with a uid precondition, then notified phase Failed with the agent container terminated,
// vk-cocoon.md §2.2), and the operator brings the slot back. The Failed phase only ever shows on a
// pod already being deleted, which the operator does not classify (item 17): an evicted sub-agent,
// toolbox or main is a missing pod, recreated by steps 11–13 the way a first create is (a sub-agent
// forks from the live main, a toolbox boots its image, a main clones its image), never from a
// snapshot the crash did not leave. The simulator's VM journal shows how each came back.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { OciClient, type Simulator, startSimulator } from "../env/simulator/index.ts";
import { createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { startTestOperator, type TestOperator } from "../support/operator.ts";
import { createSet, E2E_IMAGE, hasHibernateTag, livePod, waitRunning } from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `evict-${suffix}`;
let ns: string;
let sim: Simulator;
let operator: TestOperator;

before(async () => {
  ns = await createNamespace(env, "csevict");
  sim = await startSimulator({ ...env, nodes: [{ name: `evict-${suffix}`, pool }] });
  operator = await startTestOperator({ namespace: ns });
});

after(async () => {
  await operator?.stop();
  await sim?.stop({ removeNodes: true });
});

const vmName = (slot: number | string) => `vk-${ns}-ev-${slot}`;

/** Evicts the slot's VM and waits until a new pod of that name runs Ready in a Running set. */
async function evictAndRecover(
  podName: string,
  vm: string,
): Promise<{ oldUID: string; newUID: string; since: number }> {
  const before = await livePod(env, ns, "ev", podName);
  const oldUID = before?.metadata.uid ?? "";
  assert.ok(oldUID, `${podName} exists`);
  const since = sim.record.events().length;
  sim.faults.evict(vm);
  await sim.record.waitFor((e) => e.kind === "evict" && e.podUID === oldUID, 30_000);
  const replaced = await waitFor(
    `${podName} recreated`,
    async () => {
      const pod = await livePod(env, ns, "ev", podName);
      return pod?.metadata.uid && pod.metadata.uid !== oldUID ? pod : undefined;
    },
    60_000,
  );
  await waitRunning(env, ns, "ev", 2, 1);
  return { oldUID, newUID: replaced.metadata.uid ?? "", since };
}

/** The VM's journal after `since`: the eviction of the old pod, then exactly one start by the new one. */
function assertCameBack(vm: string, since: number, oldUID: string, newUID: string, start: string): void {
  const journal = sim.record
    .events()
    .slice(since)
    .filter((e) => e.vmName === vm);
  assert.deepEqual(
    journal.map((e) => `${e.kind}/${e.source ?? "-"}/${e.podUID}`),
    [`evict/-/${oldUID}`, `${start}/${newUID}`],
    `${vm}: ${JSON.stringify(journal)}`,
  );
}

describe("vk-cocoon evictions", () => {
  it("brings back an evicted sub-agent, toolbox and main", { timeout: 180_000 }, async () => {
    await createSet(env, ns, "ev", {
      nodePool: pool,
      agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
      toolboxes: [{ name: "tb", image: E2E_IMAGE, mode: "run" }],
    });
    await waitRunning(env, ns, "ev", 2, 1);

    const sub = await evictAndRecover("ev-1", vmName(1));
    assertCameBack(vmName(1), sub.since, sub.oldUID, sub.newUID, "fork/fork");

    const tb = await evictAndRecover("ev-tb", vmName("tb"));
    assertCameBack(vmName("tb"), tb.since, tb.oldUID, tb.newUID, "boot/fresh");

    const main = await evictAndRecover("ev-0", vmName(0));
    assertCameBack(vmName(0), main.since, main.oldUID, main.newUID, "boot/clone");

    for (const slot of [0, 1, "tb"]) {
      assert.ok(!(await hasHibernateTag(oci, vmName(slot))), `no snapshot was taken of ${vmName(slot)}`);
    }
  });
});
