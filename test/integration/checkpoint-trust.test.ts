// Checkpoints and branches at their edges, end to end on the real API server and registry with the
// vk-cocoon simulator (docs/checkpoints.md): a branch created suspended still starts from the
// checkpoint; a from-checkpoint annotation that can no longer act says so; a checkpoint a branch is
// still copying from is neither deleted nor pruned, and a pinned one is never pruned; a checkpoint
// copies only the snapshots of the suspend it checkpoints; a copy the registry keeps refusing reaches
// Failed by spec.failureDeadline, and a refused tag delete shows in a condition.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ANN_FROM_CHECKPOINT, ANN_KEEP_CHECKPOINTS, ANN_PINNED } from "../../src/checkpoint/keys.ts";
import { MANIFEST_ANN_FROM_NODE, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { OciClient, pushSnapshot, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  checkpointsPath,
  conditionOf,
  createCheckpoint,
  getCheckpoint,
  tagDigest,
  waitCheckpointGone,
  waitCheckpointPhase,
} from "../support/checkpointapi.ts";
import { refusingRegistry } from "../support/refusingregistry.ts";
import { createPoolSet, getSet, objectEvents, patchSetSpec, setPods } from "../support/setapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv, waitPhase, waitRunning } from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

const refusing = refusingRegistry(env.registry);
const refusedPuts = refusing.puts;
const refusedDeletes = refusing.deletes;

before(async () => {
  e2e = await startSetEnv(env, "cktrust", {
    registry: refusing.registry,
  });
  ({ ns, pool, sim } = e2e);
  // One source group (a main and a sub-agent), suspended for the whole file.
  await createPoolSet(env, ns, pool, "src", { agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" } });
  await waitRunning(env, ns, "src", 2);
  await patchSetSpec(env, ns, "src", { suspend: true });
  await waitPhase(env, ns, "src", "Suspended", 90_000, true);
});

after(async () => {
  await e2e?.stop();
});

const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;
const hasEvent = async (object: string, reason: string) =>
  (await objectEvents(env, ns, object)).some((e) => e.reason === reason);

async function readyCheckpointOfSrc(name: string, annotations?: Record<string, string>) {
  const res = await createCheckpoint(env, ns, name, "src", annotations ? { annotations } : {});
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return waitCheckpointPhase(env, ns, name, "Ready");
}

describe("branches that start from their checkpoint", () => {
  it("a Ready checkpoint shows its copy's progress and conditions, and its manifests name no node", {
    timeout: 120_000,
  }, async () => {
    const ck = await readyCheckpointOfSrc("ck");
    const members = ck.status?.members ?? [];
    assert.equal(members.length, 2);
    // What the checkpoint holds, and how far its copy went.
    assert.deepEqual(ck.status?.progress, {
      membersCopied: 2,
      membersTotal: 2,
      bytesCopied: ck.status?.totalBytes,
      bytesTotal: ck.status?.totalBytes,
    });
    const ready = conditionOf(ck, "Ready");
    assert.deepEqual([ready?.status, ready?.reason], ["True", "Ready"]);
    assert.equal(ready?.observedGeneration, ck.metadata.generation);
    assert.equal(conditionOf(ck, "Progressing")?.status, "False");
    for (const member of members) {
      const tagged = await oci.getManifest(oci.repository(member.vmName), "ckpt-ck");
      const source = await oci.getManifest(oci.repository(member.vmName), TAG_HIBERNATE);
      assert.ok(source?.json.annotations?.[MANIFEST_ANN_FROM_NODE], "vk-cocoon's push names its node");
      assert.equal(
        tagged?.json.annotations?.[MANIFEST_ANN_FROM_NODE],
        undefined,
        `${member.vmName}:ckpt-ck names no node for a branch's restore to ask first`,
      );
    }
  });

  // Release suspends take a main alone.
  for (const [set, hibernatePolicy, replicas] of [
    ["sleeper", "retain", 1],
    ["sleeper-r", "release", 0],
  ] as const) {
    it(`a branch created suspended (${hibernatePolicy}) copies before its first pod, and every VM restores from the checkpoint`, {
      timeout: 240_000,
    }, async () => {
      const ck = await waitCheckpointPhase(env, ns, "ck", "Ready");
      const members = (ck.status?.members ?? []).slice(0, replicas + 1);

      await createPoolSet(
        env,
        ns,
        pool,
        set,
        { suspend: true, hibernatePolicy, agent: { image: E2E_IMAGE, replicas, mode: "clone" } },
        { [ANN_FROM_CHECKPOINT]: "ck" },
      );
      const suspended = await waitPhase(env, ns, set, "Suspended", 90_000, true);
      assert.equal(conditionOf(suspended, "Branched")?.status, "True");
      // The last VM has no pod yet: its copy waits in the registry, naming no node.
      const copied = await oci.getManifest(oci.repository(vmName(set, replicas)), TAG_HIBERNATE);
      assert.equal(copied?.digest, members[replicas]?.digest);
      assert.equal(copied?.json.annotations?.[MANIFEST_ANN_FROM_NODE], undefined);

      await patchSetSpec(env, ns, set, { suspend: false });
      await waitRunning(env, ns, set, replicas + 1);
      for (const [slot, member] of members.entries()) {
        const vm = vmName(set, slot);
        assert.equal(sim.record.events({ kind: "boot", vmName: vm }).length, 0, `${vm} never booted fresh`);
        const first = sim.record.events({ kind: "restore", vmName: vm })[0];
        assert.equal(first?.snapshot?.digest, member.digest, `${vm} first came up from the checkpoint`);
      }
    });
  }

  it("from-checkpoint added to a set with state of its own: a Warning and a condition, nothing copied", {
    timeout: 120_000,
  }, async () => {
    await createPoolSet(env, ns, pool, "own", {});
    await waitRunning(env, ns, "own", 1);
    const before = await tagDigest(oci, vmName("own", 0), TAG_HIBERNATE);
    const res = await apiRequest(
      env,
      "PATCH",
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets/own`,
      { metadata: { annotations: { [ANN_FROM_CHECKPOINT]: "ck" } } },
      "application/merge-patch+json",
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const event = await waitFor("BranchNotApplied", async () =>
      (await objectEvents(env, ns, "own")).find((e) => e.reason === "BranchNotApplied"),
    );
    assert.equal(event.type, "Warning");
    const branched = conditionOf(await getSet(env, ns, "own"), "Branched");
    assert.deepEqual([branched?.status, branched?.reason], ["False", "NotApplied"]);
    assert.equal(await tagDigest(oci, vmName("own", 0), TAG_HIBERNATE), before, "nothing copied");
  });
});

describe("checkpoints in use", () => {
  it("a checkpoint's delete waits, naming the set, until a branch still copying from it finishes", {
    timeout: 240_000,
  }, async () => {
    const ck = await readyCheckpointOfSrc("busy");
    refusedPuts.add(`/${vmName("hold", 1)}/manifests/${TAG_HIBERNATE}`);
    await createPoolSet(
      env,
      ns,
      pool,
      "hold",
      { agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" } },
      { [ANN_FROM_CHECKPOINT]: "busy" },
    );
    await waitFor("hold's copy refused", async () =>
      (await hasEvent("hold", "BranchCopyFailed")) ? true : undefined,
    );

    const deleted = await apiRequest(env, "DELETE", `${checkpointsPath(ns)}/busy`);
    assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body));
    const waiting = await waitFor("busy's delete waiting", async () => {
      const now = await getCheckpoint(env, ns, "busy");
      return conditionOf(now, "Deleting")?.reason === "InUse" ? now : undefined;
    });
    assert.match(conditionOf(waiting, "Deleting")?.message ?? "", /CocoonSet hold/);
    await waitFor("CheckpointDeleteWaiting event", async () =>
      (await hasEvent("busy", "CheckpointDeleteWaiting")) ? true : undefined,
    );
    for (const member of ck.status?.members ?? []) {
      assert.equal(await tagDigest(oci, member.vmName, "ckpt-busy"), member.digest, "the tags stay");
    }
    // The branch's own condition says why it has not finished.
    const failing = conditionOf(await getSet(env, ns, "hold"), "Branched");
    assert.deepEqual([failing?.status, failing?.reason], ["False", "CopyFailed"]);
    assert.match(failing?.message ?? "", /refused by the test/);

    refusedPuts.clear();
    await waitRunning(env, ns, "hold", 2);
    const restore = sim.record.events({ kind: "restore", vmName: vmName("hold", 1) })[0];
    assert.equal(restore?.snapshot?.digest, ck.status?.members?.[1]?.digest);
    await waitCheckpointGone(env, ns, "busy", 60_000);
    for (const member of ck.status?.members ?? []) {
      assert.equal(await tagDigest(oci, member.vmName, "ckpt-busy"), undefined);
    }
  });

  it("keep-checkpoints never takes a pinned checkpoint, nor counts it", { timeout: 180_000 }, async () => {
    await createPoolSet(env, ns, pool, "kept", {}, { [ANN_KEEP_CHECKPOINTS]: "1" });
    await waitRunning(env, ns, "kept", 1);
    await patchSetSpec(env, ns, "kept", { suspend: true });
    await waitPhase(env, ns, "kept", "Suspended", 90_000, true);
    for (const [name, annotations] of [
      ["pinned", { [ANN_PINNED]: "true" }],
      ["older", undefined],
      ["newest", undefined],
    ] as const) {
      assert.equal(
        (await createCheckpoint(env, ns, name, "kept", annotations ? { annotations } : {})).status,
        201,
      );
      await waitCheckpointPhase(env, ns, name, "Ready");
      // Creation times have whole seconds: the next one must be newer.
      await new Promise((r) => setTimeout(r, 1_100));
    }
    await waitCheckpointGone(env, ns, "older");
    assert.equal((await getCheckpoint(env, ns, "pinned"))?.status?.phase, "Ready", "the pinned one stays");
    assert.equal((await getCheckpoint(env, ns, "newest"))?.status?.phase, "Ready");
    assert.ok(await tagDigest(oci, vmName("kept", 0), "ckpt-pinned"));

    // Once the set wakes and its :hibernate goes, the checkpoints hold their bytes alone.
    await patchSetSpec(env, ns, "kept", { suspend: false });
    await waitRunning(env, ns, "kept", 1);
    const alone = await waitFor("pinned measured at the woken generation", async () => {
      const ck = await getCheckpoint(env, ns, "pinned");
      const cs = await getSet(env, ns, "kept");
      return ck?.status?.exclusiveBytesSetGeneration === cs.metadata.generation ? ck : undefined;
    });
    assert.equal(await tagDigest(oci, vmName("kept", 0), TAG_HIBERNATE), undefined);
    assert.ok((alone.status?.totalBytes ?? 0) > 0);
    assert.equal(alone.status?.exclusiveBytes, alone.status?.totalBytes);
  });
});

describe("checkpoints of one suspend", () => {
  it("a slot the suspend took no snapshot of is not copied, and its member says why", {
    timeout: 180_000,
  }, async () => {
    await createPoolSet(env, ns, pool, "grow", { agent: { image: E2E_IMAGE, replicas: 0, mode: "clone" } });
    await waitRunning(env, ns, "grow", 1);
    await patchSetSpec(env, ns, "grow", { suspend: true });
    await waitPhase(env, ns, "grow", "Suspended", 90_000, true);
    // A :hibernate left from an earlier life of slot 1; this suspend never ran a VM there.
    const stale = await pushSnapshot(oci, {
      vmName: vmName("grow", 1),
      vmID: "stale",
      tag: TAG_HIBERNATE,
      baseImage: E2E_IMAGE,
      fromNode: "elsewhere",
    });
    await patchSetSpec(env, ns, "grow", { agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" } });
    await waitPhase(env, ns, "grow", "Suspended", 90_000, true);
    assert.deepEqual(
      (await setPods(env, ns, "grow")).map((p) => p.metadata.name),
      ["grow-0"],
      "a suspended set creates no new sub-agent",
    );

    assert.equal((await createCheckpoint(env, ns, "one-suspend", "grow")).status, 201);
    const ck = await waitCheckpointPhase(env, ns, "one-suspend", "Ready");
    const slot1 = ck.status?.members?.find((m) => m.slot === 1);
    assert.equal(slot1?.digest, undefined, "the stale snapshot is not in the checkpoint");
    assert.match(slot1?.skipped ?? "", /no pod/);
    assert.match(ck.status?.message ?? "", new RegExp(`not of this suspend.*${vmName("grow", 1)}`));
    assert.equal(await tagDigest(oci, vmName("grow", 1), "ckpt-one-suspend"), undefined);
    assert.equal(await tagDigest(oci, vmName("grow", 1), TAG_HIBERNATE), stale.digest, "left as it was");
    assert.ok(ck.status?.members?.find((m) => m.slot === 0)?.digest);
  });
});

describe("checkpoint failures in status", () => {
  it("a copy the registry keeps refusing is Failed at spec.failureDeadline with the registry's message", {
    timeout: 120_000,
  }, async () => {
    refusedPuts.add(`/${vmName("src", 1)}/manifests/ckpt-doomed`);
    const res = await createCheckpoint(env, ns, "doomed", "src", { spec: { failureDeadline: "3s" } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const retrying = await waitFor("doomed retrying", async () => {
      const ck = await getCheckpoint(env, ns, "doomed");
      return conditionOf(ck, "Progressing")?.reason === "CopyFailed" ? ck : undefined;
    });
    assert.equal(retrying.status?.phase, "Copying");
    assert.match(conditionOf(retrying, "Ready")?.message ?? "", /refused by the test/);
    const failed = await waitCheckpointPhase(env, ns, "doomed", "Failed", 60_000);
    assert.match(failed.status?.message ?? "", /failureDeadline 3s: copy failed: .*refused by the test/);
    const ready = conditionOf(failed, "Ready");
    assert.deepEqual([ready?.status, ready?.reason], ["False", "Failed"]);
    assert.equal(ready?.observedGeneration, failed.metadata.generation);
    assert.equal(conditionOf(failed, "Progressing")?.status, "False");
    await waitFor("CheckpointFailed event", async () =>
      (await hasEvent("doomed", "CheckpointFailed")) ? true : undefined,
    );
    refusedPuts.clear();

    const bad = await createCheckpoint(env, ns, "never", "src", { spec: { failureDeadline: "soon" } });
    assert.equal(bad.status, 422, JSON.stringify(bad.body));
    assert.match(JSON.stringify(bad.body), /failureDeadline/);
  });

  it("a tag delete the registry refuses shows in the Deleting condition until it succeeds", {
    timeout: 120_000,
  }, async () => {
    const ck = await readyCheckpointOfSrc("stuck");
    refusedDeletes.add(vmName("src", 0));
    const deleted = await apiRequest(env, "DELETE", `${checkpointsPath(ns)}/stuck`);
    assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body));
    const stuck = await waitFor("stuck's delete refused", async () => {
      const now = await getCheckpoint(env, ns, "stuck");
      return conditionOf(now, "Deleting")?.reason === "TagDeleteFailed" ? now : undefined;
    });
    assert.match(conditionOf(stuck, "Deleting")?.message ?? "", /refused by the test/);
    assert.equal(await tagDigest(oci, vmName("src", 0), "ckpt-stuck"), ck.status?.members?.[0]?.digest);
    refusedDeletes.clear();
    await waitCheckpointGone(env, ns, "stuck", 60_000);
  });
});
