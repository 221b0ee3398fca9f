// The CocoonCheckpoint reconciler (docs/checkpoints.md) over the fake API client and an in-memory registry.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonRestore } from "../../../src/apis/v1alpha1/types.ts";
import {
  ANN_FROM_CHECKPOINT,
  ANN_PINNED,
  ANN_RESTORE_HOLD,
  FINALIZER_COCOONCHECKPOINT,
  MANIFEST_ANN_CHECKPOINT,
  MANIFEST_ANN_WRITE,
} from "../../../src/checkpoint/keys.ts";
import { CheckpointReconciler, type CheckpointView } from "../../../src/checkpoint/reconciler.ts";
import { FakeClock } from "../../../src/clock.ts";
import { LABEL_COCOONSET } from "../../../src/contract/keys.ts";
import { ApiError, NotFoundError } from "../../../src/controller/errors.ts";
import {
  COCOONCHECKPOINTS,
  COCOONPOOLS,
  COCOONRESTORES,
  COCOONSETS,
  PODS,
} from "../../../src/controller/resources.ts";
import { encodeRestoreHold } from "../../../src/holds.ts";
import { checkpointBytesTotal, checkpointsTotal } from "../../../src/metrics/checkpoint.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, NS, SET } from "../../support/cocoonset.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";
import { cocoonPool } from "../../support/pool.ts";

const IMAGE = "ubuntu";
const VMS = [`vk-${NS}-${SET}-0`, `vk-${NS}-${SET}-1`, `vk-${NS}-${SET}-tb`];

function checkpoint(name = "ck", extra: Partial<CocoonCheckpoint["metadata"]> = {}): CocoonCheckpoint {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name, namespace: NS, finalizers: [FINALIZER_COCOONCHECKPOINT], ...extra },
    spec: { cocoonSetRef: { name: SET } },
  };
}

function suspendedSet(annotations: Record<string, string> = {}): CocoonSet {
  const cs = cocoonSet(
    {
      agent: { image: IMAGE, replicas: 1 },
      toolboxes: [
        { name: "tb", image: IMAGE },
        { name: "static", mode: "static", staticIP: "10.0.0.9", staticVMID: "x" },
      ],
      // Released seats: every VM's snapshot is the suspend's without a pod to show for it.
      hibernatePolicy: "release",
    },
    { annotations },
  );
  return {
    ...cs,
    status: {
      phase: "Suspended",
      observedGeneration: 1,
      readyAgents: 0,
      desiredAgents: 2,
      readyToolboxes: 0,
      desiredToolboxes: 2,
    },
  };
}

/** A set annotated to branch from `checkpointName`, its Branched condition False with `reason`. */
function branchingSet(name: string, checkpointName: string, reason: string): CocoonSet {
  return {
    ...cocoonSet({}, { name, annotations: { [ANN_FROM_CHECKPOINT]: checkpointName } }),
    status: {
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
      conditions: [branchedCondition("False", reason)],
    },
  };
}

function branchedCondition(status: "True" | "False", reason: string) {
  return { type: "Branched", status, reason, message: "", lastTransitionTime: "2026-01-01T00:00:00Z" };
}

function fixture() {
  const client = new FakeClient();
  const registry = new FakeCheckpointRegistry();
  const events = new RecordingEvents();
  /** How many store changes the view's checkpoints lag behind (a lagging informer). */
  const cache = { lag: 0 };
  const view: CheckpointView = {
    getCheckpoint: (ns, name) => client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, ns, name, cache.lag),
    checkpointsOfSet: (ns, set) =>
      client.all<CocoonCheckpoint>(COCOONCHECKPOINTS, ns).filter((c) => c.spec.cocoonSetRef.name === set),
    getCocoonSet: (ns, name) => client.peek<CocoonSet>(COCOONSETS, ns, name),
    listSetPods: (ns, set) =>
      client.all<Pod>(PODS, ns).filter((p) => p.metadata.labels?.[LABEL_COCOONSET] === set),
  };
  const clock = new FakeClock();
  const reconciler = new CheckpointReconciler({ client, view, registry, events, clock, log: silentLogger() });
  const run = (name = "ck") => reconciler.reconcile({ namespace: NS, name }, new AbortController().signal);
  const stored = (name = "ck") => client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, name);
  return { client, registry, events, run, stored, cache, clock };
}

/** The fixture with the suspended set's checkpoint "ck" copied and Ready. */
async function readyFixture() {
  const f = fixture();
  f.client.seed(COCOONSETS, suspendedSet());
  f.client.seed(COCOONCHECKPOINTS, checkpoint());
  for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
  await f.run();
  return f;
}

