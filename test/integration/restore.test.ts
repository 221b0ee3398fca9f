// CocoonRestore (docs/checkpoints.md) end to end, on the real API server and registry with the
// vk-cocoon simulator: a running set checkpointed, run on (each wake and suspend after it is a new
// snapshot), then restored to the checkpoint: the restore suspends it, replaces every member's
// `:hibernate` with the checkpoint's manifest and resumes it, each VM waking from the checkpoint's
// snapshot (the simulator journal says which), the copies dropped once they run, the checkpoint's
// tags kept. A set suspended before stays suspended, its VMs restoring from the checkpoint when it
// resumes. A set branched from another set restores to that set's checkpoint, the copy crossing
// repositories. Then the refusals, each of which touches nothing: no registry write, no change to the set.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CocoonSetSpec } from "../../src/apis/v1/types.ts";
import type { CocoonRestore } from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, ANN_RESTORE_HOLD } from "../../src/checkpoint/keys.ts";
import { manifestDigest, sameRepositoryBranchManifest } from "../../src/checkpoint/manifest.ts";
import { ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { createCheckpoint, tagDigest, waitCheckpointPhase } from "../support/checkpointapi.ts";
import { refusingRegistry } from "../support/refusingregistry.ts";
import { createRestore, getRestore, restoresPath, waitRestoreDone } from "../support/restoreapi.ts";
import { createPoolSet, getSet, objectEvents, patchSetSpec, setsPath } from "../support/setapi.ts";
import {
  E2E_IMAGE,
  reclaimOf,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const recording = refusingRegistry(env.registry);
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "restore", { registry: recording.registry });
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;
const GROUP: Partial<CocoonSetSpec> = {
  agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
  toolboxes: [{ name: "tools", image: E2E_IMAGE, mode: "run" }],
};
const GROUP_SLOTS = [0, 1, "tools"] as const;
const TEST_FINALIZER = "test.cocoonstack.io/hold";
const MAIN_ONLY: Partial<CocoonSetSpec> = { agent: { image: E2E_IMAGE, replicas: 0, mode: "run" } };

const setPhase = (name: string, phase: string) => waitPhase(env, ns, name, phase, 90_000, true);

async function checkpointOf(name: string, setName: string) {
  const res = await createCheckpoint(env, ns, name, setName);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return waitCheckpointPhase(env, ns, name, "Ready");
}

async function restore(name: string, setName: string, checkpointName: string): Promise<CocoonRestore> {
  const res = await createRestore(env, ns, name, setName, checkpointName);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return waitRestoreDone(env, ns, name);
}

async function reasons(object: string): Promise<string[]> {
  return (await objectEvents(env, ns, object)).map((e) => e.reason).sort();
}

/**
 * The `:hibernate` digest the restore `restoreUid` of `set` writes from `vm:ckpt-<checkpoint>` (its
 * own repository).
 */
async function restoredDigest(
  set: string,
  vm: string,
  checkpoint: string,
  restoreUid: string,
): Promise<string> {
  const source = await oci.getManifest(oci.repository(vm), `ckpt-${checkpoint}`);
  assert.ok(source, `${vm}:ckpt-${checkpoint} exists`);
  return manifestDigest(
    sameRepositoryBranchManifest(source.raw, { namespace: ns, name: set, uid: restoreUid }),
  );
}

describe("restore in place", () => {
  it("a running set goes back to its checkpoint: suspended, every :hibernate replaced, resumed, each VM waking from the checkpoint", {
    timeout: 300_000,
  }, async () => {
    await createPoolSet(env, ns, pool, "live", GROUP);
    await waitRunning(env, ns, "live", 2, 1);
    await patchSetSpec(env, ns, "live", { suspend: true });
    await setPhase("live", "Suspended");
    const ck = await checkpointOf("lk", "live");
    const members = ck.status?.members ?? [];
    assert.equal(members.length, 3);
    // The set runs on from the checkpoint: a wake, and later the restore's own suspend, are new state.
    await patchSetSpec(env, ns, "live", { suspend: false });
    await waitRunning(env, ns, "live", 2, 1);
    const vms = GROUP_SLOTS.map((slot) => vmName("live", slot));
    const hibernatesBefore = new Map(
      vms.map((vm) => [vm, sim.record.events({ kind: "hibernate", vmName: vm }).length]),
    );

    const done = await restore("lr", "live", "lk");
    const expected = new Map<string, string>();
    for (const vm of vms) expected.set(vm, await restoredDigest("live", vm, "lk", done.metadata.uid ?? ""));
    assert.equal(done.status?.phase, "Restored", JSON.stringify(done.status));
    assert.equal(done.status?.suspendedBefore, false);
    assert.equal(done.status?.resumed, true);
    assert.deepEqual(
      done.status?.members?.map((m) => [m.vmName, m.fromVM, m.digest]),
      members.map((m) => [m.vmName, m.vmName, m.digest]),
      "every member's VM took its own checkpointed snapshot",
    );
    const restored = done.status?.conditions?.find((c) => c.type === "Restored");
    assert.equal(restored?.status, "True");
    assert.equal(restored?.observedGeneration, done.metadata.generation);
    assert.equal(done.status?.conditions?.find((c) => c.type === "Progressing")?.status, "False");

    const cs = await waitRunning(env, ns, "live", 2, 1);
    assert.equal(cs.spec.suspend, false, "back to the suspend state it had");
    // Restored is written first, then the hold goes (a failed removal is retried by the next pass).
    await waitFor("the hold is gone", async () =>
      (await getSet(env, ns, "live")).metadata.annotations?.[ANN_RESTORE_HOLD] === undefined
        ? true
        : undefined,
    );
    for (const [vm, digest] of expected) {
      assert.equal(
        sim.record.events({ kind: "hibernate", vmName: vm }).length,
        (hibernatesBefore.get(vm) ?? 0) + 1,
        `${vm}'s live state was snapshotted once by the restore's suspend`,
      );
      const woke = sim.record.events({ kind: "wake", vmName: vm }).at(-1);
      assert.deepEqual(
        woke?.snapshot,
        { ref: `${oci.repository(vm)}:${TAG_HIBERNATE}`, digest, takenOf: vm, imported: true },
        `${vm} woke from the checkpoint's snapshot, not from its own newer one`,
      );
    }
    assert.deepEqual(await reasons("lr"), ["RestoreCopied", "RestoreStarted", "Restored"]);
    const setReasons = await reasons("live");
    assert.ok(setReasons.includes("RestoreStarted") && setReasons.includes("Restored"), setReasons.join());

    // The copies go once each VM runs (step 10, probe first); the checkpoint's own tags stay.
    await waitFor(
      "live's copied :hibernate tags dropped",
      async () => {
        const now = await getSet(env, ns, "live");
        if (now.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] !== undefined) return undefined;
        for (const vm of expected.keys()) if (await tagDigest(oci, vm, TAG_HIBERNATE)) return undefined;
        return true;
      },
      60_000,
    );
    for (const m of members) assert.equal(await tagDigest(oci, m.vmName, "ckpt-lk"), m.digest);
  });

  it("a set suspended before stays Suspended; its VMs restore from the checkpoint when it resumes", {
    timeout: 240_000,
  }, async () => {
    await createPoolSet(env, ns, pool, "parked", MAIN_ONLY);
    await waitRunning(env, ns, "parked", 1);
    await patchSetSpec(env, ns, "parked", { suspend: true });
    await setPhase("parked", "Suspended");
    await checkpointOf("pk", "parked");
    await patchSetSpec(env, ns, "parked", { suspend: false });
    await waitRunning(env, ns, "parked", 1);
    await patchSetSpec(env, ns, "parked", { suspend: true });
    const suspended = await setPhase("parked", "Suspended");
    const vm = vmName("parked", 0);
    const own = await tagDigest(oci, vm, TAG_HIBERNATE);

    const done = await restore("pr", "parked", "pk");
    const expected = await restoredDigest("parked", vm, "pk", done.metadata.uid ?? "");
    assert.notEqual(own, expected);
    assert.equal(done.status?.phase, "Restored", JSON.stringify(done.status));
    assert.equal(done.status?.suspendedBefore, true);
    const cs = await getSet(env, ns, "parked");
    assert.equal(cs.spec.suspend, true);
    assert.equal(cs.metadata.generation, suspended.metadata.generation, "no spec change at all");
    assert.equal(cs.status?.phase, "Suspended");
    assert.equal(await tagDigest(oci, vm, TAG_HIBERNATE), expected, "the checkpoint's snapshot is in place");
    assert.ok(reclaimOf(cs).restore.includes(vm), "the VM is owed a restore");

    await patchSetSpec(env, ns, "parked", { suspend: false });
    await waitRunning(env, ns, "parked", 1);
    const woke = sim.record.events({ kind: "wake", vmName: vm }).at(-1);
    assert.equal(woke?.snapshot?.digest, expected, "woke from the checkpoint");
  });
});

