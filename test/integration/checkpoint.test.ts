// Checkpoints and branching (docs/checkpoints.md) end to end, on the real API server and registry with the
// vk-cocoon simulator: checkpoint a suspended set of a main, two sub-agents and a toolbox; branch three
// new sets from it, each VM restoring from its slot's checkpointed snapshot (the simulator journal says
// which); the copied tags go once the branches run, the checkpoint's own tags stay until it is deleted.
// Then the bad inputs: a name too long for a tag, an unknown set, an unknown or unready checkpoint, and
// a registry that refuses a copy halfway.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { ANN_FROM_CHECKPOINT, ANN_KEEP_CHECKPOINTS, CONDITION_BRANCHED } from "../../src/checkpoint/keys.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ANN_RESTORE_FROM_HIBERNATE,
  TAG_HIBERNATE,
  TRUE,
} from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  checkpointsPath,
  createCheckpoint as createCheckpointOf,
  getCheckpoint as getCheckpointOf,
  tagDigest,
  waitCheckpointPhase,
} from "../support/checkpointapi.ts";
import { refusingRegistry } from "../support/refusingregistry.ts";
import { createPoolSet, getSet, objectEvents, patchSetSpec, setPods, setsPath } from "../support/setapi.ts";
import { type SetEnv, startSetEnv, waitPhase } from "../support/setwait.ts";

const IMAGE = "ubuntu-dev-base";
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `ckpt-${suffix}`;
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;
/** Refuses the `:hibernate` manifest PUTs of the VMs added (a branch's copy halfway through). */
const refusing = refusingRegistry(env.registry);
const refuseTarget = (vm: string) => refusing.puts.add(`/${vm}/manifests/${TAG_HIBERNATE}`);