describe("CheckpointReconciler", () => {
  it("adds its finalizer before anything else and touches no registry", async () => {
    const f = fixture();
    f.client.seed(COCOONCHECKPOINTS, checkpoint("ck", { finalizers: [] }));
    assert.deepEqual(await f.run(), { requeue: true });
    assert.deepEqual(f.stored()?.metadata.finalizers, [FINALIZER_COCOONCHECKPOINT]);
    assert.deepEqual(f.registry.log, []);
  });

  it("waits Pending with a message while the set is missing or not Suspended, once per change", async () => {
    const f = fixture();
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Pending");
    assert.equal(f.stored()?.status?.message, `CocoonSet ${SET} not found`);

    f.client.seed(COCOONSETS, {
      ...suspendedSet(),
      status: { ...suspendedSet().status, phase: "Running" },
    } as CocoonSet);
    await f.run();
    assert.match(f.stored()?.status?.message ?? "", /to be Suspended \(phase Running\)/);
    f.client.clearCalls();
    await f.run();
    assert.deepEqual(f.client.calls, [], "a settled wait makes no call");
    assert.deepEqual(f.registry.log, []);
    assert.deepEqual(
      f.events.events.map((e) => e.reason),
      ["CheckpointWaiting", "CheckpointWaiting"],
    );
  });

  it("waits for the set's current generation, not an older Suspended", async () => {
    const f = fixture();
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    const cs = suspendedSet();
    f.client.seed(COCOONSETS, { ...cs, metadata: { ...cs.metadata, generation: 2 } });
    await f.run();
    assert.match(f.stored()?.status?.message ?? "", /at generation 2 \(observed 1\)/);
    assert.deepEqual(f.registry.log, []);
  });

  it("lists the members before the first tag, then tags each :hibernate as ckpt-<name> and goes Ready", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    const hibernate = VMS.map((vm, i) => f.registry.push(vm, "hibernate", IMAGE, 100 * (i + 1)));
    const atFirstPut: unknown[] = [];
    f.registry.failOn = (op) => {
      if (op === "put" && atFirstPut.length === 0) atFirstPut.push(structuredClone(f.stored()?.status));
      return undefined;
    };
    assert.deepEqual(await f.run(), {});

    const copying = atFirstPut[0] as CocoonCheckpoint["status"];
    assert.equal(copying?.phase, "Copying");
    assert.deepEqual(
      copying?.members?.map((m) => m.vmName),
      VMS,
      "static toolbox excluded",
    );
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put") || l.startsWith("get")),
      [...VMS.map((vm) => `get ${vm}:hibernate`), ...VMS.map((vm) => `put ${vm}:ckpt-ck`)],
    );
    const status = f.stored()?.status;
    assert.equal(status?.phase, "Ready");
    assert.deepEqual(
      status?.members?.map((m) => [m.role, m.slot ?? m.toolbox, m.image, m.bytes]),
      [
        ["main", 0, IMAGE, 110],
        ["sub-agent", 1, IMAGE, 210],
        ["toolbox", "tb", IMAGE, 310],
      ],
    );
    assert.deepEqual(
      status?.members?.map((m) => [m.backend, m.os, m.snapshotCompatibilityClass]),
      [
        ["cloud-hypervisor", "linux", ""],
        ["cloud-hypervisor", "linux", ""],
        ["cloud-hypervisor", "linux", ""],
      ],
      "each member records what its restore depends on",
    );
    assert.equal(status?.totalBytes, 630);
    for (const [i, vm] of VMS.entries()) {
      const digest = f.registry.digestOf(vm, "ckpt-ck");
      assert.equal(status?.members?.[i]?.digest, digest);
      assert.notEqual(digest, hibernate[i], "a digest of its own, so a :hibernate drop leaves it");
      assert.equal(f.registry.digestOf(vm, "hibernate"), hibernate[i], "the set's snapshot is unchanged");
      const manifest = await f.registry.getManifest(vm, "ckpt-ck");
      assert.equal(
        (manifest.manifest.annotations as Record<string, string>)[MANIFEST_ANN_CHECKPOINT],
        `${NS}/ck`,
      );
    }
    assert.ok(f.events.events.some((e) => e.reason === "CheckpointReady"));
    const ready = (await checkpointsTotal.get()).values.find(
      (v) => v.labels.transition === "ready" && v.labels.cocoonset === SET && v.labels.namespace === NS,
    );
    assert.ok((ready?.value ?? 0) >= 1, "cocoon_operator_checkpoints_total{transition=ready}");
    const bytes = (await checkpointBytesTotal.get()).values.find((v) => v.labels.cocoonset === SET);
    assert.ok((bytes?.value ?? 0) >= 630, "cocoon_operator_checkpoint_bytes_total");

    f.client.clearCalls();
    f.registry.log.length = 0;
    await f.run();
    assert.deepEqual(f.client.calls, [], "a Ready checkpoint costs nothing");
    assert.deepEqual(f.registry.log, []);
  });

  it("copies nothing again while its cache still shows the Copying it wrote before Ready", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE, 100);
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
    const readyEvents = f.events.events.filter((e) => e.reason === "CheckpointReady").length;

    // The pass queued by its own status writes runs before the informer delivers the Ready one.
    f.cache.lag = 1;
    f.client.clearCalls();
    f.registry.log.length = 0;
    assert.deepEqual(await f.run(), {});
    assert.deepEqual(f.registry.log, [], "no tag read or rewritten");
    assert.deepEqual(
      f.client.calls.map((c) => `${c.verb} ${c.resource}`),
      ["get cocooncheckpoints"],
      "one read of the server's checkpoint, no status write",
    );
    assert.equal(f.events.events.filter((e) => e.reason === "CheckpointReady").length, readyEvents);
  });

  it("a cache behind the server's Ready, the set resumed since: the pass writes no Pending over Ready", async () => {
    const f = await readyFixture();
    assert.equal(f.stored()?.status?.phase, "Ready");
    const cs = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
    f.client.seed(COCOONSETS, {
      ...cs,
      spec: { ...cs.spec, suspend: false },
      status: { ...cs.status!, phase: "Running" },
    });
    // A dropped watch: the cache still shows the checkpoint from before its Ready.
    const phaseAgo = (lag: number) =>
      f.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "ck", lag)?.status?.phase;
    while (phaseAgo(f.cache.lag) === "Ready") f.cache.lag++;
    assert.equal(phaseAgo(f.cache.lag), "Copying");
    f.client.clearCalls();
    assert.deepEqual(await f.run(), {});
    assert.equal(f.stored()?.status?.phase, "Ready", "still Ready on the server");
    assert.ok(
      !f.events.events.some((e) => e.reason === "CheckpointWaiting"),
      "no waiting event for a write that did not land",
    );
  });

  it("goes back to Pending when the set left Suspended during the copy", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    // An earlier attempt, before the spec lost a replica, may have tagged slot 5.
    const earlier = { role: "sub-agent" as const, slot: 5, vmName: `vk-${NS}-${SET}-5` };
    f.client.seed(COCOONCHECKPOINTS, { ...checkpoint(), status: { phase: "Copying", members: [earlier] } });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.registry.failOn = (op) => {
      // A wake lands mid-copy: the spec changes, the generation moves on.
      if (op === "put" && f.client.peek<CocoonSet>(COCOONSETS, NS, SET)?.spec.suspend !== false) {
        void f.client.patch(COCOONSETS, NS, SET, { spec: { suspend: false } });
      }
      return undefined;
    };
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Pending");
    assert.match(f.stored()?.status?.message ?? "", /copying again once it is Suspended/);
    assert.deepEqual(
      f.stored()?.status?.members?.map((m) => m.vmName),
      [...VMS, earlier.vmName],
      "every tag that may have been written stays listed",
    );
  });

  it("deletes every member's tag probe-first, then releases the finalizer; a refused delete keeps it", async () => {
    const f = await readyFixture();
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.registry.log.length = 0;

    f.registry.failOn = (op, repo) =>
      op === "deleteIfPresent" && repo === VMS[1] ? FakeCheckpointRegistry.error(503) : undefined;
    await assert.rejects(f.run(), /refused/);
    assert.deepEqual(f.stored()?.metadata.finalizers, [FINALIZER_COCOONCHECKPOINT]);
    assert.ok(f.events.events.some((e) => e.reason === "CheckpointTagDeleteFailed"));

    f.registry.failOn = undefined;
    await f.run();
    assert.equal(f.stored(), undefined, "gone once the finalizer is released");
    for (const vm of VMS) {
      assert.equal(f.registry.digestOf(vm, "ckpt-ck"), undefined);
      assert.ok(f.registry.digestOf(vm, "hibernate"), "the set's own snapshot is untouched");
    }
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("deleteIfPresent")),
      [
        `deleteIfPresent ${VMS[0]}:ckpt-ck`,
        `deleteIfPresent ${VMS[1]}:ckpt-ck`,
        ...VMS.map((vm) => `deleteIfPresent ${vm}:ckpt-ck`),
      ],
    );
  });

  it("keep-checkpoints deletes the Ready checkpoints beyond the N newest", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "2" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    for (const [name, created] of [
      ["a", "2026-01-01T00:00:01Z"],
      ["b", "2026-01-01T00:00:02Z"],
      ["c", "2026-01-01T00:00:03Z"],
    ] as const) {
      f.client.seed(COCOONCHECKPOINTS, checkpoint(name, { creationTimestamp: created }));
      await f.run(name);
    }
    assert.equal(f.stored("a")?.metadata.deletionTimestamp, "2026-01-01T00:00:00Z", "the oldest is deleted");
    assert.equal(f.stored("b")?.metadata.deletionTimestamp, undefined);
    assert.equal(f.stored("c")?.metadata.deletionTimestamp, undefined);
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "CheckpointPruned").map((e) => e.object),
      ["a"],
    );
  });

  it("reports a keep-checkpoints that is not a positive integer and prunes nothing", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "0" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
    assert.ok(f.events.events.some((e) => e.reason === "KeepCheckpointsInvalid" && e.type === "Warning"));
    assert.equal(f.client.calls.filter((c) => c.verb === "delete").length, 0);
  });

  it("reports a refused copy in its conditions, retries before the deadline, and is Failed at it", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    // Created at the clock's start; the deadline ends 1500 ms later.
    f.client.seed(COCOONCHECKPOINTS, {
      ...checkpoint("ck", { creationTimestamp: "2026-01-01T00:00:00Z" }),
      spec: { cocoonSetRef: { name: SET }, failureDeadline: "1500ms" },
    });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.registry.failOn = (op, repo) =>
      op === "put" && repo === VMS[1] ? FakeCheckpointRegistry.error(403) : undefined;

    assert.deepEqual(await f.run(), { requeueAfterMs: 1500 }, "retried no later than the deadline");
    const retrying = f.stored()?.status;
    assert.equal(retrying?.phase, "Copying");
    const ready = retrying?.conditions?.find((c) => c.type === "Ready");
    const progressing = retrying?.conditions?.find((c) => c.type === "Progressing");
    assert.deepEqual([ready?.status, ready?.reason], ["False", "CopyFailed"]);
    assert.deepEqual([progressing?.status, progressing?.reason], ["True", "CopyFailed"]);
    assert.match(ready?.message ?? "", /^copy failed: FAKE fake: 403 DENIED: refused$/);
    assert.deepEqual(retrying?.progress, {
      membersCopied: 1,
      membersTotal: 3,
      bytesCopied: 110,
      bytesTotal: 330,
    });
    assert.ok(f.events.events.some((e) => e.reason === "CheckpointCopyFailed" && e.type === "Warning"));

    // Failing the same way again writes nothing, so its own status writes cannot wake it in a loop.
    f.client.clearCalls();
    await f.run();
    assert.deepEqual(
      f.client.calls.filter((c) => c.verb !== "get"),
      [],
      "no write on a retry that fails alike",
    );

    f.clock.advance(1499);
    assert.deepEqual(await f.run(), { requeueAfterMs: 1 });
    assert.equal(f.stored()?.status?.phase, "Copying", "1 ms before the deadline it still retries");

    f.clock.advance(1);
    assert.deepEqual(await f.run(), {});
    const failed = f.stored()?.status;
    assert.equal(failed?.phase, "Failed");
    assert.match(
      failed?.message ?? "",
      /^not Ready within failureDeadline 1500ms: copy failed: FAKE fake: 403 DENIED: refused$/,
    );
    const final = failed?.conditions?.find((c) => c.type === "Ready");
    assert.deepEqual([final?.status, final?.reason, final?.observedGeneration], ["False", "Failed", 1]);
    assert.equal(failed?.conditions?.find((c) => c.type === "Progressing")?.status, "False");

    f.registry.failOn = undefined;
    f.registry.log.length = 0;
    f.client.clearCalls();
    assert.deepEqual(await f.run(), {});
    assert.deepEqual([f.registry.log, f.client.calls], [[], []], "Failed is final: no copy, no write");
  });

  it("a checkpoint whose deadline passed before its set was Suspended is Failed, not copied", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, {
      ...checkpoint("ck", { creationTimestamp: "2025-12-31T23:59:00Z" }),
      spec: { cocoonSetRef: { name: SET }, failureDeadline: "1m" },
    });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Failed");
    assert.equal(f.stored()?.status?.message, "not Ready within failureDeadline 1m: the copy had not begun");
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put")),
      [],
    );
  });

  it("a Pending checkpoint is looked at again at its deadline and then Failed with what it waited for", async () => {
    const f = fixture();
    f.client.seed(COCOONCHECKPOINTS, {
      ...checkpoint("ck", { creationTimestamp: "2026-01-01T00:00:00Z" }),
      spec: { cocoonSetRef: { name: SET }, failureDeadline: "2s" },
    });
    assert.deepEqual(await f.run(), { requeueAfterMs: 2000 });
    assert.equal(f.stored()?.status?.phase, "Pending");
    f.clock.advance(2000);
    await f.run();
    assert.equal(
      f.stored()?.status?.message,
      `not Ready within failureDeadline 2s: CocoonSet ${SET} not found`,
    );
    assert.ok(f.events.events.some((e) => e.reason === "CheckpointFailed" && e.type === "Warning"));
  });

  it("copies only the snapshots the suspend confirmed: a Failed pod's slot is skipped and says why", async () => {
    const f = fixture();
    const cs = suspendedSet();
    cs.spec.hibernatePolicy = "retain";
    f.client.seed(COCOONSETS, cs);
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    const pod = (name: string, vm: string, phase: "Pending" | "Failed"): Pod => ({
      metadata: {
        name,
        namespace: NS,
        labels: { [LABEL_COCOONSET]: SET },
        annotations: { "vm.cocoonstack.io/name": vm },
      },
      spec: { containers: [{ name: "agent" }] },
      status: { phase },
    });
    f.client.seed(PODS, pod(`${SET}-0`, VMS[0] ?? "", "Pending"));
    f.client.seed(PODS, pod(`${SET}-1`, VMS[1] ?? "", "Failed"));
    await f.run();
    const status = f.stored()?.status;
    assert.equal(status?.phase, "Ready");
    assert.deepEqual(
      status?.members?.map((m) => [m.vmName, m.digest !== undefined, m.skipped]),
      [
        [VMS[0], true, undefined],
        [VMS[1], false, `pod ${SET}-1 is Failed, so the suspend took no snapshot of it`],
        [VMS[2], false, "it has no pod, so the suspend took no snapshot of it"],
      ],
    );
    assert.equal(f.registry.digestOf(VMS[1] ?? "", "ckpt-ck"), undefined);
    assert.ok(!f.registry.log.includes(`get ${VMS[1]}:hibernate`), "its older snapshot is not even read");
    assert.match(status?.message ?? "", new RegExp(`not of this suspend, not copied: ${VMS[1]}, ${VMS[2]}`));
  });

  it("a delete waits while a set's branch from it is under way, naming the set; then deletes the tags", async () => {
    const f = await readyFixture();
    f.client.seed(COCOONSETS, branchingSet("copying", "ck", "Copying"));
    f.client.seed(COCOONSETS, branchingSet("retrying", "ck", "CopyFailed"));
    f.client.seed(COCOONSETS, branchingSet("waiting", "ck", "WaitingForCheckpoint"));
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.registry.log.length = 0;

    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.deepEqual(f.registry.log, [], "no tag is touched");
    const deleting = f.stored()?.status?.conditions?.find((c) => c.type === "Deleting");
    assert.deepEqual([deleting?.status, deleting?.reason], ["True", "InUse"]);
    assert.match(
      deleting?.message ?? "",
      /waiting for CocoonSet copying, CocoonSet retrying, which still need its tags/,
    );
    assert.equal(f.events.events.filter((e) => e.reason === "CheckpointDeleteWaiting").length, 1);
    await f.run();
    assert.equal(
      f.events.events.filter((e) => e.reason === "CheckpointDeleteWaiting").length,
      1,
      "said once",
    );

    for (const name of ["copying", "retrying"]) {
      await f.client.patch(
        COCOONSETS,
        NS,
        name,
        {
          status: {
            conditions: [branchedCondition("True", "FromCheckpoint")],
          },
        },
        { subresource: "status" },
      );
    }
    assert.deepEqual(await f.run(), {});
    assert.equal(f.stored(), undefined, "gone once no branch needs it");
    for (const vm of VMS) assert.equal(f.registry.digestOf(vm, "ckpt-ck"), undefined);
  });

  it("a delete waits while a restore to it holds a set, naming the set; then deletes the tags", async () => {
    const f = await readyFixture();
    const held = cocoonSet(
      {},
      {
        name: "rolling",
        annotations: {
          [ANN_RESTORE_HOLD]: encodeRestoreHold({ restore: "r", uid: "u", checkpoint: "ck", suspend: false }),
        },
      },
    );
    f.client.seed(COCOONSETS, held);
    f.client.seed(
      COCOONSETS,
      cocoonSet(
        {},
        {
          name: "elsewhere",
          annotations: {
            [ANN_RESTORE_HOLD]: encodeRestoreHold({
              restore: "q",
              uid: "v",
              checkpoint: "other",
              suspend: false,
            }),
          },
        },
      ),
    );
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.registry.log.length = 0;

    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.deepEqual(f.registry.log, [], "no tag is touched");
    const deleting = f.stored()?.status?.conditions?.find((c) => c.type === "Deleting");
    assert.match(deleting?.message ?? "", /waiting for CocoonSet rolling, which still need its tags/);

    await f.client.patch(COCOONSETS, NS, "rolling", {
      metadata: { annotations: { [ANN_RESTORE_HOLD]: null } },
    });
    assert.deepEqual(await f.run(), {});
    assert.equal(f.stored(), undefined, "gone once the restore let go");
    for (const vm of VMS) assert.equal(f.registry.digestOf(vm, "ckpt-ck"), undefined);
  });

  it("a refused tag delete shows in the Deleting condition", async () => {
    const f = await readyFixture();
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.registry.failOn = (op) => (op === "deleteIfPresent" ? FakeCheckpointRegistry.error(405) : undefined);
    await assert.rejects(f.run(), /refused/);
    const deleting = f.stored()?.status?.conditions?.find((c) => c.type === "Deleting");
    assert.deepEqual([deleting?.status, deleting?.reason], ["True", "TagDeleteFailed"]);
    assert.equal(deleting?.message, `delete ${VMS[0]}:ckpt-ck: FAKE fake: 405 DENIED: refused; retrying`);
  });

  it("keep-checkpoints never takes a pinned checkpoint nor counts it, and skips one a branch copies from", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "1" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.client.seed(COCOONSETS, branchingSet("user", "b", "Copying"));
    for (const [name, created, annotations] of [
      ["pinned", "2026-01-01T00:00:01Z", { [ANN_PINNED]: "true" }],
      ["a", "2026-01-01T00:00:02Z", {}],
      ["b", "2026-01-01T00:00:03Z", {}],
      ["c", "2026-01-01T00:00:04Z", {}],
    ] as const) {
      f.client.seed(COCOONCHECKPOINTS, checkpoint(name, { creationTimestamp: created, annotations }));
      await f.run(name);
    }
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "CheckpointPruned").map((e) => e.object),
      ["a"],
      "b is in use by a branch; pinned is never taken",
    );
    assert.equal(f.stored("pinned")?.metadata.deletionTimestamp, undefined);
    assert.equal(f.stored("b")?.metadata.deletionTimestamp, undefined);
  });

  it("keep-checkpoints skips a checkpoint a restore holds a set for", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "1" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.client.seed(
      COCOONSETS,
      cocoonSet(
        {},
        {
          name: "rolling",
          annotations: {
            [ANN_RESTORE_HOLD]: encodeRestoreHold({ restore: "r", uid: "u", checkpoint: "a", suspend: true }),
          },
        },
      ),
    );
    for (const [name, created] of [
      ["a", "2026-01-01T00:00:02Z"],
      ["b", "2026-01-01T00:00:03Z"],
    ] as const) {
      f.client.seed(COCOONCHECKPOINTS, checkpoint(name, { creationTimestamp: created }));
      await f.run(name);
    }
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "CheckpointPruned"),
      [],
    );
    assert.equal(f.stored("a")?.metadata.deletionTimestamp, undefined, "a restore still copies from it");
  });

  it("measures what it holds alone once per settled set generation: nothing at Ready, all once :hibernate is gone", async () => {
    const f = await readyFixture();
    assert.deepEqual(
      [f.stored()?.status?.exclusiveBytes, f.stored()?.status?.exclusiveBytesSetGeneration],
      [0, 1],
    );

    // The set woke at generation 2 and dropped its :hibernate tags.
    for (const vm of VMS) await f.registry.deleteIfPresent(vm, "hibernate");
    const woken = suspendedSet();
    woken.metadata.generation = 2;
    woken.status = { ...woken.status, phase: "Running", observedGeneration: 2 } as CocoonSet["status"];
    f.client.seed(COCOONSETS, woken);
    f.registry.log.length = 0;
    await f.run();
    assert.deepEqual(
      [f.stored()?.status?.exclusiveBytes, f.stored()?.status?.exclusiveBytesSetGeneration],
      [330, 2],
    );
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("get")).length,
      6,
      "its manifest and the :hibernate of each member",
    );

    f.registry.log.length = 0;
    f.client.clearCalls();
    await f.run();
    assert.deepEqual([f.registry.log, f.client.calls], [[], []], "measured once per generation");
  });

  it("keep-checkpoints skips a checkpoint a pool's fromCheckpoint names, or a restore to it not finished names", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "1" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.client.seed(COCOONPOOLS, cocoonPool({ fromCheckpoint: "golden" }));
    f.client.seed(COCOONRESTORES, pendingRestore("undo", "wanted"));
    for (const [name, created] of [
      ["golden", "2026-01-01T00:00:01Z"],
      ["wanted", "2026-01-01T00:00:02Z"],
      ["old", "2026-01-01T00:00:03Z"],
      ["new", "2026-01-01T00:00:04Z"],
    ] as const) {
      f.client.seed(COCOONCHECKPOINTS, checkpoint(name, { creationTimestamp: created }));
      await f.run(name);
    }
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "CheckpointPruned").map((e) => e.object),
      ["old"],
      "golden is the pool's, wanted the restore's",
    );
    assert.equal(f.stored("golden")?.metadata.deletionTimestamp, undefined);
    assert.equal(f.stored("wanted")?.metadata.deletionTimestamp, undefined);
  });

  it("a delete waits while a pool branches its members from it, naming the pool; then deletes the tags", async () => {
    const f = await readyFixture();
    f.client.seed(COCOONPOOLS, cocoonPool({ fromCheckpoint: "ck" }));
    f.client.seed(COCOONRESTORES, pendingRestore("undo", "ck"));
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.registry.log.length = 0;

    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.deepEqual(f.registry.log, [], "no tag is touched");
    const deleting = f.stored()?.status?.conditions?.find((c) => c.type === "Deleting");
    assert.equal(deleting?.reason, "InUse");
    assert.match(
      deleting?.message ?? "",
      /waiting for CocoonPool warm, CocoonRestore undo, which still need/,
    );
    assert.ok(f.events.reasons().includes("CheckpointDeleteWaiting"));

    await f.client.patch(COCOONPOOLS, NS, "warm", { spec: { fromCheckpoint: null } });
    await f.client.patch(
      COCOONRESTORES,
      NS,
      "undo",
      { status: { phase: "Failed" } },
      { subresource: "status" },
    );
    assert.deepEqual(await f.run(), {});
    assert.equal(f.stored(), undefined, "gone once nothing needs it");
  });
});