describe("restore of a branched set", () => {
  it("goes back to a checkpoint of the set it was branched from: the copy crosses repositories, the VM wakes from it", {
    timeout: 240_000,
  }, async () => {
    await createPoolSet(env, ns, pool, "origin", MAIN_ONLY);
    await waitRunning(env, ns, "origin", 1);
    await patchSetSpec(env, ns, "origin", { suspend: true });
    await setPhase("origin", "Suspended");
    const ck = await checkpointOf("ok2", "origin");
    const member = ck.status?.members?.[0];
    assert.ok(member?.digest);
    await createPoolSet(env, ns, pool, "kid", MAIN_ONLY, { [ANN_FROM_CHECKPOINT]: "ok2" });
    await waitRunning(env, ns, "kid", 1);
    const kidVM = vmName("kid", 0);
    const wakesBefore = sim.record.events({ kind: "wake", vmName: kidVM }).length;

    const done = await restore("kr", "kid", "ok2");
    assert.equal(done.status?.phase, "Restored", JSON.stringify(done.status));
    assert.deepEqual(done.status?.members, [{ vmName: kidVM, fromVM: member.vmName, digest: member.digest }]);
    await waitRunning(env, ns, "kid", 1);
    const wakes = sim.record.events({ kind: "wake", vmName: kidVM });
    assert.equal(wakes.length, wakesBefore + 1);
    assert.deepEqual(
      wakes.at(-1)?.snapshot,
      {
        ref: `${oci.repository(kidVM)}:${TAG_HIBERNATE}`,
        digest: member.digest,
        takenOf: member.vmName,
        imported: true,
      },
      "the branch's VM woke from the origin's checkpointed snapshot, copied into its own repository",
    );
    assert.equal(
      await tagDigest(oci, member.vmName, "ckpt-ok2"),
      member.digest,
      "the checkpoint keeps its tag",
    );
  });
});

