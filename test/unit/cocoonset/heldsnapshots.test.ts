import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { CONDITION_READY } from "../../../src/cocoonset/decide/computestatus.ts";
import { REASON_SNAPSHOT_INCOMPATIBLE } from "../../../src/cocoonset/decide/heldsnapshots.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { ANN_HIBERNATE, ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../../src/contract/keys.ts";
import { COCOONSETS } from "../../../src/controller/resources.ts";
import { IMAGE, type ScalingHarness, scalingHarness, scalingSet } from "../../support/scaling.ts";
import { hibernated, timeline } from "../../support/suspend.ts";

const VM0 = "vk-ns-demo-0";
const GEN = 3;

/** A retained set suspended on cloud-hypervisor (its main hibernated, its tag pushed), then edited. */
function editedWhileSuspended(
  spec: Partial<CocoonSet["spec"]>,
  policy: "retain" | "release" = "retain",
): ScalingHarness {
  const before = scalingSet(
    { suspend: true, hibernatePolicy: policy, agent: { image: IMAGE, replicas: 0 } },
    GEN,
  );
  before.metadata.annotations = {
    [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 0, vms: [VM0], suspended: [VM0] }),
  };
  const h = scalingHarness(before, (cs) => [hibernated(buildMainPod(cs), GEN + 1)]);
  h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
  const stored = h.set();
  h.client.seed(COCOONSETS, { ...stored, spec: { ...stored.spec, ...spec } });
  return h;
}

function reconcile(h: ScalingHarness) {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: "ns", name: "demo" },
    new AbortController().signal,
  );
}

const FIRECRACKER = { agent: { image: IMAGE, replicas: 0, mode: "run", backend: "firecracker" } };

describe("a suspended set edited on a field its snapshots depend on", () => {
  it("goes Failed once its suspend is confirmed, the cause in the Ready condition and one Warning; the next pass writes nothing", async () => {
    const h = editedWhileSuspended({ ...FIRECRACKER, suspend: true });
    await reconcile(h);
    const status = h.set().status;
    assert.equal(status?.phase, "Failed");
    const ready = status?.conditions?.find((c) => c.type === CONDITION_READY);
    assert.equal(ready?.reason, REASON_SNAPSHOT_INCOMPATIBLE);
    assert.match(ready?.message ?? "", /backend cloud-hypervisor \(the spec asks for firecracker\)/);
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === REASON_SNAPSHOT_INCOMPATIBLE).map((e) => e.type),
      ["Warning"],
    );

    const calls = timeline(h);
    await reconcile(h);
    assert.deepEqual(
      calls.filter((c) => !c.startsWith("registry hasManifest")),
      [],
      "a settled held pass writes nothing",
    );
    assert.equal(h.events.events.filter((e) => e.reason === REASON_SNAPSHOT_INCOMPATIBLE).length, 1);
  });

  it("under release, no seat is freed: the pod that records what the snapshot was taken under stays", async () => {
    const h = editedWhileSuspended({ ...FIRECRACKER, suspend: true, hibernatePolicy: "release" }, "release");
    const calls = timeline(h);
    await reconcile(h);
    assert.deepEqual(h.deleted(), []);
    assert.ok(!calls.some((c) => c.includes("keep-snapshot-on-delete")), calls.join("\n"));
    assert.equal(h.set().status?.phase, "Failed");
  });

  it("resumed unchanged: no pod is woken, deleted or created and the tag and record stay", async () => {
    const h = editedWhileSuspended({ ...FIRECRACKER, suspend: false });
    const calls = timeline(h);
    await reconcile(h);
    assert.deepEqual(
      calls.filter((c) => !c.startsWith("patch cocoonsets/demo status")),
      [],
      "only the Failed status is written",
    );
    assert.equal(h.set().status?.phase, "Failed");
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
  });

  it("resumed with the edit set back: step 10 wakes the same pod", async () => {
    const h = editedWhileSuspended({ suspend: false });
    const calls = timeline(h);
    await reconcile(h);
    assert.ok(calls.includes("patch pods/demo-0 hibernate-"), calls.join("\n"));
    assert.equal(h.deleted().length, 0);
  });
});
