import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod } from "../../../src/cocoonset/decide/pods.ts";
import { readRebuildHistory } from "../../../src/cocoonset/decide/rebuildrules.ts";
import { reconcileSubAgents } from "../../../src/cocoonset/steps/subagents.ts";
import {
  ANN_DEAD_LETTER,
  ANN_DELETE_VM_NAMES,
  ANN_FORK_FROM,
  ANN_HIBERNATE_RECLAIM,
  ANN_REBUILD_HISTORY,
  ANN_RESTORE_FROM_HIBERNATE,
} from "../../../src/contract/keys.ts";
import { AlreadyExistsError } from "../../../src/controller/errors.ts";
import type { PODS } from "../../../src/controller/resources.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import {
  IMAGE,
  lifecycleFailed,
  MAIN_NODE,
  MAIN_VM,
  OTHER_IMAGE,
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";

function set(replicas: number, annotations: Record<string, string> = {}, generation = 1): CocoonSet {
  const cs = scalingSet({ agent: { image: IMAGE, replicas } }, generation);
  cs.metadata.annotations = annotations;
  return cs;
}

function sub(cs: CocoonSet, slot: number): Pod {
  return ready(buildSubAgentPod(cs, slot, MAIN_NODE, { mainVMName: MAIN_VM }));
}

/** A set with a Ready main and Ready sub-agents in `slots` (a pod edit may follow). */
function withSubs(cs: CocoonSet, slots: number[], edit: (pod: Pod) => Pod = (pod) => pod): ScalingHarness {
  return scalingHarness(cs, (stored) => [
    ready(buildMainPod(stored)),
    ...slots.map((slot) => edit(sub(stored, slot))),
  ]);
}

/** A failed pod parked by the budget with this dead-letter value. */
function deadLettered(value: string): (pod: Pod) => Pod {
  return (pod) => {
    pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_DEAD_LETTER]: value };
    return phaseFailed(pod);
  };
}

function historyOf(h: ScalingHarness) {
  return readRebuildHistory(h.set().metadata.annotations?.[ANN_REBUILD_HISTORY], "demo").value;
}

