// The branch step (docs/checkpoints.md) inside a full CocoonSet pass, over the fake client and an in-memory
// registry: copies first, the reclaim record next, the condition last, and only then the first pod.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, Condition } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint } from "../../../src/apis/v1alpha1/types.ts";
import type { CheckpointLookup } from "../../../src/checkpoint/catalog.ts";
import {
  ANN_FROM_CHECKPOINT,
  CONDITION_BRANCHED,
  FINALIZER_COCOONCHECKPOINT,
  MANIFEST_ANN_BRANCH,
  MANIFEST_ANN_WRITE,
} from "../../../src/checkpoint/keys.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { ANN_HIBERNATE_RECLAIM, ANN_RESTORE_FROM_HIBERNATE, TRUE } from "../../../src/contract/keys.ts";
import { COCOONCHECKPOINTS, COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { ANN_RESTORE_HOLD, encodeRestoreHold, REASON_SET_HELD } from "../../../src/holds.ts";
import { ANN_EXPIRE_AT } from "../../../src/idle/policy.ts";
import {
  checkpointBranchBlobsTotal,
  checkpointBranchesTotal,
  checkpointBranchFailuresTotal,
} from "../../../src/metrics/checkpoint.ts";
import { readReclaim } from "../../../src/pass/reclaimrecord.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, harness, NS, SET, SET_UID, seedSet, storedSet } from "../../support/cocoonset.ts";

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

function fixture(
  lookup: (registry: FakeCheckpointRegistry) => CheckpointLookup,
  spec = {},
  annotations: Record<string, string> = {},
  copyConcurrency?: number,
) {
  const h = harness();
  const registry = new FakeCheckpointRegistry();
  const found = lookup(registry);
  // The branch reads the checkpoint from the API server once as it starts.
  if (found && found !== "unavailable") h.client.seed(COCOONCHECKPOINTS, found);
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
    { annotations: { [ANN_FROM_CHECKPOINT]: "ck", ...annotations } },
  );
  seedSet(h.client, cs);
  const lookups = { count: 0 };
  const getCheckpoint = () => {
    lookups.count++;
    return found;
  };
  const deps = {
    ...h.deps,
    registry,
    branching: { checkpoints: { getCheckpoint }, registry, ...(copyConcurrency ? { copyConcurrency } : {}) },
  };
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
    const stamps = (await f.registry.getManifest(main, "hibernate")).manifest.annotations as Record<
      string,
      string
    >;
    assert.deepEqual(
      [stamps[MANIFEST_ANN_BRANCH], stamps[MANIFEST_ANN_WRITE]],
      [`${NS}/${SET}`, SET_UID],
      "stamped with the set and its uid",
    );
    // A registry that deletes by digest takes every tag naming it: the copy's digest is its own.
    f.registry.removeByDigest(main, copied);
    assert.equal(f.registry.digestOf(main, "ckpt-ck"), checkpointDigest);
  });

  it("a member the new spec could not restore refuses the branch before any copy, naming the member and the field", async () => {
    const f = fixture(
      (r) => {
        const ck = readyCheckpoint(r);
        const members = (ck.status?.members ?? []).map((m) => ({
          ...m,
          backend: "cloud-hypervisor",
          os: "linux",
          snapshotCompatibilityClass: "",
        }));
        return { ...ck, status: { ...ck.status, phase: "Ready" as const, members } };
      },
      { agent: { image: "other-image", replicas: 1, os: "windows" } },
    );
    const calls: string[] = [];
    f.registry.failOn = (op, repo, ref) => {
      calls.push(`${op} ${repo}:${ref}`);
      return undefined;
    };
    await f.run();
    assert.deepEqual(calls, [], "no registry call at all");
    assert.deepEqual(pods(f), [], "no pod");
    const stored = storedSet(f.client);
    assert.equal(recordSummary(stored), "recorded=0 owed=0", "nothing recorded or owed");
    assert.equal(stored?.status?.phase, "Failed");
    assert.equal(branched(stored)?.status, "False");
    assert.equal(branched(stored)?.reason, "Incompatible");
    const message = branched(stored)?.message ?? "";
    assert.match(
      message,
      new RegExp(
        `member main \\(slot 0\\), VM ${srcVM(0)}: image ubuntu \\(the spec asks for other-image\\), os linux \\(the spec asks for windows\\)`,
      ),
    );
    assert.match(message, new RegExp(`member sub-agent \\(slot 1\\), VM ${srcVM(1)}: image ubuntu`));
    assert.doesNotMatch(message, /toolbox tb/, "the toolbox matches");
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "BranchIncompatible").map((e) => e.type),
      ["Warning"],
    );

    await f.run();
    assert.equal(f.events.events.filter((e) => e.reason === "BranchIncompatible").length, 1, "said once");

    // The spec set to what the checkpoint holds: the branch goes ahead.
    const now = storedSet(f.client);
    assert.ok(now);
    f.client.seed(COCOONSETS, { ...now, spec: { ...now.spec, agent: { image: IMAGE, replicas: 1 } } });
    await f.run();
    assert.equal(branched(storedSet(f.client))?.status, "True");
    assert.match(branched(storedSet(f.client))?.message ?? "", /: 3 VMs restore from it/);
  });

  it("copies the VMs copy-concurrency at a time, every one of them before the restores are owed", async () => {
    for (const [limit, expected] of [
      [2, 2],
      [undefined, 4],
      [1, 1],
    ] as const) {
      const f = fixture((r) => readyCheckpoint(r), { agent: { image: IMAGE, replicas: 2 } }, {}, limit);
      let inFlight = 0;
      let peak = 0;
      const copy = f.registry.copyManifest.bind(f.registry);
      f.registry.copyManifest = async (...args) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        try {
          return await copy(...args);
        } finally {
          inFlight--;
        }
      };
      await f.run();
      assert.equal(peak, expected, `copy concurrency ${limit ?? "default"}`);
      for (const slot of [0, 1, 2, "tb"]) assert.ok(f.registry.digestOf(newVM(slot), "hibernate"), `${slot}`);
      assert.equal(recordSummary(storedSet(f.client)), "recorded=4 owed=4");
      assert.equal(branched(storedSet(f.client))?.status, "True");
    }
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
    assert.deepEqual([branched(stored)?.status, branched(stored)?.reason], ["False", "CopyFailed"]);
    assert.match(
      branched(stored)?.message ?? "",
      /^branch from CocoonCheckpoint ck: .*refused; retrying \(2 of 3 copied, 220 of 330 bytes\)$/,
    );
    assert.ok(f.events.events.some((e) => e.reason === "BranchCopyFailed" && e.type === "Warning"));

    // Failing the same way again writes nothing to the set: its own writes would wake it in a loop.
    f.client.clearCalls();
    await assert.rejects(f.run(), /refused/);
    assert.deepEqual(
      f.client.calls
        .filter((c) => c.verb !== "get" && c.verb !== "list")
        .map((c) => `${c.verb} ${c.resource}`),
      [],
    );
    assert.equal(await branchFailures(), failuresBefore + 2, "each failed attempt is counted");

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
    assert.equal(await branchFailures(), failuresBefore + 2, "a branch that succeeds is not");
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

  it("no longer acts once the set has had pods, and says so once with a Warning and a condition", async () => {
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
    const condition = branched(storedSet(f.client));
    assert.deepEqual([condition?.status, condition?.reason], ["False", "NotApplied"]);
    assert.match(condition?.message ?? "", /from-checkpoint=ck does not act/);
    const warnings = () =>
      f.events.events.filter((e) => e.reason === "BranchNotApplied" && e.type === "Warning");
    assert.equal(warnings().length, 1);
    assert.equal(f.lookups.count, 0, "the checkpoint is not even read");

    f.client.clearCalls();
    await f.run();
    assert.equal(warnings().length, 1, "said once");
    assert.equal(branched(storedSet(f.client))?.reason, "NotApplied");
  });

  for (const hibernatePolicy of ["retain", "release"] as const) {
    it(`a set created suspended (${hibernatePolicy}) branches before the suspend path creates any pod`, async () => {
      // Release suspends take a main alone.
      const shape =
        hibernatePolicy === "release" ? { agent: { image: IMAGE, replicas: 0 }, toolboxes: [] } : {};
      const f = fixture((r) => readyCheckpoint(r), { suspend: true, hibernatePolicy, ...shape });
      const copies = hibernatePolicy === "release" ? 1 : 3;
      const podsAtCopy: number[] = [];
      f.registry.failOn = (op) => {
        if (op === "put") podsAtCopy.push(pods(f).length);
        return undefined;
      };
      await f.run();
      assert.deepEqual(podsAtCopy, Array(copies).fill(0), "every copy lands before the first pod exists");
      assert.equal(branched(storedSet(f.client))?.status, "True");
      assert.equal(
        recordSummary(storedSet(f.client)),
        `recorded=${copies} owed=${copies}`,
        "the restores are owed",
      );
      // retain: step 6 creates the main to hibernate it, from the copied snapshot; release: no pod.
      assert.deepEqual(
        pods(f).map((p) => [p.metadata.name, p.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE]]),
        hibernatePolicy === "retain" ? [[`${SET}-0`, TRUE]] : [],
      );
    });
  }

  it("a set its expiry suspends before its first pod branches first, and its main restores from the copy", async () => {
    // Expired at creation: the expiry policy suspends it in the same pass, before any pod.
    const f = fixture((r) => readyCheckpoint(r), {}, { [ANN_EXPIRE_AT]: "2025-12-31T00:00:00Z" });
    const podsAtCopy: number[] = [];
    f.registry.failOn = (op) => {
      if (op === "put") podsAtCopy.push(pods(f).length);
      return undefined;
    };
    for (let i = 0; i < 3; i++) await f.run();
    const stored = storedSet(f.client);
    assert.equal(stored?.spec.suspend, true, "the expiry suspended it");
    assert.deepEqual(podsAtCopy, [0, 0, 0]);
    assert.equal(branched(stored)?.status, "True");
    const main = pods(f).find((p) => p.metadata.name === `${SET}-0`);
    assert.equal(main?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], TRUE);
  });

  it("does not start when the API server shows the checkpoint's delete begun since the cache was read", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    // The cache still shows it Ready; the server's object has a deletion timestamp (its finalizer holds it).
    const ck = f.checkpoint as CocoonCheckpoint;
    f.client.seed(COCOONCHECKPOINTS, {
      ...ck,
      metadata: { ...ck.metadata, finalizers: [FINALIZER_COCOONCHECKPOINT] },
    });
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.registry.log.length = 0;
    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put") || l.startsWith("mount")),
      [],
      "nothing copied",
    );
    assert.deepEqual(pods(f), []);
    const condition = branched(storedSet(f.client));
    assert.deepEqual([condition?.status, condition?.reason], ["False", "WaitingForCheckpoint"]);
    assert.match(condition?.message ?? "", /CocoonCheckpoint ck is being deleted/);
  });

  it("waits with reason SetHeld, copying nothing, while a restore holds the set, even one the cache does not show yet", async () => {
    const hold = encodeRestoreHold({ restore: "undo", uid: "undo-uid", checkpoint: "other", suspend: true });
    for (const cacheShowsIt of [true, false]) {
      const f = fixture((r) => readyCheckpoint(r), {}, cacheShowsIt ? { [ANN_RESTORE_HOLD]: hold } : {});
      if (!cacheShowsIt) {
        await f.client.patch(COCOONSETS, NS, SET, {
          metadata: { annotations: { [ANN_RESTORE_HOLD]: hold } },
        });
        f.view.lag = 1;
      }
      f.registry.log.length = 0;
      assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
      assert.deepEqual(
        f.registry.log.filter((l) => l.startsWith("put") || l.startsWith("mount")),
        [],
        "nothing copied",
      );
      assert.deepEqual(pods(f), []);
      const condition = branched(storedSet(f.client));
      assert.deepEqual([condition?.status, condition?.reason], ["False", REASON_SET_HELD]);
      assert.match(condition?.message ?? "", /held by CocoonRestore undo/);
      assert.equal(recordSummary(storedSet(f.client)), "recorded=0 owed=0");
      f.view.lag = 0;
      f.client.clearCalls();
      await f.run();
      assert.deepEqual(f.client.writes(), [], "a pass while the hold stays writes nothing");
    }
  });

  it("an annotation removed while the branch waits turns its condition final, releasing the checkpoint", async () => {
    const f = fixture(() => undefined);
    await f.run();
    assert.equal(branched(storedSet(f.client))?.reason, "WaitingForCheckpoint");
    await f.client.patch(COCOONSETS, NS, SET, { metadata: { annotations: { [ANN_FROM_CHECKPOINT]: null } } });
    await f.run();
    const condition = branched(storedSet(f.client));
    assert.deepEqual([condition?.status, condition?.reason], ["False", "NotApplied"]);
    assert.match(condition?.message ?? "", /was removed before the branch finished/);
    assert.equal(pods(f).length, 1, "the main is created from the set's own state");
  });

  it("never copies into a set whose pods exist, even where its condition still reads as under way", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    await f.run();
    assert.ok(pods(f).length > 0);
    // The cache can show the pods the branching pass created before that pass's Branched=True write.
    const cs = storedSet(f.client) as CocoonSet;
    const copying = (cs.status?.conditions ?? []).map((c) =>
      c.type === CONDITION_BRANCHED ? { ...c, status: "False" as const, reason: "Copying" } : c,
    );
    await f.client.patch(COCOONSETS, NS, SET, { status: { conditions: copying } }, { subresource: "status" });
    // Their VMs ran, and step 10 dropped the copies.
    for (const slot of [0, "tb"]) await f.registry.deleteIfPresent(newVM(slot), "hibernate");
    f.registry.log.length = 0;
    await f.run();
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put") || l.startsWith("mount")),
      [],
      "no snapshot is written over VMs that have pods",
    );
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

