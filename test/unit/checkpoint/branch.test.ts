// The branch step (docs/checkpoints.md) inside a full CocoonSet pass, over the fake client and an in-memory
// registry: copies first, the reclaim record next, the condition last, and only then the first pod.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint } from "../../../src/apis/v1alpha1/types.ts";
import type { CheckpointLookup } from "../../../src/checkpoint/catalog.ts";
import { ANN_FROM_CHECKPOINT, CONDITION_BRANCHED } from "../../../src/checkpoint/keys.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { ANN_HIBERNATE_RECLAIM, ANN_RESTORE_FROM_HIBERNATE, TRUE } from "../../../src/contract/keys.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { checkpointBranchFailuresTotal } from "../../../src/metrics/checkpoint.ts";
import { readReclaim } from "../../../src/pass/reclaimrecord.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, harness, NS, SET, seedSet, storedSet } from "../../support/cocoonset.ts";

const IMAGE = "ubuntu";
const SOURCE = "src";
const srcVM = (slot: number | string) => `vk-${NS}-${SOURCE}-${slot}`;
const newVM = (slot: number | string) => `vk-${NS}-${SET}-${slot}`;

function readyCheckpoint(registry: FakeCheckpointRegistry): CocoonCheckpoint {
  const members = [
    { role: "main" as const, slot: 0, vmName: srcVM(0) },
    { role: "sub-agent" as const, slot: 1, vmName: srcVM(1) },
    { role: "sub-agent" as const, slot: 2, vmName: srcVM(2) },
    { role: "toolbox" as const, toolbox: "tb", vmName: srcVM("tb") },
  ].map((m) => ({ ...m, digest: registry.push(m.vmName, "ckpt-ck", IMAGE), image: IMAGE, bytes: 110 }));
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name: "ck", namespace: NS },
    spec: { cocoonSetRef: { name: SOURCE } },
    status: { phase: "Ready", members, totalBytes: 440 },
  };
}

function fixture(lookup: (registry: FakeCheckpointRegistry) => CheckpointLookup, spec = {}) {
  const h = harness();
  const registry = new FakeCheckpointRegistry();
  const found = lookup(registry);
  // One replica and a toolbox the checkpoint holds, plus one the checkpoint lacks.
  const cs = cocoonSet(
    {
      agent: { image: IMAGE, replicas: 1 },
      toolboxes: [
        { name: "tb", image: IMAGE },
        { name: "extra", image: IMAGE },
      ],
      ...spec,
    },
    { annotations: { [ANN_FROM_CHECKPOINT]: "ck" } },
  );
  seedSet(h.client, cs);
  const lookups = { count: 0 };
  const getCheckpoint = () => {
    lookups.count++;
    return found;
  };
  const deps = { ...h.deps, registry, branching: { checkpoints: { getCheckpoint }, registry } };
  const reconciler = new CocoonSetReconciler(deps);
  const run = () => reconciler.reconcile({ namespace: NS, name: SET }, new AbortController().signal);
  return { ...h, registry, run, checkpoint: found, lookups };
}