describe("step 12: sub-agents", () => {
  it("creates slots 1..replicas forked from the main's VM and bound to its node", async () => {
    const h = withSubs(set(3), []);
    const pass = h.pass();
    await reconcileSubAgents(pass);
    assert.deepEqual(h.created().sort(), ["demo-1", "demo-2", "demo-3"]);
    for (const name of ["demo-1", "demo-2", "demo-3"]) {
      const pod = h.pod(name);
      assert.equal(pod?.metadata.annotations?.[ANN_FORK_FROM], MAIN_VM);
      assert.equal(pod?.spec.nodeName, MAIN_NODE);
    }
    assert.equal(pass.changed, true);
  });

  it("a settled set of sub-agents makes no call", async () => {
    const h = withSubs(set(2), [1, 2]);
    const pass = h.pass();
    await reconcileSubAgents(pass);
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(pass.changed, false);
  });

  it("a sub-agent in phase Failed is deleted for rebuild", async () => {
    const h = withSubs(set(1), [1], phaseFailed);
    const pass = h.pass();
    await reconcileSubAgents(pass);
    assert.deepEqual(h.deleted(), ["demo-1"]);
    assert.equal(pass.changed, true);
  });

  it("a Running sub-agent with lifecycle failed is deleted for rebuild", async () => {
    const h = withSubs(set(1), [1], lifecycleFailed);
    await reconcileSubAgents(h.pass());
    assert.deepEqual(h.deleted(), ["demo-1"]);
    assert.equal(historyOf(h).get("demo-1")?.count, 1);
  });

  it("a drifted sub-agent is rebuilt within the same budget", async () => {
    const h = withSubs(set(1), [1], (pod) => {
      pod.metadata.annotations = {
        ...pod.metadata.annotations,
        "cocoonset.cocoonstack.io/image": OTHER_IMAGE,
      };
      return pod;
    });
    await reconcileSubAgents(h.pass());
    assert.deepEqual(h.deleted(), ["demo-1"]);
    assert.equal(h.events.events[0]?.reason, "SubAgentRebuilding");
  });

  it("a dead-lettered sub-agent is kept at the same generation; a spec edit lifts it with a fresh budget", async () => {
    const history = JSON.stringify({
      "demo-1": { count: 4, lastDeleted: "2026-01-01T00:00:00Z", deadLetter: 1 },
    });
    const parked = withSubs(set(1, { [ANN_REBUILD_HISTORY]: history }, 1), [1], deadLettered("1"));
    await reconcileSubAgents(parked.pass());
    assert.deepEqual(parked.client.calls, []);

    // The user edits the image: generation 2, the pod now drifts and its dead-letter no longer holds.
    const edited = scalingSet({ agent: { image: OTHER_IMAGE, replicas: 1 } }, 2);
    edited.metadata.annotations = { [ANN_REBUILD_HISTORY]: history };
    const lifted = scalingHarness(edited, (stored) => [
      ready(buildMainPod(stored)),
      deadLettered("1")(sub(set(1), 1)),
    ]);
    await reconcileSubAgents(lifted.pass());
    assert.deepEqual(lifted.deleted(), ["demo-1"]);
    assert.equal(historyOf(lifted).get("demo-1")?.count, 1);
  });

  it('the older dead-letter value "true" holds while the pod matches its spec', async () => {
    const h = withSubs(
      set(1, {
        [ANN_REBUILD_HISTORY]: JSON.stringify({ "1": { count: 4, lastDeleted: "2026-01-01T00:00:00Z" } }),
      }),
      [1],
      (pod) => {
        pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_DEAD_LETTER]: "true" };
        return phaseFailed(pod);
      },
    );
    await reconcileSubAgents(h.pass());
    assert.deepEqual(h.client.calls, []);
  });

  it("a dead-lettered sub-agent whose pod went missing is not recreated until a spec edit", async () => {
    const history = JSON.stringify({
      "demo-1": { count: 4, lastDeleted: "2026-01-01T00:00:00Z", deadLetter: 1 },
    });
    const h = withSubs(set(2, { [ANN_REBUILD_HISTORY]: history }), []);
    await reconcileSubAgents(h.pass());
    assert.deepEqual(h.created(), ["demo-2"]);
  });

  it("scale-down stashes the departing VMs (and the reclaim record's) before deleting slots in order", async () => {
    const reclaim = JSON.stringify({ generation: 1, vms: ["vk-ns-demo-9"] });
    const h = withSubs(set(2, { [ANN_HIBERNATE_RECLAIM]: reclaim }), [1, 2, 3, 10, 4]);
    const pass = h.pass();
    await reconcileSubAgents(pass);
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}/${c.name}`),
      ["patch cocoonsets/demo", "delete pods/demo-3", "delete pods/demo-4", "delete pods/demo-10"],
    );
    assert.equal(
      h.set().metadata.annotations?.[ANN_DELETE_VM_NAMES],
      "vk-ns-demo-10,vk-ns-demo-3,vk-ns-demo-4,vk-ns-demo-9",
    );
    assert.equal(pass.changed, true);
  });

  it("restore-marks a slot the reclaim record owes a restore when its tag exists", async () => {
    const reclaim = JSON.stringify({ generation: 1, vms: ["vk-ns-demo-1"], restore: ["vk-ns-demo-1"] });
    const h = withSubs(set(1, { [ANN_HIBERNATE_RECLAIM]: reclaim }), []);
    h.registry.put("vk-ns-demo-1", "hibernate", IMAGE);
    await reconcileSubAgents(h.pass());
    assert.equal(h.pod("demo-1")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
  });

  it("a slot nobody restores has its tag dropped (and leaves the record) before the create", async () => {
    const reclaim = JSON.stringify({ generation: 1, vms: ["vk-ns-demo-1"] });
    const h = withSubs(set(1, { [ANN_HIBERNATE_RECLAIM]: reclaim }), []);
    const digest = h.registry.put("vk-ns-demo-1", "hibernate", IMAGE);
    await reconcileSubAgents(h.pass());
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), [`vk-ns-demo-1:hibernate@${digest}`]);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined);
    assert.deepEqual(h.created(), ["demo-1"]);
    assert.equal(h.pod("demo-1")?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
  });

  it("a manifest read the registry refuses fails the pass; no sub-agent is created", async () => {
    const h = withSubs(set(3), []);
    h.registry.failOn = () => FakeSnapshotRegistry.error(502);
    await assert.rejects(reconcileSubAgents(h.pass()));
    assert.deepEqual(h.created(), []);
  });

  it("AlreadyExists (the slot's old pod still terminating) is not an error", async () => {
    const h = withSubs(set(1), []);
    h.client.failNext("create", "pods", new AlreadyExistsError(409, "AlreadyExists", "exists"));
    const pass = h.pass();
    await reconcileSubAgents(pass);
    assert.equal(pass.changed, false);
  });

  it("creates at most 8 at a time, and the first error stops further creates", async () => {
    const h = withSubs(set(20), []);
    let inFlight = 0;
    let peak = 0;
    const create = h.client.create.bind(h.client);
    h.client.create = async <T>(rt: typeof PODS, namespace: string, obj: T): Promise<T> => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
      return create(rt, namespace, obj);
    };
    await reconcileSubAgents(h.pass());
    assert.equal(peak, 8);
    assert.equal(h.created().length, 20);

    const failing = withSubs(set(20), []);
    failing.client.failNext("create", "pods", new Error("apiserver down"));
    await assert.rejects(reconcileSubAgents(failing.pass()), /apiserver down/);
    assert.ok(failing.created().length < 20, `created ${failing.created().length} of 20 after the failure`);
  });
});
