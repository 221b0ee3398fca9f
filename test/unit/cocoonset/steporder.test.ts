// The order of the pass's steps, driven through CocoonSetReconciler.reconcile (never a step alone):
// each test builds a state in which two steps whose order the spec fixes would both act, and asserts
// what the spec says the earlier one decides. Each fails when its pair of STEPS is swapped in
// src/cocoonset/reconciler.ts (the step numbers in a test's name say which pair).

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_LIFECYCLE_STATE,
  ANN_RESTORE_FROM_HIBERNATE,
  LABEL_HOSTNAME,
  LIFECYCLE_READY,
  TAG_HIBERNATE,
  TRUE,
} from "../../../src/contract/keys.ts";
import type { Result } from "../../../src/controller/reconciler.ts";
import { NS, SET } from "../../support/cocoonset.ts";
import {
  IMAGE,
  lifecycleFailed,
  mainBuiltUnderPin,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
  withPhase,
} from "../../support/scaling.ts";
import { annotate, hibernated, storedReclaim, timeline, woken } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const VM1 = "vk-ns-demo-1";
const VMTB = "vk-ns-demo-tb";
const TOOLBOX = { name: "tb", image: IMAGE };

function reconcile(h: ScalingHarness): Promise<Result> {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: NS, name: SET },
    new AbortController().signal,
  );
}

function withAnnotations(cs: CocoonSet, annotations: Record<string, string>): CocoonSet {
  cs.metadata.annotations = { ...cs.metadata.annotations, ...annotations };
  return cs;
}

function reclaimAnnotation(generation: number, vms: string[]): Record<string, string> {
  return { [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation, vms, suspended: vms }) };
}