before(async () => {
  e2e = await startSetEnv(env, "ckpt", {
    nodes: [{ name: `ckpt-node-${suffix}`, pool }],
    registry: refusing.registry,
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;
const SLOTS = [0, 1, 2, "tools"] as const;

const groupSpec: Partial<CocoonSetSpec> = {
  agent: { image: IMAGE, replicas: 2, mode: "clone" },
  toolboxes: [{ name: "tools", image: IMAGE, mode: "run" }],
};

const createSet = (name: string, spec: Partial<CocoonSetSpec>, annotations?: Record<string, string>) =>
  createPoolSet(env, ns, pool, name, spec, annotations);
const createCheckpoint = (name: string, setName: string) => createCheckpointOf(env, ns, name, setName);
const getCheckpoint = (name: string) => getCheckpointOf(env, ns, name);
const checkpointPhase = (name: string, phase: string, timeoutMs?: number) =>
  waitCheckpointPhase(env, ns, name, phase, timeoutMs);
const setPhase = (name: string, phase: string) => waitPhase(env, ns, name, phase, 90_000, true);

function running(name: string): Promise<CocoonSet> {
  return waitFor(
    `${name} Running with 3 agents and a toolbox`,
    async () => {
      const cs = await getSet(env, ns, name);
      const s = cs.status;
      return s?.phase === "Running" && s.readyAgents === 3 && s.readyToolboxes === 1 ? cs : undefined;
    },
    90_000,
  );
}

const digestOf = (vm: string, tag: string) => tagDigest(oci, vm, tag);

async function hasEvent(object: string, reason: string): Promise<boolean> {
  return (await objectEvents(env, ns, object)).some((e) => e.reason === reason);
}

describe("checkpoint and branch", () => {
  it("checkpoints a suspended group, branches three sets from it, and deletes its tags last", {
    timeout: 300_000,
  }, async () => {
    await createSet("src", groupSpec);
    await running("src");

    // A checkpoint of a running set waits, saying why.
    const created = await createCheckpoint("ck1", "src");
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const pending = await checkpointPhase("ck1", "Pending");
    assert.match(pending.status?.message ?? "", /to be Suspended/);
    assert.ok(pending.metadata.finalizers?.includes("cocooncheckpoint.cocoonset.cocoonstack.io/finalizer"));

    await patchSetSpec(env, ns, "src", { suspend: true });
    await setPhase("src", "Suspended");
    const ready = await checkpointPhase("ck1", "Ready");
    const members = ready.status?.members ?? [];
    assert.deepEqual(
      members.map((m) => [m.role, m.slot ?? m.toolbox, m.vmName]),
      [
        ["main", 0, vmName("src", 0)],
        ["sub-agent", 1, vmName("src", 1)],
        ["sub-agent", 2, vmName("src", 2)],
        ["toolbox", "tools", vmName("src", "tools")],
      ],
    );
    const sourceDigests = new Map<string, string>();
    for (const member of members) {
      const tagged = await digestOf(member.vmName, "ckpt-ck1");
      assert.equal(tagged, member.digest, `${member.vmName}:ckpt-ck1 is the recorded digest`);
      const hibernate = await digestOf(member.vmName, TAG_HIBERNATE);
      assert.ok(hibernate, `${member.vmName}:hibernate is still there`);
      assert.notEqual(hibernate, member.digest, "the checkpoint's manifest has a digest of its own");
      sourceDigests.set(member.vmName, hibernate);
      assert.equal(member.image, IMAGE);
      assert.ok((member.bytes ?? 0) > 0);
    }
    assert.equal(
      ready.status?.totalBytes,
      members.reduce((sum, m) => sum + (m.bytes ?? 0), 0),
    );
    assert.ok(await hasEvent("ck1", "CheckpointReady"));

    // Three branches from the one checkpoint.
    const branches = ["b1", "b2", "b3"];
    for (const name of branches) await createSet(name, groupSpec, { [ANN_FROM_CHECKPOINT]: "ck1" });
    for (const name of branches) {
      const cs = await running(name);
      const condition = cs.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);
      assert.equal(condition?.status, "True");
      assert.match(condition?.message ?? "", /CocoonCheckpoint ck1 of CocoonSet src: 4 VMs/);
      for (const [i, slot] of SLOTS.entries()) {
        const vm = vmName(name, slot);
        const member = members[i];
        assert.ok(member);
        const restores = sim.record.events({ kind: "restore", vmName: vm });
        assert.equal(restores.length, 1, `${vm} restored once, not booted`);
        assert.deepEqual(restores[0]?.snapshot, {
          ref: `${oci.repository(vm)}:${TAG_HIBERNATE}`,
          digest: member.digest,
          takenOf: member.vmName,
          imported: true,
        });
        assert.equal(sim.record.events({ kind: "boot", vmName: vm }).length, 0);
      }
      for (const pod of await setPods(env, ns, name)) {
        assert.equal(
          pod.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE],
          TRUE,
          `${pod.metadata.name} restore-marked`,
        );
      }
    }
    // The copied tags go once each branch runs; the record with them.
    await waitFor(
      "every branch's copied :hibernate dropped",
      async () => {
        for (const name of branches) {
          const cs = await getSet(env, ns, name);
          if (cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] !== undefined) return undefined;
          for (const slot of SLOTS) if (await digestOf(vmName(name, slot), TAG_HIBERNATE)) return undefined;
        }
        return true;
      },
      60_000,
    );
    assert.ok(await hasEvent("b1", "Branched"));

    // The source set's own snapshots were never touched: it wakes from them, and they go as usual.
    await patchSetSpec(env, ns, "src", { suspend: false });
    await running("src");
    for (const [vm, digest] of sourceDigests) {
      const woke = sim.record.events({ kind: "wake", vmName: vm }).at(-1);
      assert.equal(woke?.snapshot?.digest, digest, `${vm} woke from its own snapshot`);
    }
    await waitFor(
      "the source set's :hibernate tags dropped",
      async () => {
        for (const vm of sourceDigests.keys()) if (await digestOf(vm, TAG_HIBERNATE)) return undefined;
        return true;
      },
      60_000,
    );
    for (const member of members) {
      assert.equal(
        await digestOf(member.vmName, "ckpt-ck1"),
        member.digest,
        "checkpoint tags outlive the wake",
      );
    }

    // Deleting the source set (its teardown GC drops its own tags) leaves its checkpoints and their tags.
    const setDeleted = await apiRequest(env, "DELETE", `${setsPath(ns)}/src`);
    assert.ok(setDeleted.status === 200 || setDeleted.status === 202, JSON.stringify(setDeleted.body));
    await waitFor(
      "the source set gone",
      async () => ((await apiRequest(env, "GET", `${setsPath(ns)}/src`)).status === 404 ? true : undefined),
      60_000,
    );
    assert.equal((await getCheckpoint("ck1"))?.status?.phase, "Ready", "the checkpoint outlives its set");
    for (const member of members) {
      assert.equal(
        await digestOf(member.vmName, "ckpt-ck1"),
        member.digest,
        "checkpoint tags outlive the set",
      );
    }

    // Deleting the checkpoint deletes its tags, then the object.
    const deleted = await apiRequest(env, "DELETE", `${checkpointsPath(ns)}/ck1`);
    assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body));
    await waitFor(
      "ck1 gone",
      async () => ((await getCheckpoint("ck1")) === undefined ? true : undefined),
      30_000,
    );
    for (const member of members) assert.equal(await digestOf(member.vmName, "ckpt-ck1"), undefined);
  });

  it("keep-checkpoints keeps the newest N Ready checkpoints of a set", { timeout: 180_000 }, async () => {
    await createSet(
      "kept",
      { agent: { image: IMAGE, replicas: 0, mode: "clone" } },
      { [ANN_KEEP_CHECKPOINTS]: "1" },
    );
    await waitFor(
      "kept has a main",
      async () => ((await setPods(env, ns, "kept")).length === 1 ? true : undefined),
      60_000,
    );
    await patchSetSpec(env, ns, "kept", { suspend: true });
    await setPhase("kept", "Suspended");
    assert.equal((await createCheckpoint("old", "kept")).status, 201);
    await checkpointPhase("old", "Ready");
    // Creation times have whole seconds: the newer one must be created in a later second.
    await new Promise((r) => setTimeout(r, 1_100));
    assert.equal((await createCheckpoint("new", "kept")).status, 201);
    await checkpointPhase("new", "Ready");
    await waitFor(
      "old pruned",
      async () => ((await getCheckpoint("old")) === undefined ? true : undefined),
      30_000,
    );
    assert.equal(
      await digestOf(vmName("kept", 0), "ckpt-old"),
      undefined,
      "the pruned checkpoint's tag is gone",
    );
    assert.ok(await digestOf(vmName("kept", 0), "ckpt-new"));
  });
});