function pendingRestore(name: string, checkpointName: string): CocoonRestore {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonRestore",
    metadata: { name, namespace: NS },
    spec: { cocoonSetRef: { name: "another" }, checkpointRef: { name: checkpointName } },
    status: { phase: "Pending" },
  };
}

describe("CheckpointReconciler: the rules of a copy", () => {
  const VM_TB = VMS[2] ?? "";
  const condition = (f: Awaited<ReturnType<typeof fixture>>, type: string) =>
    f.stored()?.status?.conditions?.find((c) => c.type === type);

  it("a request for a checkpoint gone from the cache does nothing", async () => {
    const f = fixture();
    assert.deepEqual(await f.run("gone"), {});
    assert.deepEqual(f.client.calls, []);
  });

  it("adds exactly its finalizer to a checkpoint that has none", async () => {
    const f = fixture();
    const ck = checkpoint();
    delete ck.metadata.finalizers;
    f.client.seed(COCOONCHECKPOINTS, ck);
    await f.run();
    assert.deepEqual(f.stored()?.metadata.finalizers, [FINALIZER_COCOONCHECKPOINT]);
  });

  it("waits for a set with no status yet, and its Pending conditions say Pending; no deadline, no timer", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, { ...suspendedSet(), status: undefined });
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    assert.deepEqual(await f.run(), {});
    assert.match(f.stored()?.status?.message ?? "", /to be Suspended \(phase unknown\)/);
    assert.deepEqual(
      [
        condition(f, "Ready")?.status,
        condition(f, "Ready")?.reason,
        condition(f, "Ready")?.observedGeneration,
      ],
      ["False", "Pending", 1],
    );
    assert.deepEqual(
      [condition(f, "Progressing")?.status, condition(f, "Progressing")?.reason],
      ["False", "Pending"],
    );
    assert.deepEqual(
      f.events.events.map((e) => [e.reason, e.type]),
      [["CheckpointWaiting", "Normal"]],
    );
  });

  it("a status write that fails while waiting fails the pass, to be retried", async () => {
    const f = fixture();
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    f.client.failNext("patch", "cocooncheckpoints/status", new ApiError(503, "ServiceUnavailable", "busy"));
    await assert.rejects(f.run(), /busy/);
  });

  it("copies nothing when the API server has the checkpoint gone, being deleted, or Failed", async () => {
    for (const server of ["gone", "deleting", "Failed"] as const) {
      const f = fixture();
      f.client.seed(COCOONSETS, suspendedSet());
      for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
      f.client.seed(COCOONCHECKPOINTS, checkpoint());
      const before = f.client.storeChanges.length;
      if (server === "gone") {
        await f.client.update(COCOONCHECKPOINTS, {
          ...f.stored()!,
          metadata: { ...f.stored()!.metadata, finalizers: [] },
        });
        await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
      } else if (server === "deleting") {
        await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
      } else {
        await f.client.patch(
          COCOONCHECKPOINTS,
          NS,
          "ck",
          { status: { phase: "Failed" } },
          { subresource: "status" },
        );
      }
      f.cache.lag = f.client.storeChanges.length - before;
      f.registry.log.length = 0;
      assert.deepEqual(await f.run(), {}, server);
      assert.deepEqual(
        f.registry.log.filter((l) => l.startsWith("put")),
        [],
        server,
      );
    }
  });

  it("a copy marks Copying as it starts, with one Normal CheckpointCopying event, and Ready names what it holds", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS.slice(0, 2)) f.registry.push(vm, "hibernate", IMAGE);
    const atFirstPut: CocoonCheckpoint[] = [];
    f.registry.failOn = (op) => {
      if (op === "put" && atFirstPut.length === 0) atFirstPut.push(f.stored() as CocoonCheckpoint);
      return undefined;
    };
    await f.run();
    const copying = atFirstPut[0]?.status;
    assert.equal(copying?.message, `copying 3 snapshots of CocoonSet ${SET}`);
    const progressing = copying?.conditions?.find((c) => c.type === "Progressing");
    assert.deepEqual([progressing?.status, progressing?.reason], ["True", "Copying"]);
    const status = f.stored()?.status;
    assert.equal(status?.message, `2 snapshots of CocoonSet ${SET}; no :hibernate snapshot for ${VM_TB}`);
    assert.deepEqual(
      [
        condition(f, "Ready")?.status,
        condition(f, "Ready")?.reason,
        condition(f, "Ready")?.observedGeneration,
      ],
      ["True", "Ready", 1],
    );
    assert.deepEqual(
      [condition(f, "Progressing")?.status, condition(f, "Progressing")?.reason],
      ["False", "Ready"],
    );
    assert.deepEqual(
      f.events.events.map((e) => [e.reason, e.type]),
      [
        ["CheckpointCopying", "Normal"],
        ["CheckpointReady", "Normal"],
      ],
    );
    const stamp = (await f.registry.getManifest(VMS[0] ?? "", "ckpt-ck")).manifest.annotations as Record<
      string,
      string
    >;
    assert.equal(
      stamp[MANIFEST_ANN_WRITE],
      f.stored()?.metadata.uid,
      "the write stamp is the checkpoint's uid",
    );
  });

  it("a copy every slot of which has its snapshot names nothing else", async () => {
    const f = await readyFixture();
    assert.equal(f.stored()?.status?.message, `3 snapshots of CocoonSet ${SET}`);
    assert.equal(f.stored()?.status?.members?.length, 3);
  });

  it("a copy interrupted before (Copying, not failed) starts again as a copy, not as a retry", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    f.registry.push(VMS[0] ?? "", "hibernate", IMAGE);
    f.registry.failOn = (op) => (op === "put" ? FakeCheckpointRegistry.error(503) : undefined);
    await assert.rejects(f.run());
    // As an operator stopped mid-copy leaves it: Copying, its Progressing condition Copying.
    const ck = f.stored() as CocoonCheckpoint;
    await f.client.patch(
      COCOONCHECKPOINTS,
      NS,
      "ck",
      {
        status: {
          message: "copying 3 snapshots",
          conditions: (ck.status?.conditions ?? []).map((c) =>
            c.type === "Progressing" ? { ...c, reason: "Copying" } : { ...c, reason: "Copying" },
          ),
        },
      },
      { subresource: "status" },
    );
    f.registry.failOn = undefined;
    const atPut: string[] = [];
    f.registry.failOn = (op) => {
      if (op === "put") atPut.push(String(condition(f, "Progressing")?.reason));
      return undefined;
    };
    await f.run();
    assert.deepEqual(atPut, ["Copying"]);
    assert.equal(f.events.events.filter((e) => e.reason === "CheckpointCopying").length, 1, "entered once");
  });

  it("a registry error reading a :hibernate fails the copy, to be retried; it is not a missing snapshot", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.registry.failOn = (op, repo) =>
      op === "get" && repo === VM_TB ? FakeCheckpointRegistry.error(503) : undefined;
    await assert.rejects(f.run(), /refused/);
    assert.equal(f.stored()?.status?.phase, "Copying");
    assert.equal(condition(f, "Progressing")?.reason, "CopyFailed");
  });

  it("a Suspended set without any snapshot of this suspend: Pending, looked at again in 30 s", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.equal(f.stored()?.status?.phase, "Pending");
    assert.deepEqual(
      f.registry.log.filter((l) => l.startsWith("put")),
      [],
    );
  });

  it("a set woken and suspended again at a new generation during the copy: Pending, not Ready", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    let moved = false;
    f.registry.failOn = (op) => {
      if (op === "put" && !moved) {
        moved = true;
        const cs = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
        f.client.seed(COCOONSETS, {
          ...cs,
          metadata: { ...cs.metadata, generation: 3 },
          status: { ...cs.status!, phase: "Suspended", observedGeneration: 3 },
        });
      }
      return undefined;
    };
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Pending");
    assert.match(f.stored()?.status?.message ?? "", /changed during the copy/);
  });

  it("a member an earlier attempt planned, and this copy did not, stays listed without a digest", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    const earlier = [
      { role: "sub-agent" as const, slot: 5, vmName: `vk-${NS}-${SET}-5` },
      { role: "toolbox" as const, toolbox: "gone", vmName: `vk-${NS}-${SET}-gone` },
    ];
    f.client.seed(COCOONCHECKPOINTS, { ...checkpoint(), status: { phase: "Copying", members: earlier } });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
    assert.deepEqual(f.stored()?.status?.members?.slice(3), earlier);
  });

  it("a copy that fails without a failureDeadline fails the pass, for the work queue's backoff", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.registry.failOn = (op) => (op === "put" ? FakeCheckpointRegistry.error(503) : undefined);
    await assert.rejects(f.run(), /refused/);
    assert.equal(f.events.events.filter((e) => e.reason === "CheckpointCopyFailed")[0]?.type, "Warning");
  });

  it("a copy that fails once its deadline has passed is Failed", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, {
      ...checkpoint("ck", { creationTimestamp: "2026-01-01T00:00:00Z" }),
      spec: { cocoonSetRef: { name: SET }, failureDeadline: "1s" },
    });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.registry.failOn = (op) => {
      if (op !== "put") return undefined;
      f.clock.advance(1000);
      return FakeCheckpointRegistry.error(503);
    };
    assert.deepEqual(await f.run(), {});
    assert.equal(f.stored()?.status?.phase, "Failed");
  });

  it("an aborted copy (the operator stopping) is not reported as a failed copy", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.registry.failOn = (op) => (op === "put" ? new DOMException("stopped", "AbortError") : undefined);
    await assert.rejects(f.run(), /stopped/);
    assert.ok(!f.events.events.some((e) => e.reason === "CheckpointCopyFailed"));
    assert.notEqual(condition(f, "Progressing")?.reason, "CopyFailed");
  });

  it("past its deadline, a cache behind the server's Ready cannot write Failed over it", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, {
      ...checkpoint("ck", { creationTimestamp: "2026-01-01T00:00:00Z" }),
      spec: { cocoonSetRef: { name: SET }, failureDeadline: "1h" },
    });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
    const cs = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
    f.client.seed(COCOONSETS, { ...cs, status: { ...cs.status!, phase: "Running" } });
    while (
      f.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "ck", f.cache.lag)?.status?.phase === "Ready"
    )
      f.cache.lag++;
    f.clock.advance(3_600_000);
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
  });
});