/** A main that has no VM yet: created, not scheduled. */
function comingUp(pod: Pod): Pod {
  pod.status = { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False" }] };
  return pod;
}

function createdPod(h: ScalingHarness, name: string): Pod {
  const call = h.client.calls.find((c) => c.verb === "create" && c.name === name);
  return (call?.body as Pod | undefined) ?? assert.fail(`pod ${name} was not created`);
}

function phaseOf(h: ScalingHarness): CocoonSetPhase | undefined {
  return h.set().status?.phase;
}

function eventReasons(h: ScalingHarness): string[] {
  return h.events.events.map((e) => e.reason);
}

describe("step order through CocoonSetReconciler.reconcile", () => {
  it("3 before 5: a set without its finalizer gets it before the pass stamps the new generation on its pods", async () => {
    const cs = scalingSet({}, 2);
    cs.metadata.finalizers = [];
    const h = scalingHarness(cs, (stored) => [
      annotate(ready(buildMainPod(stored)), { [ANN_COCOONSET_GENERATION]: "1" }),
    ]);

    await reconcile(h);
    assert.deepEqual(
      h.client
        .writes()
        .slice(0, 2)
        .map((c) => `${c.verb} ${c.resource}/${c.name}`),
      [`update cocoonsets/${SET}`, `patch pods/${SET}-0`],
    );
  });

  it("5 before 6: a suspend stamps the new generation on the pod before it asks for the hibernate", async () => {
    const h = scalingHarness(scalingSet({ suspend: true }, 2), (cs) => [
      annotate(ready(buildMainPod(cs)), {
        [ANN_COCOONSET_GENERATION]: "1",
        [ANN_LIFECYCLE_STATE]: LIFECYCLE_READY,
      }),
    ]);
    const calls = timeline(h);

    await reconcile(h);

    const podPatches = calls.filter((c) => c.startsWith("patch pods/demo-0"));
    assert.deepEqual(podPatches, ["patch pods/demo-0 generation=2", "patch pods/demo-0 hibernate=true"]);
  });

  it("6 before 7: a main that fails while the set is suspended stays on the suspend path", async () => {
    const h = scalingHarness(scalingSet({ suspend: true }, 1), (cs) => [
      lifecycleFailed(ready(buildMainPod(cs))),
    ]);

    await reconcile(h);

    assert.equal(phaseOf(h), "Suspending");
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_HIBERNATE], TRUE);
    assert.deepEqual(eventReasons(h), []);
  });

  it("7 before 8: a main that failed its migration quiesce parks Failed, the migration does not go on", async () => {
    const cs = withPhase(scalingSet({ nodeName: "node-b" }, 1), "Migrating");
    const h = scalingHarness(cs, (stored) => {
      const main = mainBuiltUnderPin(stored, undefined);
      return [annotate(lifecycleFailed(ready(main, "node-a")), { [ANN_HIBERNATE]: TRUE })];
    });

    assert.deepEqual(await reconcile(h), {});

    assert.equal(phaseOf(h), "Failed");
    assert.deepEqual(eventReasons(h), ["PodLifecycleFailed"]);
    assert.deepEqual(h.registry.calls, []);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_HIBERNATE], TRUE, "the quiesce is kept");
  });

  describe("a release-suspended set whose pods are all gone, unsuspended", () => {
    function releasedSet(spec: Partial<CocoonSet["spec"]> = {}): ScalingHarness {
      const cs = scalingSet({ hibernatePolicy: "release", ...spec }, 1);
      withAnnotations(cs, { [ANN_HIBERNATED_ON_NODE]: "node-a", ...reclaimAnnotation(1, [VM0]) });
      const h = scalingHarness(withPhase(cs, "Suspended"));
      h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
      return h;
    }

    it("8 before 9: with a new pin it migrates the main on the suspend's snapshot", async () => {
      const h = releasedSet({ nodeName: "node-b" });

      await reconcile(h);

      assert.equal(phaseOf(h), "Migrating");
      const main = createdPod(h, "demo-0");
      assert.equal(main.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], TRUE);
      assert.deepEqual(
        main.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
        [{ matchExpressions: [{ key: LABEL_HOSTNAME, operator: "In", values: ["node-b"] }] }],
      );
      assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
    });

    it("9 before 11: the wake recreates the main from its snapshot, preferring the node it left", async () => {
      const h = releasedSet();

      await reconcile(h);

      assert.equal(phaseOf(h), "Waking");
      const main = createdPod(h, "demo-0");
      assert.equal(main.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], TRUE);
      assert.deepEqual(main.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution, [
        {
          weight: 100,
          preference: { matchExpressions: [{ key: LABEL_HOSTNAME, operator: "In", values: ["node-a"] }] },
        },
      ]);
      assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
    });

    it("9 before 10: the unsuspend bookkeeping waits for the first pass the wake hands back", async () => {
      const h = releasedSet();
      const calls = timeline(h);

      await reconcile(h);

      assert.deepEqual(
        calls.filter((c) => c.includes("hibernate-reclaim")),
        [],
      );
      assert.deepEqual(storedReclaim(h.set()).suspended, [VM0]);
    });
  });

  it("8 before 10: the migration's quiesce of an off-target main is not cleared as an unsuspend", async () => {
    const cs = withPhase(scalingSet({ nodeName: "node-b" }, 1), "Migrating");
    const h = scalingHarness(cs, (stored) => [
      annotate(ready(mainBuiltUnderPin(stored, undefined), "node-a"), { [ANN_HIBERNATE]: TRUE }),
    ]);
    const calls = timeline(h);

    await reconcile(h);

    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_HIBERNATE], TRUE);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      [],
    );
    assert.equal(phaseOf(h), "Migrating");
  });

  it("10 before 11: unsuspend clears the hibernate annotation of a main that is not Ready (hibernated)", async () => {
    const cs = withAnnotations(withPhase(scalingSet({}, 1), "Suspended"), reclaimAnnotation(1, [VM0]));
    const h = scalingHarness(cs, (stored) => [hibernated(buildMainPod(stored), 1)]);

    await reconcile(h);

    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.equal(phaseOf(h), "Pending");
  });

  describe("10's bookkeeping before 12 and 13: slots deleted while suspended are restored", () => {
    function unsuspended(spec: Partial<CocoonSet["spec"]>, vms: string[]): ScalingHarness {
      const cs = withAnnotations(withPhase(scalingSet(spec, 2), "Suspended"), reclaimAnnotation(2, vms));
      const h = scalingHarness(cs, (stored) => [woken(buildMainPod(stored), 2)]);
      for (const vm of vms.slice(1)) h.registry.put(vm, TAG_HIBERNATE, IMAGE);
      return h;
    }

    it("10 before 12: the sub-agent is created restore-marked, its snapshot kept", async () => {
      const h = unsuspended({ agent: { image: IMAGE, replicas: 1 } }, [VM0, VM1]);

      assert.deepEqual(await reconcile(h), { requeue: true });

      assert.equal(createdPod(h, "demo-1").metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], TRUE);
      assert.ok(h.registry.has(VM1, TAG_HIBERNATE), "not dropped as a fork-from tag");
    });

    it("10 before 13: the toolbox is created restore-marked, its snapshot kept", async () => {
      const h = unsuspended({ toolboxes: [TOOLBOX] }, [VM0, VMTB]);

      assert.deepEqual(await reconcile(h), { requeue: true });

      assert.equal(createdPod(h, "demo-tb").metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], TRUE);
      assert.ok(h.registry.has(VMTB, TAG_HIBERNATE));
    });
  });

  it("11 before 12: no sub-agent forks from a main that is not Ready", async () => {
    const h = scalingHarness(scalingSet({ agent: { image: IMAGE, replicas: 1 } }, 1), (cs) => [
      comingUp(buildMainPod(cs)),
    ]);

    await reconcile(h);

    assert.deepEqual(h.created(), []);
    assert.equal(phaseOf(h), "Pending");
  });

  it("12 before 13: sub-agents are created before toolboxes", async () => {
    const h = scalingHarness(
      scalingSet({ agent: { image: IMAGE, replicas: 1 }, toolboxes: [TOOLBOX] }, 1),
      (cs) => [ready(buildMainPod(cs))],
    );

    await reconcile(h);

    assert.deepEqual(h.created(), ["demo-1", "demo-tb"]);
  });

  it("13 before 14: a pass that creates a toolbox requeues at once and skips the status patch", async () => {
    const h = scalingHarness(scalingSet({ toolboxes: [TOOLBOX] }, 1), (cs) => [ready(buildMainPod(cs))]);

    assert.deepEqual(await reconcile(h), { requeue: true });

    assert.deepEqual(h.created(), ["demo-tb"]);
    assert.deepEqual(
      h.client.writes().filter((c) => c.subresource === "status"),
      [],
    );
  });
});