describe("branchFromCheckpoint: the rules of the Branched condition", () => {
  /** The Branched condition of each status write the branch made, in order, repeats dropped. */
  const branchedWrites = (f: ReturnType<typeof fixture>) =>
    f.client.calls
      .filter((c) => c.verb === "patch" && c.resource === COCOONSETS.plural && c.subresource === "status")
      .map((c) =>
        (c.body as { status?: { conditions?: Condition[] } }).status?.conditions?.find(
          (cond) => cond.type === CONDITION_BRANCHED,
        ),
      )
      .filter((cond) => cond !== undefined)
      .map((cond) => [cond.status, cond.reason, cond.message, cond.observedGeneration])
      .filter((w, i, all) => i === 0 || JSON.stringify(w) !== JSON.stringify(all[i - 1]));

  it("marks the branch under way before the first copy, shows each copy in place, then FromCheckpoint with a Normal event", async () => {
    const f = fixture((r) => readyCheckpoint(r), {}, {}, 1);
    const branches = async () =>
      (await checkpointBranchesTotal.get()).values.find(
        (v) => v.labels.namespace === NS && v.labels.cocoonset === SET,
      )?.value ?? 0;
    const mounted = async () =>
      (await checkpointBranchBlobsTotal.get()).values.find((v) => v.labels.method === "mounted")?.value ?? 0;
    const [branchesBefore, mountedBefore] = [await branches(), await mounted()];
    await f.run();
    const copying = "copying 3 snapshots of CocoonCheckpoint ck";
    assert.deepEqual(branchedWrites(f), [
      ["False", "Copying", copying, 1],
      ["False", "Copying", `${copying}: 1 of 3 copied, 110 of 330 bytes`, 1],
      ["False", "Copying", `${copying}: 2 of 3 copied, 220 of 330 bytes`, 1],
      [
        "True",
        "FromCheckpoint",
        "branched from CocoonCheckpoint ck of CocoonSet src: 3 VMs restore from it",
        1,
      ],
    ]);
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "Branched").map((e) => e.type),
      ["Normal"],
    );
    assert.equal(await branches(), branchesBefore + 1, "cocoon_operator_checkpoint_branches_total");
    assert.equal(await mounted(), mountedBefore + 6, "two blobs mounted per VM");
    assert.ok(
      (storedSet(f.client)?.status?.conditions ?? []).every((c) => typeof c.type === "string"),
      "only conditions in the list",
    );
  });

  it("a branched set with no pod (suspended under release) never reads its checkpoint again", async () => {
    const f = fixture((r) => readyCheckpoint(r), {
      suspend: true,
      hibernatePolicy: "release",
      agent: { image: IMAGE, replicas: 0 },
      toolboxes: [],
    });
    await f.run();
    assert.equal(branched(storedSet(f.client))?.status, "True");
    assert.deepEqual(pods(f), []);
    f.registry.log.length = 0;
    await f.run();
    assert.equal(f.lookups.count, 1);
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put") || l.startsWith("head")),
      [],
    );
  });

  it("NotApplied is final: a set without pods keeps its own state, and a removed annotation changes nothing", async () => {
    const f = fixture((r) => readyCheckpoint(r), {
      suspend: true,
      hibernatePolicy: "release",
      agent: { image: IMAGE, replicas: 0 },
      toolboxes: [],
    });
    await f.client.patch(COCOONSETS, NS, SET, {
      metadata: {
        annotations: { [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: [newVM(0)] }) },
      },
    });
    await f.run();
    const notApplied = branched(storedSet(f.client));
    assert.equal(notApplied?.reason, "NotApplied");
    await f.run();
    assert.equal(f.lookups.count, 0, "never read, never copied");
    assert.deepEqual(f.registry.log, []);
    await f.client.patch(COCOONSETS, NS, SET, { metadata: { annotations: { [ANN_FROM_CHECKPOINT]: null } } });
    await f.run();
    assert.deepEqual(branched(storedSet(f.client)), notApplied);
  });

  for (const listed of ["agents", "toolboxes"] as const) {
    it(`a set whose status lists ${listed} has state of its own: the annotation does not act`, async () => {
      const f = fixture((r) => readyCheckpoint(r));
      const vms =
        listed === "agents"
          ? { agents: [{ slot: 0, role: "main", vmName: newVM(0) }] }
          : { toolboxes: [{ name: "tb", vmName: newVM("tb") }] };
      await f.client.patch(COCOONSETS, NS, SET, { status: vms }, { subresource: "status" });
      await f.run();
      assert.equal(branched(storedSet(f.client))?.reason, "NotApplied");
      assert.equal(f.lookups.count, 0);
    });
  }

  it("waits for a checkpoint that has no status yet, as not Ready", async () => {
    const f = fixture((r) => ({ ...readyCheckpoint(r), status: undefined }));
    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    const condition = branched(storedSet(f.client));
    assert.deepEqual([condition?.status, condition?.reason], ["False", "WaitingForCheckpoint"]);
    assert.match(condition?.message ?? "", /is not Ready \(phase none\)/);
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "BranchWaiting").map((e) => e.type),
      ["Warning"],
    );
  });

  it("a branch under way finishes though its checkpoint's delete has begun: the delete waits for it", async () => {
    const f = fixture((r) => {
      const ck = readyCheckpoint(r);
      return { ...ck, metadata: { ...ck.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } };
    });
    await f.client.patch(
      COCOONSETS,
      NS,
      SET,
      {
        status: {
          conditions: [
            {
              type: CONDITION_BRANCHED,
              status: "False",
              reason: "Copying",
              message: "copying",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
      },
      { subresource: "status" },
    );
    await f.run();
    assert.equal(branched(storedSet(f.client))?.status, "True");
  });

  it("a branch not begun does not start on a checkpoint its cache shows being deleted: no Copying mark, no read", async () => {
    const f = fixture((r) => {
      const ck = readyCheckpoint(r);
      return { ...ck, metadata: { ...ck.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } };
    });
    await f.run();
    assert.deepEqual(
      branchedWrites(f).map((w) => w[1]),
      ["WaitingForCheckpoint"],
    );
    assert.deepEqual(
      f.client.calls.filter((c) => c.resource === COCOONCHECKPOINTS.plural),
      [],
    );
  });

  it("a checkpoint the API server no longer has, though the cache does, is waited for as not found", async () => {
    const f = fixture((r) => readyCheckpoint(r));
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.match(branched(storedSet(f.client))?.message ?? "", /CocoonCheckpoint ck not found/);
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put") || l.startsWith("mount")),
      [],
    );
  });

  it("the Waiting condition follows the set's generation", async () => {
    const f = fixture(() => undefined);
    await f.run();
    assert.equal(branched(storedSet(f.client))?.observedGeneration, 1);
    const cs = storedSet(f.client) as CocoonSet;
    await f.client.update(COCOONSETS, {
      ...cs,
      spec: { ...cs.spec, agent: { ...cs.spec.agent, replicas: 2 } },
    });
    await f.run();
    assert.equal(branched(storedSet(f.client))?.observedGeneration, 2);
  });

  it("an incompatible branch's condition names the mismatch the spec now has", async () => {
    const f = fixture(
      (r) => {
        const ck = readyCheckpoint(r);
        const members = (ck.status?.members ?? []).map((m) => ({ ...m, os: "linux" }));
        return { ...ck, status: { ...ck.status, phase: "Ready" as const, members } };
      },
      { agent: { image: IMAGE, replicas: 1, os: "windows" } },
    );
    await f.run();
    assert.match(branched(storedSet(f.client))?.message ?? "", /os linux \(the spec asks for windows\)/);
    const cs = storedSet(f.client) as CocoonSet;
    await f.client.update(COCOONSETS, {
      ...cs,
      spec: { ...cs.spec, agent: { image: "other-image", replicas: 1 } },
    });
    await f.run();
    const message = branched(storedSet(f.client))?.message ?? "";
    assert.match(message, /image ubuntu \(the spec asks for other-image\)/);
    assert.doesNotMatch(message, /windows/);
  });

  it("while a restore holds the set it waits Pending with one Normal SetHeld event, and names a new holder", async () => {
    const hold = (restore: string) =>
      encodeRestoreHold({ restore, uid: `${restore}-uid`, checkpoint: "other", suspend: true });
    const f = fixture((r) => readyCheckpoint(r), {}, { [ANN_RESTORE_HOLD]: hold("undo") });
    await f.run();
    await f.run();
    assert.equal(storedSet(f.client)?.status?.phase, "Pending");
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === REASON_SET_HELD).map((e) => e.type),
      ["Normal"],
    );
    await f.client.patch(COCOONSETS, NS, SET, {
      metadata: { annotations: { [ANN_RESTORE_HOLD]: hold("redo") } },
    });
    await f.run();
    assert.match(branched(storedSet(f.client))?.message ?? "", /held by CocoonRestore redo/);
  });
});