describe("CheckpointReconciler: the rules once Ready", () => {
  it("a set deleted, or without annotations, leaves its Ready checkpoint alone, with no warning", async () => {
    const f = await readyFixture();
    const cs = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
    f.client.seed(COCOONSETS, { ...cs, metadata: { ...cs.metadata, annotations: undefined } });
    assert.deepEqual(await f.run(), {});
    const bare = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
    await f.client.update(COCOONSETS, { ...bare, metadata: { ...bare.metadata, finalizers: [] } });
    await f.client.delete(COCOONSETS, NS, SET);
    assert.deepEqual(await f.run(), {});
    assert.ok(!f.events.reasons().includes("KeepCheckpointsInvalid"));
  });

  it("an invalid keep-checkpoints is reported when the checkpoint turns Ready, not on every pass after", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "x" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    await f.run();
    await f.run();
    assert.equal(f.events.reasons().filter((r) => r === "KeepCheckpointsInvalid").length, 1);
  });

  it("keep-checkpoints reads who needs a checkpoint only when one lies beyond the N", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "2" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    for (const name of ["a", "b"]) {
      f.client.seed(COCOONCHECKPOINTS, checkpoint(name));
      await f.run(name);
    }
    assert.deepEqual(
      f.client.calls.filter((c) => c.verb === "list"),
      [],
    );
  });

  it("measures nothing while the set's :hibernate tags may still move", async () => {
    const f = await readyFixture();
    const cs = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
    f.client.seed(COCOONSETS, {
      ...cs,
      metadata: { ...cs.metadata, generation: 2 },
      status: { ...cs.status!, phase: "Suspending", observedGeneration: 2 },
    });
    f.registry.log.length = 0;
    await f.run();
    assert.deepEqual(f.registry.log, []);
    assert.equal(f.stored()?.status?.exclusiveBytesSetGeneration, 1);
  });

  it("measures a checkpoint with a member it did not copy, and a registry error leaves the last figure", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS.slice(0, 2)) f.registry.push(vm, "hibernate", IMAGE);
    await f.run();
    const cs = f.client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
    const atGeneration = (generation: number) =>
      f.client.seed(COCOONSETS, {
        ...cs,
        metadata: { ...cs.metadata, generation },
        status: { ...cs.status!, phase: "Suspended", observedGeneration: generation },
      });
    for (const failing of ["hibernate", "digest"] as const) {
      atGeneration(failing === "hibernate" ? 2 : 3);
      f.registry.failOn = (op, _repo, ref) =>
        op === "get" && (failing === "hibernate" ? ref === "hibernate" : ref.startsWith("sha256:"))
          ? FakeCheckpointRegistry.error(503)
          : undefined;
      await f.run();
      assert.deepEqual(
        [f.stored()?.status?.exclusiveBytes, f.stored()?.status?.exclusiveBytesSetGeneration],
        [0, 1],
        failing,
      );
    }
    f.registry.failOn = undefined;
    for (const vm of VMS.slice(0, 2)) await f.registry.deleteIfPresent(vm, "hibernate");
    atGeneration(4);
    await f.run();
    assert.deepEqual(
      [f.stored()?.status?.exclusiveBytes, f.stored()?.status?.exclusiveBytesSetGeneration],
      [220, 4],
    );
  });
});

