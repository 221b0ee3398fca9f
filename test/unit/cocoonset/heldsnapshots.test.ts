import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { CONDITION_READY } from "../../../src/cocoonset/decide/computestatus.ts";
import { REASON_SNAPSHOT_INCOMPATIBLE } from "../../../src/cocoonset/decide/heldsnapshots.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import {
  ANN_BACKEND,
  ANN_HIBERNATE,
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_RESTORE_FROM_HIBERNATE,
  TAG_HIBERNATE,
} from "../../../src/contract/keys.ts";
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

/** A release-suspended set, its seat freed (no pod; the record says what the snapshot was taken under), then edited. */
function releasedThenEdited(
  spec: Partial<CocoonSet["spec"]>,
  releasedUnder: Record<string, unknown> | null = {
    [VM0]: { backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" },
  },
): ScalingHarness {
  const before = scalingSet(
    { suspend: true, hibernatePolicy: "release", agent: { image: IMAGE, replicas: 0, mode: "run" } },
    GEN,
  );
  before.metadata.annotations = {
    [ANN_HIBERNATE_RECLAIM]: JSON.stringify({
      generation: 0,
      vms: [VM0],
      suspended: [VM0],
      ...(releasedUnder ? { releasedUnder } : {}),
    }),
    [ANN_HIBERNATED_ON_NODE]: "node-a",
  };
  before.status = {
    phase: "Suspended",
    readyAgents: 0,
    desiredAgents: 1,
    readyToolboxes: 0,
    desiredToolboxes: 0,
  };
  const h = scalingHarness(before);
  h.registry.put(VM0, TAG_HIBERNATE, IMAGE);
  const stored = h.set();
  h.client.seed(COCOONSETS, { ...stored, spec: { ...stored.spec, ...spec } });
  return h;
}

function heldReason(h: ScalingHarness): string | undefined {
  return h.set().status?.conditions?.find((c) => c.type === CONDITION_READY)?.reason;
}

describe("a release-suspended set edited after its seat was freed", () => {
  it("still suspended: Failed, the cause in the Ready condition and one Warning, no pod and no registry call; the next pass writes nothing", async () => {
    const h = releasedThenEdited({ ...FIRECRACKER, suspend: true });
    const calls = timeline(h);
    await reconcile(h);
    assert.equal(h.set().status?.phase, "Failed");
    assert.equal(heldReason(h), REASON_SNAPSHOT_INCOMPATIBLE);
    assert.match(
      h.set().status?.conditions?.find((c) => c.type === CONDITION_READY)?.message ?? "",
      /VM vk-ns-demo-0 of pod ns\/demo-0 was snapshotted under backend cloud-hypervisor \(the spec asks for firecracker\)\. The snapshots are kept: set spec\.agent\.backend back to cloud-hypervisor/,
    );
    assert.deepEqual(calls, ["patch cocoonsets/demo status phase=Failed"]);
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === REASON_SNAPSHOT_INCOMPATIBLE).map((e) => e.type),
      ["Warning"],
    );
    const again = timeline(h);
    await reconcile(h);
    assert.deepEqual(again, [], "a settled held pass makes no API write and no registry call");
    assert.equal(h.events.events.filter((e) => e.reason === REASON_SNAPSHOT_INCOMPATIBLE).length, 1);
  });

  it("unedited, a settled released set makes no API write and no registry call", async () => {
    const h = releasedThenEdited({});
    await reconcile(h);
    const calls = timeline(h);
    await reconcile(h);
    assert.deepEqual(calls, []);
    assert.equal(h.set().status?.phase, "Suspended");
  });

  it("resumed without setting it back: no wake pod, no registry call, the tag and the record stay", async () => {
    const h = releasedThenEdited({ ...FIRECRACKER, suspend: false });
    const recordBefore = h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM];
    const calls = timeline(h);
    await reconcile(h);
    assert.deepEqual(calls, ["patch cocoonsets/demo status phase=Failed"]);
    assert.equal(heldReason(h), REASON_SNAPSHOT_INCOMPATIBLE);
    assert.deepEqual(h.created(), []);
    assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], recordBefore);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATED_ON_NODE], "node-a");
  });

  it("an OS edit is held the same way", async () => {
    const h = releasedThenEdited({
      agent: { image: IMAGE, replicas: 0, mode: "run", os: "windows" },
      suspend: false,
    });
    await reconcile(h);
    assert.equal(heldReason(h), REASON_SNAPSHOT_INCOMPATIBLE);
    assert.deepEqual(h.created(), []);
  });

  it("set back after the resume: step 9 wakes the main from the same snapshot, on the hinted node", async () => {
    const h = releasedThenEdited({ ...FIRECRACKER, suspend: false });
    await reconcile(h);
    assert.equal(h.set().status?.phase, "Failed");
    const stored = h.set();
    h.client.seed(COCOONSETS, {
      ...stored,
      spec: {
        ...stored.spec,
        agent: { image: IMAGE, replicas: 0, mode: "run", backend: "cloud-hypervisor" },
      },
    });
    const calls = timeline(h);
    await reconcile(h);
    assert.deepEqual(calls, [
      `registry getSnapshot ${VM0}:hibernate`,
      "patch cocoonsets/demo status phase=Waking",
      "create pods/demo-0",
    ]);
    const main = h.pod("demo-0");
    assert.equal(main?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.equal(main?.metadata.annotations?.[ANN_BACKEND] ?? "cloud-hypervisor", "cloud-hypervisor");
    assert.deepEqual(
      main?.spec.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.preference
        .matchExpressions?.[0]?.values,
      ["node-a"],
    );
    assert.ok(h.registry.has(VM0, TAG_HIBERNATE));
  });

  it("a record without releasedUnder (the Go operator's, an older one's) is not held: the wake pod is built from the spec, as before", async () => {
    const h = releasedThenEdited({ ...FIRECRACKER, suspend: false }, null);
    await reconcile(h);
    assert.deepEqual(h.created(), ["demo-0"]);
    assert.equal(h.pod("demo-0")?.metadata.annotations?.[ANN_BACKEND], "firecracker");
  });

  it("the policy edited to retain while released: the main is not recreated under the edit", async () => {
    const h = releasedThenEdited({ ...FIRECRACKER, suspend: true, hibernatePolicy: "retain" });
    await reconcile(h);
    assert.deepEqual(h.created(), []);
    assert.equal(heldReason(h), REASON_SNAPSHOT_INCOMPATIBLE);
  });
});
