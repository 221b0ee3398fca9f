// Failed VMs end to end, as vk-cocoon reports them (an eviction, or lifecycle `failed`), and how the
// operator brings each slot back. The simulator's VM journal shows how each came back.
// - Eviction: the VM is gone; vk deletes the pod with a uid precondition, then notifies phase Failed
//   with the agent container terminated. The Failed phase only ever shows on a pod already being
//   deleted, which the operator does not classify (step 4 skips pods being deleted): an evicted
//   sub-agent, toolbox or main is a missing pod, recreated by steps 11–13 the way a first create is
//   (a sub-agent forks from the live main, a toolbox boots its image, a main clones its image).
// - A VM vk marks failed (lifecycle `failed`, the pod Running and not Ready): a failed sub-agent or
//   toolbox is rebuilt within the rebuild budget (SubAgentRebuilding); a failed main that matches
//   its spec parks the set in Failed and is kept (step 7, PodLifecycleFailed); once the user
//   replaces it, the set runs again.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isPodReady } from "../../src/contract/pod.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { testEnv, waitFor } from "../env/testenv.ts";
import { objectEvents } from "../support/setapi.ts";
import {
  createSet,
  deletePodAndWait,
  E2E_IMAGE,
  hasHibernateTag,
  livePod,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "csfailed");
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;

interface Replaced {
  oldUID: string;
  newUID: string;
  /** Index into the VM journal before the fault. */
  since: number;
}

/** Injects the fault into the pod's VM and waits until the set runs again with a new pod of that name. */
async function failAndRecover(
  set: string,
  slot: number | string,
  inject: (vm: string) => void,
): Promise<Replaced> {
  const podName = `${set}-${slot}`;
  const before = await livePod(env, ns, set, podName);
  const oldUID = before?.metadata.uid ?? "";
  assert.ok(oldUID, `${podName} exists`);
  const since = sim.record.events().length;
  inject(vmName(set, slot));
  // The set's status may still show the old pod Ready: wait for the new pod's own readiness first.
  const replaced = await waitFor(
    `${podName} recreated and Ready`,
    async () => {
      const pod = await livePod(env, ns, set, podName);
      return pod?.metadata.uid && pod.metadata.uid !== oldUID && isPodReady(pod) ? pod : undefined;
    },
    60_000,
  );
  await waitRunning(env, ns, set, 2, 1);
  return { oldUID, newUID: replaced.metadata.uid ?? "", since };
}

/** The VM's journal after the fault, as kind/source/pod-UID lines. */
function journalSince(vm: string, since: number): string[] {
  return sim.record
    .events()
    .slice(since)
    .filter((e) => e.vmName === vm)
    .map((e) => `${e.kind}/${e.source ?? "-"}/${e.podUID}`);
}

async function eventMessages(set: string, reason: string): Promise<string[]> {
  return (await objectEvents(env, ns, set)).filter((e) => e.reason === reason).map((e) => e.message);
}

describe("vk-cocoon evictions", () => {
  it("brings back an evicted sub-agent, toolbox and main", { timeout: 180_000 }, async () => {
    await createSet(env, ns, "ev", {
      nodePool: pool,
      agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
      toolboxes: [{ name: "tb", image: E2E_IMAGE, mode: "run" }],
    });
    await waitRunning(env, ns, "ev", 2, 1);

    const evict = (vm: string) => sim.faults.evict(vm);
    for (const [slot, start] of [
      [1, "fork/fork"],
      ["tb", "boot/fresh"],
      [0, "boot/clone"],
    ] as const) {
      const r = await failAndRecover("ev", slot, evict);
      assert.deepEqual(
        journalSince(vmName("ev", slot), r.since),
        [`evict/-/${r.oldUID}`, `${start}/${r.newUID}`],
        `${vmName("ev", slot)} was evicted, then started once by the new pod`,
      );
    }
    for (const slot of [0, 1, "tb"]) {
      assert.ok(!(await hasHibernateTag(oci, vmName("ev", slot))), `no snapshot of ${vmName("ev", slot)}`);
    }
    assert.deepEqual(await eventMessages("ev", "SubAgentRebuilding"), [], "a missing pod is not a rebuild");
  });
});

describe("VMs vk-cocoon reports failed", () => {
  it("rebuilds a failed sub-agent and toolbox; a failed main parks the set in Failed until it is replaced", {
    timeout: 180_000,
  }, async () => {
    await createSet(env, ns, "fl", {
      nodePool: pool,
      agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
      toolboxes: [{ name: "tb", image: E2E_IMAGE, mode: "run" }],
    });
    await waitRunning(env, ns, "fl", 2, 1);
    const fail = (vm: string) => sim.faults.failVM(vm, "post-clone exhausted (simulated)");

    for (const [slot, start] of [
      [1, "fork/fork"],
      ["tb", "boot/fresh"],
    ] as const) {
      const r = await failAndRecover("fl", slot, fail);
      // The failed VM is still live: the rebuild delete saves it as :latest before vk removes it.
      assert.deepEqual(
        journalSince(vmName("fl", slot), r.since),
        [
          `refuse/-/${r.oldUID}`,
          `push-latest/-/${r.oldUID}`,
          `destroy/-/${r.oldUID}`,
          `${start}/${r.newUID}`,
        ],
        `${vmName("fl", slot)} failed, was rebuilt, and started once by the new pod`,
      );
    }
    assert.deepEqual((await eventMessages("fl", "SubAgentRebuilding")).sort(), [
      "fl-1 attempt 1/4",
      "fl-tb attempt 1/4",
    ]);

    const main = await livePod(env, ns, "fl", "fl-0");
    fail(vmName("fl", 0));
    await waitPhase(env, ns, "fl", "Failed");
    const [warning] = await waitFor("PodLifecycleFailed", async () => {
      const messages = await eventMessages("fl", "PodLifecycleFailed");
      return messages.length > 0 ? messages : undefined;
    });
    assert.equal(warning, `main pod ${ns}/fl-0: post-clone exhausted (simulated)`);
    const parked = await livePod(env, ns, "fl", "fl-0");
    assert.equal(parked?.metadata.uid, main?.metadata.uid, "a failed main that matches its spec is kept");

    // The user replaces the main: the set runs again.
    await deletePodAndWait(env, ns, "fl-0");
    await waitRunning(env, ns, "fl", 2, 1);
    const replacement = await livePod(env, ns, "fl", "fl-0");
    assert.notEqual(replacement?.metadata.uid, main?.metadata.uid);
  });
});