const pods = (f: ReturnType<typeof fixture>) => f.client.all<Pod>(PODS, NS);
/** How many VMs the set's reclaim record holds, and how many it owes a restore. */
function recordSummary(cs: CocoonSet | undefined): string {
  const record = readReclaim(cs?.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;
  return `recorded=${record.vms.length} owed=${record.restore.length}`;
}
const branched = (cs: CocoonSet | undefined) =>
  cs?.status?.conditions?.find((c) => c.type === CONDITION_BRANCHED);

/** cocoon_operator_checkpoint_branch_failures_total of the test set. */
async function branchFailures(): Promise<number> {
  const { values } = await checkpointBranchFailuresTotal.get();
  return values.find((v) => v.labels.namespace === NS && v.labels.cocoonset === SET)?.value ?? 0;
}

describe("branchFromCheckpoint", () => {
  it("copies each held slot's snapshot, owes it a restore, marks the set, then creates the main restore-marked", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    const order: string[] = [];
    f.registry.failOn = (op, repo, ref) => {
      if (op === "put") order.push(`put ${repo}:${ref} ${recordSummary(storedSet(f.client))}`);
      return undefined;
    };
    await f.run();

    const checkpoint = f.checkpoint as CocoonCheckpoint;
    const digests = checkpoint.status?.members?.map((m) => m.digest);
    assert.equal(f.registry.digestOf(newVM(0), "hibernate"), digests?.[0]);
    assert.equal(f.registry.digestOf(newVM(1), "hibernate"), digests?.[1]);
    assert.equal(f.registry.digestOf(newVM("tb"), "hibernate"), digests?.[3]);
    assert.equal(f.registry.digestOf(newVM(2), "hibernate"), undefined, "slot 2 is not in the new spec");
    assert.equal(
      f.registry.digestOf(newVM("extra"), "hibernate"),
      undefined,
      "the checkpoint lacks it: fresh boot",
    );
    assert.deepEqual(order, [
      `put ${newVM(0)}:hibernate recorded=3 owed=0`,
      `put ${newVM(1)}:hibernate recorded=3 owed=0`,
      `put ${newVM("tb")}:hibernate recorded=3 owed=0`,
    ]);

    const stored = storedSet(f.client);
    const record = readReclaim(stored?.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;
    const seeded = [newVM(0), newVM(1), newVM("tb")];
    assert.deepEqual(record, { generation: 1, vms: seeded, restore: seeded, suspended: [] });
    assert.equal(branched(stored)?.status, "True");
    assert.match(branched(stored)?.message ?? "", /CocoonCheckpoint ck of CocoonSet src: 3 VMs/);
    assert.ok(f.events.events.some((e) => e.reason === "Branched"));
    const main = pods(f).find((p) => p.metadata.name === `${SET}-0`);
    assert.equal(main?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], TRUE, "steps 11–13 restore it");

    // The checkpoint is only read: its own tags are untouched.
    for (const member of checkpoint.status?.members ?? []) {
      assert.equal(f.registry.digestOf(member.vmName, "ckpt-ck"), member.digest);
    }
  });

  it("a set re-created under its checkpoint's source name gets :hibernate copies that dropping leaves the checkpoint", async () => {
    const f = fixture((r) => {
      const ck = readyCheckpoint(r);
      // The checkpoint's members live in the very repositories the new set's VMs use.
      const members = (ck.status?.members ?? []).map((m) => {
        const vm = m.vmName.replace(`-${SOURCE}-`, `-${SET}-`);
        return { ...m, vmName: vm, digest: r.push(vm, "ckpt-ck", IMAGE) };
      });
      return {
        ...ck,
        spec: { cocoonSetRef: { name: SET } },
        status: { ...ck.status, phase: "Ready" as const, members },
      };
    });
    await f.run();
    const main = newVM(0);
    const checkpointDigest = f.registry.digestOf(main, "ckpt-ck");
    const copied = f.registry.digestOf(main, "hibernate");
    assert.ok(copied);
    assert.notEqual(copied, checkpointDigest);
    // Step 10 drops :hibernate by digest once the VM runs; the checkpoint's tag must survive that.
    await f.registry.deleteManifest(main, copied);
    assert.equal(f.registry.digestOf(main, "ckpt-ck"), checkpointDigest);
  });

  it("the snapshot image rule still applies: a slot asking for another image drops its copy and boots fresh", async () => {
    const f = fixture((r) => readyCheckpoint(r), { agent: { image: "other-image", replicas: 1 } });
    await f.run();
    const main = pods(f).find((p) => p.metadata.name === `${SET}-0`);
    assert.ok(main, "the main is created");
    assert.equal(main.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], undefined);
    assert.equal(
      f.registry.digestOf(newVM(0), "hibernate"),
      undefined,
      "the copy vk-cocoon would refuse is gone",
    );
    const record = readReclaim(storedSet(f.client)?.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;
    assert.ok(!record.vms.includes(newVM(0)) && !record.restore.includes(newVM(0)));
    assert.ok(record.restore.includes(newVM("tb")), "the toolbox, same image, still restores");
  });

  it("a refused copy fails the pass with nothing created and no restore owed; the retry resumes", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    f.registry.failOn = (op, repo) =>
      op === "put" && repo === newVM("tb") ? FakeCheckpointRegistry.error(403) : undefined;
    const failuresBefore = await branchFailures();
    await assert.rejects(f.run(), /refused/);
    assert.equal(await branchFailures(), failuresBefore + 1, "the failed branch is counted");
    assert.deepEqual(pods(f), []);
    const stored = storedSet(f.client);
    assert.equal(
      recordSummary(stored),
      "recorded=3 owed=0",
      "every target recorded for a drop, none owed a restore",
    );
    assert.equal(branched(stored)?.status, "False");
    assert.ok(f.events.events.some((e) => e.reason === "BranchCopyFailed" && e.type === "Warning"));

    f.registry.failOn = undefined;
    f.registry.log.length = 0;
    await f.run();
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put")),
      [`put ${newVM("tb")}:hibernate`],
      "copies already in place are not redone",
    );
    assert.equal(branched(storedSet(f.client))?.status, "True");
    assert.equal(pods(f).length, 1);
    assert.equal(await branchFailures(), failuresBefore + 1, "a branch that succeeds is not");
  });

  it("waits, creating nothing, for a checkpoint that is unknown, not Ready, or not served", async () => {
    for (const [lookup, message] of [
      [undefined, /CocoonCheckpoint ck not found/],
      ["unavailable", /API is not served/],
    ] as const) {
      const f = fixture(() => lookup);
      assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
      assert.deepEqual(pods(f), []);
      assert.equal(storedSet(f.client)?.status?.phase, "Pending");
      assert.match(f.events.events.find((e) => e.reason === "BranchWaiting")?.message ?? "", message);
      assert.deepEqual(f.registry.log, []);
    }
    const f = fixture((r) => ({ ...readyCheckpoint(r), status: { phase: "Pending" } }));
    f.registry.log.length = 0;
    await f.run();
    assert.deepEqual(pods(f), []);
    assert.match(f.events.events.at(-1)?.message ?? "", /is not Ready \(phase Pending\)/);
    assert.deepEqual(f.registry.log, []);
  });

  it("no longer acts once the set has had pods", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    const cs = storedSet(f.client) as CocoonSet;
    // A reclaim record of its own: this set has VMs (a release suspend leaves no pods behind).
    await f.client.patch(COCOONSETS, NS, cs.metadata.name ?? "", {
      metadata: {
        annotations: { [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: [newVM(0)] }) },
      },
    });
    f.registry.log.length = 0;
    await f.run();
    assert.equal(
      f.registry.log.filter((l) => l.startsWith("put")).length,
      0,
      "its own snapshot is not overwritten",
    );
    assert.equal(branched(storedSet(f.client)), undefined);
  });

  it("a branched set no longer reads the checkpoint or copies anything", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    await f.run();
    assert.equal(f.lookups.count, 1);
    f.registry.log.length = 0;
    await f.run();
    assert.equal(f.lookups.count, 1, "the Branched condition ends the step at once");
    assert.deepEqual(
      f.registry.log.filter((l) => !l.startsWith("getSnapshot")),
      [],
      "only steps 11–13's image-rule reads",
    );
  });
});
