import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import {
  mayDropWakeSnapshot,
  mayReleaseSeat,
  wakeEngagement,
  wakePlacement,
} from "../../../src/cocoonset/slotrelease.ts";
import { reconcileSuspend } from "../../../src/cocoonset/steps/suspend.ts";
import {
  ANN_DELETE_VM_NAMES,
  ANN_HIBERNATE,
  ANN_HIBERNATED_ON_NODE,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
  ANN_LIFECYCLE_STATE,
  ANN_RESTORE_FROM_HIBERNATE,
  LIFECYCLE_FAILED,
} from "../../../src/contract/keys.ts";
import { ApiError } from "../../../src/controller/errors.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { slotReleasePodsDeletedTotal } from "../../../src/metrics/cocoon.ts";
import {
  IMAGE,
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";
import { annotate, counterValue, hibernated, timeline } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const LABELS = { namespace: "ns", cocoonset: "demo" };

/** The upstream slot-release fixture: generation 1, suspended, hibernatePolicy release. */
function releaseSet(phase?: CocoonSetPhase, annotations: Record<string, string> = {}): CocoonSet {
  const cs = scalingSet({ suspend: true, hibernatePolicy: "release" }, 1);
  cs.metadata.annotations = annotations;
  if (phase) {
    cs.status = { phase, readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 };
  }
  return cs;
}

function run(h: ScalingHarness) {
  return reconcileSuspend(h.pass());
}

describe("slot release predicates", () => {
  const cs = releaseSet();

  it("a pod may give up its seat only once the gate saw its VM's snapshot", () => {
    const main = hibernated(buildMainPod(cs), 1);
    assert.equal(mayReleaseSeat(main, new Set([VM0])), true);
    assert.equal(mayReleaseSeat(main, new Set()), false);
    assert.equal(mayReleaseSeat(main, new Set(["vk-ns-demo-1"])), false);
  });

  it("a terminal pod (phase Failed or lifecycle failed) is kept for triage", () => {
    assert.equal(mayReleaseSeat(phaseFailed(hibernated(buildMainPod(cs), 1)), new Set([VM0])), false);
    const lifecycleFailed = annotate(buildMainPod(cs), { [ANN_LIFECYCLE_STATE]: LIFECYCLE_FAILED });
    assert.equal(mayReleaseSeat(lifecycleFailed, new Set([VM0])), false);
  });

  it("a wake snapshot may go only once the VM runs again and nothing asks it to hibernate", () => {
    assert.equal(mayDropWakeSnapshot(ready(buildMainPod(cs))), true);
    assert.equal(mayDropWakeSnapshot(buildMainPod(cs)), false, "no VM yet");
    assert.equal(mayDropWakeSnapshot(hibernated(buildMainPod(cs), 1)), false);
    const reHibernating = annotate(ready(buildMainPod(cs)), { [ANN_HIBERNATE]: "true" });
    assert.equal(mayDropWakeSnapshot(reHibernating), false);
  });

  it("scores the landing on the hinted node or elsewhere in the pool", () => {
    assert.equal(wakePlacement("node-a", "node-a"), "hint-node");
    assert.equal(wakePlacement("node-a", "node-c"), "pool");
    assert.equal(wakePlacement("node-a", undefined), "pool");
  });

  it("the wake engages on Waking, Suspended, Suspending with a hint, an unfinished restore, or a held wake set back", () => {
    const hint = { [ANN_HIBERNATED_ON_NODE]: "node-a" };
    const engaged = (phase: CocoonSetPhase | undefined, annotations = {}, main = buildMainPod(cs)) =>
      wakeEngagement(releaseSet(phase, annotations), main).engaged;
    assert.equal(engaged("Waking"), true);
    assert.equal(engaged("Suspended"), true);
    assert.equal(engaged("Suspending"), false);
    assert.equal(engaged("Suspending", hint), true);
    assert.equal(engaged("Running"), false);
    assert.equal(engaged("Running", hint), false);
    const noMain = (phase: CocoonSetPhase, annotations = {}) =>
      wakeEngagement(releaseSet(phase, annotations), undefined).engaged;
    assert.equal(noMain("Failed", hint), true, "a held wake, set back");
    assert.equal(noMain("Failed"), false);
    assert.equal(engaged("Failed", hint), false, "a failed main is step 7's");
    const restoring = buildMainPod(cs, { restore: true });
    assert.equal(engaged("Pending", hint, restoring), true);
    assert.equal(wakeEngagement(releaseSet("Pending", hint), restoring).waking, true);
    assert.equal(engaged("Pending", {}, restoring), false, "no hint: the wake is finished");
    assert.equal(engaged("Pending", hint, annotate(restoring, { [ANN_HIBERNATE]: "true" })), false);
  });
});

describe("step 6: suspend with hibernatePolicy release", () => {
  it("no registry → error, nothing released", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [hibernated(buildMainPod(cs), 1)], {
      withRegistry: false,
    });
    await assert.rejects(run(h), /hibernatePolicy=release on ns\/demo requires a configured registry/);
    assert.deepEqual(h.client.writes(), []);
  });

  it("no pods → Suspended at once", async () => {
    const h = scalingHarness(releaseSet("Suspending"));
    assert.deepEqual(await run(h), { done: true, result: {} });
    assert.equal(h.set().status?.phase, "Suspended");
    assert.deepEqual(h.registry.calls, []);
  });

  it("hibernated main on node-a without a tag → the pod survives, Suspending", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [hibernated(buildMainPod(cs), 1, "node-a")]);
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: 5000 } });
    assert.deepEqual(h.deleted(), []);
    assert.equal(h.set().status?.phase, "Suspending");
  });

  it("tag present → stash, hint, flag, delete; Suspended in the same pass; no registry deletes", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [hibernated(buildMainPod(cs), 1, "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    const before = await counterValue(slotReleasePodsDeletedTotal, LABELS);
    const calls = timeline(h);
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: 5000 } });
    assert.deepEqual(calls, [
      `patch cocoonsets/demo hibernate-reclaim={"generation":0,"vms":["${VM0}"],"suspended":["${VM0}"]}`,
      `registry hasManifest ${VM0}:hibernate`,
      `patch cocoonsets/demo delete-vm-names=${VM0}`,
      `patch cocoonsets/demo hibernated-on-node=node-a hibernate-reclaim={"generation":0,"vms":["${VM0}"],"suspended":["${VM0}"],"releasedUnder":{"${VM0}":{"backend":"cloud-hypervisor","os":"linux","snapshotCompatibilityClass":""}}}`,
      "get pods/demo-0",
      "patch pods/demo-0 keep-snapshot-on-delete=true",
      "delete pods/demo-0",
      "patch cocoonsets/demo status phase=Suspended",
    ]);
    const cs = h.set();
    assert.equal(cs.metadata.annotations?.[ANN_HIBERNATED_ON_NODE], "node-a");
    assert.equal(cs.metadata.annotations?.[ANN_DELETE_VM_NAMES], VM0);
    assert.equal(await counterValue(slotReleasePodsDeletedTotal, LABELS), before + 1);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
  });

  it("a main reporting only lifecycle failed may still run its VM: it is kept and the set stays Suspending", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [
      annotate(ready(buildMainPod(cs), "node-a"), { [ANN_LIFECYCLE_STATE]: LIFECYCLE_FAILED }),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    assert.deepEqual(h.deleted(), []);
    assert.equal(h.set().status?.phase, "Suspending");
  });

  it("a Phase=Failed main is skipped by the gate and kept by the release", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [phaseFailed(buildMainPod(cs))]);
    await run(h);
    assert.deepEqual(h.deleted(), []);
    assert.equal(h.set().status?.phase, "Suspended");
  });

  it("at delete time the API copy of the pod already carries keep-snapshot-on-delete", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [hibernated(buildMainPod(cs), 1, "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    let flagAtDelete: string | undefined;
    const remove = h.client.delete.bind(h.client);
    h.client.delete = async (rt, namespace, name, opts) => {
      flagAtDelete = h.client.peek<{ metadata: { annotations?: Record<string, string> } }>(
        PODS,
        namespace,
        name,
      )?.metadata.annotations?.[ANN_KEEP_SNAPSHOT_ON_DELETE];
      return remove(rt, namespace, name, opts);
    };
    await run(h);
    assert.equal(flagAtDelete, "true");
  });

  it("a failed flag patch is only logged; the pod is still deleted", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [
      // Annotated already, so the only pod patch of the pass is the flag.
      hibernated(buildMainPod(cs), 1, "node-a"),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    h.client.failNext("patch", "pods", new ApiError(500, "InternalError", "flag refused"));
    await run(h);
    assert.deepEqual(h.deleted(), ["demo-0"]);
    assert.equal(h.set().status?.phase, "Suspended");
  });

  it("a refused delete fails the pass before Suspended is written", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [hibernated(buildMainPod(cs), 1, "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    h.client.failNext("delete", "pods", new ApiError(500, "InternalError", "delete refused"));
    await assert.rejects(run(h), /delete refused/);
    assert.equal(h.set().status?.phase, "Suspending");
  });

  it("the passes after the release find no pods and settle Suspended", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [hibernated(buildMainPod(cs), 1, "node-a")]);
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    h.client.finishPodDeletion("ns", "demo-0");
    const calls = timeline(h);
    assert.deepEqual(await run(h), { done: true, result: {} });
    // The status the release wrote still listed the deleted main; this pass drops it.
    assert.deepEqual(calls, ["patch cocoonsets/demo status phase=Suspended"]);
    assert.equal(h.set().status?.agents, undefined);
    await run(h);
    assert.equal(calls.length, 1, "a settled Suspended pass makes no call");
  });

  it("a restore-marked main (woken and suspended again) is released the same way", async () => {
    const h = scalingHarness(releaseSet("Suspending"), (cs) => [
      hibernated(annotate(buildMainPod(cs), { [ANN_RESTORE_FROM_HIBERNATE]: "true" }), 1, "node-b"),
    ]);
    h.registry.put(VM0, "hibernate", IMAGE);
    await run(h);
    assert.deepEqual(h.deleted(), ["demo-0"]);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], "node-b");
  });
});