describe("restore refusals touch nothing", () => {
  it("rejects a spec without both names, and any spec edit", async () => {
    const missing = await apiRequest(env, "POST", restoresPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonRestore",
      metadata: { name: "half", namespace: ns },
      spec: { cocoonSetRef: { name: "x" } },
    });
    assert.equal(missing.status, 422, JSON.stringify(missing.body));
    assert.match(JSON.stringify(missing.body), /checkpointRef: Required value/);
    assert.equal((await createRestore(env, ns, "edit-me", "no-such-set", "no-such-ck")).status, 201);
    const moved = await apiRequest(
      env,
      "PATCH",
      `${restoresPath(ns)}/edit-me`,
      { spec: { checkpointRef: { name: "another" } } },
      "application/merge-patch+json",
    );
    assert.equal(moved.status, 422, JSON.stringify(moved.body));
    assert.match(JSON.stringify(moved.body), /spec is immutable/);
  });

  it("an unknown set or checkpoint, an unready one, another set's, an incompatible member, a set being deleted", {
    timeout: 300_000,
  }, async () => {
    // "other" has a Ready checkpoint; "fixed" had one, then its image changed.
    await createPoolSet(env, ns, pool, "other", MAIN_ONLY);
    await createPoolSet(env, ns, pool, "fixed", MAIN_ONLY);
    for (const name of ["other", "fixed"]) {
      await waitRunning(env, ns, name, 1);
      await patchSetSpec(env, ns, name, { suspend: true });
      await setPhase(name, "Suspended");
    }
    await checkpointOf("ok", "other");
    await checkpointOf("fk", "fixed");
    await patchSetSpec(env, ns, "fixed", { suspend: false });
    await waitRunning(env, ns, "fixed", 1);
    const bootsBefore = sim.record.events({ kind: "boot", vmName: vmName("fixed", 0) }).length;
    await patchSetSpec(env, ns, "fixed", { agent: { ...MAIN_ONLY.agent, image: `${E2E_IMAGE}:v2` } });
    // The main is rebuilt under the new image: a new boot, then Running again.
    await waitFor("fixed's main rebuilt", async () =>
      sim.record.events({ kind: "boot", vmName: vmName("fixed", 0) }).length > bootsBefore ? true : undefined,
    );
    await waitRunning(env, ns, "fixed", 1);
    assert.equal((await createCheckpoint(env, ns, "pend", "no-such-set")).status, 201);
    await waitCheckpointPhase(env, ns, "pend", "Pending");
    // A set whose delete waits on a finalizer of the test's.
    const doomed = await apiRequest(env, "POST", setsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonSet",
      metadata: { name: "doomed", namespace: ns, finalizers: [TEST_FINALIZER] },
      spec: { nodePool: pool, ...MAIN_ONLY },
    });
    assert.equal(doomed.status, 201, JSON.stringify(doomed.body));
    await apiRequest(env, "DELETE", `${setsPath(ns)}/doomed`);

    const before = await getSet(env, ns, "fixed");
    const writes = recording.writes.length;
    const journal = sim.record.events({ vmName: vmName("fixed", 0) }).length;
    const cases = [
      {
        name: "no-set",
        set: "no-such-set",
        ck: "fk",
        reason: "SetNotFound",
        message: /CocoonSet no-such-set not found/,
      },
      {
        name: "no-ck",
        set: "fixed",
        ck: "no-such-ck",
        reason: "CheckpointNotFound",
        message: /no-such-ck not found/,
      },
      {
        name: "unready",
        set: "fixed",
        ck: "pend",
        reason: "CheckpointNotReady",
        message: /is not Ready \(phase Pending\)/,
      },
      {
        name: "foreign",
        set: "fixed",
        ck: "ok",
        reason: "CheckpointOfAnotherSet",
        message: /is of CocoonSet other, which is neither fixed nor the set it was branched from/,
      },
      {
        name: "incompatible",
        set: "fixed",
        ck: "fk",
        reason: "Incompatible",
        message: new RegExp(
          `member main \\(slot 0\\), VM ${vmName("fixed", 0)}: image ${E2E_IMAGE} \\(the spec asks for ${E2E_IMAGE}:v2\\)`,
        ),
      },
      {
        name: "deleting",
        set: "doomed",
        ck: "ok",
        reason: "SetDeleting",
        message: /CocoonSet doomed is being deleted/,
      },
    ];
    for (const c of cases) {
      const r = await restore(c.name, c.set, c.ck);
      assert.equal(r.status?.phase, "Failed", c.name);
      assert.equal(r.status?.reason, c.reason, c.name);
      assert.match(r.status?.message ?? "", c.message);
      assert.equal(r.status?.startTime, undefined, `${c.name} never began`);
      assert.equal(r.status?.conditions?.find((x) => x.type === "Restored")?.reason, c.reason);
      await waitFor(`${c.name} RestoreRefused`, async () =>
        (await reasons(c.name)).includes("RestoreRefused") ? true : undefined,
      );
    }
    const after = await getSet(env, ns, "fixed");
    // The set's own pass may still refresh its status; the restore's writes would be these.
    assert.equal(after.metadata.generation, before.metadata.generation, "no spec change");
    assert.deepEqual(after.spec, before.spec);
    assert.deepEqual(
      after.metadata.annotations ?? {},
      before.metadata.annotations ?? {},
      "no hold, no record",
    );
    assert.deepEqual(recording.writes.slice(writes), [], "no registry write");
    assert.equal(
      sim.record.events({ vmName: vmName("fixed", 0) }).length,
      journal,
      "vk-cocoon was asked nothing",
    );
    const held = await getSet(env, ns, "doomed");
    await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/doomed`,
      {
        metadata: {
          resourceVersion: held.metadata.resourceVersion,
          finalizers: (held.metadata.finalizers ?? []).filter((f) => f !== TEST_FINALIZER),
        },
      },
      "application/merge-patch+json",
    );
  });

  it("a second restore of a set while one runs is refused; the first completes", {
    timeout: 240_000,
  }, async () => {
    await patchSetSpec(env, ns, "other", { suspend: false });
    await waitRunning(env, ns, "other", 1);
    for (const name of ["c1", "c2"]) {
      assert.equal((await createRestore(env, ns, name, "other", "ok")).status, 201);
    }
    const [one, two] = [await waitRestoreDone(env, ns, "c1"), await waitRestoreDone(env, ns, "c2")];
    const phases = [one, two].map((r) => r.status?.phase).sort();
    assert.deepEqual(phases, ["Failed", "Restored"]);
    const loser = [one, two].find((r) => r.status?.phase === "Failed") as CocoonRestore;
    const winner = [one, two].find((r) => r.status?.phase === "Restored") as CocoonRestore;
    assert.equal(loser.status?.reason, "RestoreInProgress");
    assert.match(
      loser.status?.message ?? "",
      new RegExp(`CocoonRestore ${winner.metadata.name} is restoring`),
    );
    assert.equal(loser.status?.suspendedBefore, undefined, "the loser never held the set");
    assert.deepEqual(await reasons(loser.metadata.name ?? ""), ["RestoreRefused"]);
    await waitRunning(env, ns, "other", 1);
    await waitFor("the winner's hold is gone", async () =>
      (await getSet(env, ns, "other")).metadata.annotations?.[ANN_RESTORE_HOLD] === undefined
        ? true
        : undefined,
    );
    assert.equal((await getRestore(env, ns, winner.metadata.name ?? "")).status?.members?.length, 1);
  });
});
