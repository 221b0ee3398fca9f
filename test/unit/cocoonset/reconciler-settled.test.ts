// A full pass over a settled set (main, one sub-agent and one toolbox, all Ready, matching their
// spec, stamped, status current) makes no API call, no registry call and lists no CocoonHibernation:
// the steady state of every set costs nothing beyond the cache reads.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { ANN_FROM_CHECKPOINT, CONDITION_BRANCHED } from "../../../src/checkpoint/keys.ts";
import { computeStatus } from "../../../src/cocoonset/decide/computestatus.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { applyLifecycle } from "../../../src/contract/lifecycle.ts";
import { applyVMRuntime } from "../../../src/contract/vmruntime.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, harness, NS, SET, SET_UID, seedSet } from "../../support/cocoonset.ts";

const NODE = "node-a";
const GENERATION = 3;

/** What vk-cocoon and the kubelet leave on a pod whose VM runs: bound, live, ready at the generation. */
function running(pod: Pod, index: number): Pod {
  pod.spec.nodeName = NODE;
  const annotations = pod.metadata.annotations ?? {};
  applyVMRuntime(annotations, { vmID: `vm-${index}`, ip: `10.0.0.${index + 1}`, vncPort: 0 });
  applyLifecycle(annotations, { state: "ready", observedGeneration: GENERATION, message: "" });
  pod.metadata.annotations = annotations;
  pod.status = {
    phase: "Running",
    conditions: [
      { type: "PodScheduled", status: "True" },
      { type: "Ready", status: "True" },
    ],
    containerStatuses: [
      {
        name: "agent",
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
      },
    ],
  } as Pod["status"];
  return pod;
}

function settledFixture(): { cs: CocoonSet; pods: Pod[] } {
  const cs = cocoonSet(
    { agent: { image: "ubuntu", replicas: 1 }, toolboxes: [{ name: "tb", image: "debian" }] },
    { generation: GENERATION },
  );
  const toolbox = cs.spec.toolboxes?.[0] ?? assert.fail("fixture has a toolbox");
  const pods = [
    running(buildMainPod(cs), 0),
    running(buildSubAgentPod(cs, 1, NODE), 1),
    running(buildToolboxPod(cs, toolbox), 2),
  ];
  const status = computeStatus(cs, classifyPods(pods, { name: SET, uid: SET_UID }), {
    now: "2026-01-01T00:00:00Z",
  });
  return { cs: { ...cs, status }, pods };
}

describe("CocoonSetReconciler on a settled set", () => {
  it("is Running with everything Ready", () => {
    const { cs } = settledFixture();
    assert.equal(cs.status?.phase, "Running");
    assert.equal(cs.status?.readyAgents, 2);
    assert.equal(cs.status?.readyToolboxes, 1);
  });

  it("makes zero API calls, zero registry calls and zero CocoonHibernation lists", async () => {
    const h = harness();
    const { cs, pods } = settledFixture();
    seedSet(h.client, cs);
    for (const pod of pods) h.client.seed(PODS, pod);

    const result = await new CocoonSetReconciler(h.deps).reconcile(
      { namespace: NS, name: SET },
      new AbortController().signal,
    );

    assert.deepEqual(result, {});
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.view.hibernationLists, 0);
    assert.deepEqual(h.events.events, []);
  });
});

describe("CocoonSetReconciler on a settled set branched from a checkpoint", () => {
  it("makes zero API and registry calls and reads no checkpoint", async () => {
    const h = harness();
    const { cs, pods } = settledFixture();
    cs.metadata.annotations = { ...cs.metadata.annotations, [ANN_FROM_CHECKPOINT]: "ck" };
    cs.status?.conditions?.push({
      type: CONDITION_BRANCHED,
      status: "True",
      reason: "FromCheckpoint",
      message: "branched from CocoonCheckpoint ck",
      lastTransitionTime: "2026-01-01T00:00:00Z",
      observedGeneration: GENERATION,
    });
    seedSet(h.client, cs);
    for (const pod of pods) h.client.seed(PODS, pod);
    let lookups = 0;
    const deps = {
      ...h.deps,
      branching: {
        checkpoints: {
          getCheckpoint: () => {
            lookups++;
            return undefined;
          },
        },
        registry: new FakeCheckpointRegistry(),
      },
    };

    const result = await new CocoonSetReconciler(deps).reconcile(
      { namespace: NS, name: SET },
      new AbortController().signal,
    );

    assert.deepEqual(result, {});
    assert.deepEqual(h.client.calls, []);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(lookups, 0);
  });
});