describe("checkpoint bad input", () => {
  it("rejects a name that would not make a registry tag, and a spec edit", async () => {
    const res = await createCheckpoint("x".repeat(124), "src");
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body), /ckpt-<name> is limited to 128/);
    assert.equal((await createCheckpoint("x".repeat(123), "nothing-here")).status, 201);
    const moved = await apiRequest(
      env,
      "PATCH",
      `${checkpointsPath(ns)}/${"x".repeat(123)}`,
      { spec: { cocoonSetRef: { name: "another-set" } } },
      "application/merge-patch+json",
    );
    assert.equal(moved.status, 422, JSON.stringify(moved.body));
    assert.match(JSON.stringify(moved.body), /spec is immutable/);
  });

  it("a checkpoint of an unknown set waits Pending with a message", async () => {
    assert.equal((await createCheckpoint("orphan", "no-such-set")).status, 201);
    const ck = await checkpointPhase("orphan", "Pending");
    assert.equal(ck.status?.message, "CocoonSet no-such-set not found");
    await waitFor("CheckpointWaiting event", async () =>
      (await hasEvent("orphan", "CheckpointWaiting")) ? true : undefined,
    );
  });

  it("a branch from an unknown checkpoint creates nothing and says so", async () => {
    await createSet("lost", {}, { [ANN_FROM_CHECKPOINT]: "no-such-checkpoint" });
    const event = await waitFor("BranchWaiting event", async () =>
      (await objectEvents(env, ns, "lost")).find((e) => e.reason === "BranchWaiting"),
    );
    assert.match(event.message, /CocoonCheckpoint no-such-checkpoint not found/);
    assert.equal((await getSet(env, ns, "lost")).status?.phase, "Pending");
    assert.deepEqual(await setPods(env, ns, "lost"), []);
  });

  it("a branch from a checkpoint that is not Ready waits, then branches once it is", {
    timeout: 180_000,
  }, async () => {
    await createSet("early-src", {});
    await waitFor(
      "early-src main",
      async () => ((await setPods(env, ns, "early-src")).length === 1 ? true : undefined),
      60_000,
    );
    assert.equal((await createCheckpoint("early", "early-src")).status, 201);
    await checkpointPhase("early", "Pending");
    await createSet("early-branch", {}, { [ANN_FROM_CHECKPOINT]: "early" });
    await waitFor("BranchWaiting event", async () =>
      (await hasEvent("early-branch", "BranchWaiting")) ? true : undefined,
    );
    assert.deepEqual(
      await setPods(env, ns, "early-branch"),
      [],
      "nothing created while the checkpoint is Pending",
    );

    await patchSetSpec(env, ns, "early-src", { suspend: true });
    const ck = await checkpointPhase("early", "Ready", 90_000);
    await waitFor(
      "early-branch main restored from the checkpoint",
      async () => sim.record.events({ kind: "restore", vmName: vmName("early-branch", 0) })[0],
      60_000,
    ).then((restore) => assert.equal(restore.snapshot?.digest, ck.status?.members?.[0]?.digest));
  });

  it("a registry that refuses a copy fails the pass: no pod over a half-copied set, then the retry completes", {
    timeout: 240_000,
  }, async () => {
    await createSet("solid", groupSpec);
    await waitFor(
      "solid has 4 pods",
      async () => ((await setPods(env, ns, "solid")).length === 4 ? true : undefined),
      90_000,
    );
    await patchSetSpec(env, ns, "solid", { suspend: true });
    await setPhase("solid", "Suspended");
    assert.equal((await createCheckpoint("solid-ck", "solid")).status, 201);
    await checkpointPhase("solid-ck", "Ready");

    refuseTarget(vmName("half", "tools"));
    await createSet("half", groupSpec, { [ANN_FROM_CHECKPOINT]: "solid-ck" });
    await waitFor(
      "BranchCopyFailed event",
      async () => ((await hasEvent("half", "BranchCopyFailed")) ? true : undefined),
      30_000,
    );
    // The agents' copies landed, the toolbox's was refused: still no pod, no restore owed.
    assert.ok(await digestOf(vmName("half", 0), TAG_HIBERNATE), "the main's copy is in place");
    assert.equal(await digestOf(vmName("half", "tools"), TAG_HIBERNATE), undefined);
    const half = await getSet(env, ns, "half");
    assert.deepEqual(await setPods(env, ns, "half"), []);
    const record = JSON.parse(half.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] ?? "{}");
    assert.equal(record.restore, undefined, "no VM is owed a restore yet");
    assert.deepEqual(
      [...record.vms].sort(),
      SLOTS.map((slot) => vmName("half", slot)).sort(),
      "every target is recorded, so a copy that landed is dropped in time",
    );
    assert.equal(half.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED)?.status, "False");

    refusing.puts.clear();
    await running("half");
    const restore = sim.record.events({ kind: "restore", vmName: vmName("half", "tools") })[0];
    assert.equal(restore?.snapshot?.takenOf, vmName("solid", "tools"));
  });
});