describe("CheckpointReconciler: the rules of a delete", () => {
  it("a checkpoint deleted before it had any status lets go at once, keeping other finalizers", async () => {
    const f = fixture();
    f.client.seed(
      COCOONCHECKPOINTS,
      checkpoint("ck", { finalizers: ["example.com/keep", FINALIZER_COCOONCHECKPOINT] }),
    );
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    await f.run();
    assert.deepEqual(f.stored()?.metadata.finalizers, ["example.com/keep"]);
    assert.deepEqual(f.registry.log, []);
    assert.deepEqual(
      f.events.events.map((e) => [e.reason, e.type]),
      [["CheckpointTagsDeleted", "Normal"]],
    );
  });

  it("a finalizer release that fails otherwise than NotFound fails the pass", async () => {
    const f = await readyFixture();
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.client.failNext("update", "cocooncheckpoints", new ApiError(409, "Conflict", "modified"));
    await assert.rejects(f.run(), /modified/);
    assert.deepEqual(f.stored()?.metadata.finalizers, [FINALIZER_COCOONCHECKPOINT]);
  });

  it("pools or restores the cluster does not serve, or the operator may not list, count none", async () => {
    const f = await readyFixture();
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.client.failNext("list", "cocoonpools", new NotFoundError(404, "NotFound", "no such kind"));
    f.client.failNext("list", "cocoonrestores", new ApiError(403, "Forbidden", "not allowed"));
    assert.deepEqual(await f.run(), {});
    assert.equal(f.stored(), undefined);
  });

  it("a failed list of restores fails the delete: no tag goes while who needs it is unknown", async () => {
    const f = await readyFixture();
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.client.failNext("list", "cocoonrestores", new ApiError(503, "ServiceUnavailable", "busy"));
    f.registry.log.length = 0;
    await assert.rejects(f.run(), /busy/);
    assert.deepEqual(f.registry.log, []);
  });

  it("its delete waits with a Normal CheckpointDeleteWaiting, its Deleting condition at its generation; a refused tag delete is a Warning", async () => {
    const f = await readyFixture();
    f.client.seed(COCOONPOOLS, cocoonPool({ fromCheckpoint: "ck" }));
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    await f.run();
    const deleting = f.stored()?.status?.conditions?.find((c) => c.type === "Deleting");
    assert.equal(deleting?.observedGeneration, f.stored()?.metadata.generation);
    assert.equal(
      f.stored()?.status?.conditions?.find((c) => c.type === "Ready")?.status,
      "True",
      "the other conditions stay",
    );
    await f.client.patch(COCOONPOOLS, NS, "warm", { spec: { fromCheckpoint: null } });
    f.registry.failOn = (op) => (op === "deleteIfPresent" ? FakeCheckpointRegistry.error(503) : undefined);
    await assert.rejects(f.run());
    assert.deepEqual(
      f.events.events
        .filter((e) => e.reason.startsWith("CheckpointDelete") || e.reason === "CheckpointTagDeleteFailed")
        .map((e) => [e.reason, e.type]),
      [
        ["CheckpointDeleteWaiting", "Normal"],
        ["CheckpointTagDeleteFailed", "Warning"],
      ],
    );
  });
});

describe("CheckpointReconciler: the rules of a prune and a release", () => {
  async function pruning(error?: Error) {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet({ "cocoonset.cocoonstack.io/keep-checkpoints": "1" }));
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    f.client.seed(COCOONCHECKPOINTS, checkpoint("a", { creationTimestamp: "2026-01-01T00:00:01Z" }));
    await f.run("a");
    f.client.seed(COCOONCHECKPOINTS, checkpoint("b", { creationTimestamp: "2026-01-01T00:00:02Z" }));
    if (error) f.client.failNext("delete", "cocooncheckpoints", error);
    return { f, pass: f.run("b") };
  }

  it("a prune records a Normal CheckpointPruned; an older checkpoint already gone fails nothing", async () => {
    const { f, pass } = await pruning(new NotFoundError(404, "NotFound", "gone"));
    assert.deepEqual(await pass, {});
    assert.deepEqual(
      f.events.events.filter((e) => e.reason === "CheckpointPruned").map((e) => e.type),
      ["Normal"],
    );
  });

  it("a prune delete the API server refuses fails the pass, to be retried", async () => {
    const { pass } = await pruning(new ApiError(403, "Forbidden", "not allowed"));
    await assert.rejects(pass, /not allowed/);
  });

  it("a finalizer release that finds the checkpoint gone fails nothing", async () => {
    const f = await readyFixture();
    await f.client.delete(COCOONCHECKPOINTS, NS, "ck");
    f.client.failNext("update", "cocooncheckpoints", new NotFoundError(404, "NotFound", "gone"));
    assert.deepEqual(await f.run(), {});
  });

  it("a member planned earlier stays listed beside a slot this suspend did not confirm", async () => {
    const f = fixture();
    const cs = suspendedSet();
    cs.spec.hibernatePolicy = "retain";
    f.client.seed(COCOONSETS, cs);
    const earlier = { role: "sub-agent" as const, slot: 5, vmName: `vk-${NS}-${SET}-5` };
    f.client.seed(COCOONCHECKPOINTS, { ...checkpoint(), status: { phase: "Copying", members: [earlier] } });
    for (const vm of VMS) f.registry.push(vm, "hibernate", IMAGE);
    for (const [slot, vm] of VMS.entries()) {
      f.client.seed(PODS, {
        metadata: {
          name: `${SET}-${slot}`,
          namespace: NS,
          labels: { [LABEL_COCOONSET]: SET },
          annotations: { "vm.cocoonstack.io/name": vm },
        },
        spec: { containers: [{ name: "agent" }] },
        status: { phase: slot === 1 ? "Failed" : "Pending" },
      } as Pod);
    }
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
    assert.deepEqual(f.stored()?.status?.members?.at(-1), earlier);
  });

  it("a snapshot manifest without annotations is copied, its image recorded empty", async () => {
    const f = fixture();
    f.client.seed(COCOONSETS, suspendedSet());
    f.client.seed(COCOONCHECKPOINTS, checkpoint());
    for (const vm of VMS) {
      f.registry.push(vm, "hibernate", IMAGE);
      const { manifest } = await f.registry.getManifest(vm, "hibernate");
      delete manifest.annotations;
      await f.registry.putManifest(vm, "hibernate", Buffer.from(JSON.stringify(manifest)));
    }
    f.registry.log.length = 0;
    await f.run();
    assert.equal(f.stored()?.status?.phase, "Ready");
    assert.deepEqual(
      f.stored()?.status?.members?.map((m) => m.image),
      ["", "", ""],
    );
  });
});
