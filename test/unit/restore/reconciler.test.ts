// The CocoonRestore reconciler over the fake API client and an in-memory registry: the phase machine
// Pending → Restoring → Restored, the order of its writes (hold, suspend, record, copies, owed
// restores, resume), and refusals that write nothing but the restore's own status.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonRestore } from "../../../src/apis/v1alpha1/types.ts";
import {
  ANN_FROM_CHECKPOINT,
  ANN_RESTORE_HOLD,
  BRANCH_COPYING,
  CONDITION_BRANCHED,
} from "../../../src/checkpoint/keys.ts";
import { manifestDigest, sameRepositoryBranchManifest } from "../../../src/checkpoint/manifest.ts";
import { ANN_HIBERNATE_RECLAIM } from "../../../src/contract/keys.ts";
import { ApiError, ConflictError, NotFoundError } from "../../../src/controller/errors.ts";
import { COCOONCHECKPOINTS, COCOONRESTORES, COCOONSETS } from "../../../src/controller/resources.ts";
import { encodeRestoreHold, REASON_SET_HELD, restoreHoldBy, restoreHoldOf } from "../../../src/holds.ts";
import { readReclaim } from "../../../src/pass/reclaimrecord.ts";
import { REASON_DEADLINE_EXCEEDED, REASON_WRITE_REFUSED } from "../../../src/restore/keys.ts";
import { NS, SET } from "../../support/cocoonset.ts";
import { IMAGE, MAIN, readyCheckpoint, restoreFixture, restoreOf, SUB, setIn } from "./fixture.ts";

const record = (cs: CocoonSet | undefined) =>
  readReclaim(cs?.metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;

/** The fixture with the set as given, its checkpoint "ck" Ready in the registry, and restore r1. */
function seeded(cs: CocoonSet) {
  const f = restoreFixture();
  const digests = {
    main: f.registry.push(MAIN, "ckpt-ck", IMAGE),
    sub: f.registry.push(SUB, "ckpt-ck", IMAGE),
  };
  f.client.seed(COCOONSETS, cs);
  f.client.seed(COCOONCHECKPOINTS, readyCheckpoint(digests));
  f.client.seed(COCOONRESTORES, restoreOf());
  return { ...f, digests };
}

/** What each write to the set changed: its hold, spec.suspend, or the reclaim record. */
function setWrites(f: ReturnType<typeof restoreFixture>): string[] {
  return f.client
    .writes()
    .filter((c) => c.resource === "cocoonsets")
    .map((c) => {
      const body = c.body as {
        spec?: { suspend?: boolean };
        metadata?: { annotations?: Record<string, string | null> };
      };
      if (body.spec) return `suspend=${body.spec.suspend}`;
      const annotations = body.metadata?.annotations ?? {};
      if (ANN_RESTORE_HOLD in annotations) return annotations[ANN_RESTORE_HOLD] === null ? "release" : "hold";
      const rec = readReclaim(annotations[ANN_HIBERNATE_RECLAIM] ?? undefined).value;
      return `record vms=${rec.vms.length} restore=${rec.restore.length}`;
    });
}

describe("RestoreReconciler", () => {
  it("restores a running set: hold, suspend, record, copies, owed restores, resume, then Restored", async () => {
    const f = seeded(setIn("Running", false));

    assert.deepEqual(await f.run(), { requeue: true });
    const hold = restoreHoldOf(f.set());
    assert.deepEqual(hold, { restore: "r1", uid: "uid-r1", checkpoint: "ck", suspend: false });
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.equal(f.restore()?.status?.reason, "Suspending");
    assert.equal(f.restore()?.status?.suspendedBefore, false);
    assert.equal(f.set().spec.suspend, false, "the hold is taken before the set is touched");

    await f.run();
    assert.equal(f.set().spec.suspend, true);
    await f.run();
    assert.match(f.restore()?.status?.message ?? "", /to be Suspended at generation 2/);
    assert.deepEqual(
      f.log.filter((l) => !l.startsWith("push")),
      [],
      "no registry call before the set is Suspended",
    );

    // The set's pass suspended it: every VM's own snapshot is :hibernate.
    const live = [f.registry.push(MAIN, "hibernate", IMAGE), f.registry.push(SUB, "hibernate", IMAGE)];
    f.setStatus({ ...f.set().status, phase: "Suspended", observedGeneration: 2 } as CocoonSet["status"]);
    const atPut: string[][] = [];
    f.registry.failOn = (op) => {
      if (op === "put") atPut.push([...record(f.set()).vms, "|", ...record(f.set()).restore]);
      return undefined;
    };
    await f.run();
    assert.deepEqual(
      atPut,
      [
        [MAIN, SUB, "|"],
        [MAIN, SUB, "|"],
      ],
      "both VMs recorded before the first copy, and owed no restore until the last landed",
    );
    for (const [i, vm] of [MAIN, SUB].entries()) {
      const source = await f.registry.getManifest(vm, i === 0 ? f.digests.main : f.digests.sub);
      const expected = manifestDigest(
        sameRepositoryBranchManifest(source.raw, { namespace: NS, name: SET, uid: "uid-r1" }),
      );
      assert.equal(f.registry.digestOf(vm, "hibernate"), expected, `${vm}:hibernate is the checkpoint's`);
      assert.notEqual(expected, live[i]);
      assert.notEqual(
        expected,
        i === 0 ? f.digests.main : f.digests.sub,
        "never the checkpoint tag's digest",
      );
    }
    assert.deepEqual(record(f.set()).restore, [MAIN, SUB]);
    assert.deepEqual(setWrites(f), [
      "hold",
      "suspend=true",
      "record vms=2 restore=0",
      "record vms=2 restore=2",
      "suspend=false",
    ]);
    assert.deepEqual(f.restore()?.status?.members, [
      { vmName: MAIN, fromVM: MAIN, digest: f.digests.main },
      { vmName: SUB, fromVM: SUB, digest: f.digests.sub },
    ]);
    assert.equal(f.restore()?.status?.resumed, true);
    assert.equal(f.restore()?.status?.phase, "Restoring");

    // Running at the resumed generation, and the set's pass dropped the copies once the VMs ran.
    f.client.seed(COCOONSETS, {
      ...f.set(),
      metadata: {
        ...f.set().metadata,
        annotations: { [ANN_RESTORE_HOLD]: encodeRestoreHold(hold as never) },
      },
      status: { ...f.set().status, phase: "Running", observedGeneration: 3 },
    } as CocoonSet);
    await f.run();
    const done = f.restore();
    assert.equal(done?.status?.phase, "Restored");
    assert.equal(done?.status?.conditions?.find((c) => c.type === "Restored")?.status, "True");
    assert.equal(done?.status?.conditions?.find((c) => c.type === "Restored")?.observedGeneration, 1);
    assert.equal(done?.status?.conditions?.find((c) => c.type === "Progressing")?.status, "False");
    assert.equal(f.set().metadata.annotations?.[ANN_RESTORE_HOLD], undefined, "the hold goes last");
    assert.deepEqual(
      f.events.events.filter((e) => e.object === "r1").map((e) => e.reason),
      ["RestoreStarted", "RestoreCopied", "Restored"],
    );
    assert.deepEqual(
      f.events.events.filter((e) => e.object === SET).map((e) => e.reason),
      ["RestoreStarted", "Restored"],
    );
  });

  it("a pass whose restore cache is behind its own resume does not suspend the resumed set again", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    await f.run();
    f.registry.push(MAIN, "hibernate", IMAGE);
    f.registry.push(SUB, "hibernate", IMAGE);
    f.setStatus({ ...f.set().status, phase: "Suspended", observedGeneration: 2 } as CocoonSet["status"]);
    await f.run();
    assert.equal(f.restore()?.status?.resumed, true);
    assert.equal(f.set().spec.suspend, false);
    // The resume's set event runs the pass before the restore's own writes reach its cache.
    const cachedAgo = (lag: number) =>
      f.client.peek<CocoonRestore>(COCOONRESTORES, NS, "r1", lag)?.status?.members;
    while (cachedAgo(f.restoreCache.lag) !== undefined) f.restoreCache.lag++;
    f.client.clearCalls();
    await f.run();
    assert.deepEqual(setWrites(f), [], "the set is neither suspended again nor held again");
    assert.equal(f.set().spec.suspend, false);
    assert.equal(f.restore()?.status?.resumed, true);
  });

  it("a set suspended before is not resumed: Restored once the copies are in place and owed", async () => {
    const f = seeded(setIn("Suspended", true));
    f.registry.push(MAIN, "hibernate", IMAGE);
    f.registry.push(SUB, "hibernate", IMAGE);
    await f.run();
    assert.equal(f.restore()?.status?.suspendedBefore, true);
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restored");
    assert.equal(f.set().spec.suspend, true);
    assert.deepEqual(setWrites(f), ["hold", "record vms=2 restore=0", "record vms=2 restore=2", "release"]);
    assert.match(f.restore()?.status?.message ?? "", /restore from CocoonCheckpoint ck when it resumes/);
  });

  it("a copy the registry refuses keeps the set suspended and held, owes nothing, and the retry completes", async () => {
    const f = seeded(setIn("Suspended", true));
    await f.run();
    f.registry.failOn = (op, repo) => (op === "put" && repo === SUB ? new Error("quota") : undefined);
    await assert.rejects(f.run(), /quota/);
    assert.equal(f.restore()?.status?.reason, "CopyFailed");
    assert.match(f.restore()?.status?.message ?? "", /quota; retrying/);
    assert.deepEqual(record(f.set()).restore, [], "no restore owed over a half-copied set");
    assert.ok(restoreHoldOf(f.set()));
    f.registry.failOn = undefined;
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restored");
    assert.deepEqual(record(f.set()).restore, [MAIN, SUB]);
  });

  it("a spec that no longer fits by the copy gives the set back as it was, with nothing copied", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    await f.run();
    const cs = f.set();
    f.client.seed(COCOONSETS, {
      ...cs,
      spec: { ...cs.spec, agent: { ...cs.spec.agent, image: "other" } },
      status: { ...cs.status, phase: "Suspended", observedGeneration: cs.metadata.generation },
    } as CocoonSet);
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Failed");
    assert.equal(f.restore()?.status?.reason, "Incompatible");
    assert.match(f.restore()?.status?.message ?? "", /nothing was copied$/);
    assert.equal(f.set().spec.suspend, false, "back to its suspend state");
    assert.equal(f.set().metadata.annotations?.[ANN_RESTORE_HOLD], undefined);
    assert.ok(!f.log.some((l) => l.startsWith("put") || l.startsWith("mount")), "no copy");
    assert.equal(f.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined, "nothing recorded");
  });

  it("a refusal writes the restore's status alone: no hold, no spec change, no registry call", async () => {
    const f = restoreFixture();
    f.client.seed(COCOONSETS, setIn("Running", false));
    f.client.seed(COCOONRESTORES, restoreOf("r1", "missing"));
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Failed");
    assert.equal(f.restore()?.status?.reason, "CheckpointNotFound");
    assert.deepEqual(
      f.client.writes().map((c) => `${c.verb} ${c.resource}/${c.subresource ?? ""}`),
      ["patch cocoonrestores/status"],
    );
    assert.deepEqual(f.log, []);
    assert.deepEqual(
      f.events.events.map((e) => e.reason),
      ["RestoreRefused"],
    );
    f.client.clearCalls();
    await f.run();
    assert.deepEqual(f.client.writes(), [], "a Failed restore is final");
  });

  it("one restore at a time: a second is refused while the first holds the set", async () => {
    const f = seeded(setIn("Running", false));
    f.client.seed(COCOONRESTORES, restoreOf("r2"));
    await f.run("r1");
    await f.run("r2");
    assert.equal(f.restore("r2")?.status?.reason, "RestoreInProgress");
    assert.match(f.restore("r2")?.status?.message ?? "", /CocoonRestore r1 is restoring/);
    assert.deepEqual(restoreHoldOf(f.set()), {
      restore: "r1",
      uid: "uid-r1",
      checkpoint: "ck",
      suspend: false,
    });
  });

  it("judges a refusal on the API server's objects: a checkpoint the cache does not show Ready yet is no refusal", async () => {
    const f = seeded(setIn("Running", false));
    const ck = f.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "ck") as CocoonCheckpoint;
    f.cachedCheckpoint.value = { ...ck, status: { phase: "Copying" } };
    assert.deepEqual(await f.run(), { requeue: true });
    assert.equal(f.restore()?.status?.phase, "Restoring");
  });

  it("a hold whose restore the cache does not show yet is taken for live when the API server has it", async () => {
    const cs = setIn("Running", false);
    const other = encodeRestoreHold({ restore: "r0", uid: "uid-r0", checkpoint: "ck", suspend: false });
    const f = seeded({ ...cs, metadata: { ...cs.metadata, annotations: { [ANN_RESTORE_HOLD]: other } } });
    f.client.seed(COCOONRESTORES, restoreOf("r0"));
    f.hiddenRestores.add("r0");
    await f.run();
    assert.equal(f.restore()?.status?.reason, "RestoreInProgress");
    assert.deepEqual(restoreHoldOf(f.set()), {
      restore: "r0",
      uid: "uid-r0",
      checkpoint: "ck",
      suspend: false,
    });
  });

  it("takes over a stale hold (its restore gone) with the suspend state that hold recorded", async () => {
    const cs = setIn("Suspended", true);
    const stale = encodeRestoreHold({ restore: "gone", uid: "uid-gone", checkpoint: "ck", suspend: false });
    const f = seeded({ ...cs, metadata: { ...cs.metadata, annotations: { [ANN_RESTORE_HOLD]: stale } } });
    await f.run();
    assert.equal(f.restore()?.status?.suspendedBefore, false, "the set was running before the stale restore");
    assert.deepEqual(restoreHoldOf(f.set()), {
      restore: "r1",
      uid: "uid-r1",
      checkpoint: "ck",
      suspend: false,
    });
  });

  it("stops, Failed, when its hold is removed from the set, doing nothing more to it", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    const held = f.set();
    f.client.seed(COCOONSETS, { ...held, metadata: { ...held.metadata, annotations: {} } });
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.deepEqual(await f.run(), {});
    assert.equal(f.restore()?.status?.phase, "Failed");
    assert.equal(f.restore()?.status?.reason, "HoldRemoved");
    assert.equal(f.set().spec.suspend, false, "nothing more is done to the set");
  });

  it("a restore its cache does not show yet keeps the hold it took: only a restore gone from the API server lets go", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restoring");
    // A set event runs the pass while the restore watch has not delivered the restore yet.
    while (f.client.peek<CocoonRestore>(COCOONRESTORES, NS, "r1", f.restoreCache.lag) !== undefined)
      f.restoreCache.lag++;
    f.client.clearCalls();
    assert.deepEqual(await f.run(), {});
    assert.deepEqual(setWrites(f), [], "the hold stays");
    assert.notEqual(f.set().metadata.annotations?.[ANN_RESTORE_HOLD], undefined);
    f.restoreCache.lag = 0;
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restoring", "the restore goes on, not HoldRemoved");
  });

  it("a restore deleted before it finished lets go of its set, leaving it as it is", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    await f.run();
    f.client.delete(COCOONRESTORES, NS, "r1");
    await f.run();
    assert.equal(f.set().metadata.annotations?.[ANN_RESTORE_HOLD], undefined);
    assert.equal(f.set().spec.suspend, true, "a set it suspended stays suspended");
  });
});

describe("RestoreReconciler: one holder at a time", () => {
  it("waits Pending with reason SetHeld while the set's branch has not finished, takes no hold, then begins", async () => {
    const cs = setIn("Suspended", true);
    cs.metadata.annotations = { ...cs.metadata.annotations, [ANN_FROM_CHECKPOINT]: "ck" };
    const f = seeded(cs);
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
              reason: BRANCH_COPYING,
              message: "copying",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
      },
      { subresource: "status" },
    );
    f.client.clearCalls();
    const result = await f.run();
    assert.ok((result.requeueAfterMs ?? 0) > 0, "it looks again later");
    assert.equal(restoreHoldOf(f.set()), undefined, "no hold taken");
    assert.deepEqual(setWrites(f), []);
    assert.equal(f.restore()?.status?.phase, "Pending");
    assert.equal(f.restore()?.status?.reason, REASON_SET_HELD);
    assert.match(f.restore()?.status?.message ?? "", /has not finished its branch from CocoonCheckpoint ck/);
    assert.ok(f.events.reasons().includes(REASON_SET_HELD));

    await f.client.patch(
      COCOONSETS,
      NS,
      SET,
      {
        status: {
          conditions: [
            {
              type: CONDITION_BRANCHED,
              status: "True",
              reason: "FromCheckpoint",
              message: "branched",
              lastTransitionTime: "2026-01-01T00:00:00Z",
            },
          ],
        },
      },
      { subresource: "status" },
    );
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.equal(restoreHoldBy(f.set(), "uid-r1")?.restore, "r1");
  });

  it("lets go of a set deleted while it holds it, so the teardown can collect what it copied", async () => {
    const cs = setIn("Running", false);
    cs.metadata.finalizers = ["cocoonset.cocoonstack.io/finalizer"];
    const f = seeded(cs);
    await f.run();
    assert.equal(restoreHoldBy(f.set(), "uid-r1")?.restore, "r1");
    await f.client.delete(COCOONSETS, NS, SET);
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Failed");
    assert.equal(f.restore()?.status?.reason, "SetDeletedDuringRestore");
    await f.run();
    assert.equal(restoreHoldOf(f.set()), undefined, "the hold is gone: the teardown may collect");
  });
});

describe("RestoreReconciler: deadline", () => {
  it("a restore whose set never suspends fails at its failureDeadline (DeadlineExceeded), puts the set back as it was and lets go", async () => {
    const f = seeded(setIn("Running", false));
    await f.client.patch(COCOONRESTORES, NS, "r1", { spec: { failureDeadline: "5m" } });
    await f.run();
    const waiting = await f.run();
    assert.equal(f.set().spec.suspend, true, "the restore suspended the set");
    assert.equal(waiting.requeueAfterMs, 5 * 60_000, "it looks again at its deadline");

    f.clock.advance(5 * 60_000);
    assert.deepEqual(await f.run(), {});
    const r = f.restore();
    assert.equal(r?.status?.phase, "Failed");
    assert.equal(r?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.match(r?.status?.message ?? "", /not Restored within failureDeadline 5m: .*nothing was copied/);
    assert.equal(f.set().spec.suspend, false, "the set goes back to running");
    assert.equal(restoreHoldOf(f.set()), undefined, "the hold is gone");
    assert.ok(f.events.events.some((e) => e.reason === "RestoreFailed" && e.type === "Warning"));
  });

  it("past its deadline after a refused write, the set it suspended stays suspended: copies may have landed", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    await f.run();
    assert.equal(f.set().spec.suspend, true);
    f.setStatus({ ...f.set().status, phase: "Suspended", observedGeneration: 2 } as CocoonSet["status"]);
    f.client.failNext("patch", "cocoonsets", new ApiError(403, "Forbidden", "denied by a policy"));
    await assert.rejects(f.run(), /denied by a policy/);
    assert.equal(f.restore()?.status?.reason, REASON_WRITE_REFUSED);
    f.clock.advance(60 * 60_000);
    await f.run();
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.match(f.restore()?.status?.message ?? "", /stays suspended/);
    assert.equal(f.set().spec.suspend, true);
    assert.equal(restoreHoldOf(f.set()), undefined);
  });

  it("with no failureDeadline the default is one hour; a copy still failing then leaves the set suspended and held by no one", async () => {
    const f = seeded(setIn("Suspended", true));
    await f.run();
    f.registry.failOn = (op) => (op === "put" ? new Error("registry down") : undefined);
    await assert.rejects(f.run(), /registry down/);
    assert.equal(f.restore()?.status?.reason, "CopyFailed");
    f.clock.advance(60 * 60_000 - 1);
    await assert.rejects(f.run(), /registry down/);
    f.clock.advance(1);
    assert.deepEqual(await f.run(), {});
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.match(f.restore()?.status?.message ?? "", /within failureDeadline 1h: .*stays suspended/);
    assert.equal(f.set().spec.suspend, true);
    assert.equal(restoreHoldOf(f.set()), undefined);
  });

  it("a write the API server refuses (an admission policy on the hold) is reported with reason WriteRefused and a Warning, and the pass fails to back off", async () => {
    const f = seeded(setIn("Running", false));
    const denied = 'cocoonsets "demo" is forbidden: ValidatingAdmissionPolicy denied request';
    f.client.failNext("patch", "cocoonsets", new ApiError(403, "Forbidden", denied));
    await assert.rejects(f.run(), /denied request/);
    const r = f.restore();
    assert.equal(r?.status?.reason, REASON_WRITE_REFUSED);
    assert.match(
      r?.status?.message ?? "",
      /the API server refused a write: .*denied request; retrying with backoff/,
    );
    assert.equal(r?.status?.conditions?.find((c) => c.type === "Restored")?.reason, REASON_WRITE_REFUSED);
    assert.equal(f.events.events.find((e) => e.reason === "RestoreWriteRefused")?.type, "Warning");
    assert.equal(restoreHoldOf(f.set()), undefined);
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restoring", "the next pass takes the hold");
  });
});

/** Runs r1 of `f` until the set is Suspended at the generation its suspend gave it (2), tags pushed. */
async function suspendedForCopy(f: ReturnType<typeof seeded>): Promise<void> {
  await f.run();
  await f.run();
  f.registry.push(MAIN, "hibernate", IMAGE);
  f.registry.push(SUB, "hibernate", IMAGE);
  f.setStatus({ ...f.set().status, phase: "Suspended", observedGeneration: 2 } as CocoonSet["status"]);
}

/** Makes the next client.patch that `matches` fail with `error` (after nothing was written). */
function failPatch(f: ReturnType<typeof seeded>, matches: (body: unknown) => boolean, error: Error): void {
  const patch = f.client.patch.bind(f.client);
  let armed = true;
  f.client.patch = (async (...args: Parameters<typeof patch>) => {
    if (armed && matches(args[3])) {
      armed = false;
      throw error;
    }
    return patch(...args);
  }) as typeof f.client.patch;
}

/** The set cache lags until it shows the set at resourceVersion `version` again. */
function cacheSetAt(f: ReturnType<typeof seeded>, version: string | undefined): void {
  while (f.client.peek<CocoonSet>(COCOONSETS, NS, SET, f.setCache.lag)?.metadata.resourceVersion !== version)
    f.setCache.lag++;
}

describe("RestoreReconciler: Restored only once its VMs run from the copies", () => {
  it("a set Running at its generation with a VM still owed its restore keeps the restore waiting", async () => {
    const f = seeded(setIn("Running", false));
    await suspendedForCopy(f);
    await f.run();
    assert.equal(record(f.set()).generation, 2, "the record takes the set's generation at the copy");
    assert.equal(f.restore()?.status?.resumed, true);
    f.setStatus({ ...f.set().status, phase: "Running", observedGeneration: 3 } as CocoonSet["status"]);
    // The set's pass has not dropped the copies yet: both VMs are still owed their restore.
    assert.deepEqual(record(f.set()).restore, [MAIN, SUB]);
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.match(f.restore()?.status?.message ?? "", new RegExp(`waiting for ${MAIN}, ${SUB} to run`));
    assert.ok(restoreHoldOf(f.set()), "the hold stays");

    // A settled waiting pass reads only its cache and writes nothing.
    f.client.clearCalls();
    await f.run();
    assert.deepEqual(f.client.calls, []);

    // The set's pass drops the copies as the VMs run: then Restored, and a finished restore makes no call.
    const cs = f.set();
    f.client.seed(COCOONSETS, {
      ...cs,
      metadata: {
        ...cs.metadata,
        annotations: { [ANN_RESTORE_HOLD]: cs.metadata.annotations?.[ANN_RESTORE_HOLD] ?? "" },
      },
    });
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restored");
    assert.deepEqual(
      f.events.events.map((e) => `${e.object} ${e.reason} ${e.type}`),
      [
        "r1 RestoreStarted Normal",
        `${SET} RestoreStarted Normal`,
        "r1 RestoreCopied Normal",
        "r1 Restored Normal",
        `${SET} Restored Normal`,
      ],
    );
    f.client.clearCalls();
    assert.deepEqual(await f.run(), {});
    assert.deepEqual(f.client.calls, []);
  });

  it("a pass waiting for the suspend writes its wait once", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    await f.run();
    await f.run();
    f.client.clearCalls();
    await f.run();
    assert.deepEqual(f.client.writes(), []);
  });

  it("the status it writes while copying keeps what it said before, and says Copying at the first copy", async () => {
    const f = seeded(setIn("Running", false));
    await suspendedForCopy(f);
    const atPut: (string | undefined)[] = [];
    f.registry.failOn = (op) => {
      if (op === "put") atPut.push(f.restore()?.status?.reason);
      return undefined;
    };
    await f.run();
    assert.equal(atPut[0], "Copying");
    const status = f.restore()?.status;
    assert.equal(status?.suspendedBefore, false);
    assert.notEqual(status?.startTime, undefined);
    assert.deepEqual(
      status?.conditions?.map((c) => c.type),
      ["Restored", "Progressing"],
    );
  });
});

describe("RestoreReconciler: the copy re-checks the API server's set", () => {
  const changes: [string, (f: ReturnType<typeof seeded>) => Promise<unknown>][] = [
    ["unsuspended", (f) => f.client.patch(COCOONSETS, NS, SET, { spec: { suspend: false } })],
    [
      "its hold removed",
      (f) => f.client.patch(COCOONSETS, NS, SET, { metadata: { annotations: { [ANN_RESTORE_HOLD]: null } } }),
    ],
    [
      "being deleted (its status Suspended at the generation the delete gave it)",
      async (f) => {
        await f.client.delete(COCOONSETS, NS, SET);
        const generation = f.set().metadata.generation;
        f.setStatus({
          ...f.set().status,
          phase: "Suspended",
          observedGeneration: generation,
        } as CocoonSet["status"]);
      },
    ],
  ];
  for (const [what, change] of changes) {
    it(`copies nothing into a set the server shows ${what} while the cache shows it ready`, async () => {
      const cs = setIn("Running", false);
      cs.metadata.finalizers = ["cocoonset.cocoonstack.io/finalizer"];
      const f = seeded(cs);
      await suspendedForCopy(f);
      const ready = f.set().metadata.resourceVersion;
      await change(f);
      cacheSetAt(f, ready);
      const before = record(f.set());
      assert.deepEqual(await f.run(), { requeueAfterMs: 1_000 });
      assert.ok(!f.log.some((l) => l.startsWith("put")), "no copy");
      assert.deepEqual(record(f.set()), before, "nothing recorded");
      assert.equal(f.restore()?.status?.members, undefined);
    });
  }

  it("a hold the cache does not show yet is no removed hold: the pass looks again", async () => {
    const f = seeded(setIn("Running", false));
    const unheld = f.set().metadata.resourceVersion;
    await f.run();
    cacheSetAt(f, unheld);
    assert.deepEqual(await f.run(), { requeueAfterMs: 1_000 });
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.ok(restoreHoldOf(f.set()));
  });
});

describe("RestoreReconciler: letting go", () => {
  it("past its deadline it removes its own hold only: another restore's hold on the set stays", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    const theirs = encodeRestoreHold({ restore: "r2", uid: "uid-r2", checkpoint: "ck", suspend: false });
    await f.client.patch(COCOONSETS, NS, SET, { metadata: { annotations: { [ANN_RESTORE_HOLD]: theirs } } });
    f.clock.advance(60 * 60_000);
    assert.deepEqual(await f.run(), {});
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.equal(f.set().metadata.annotations?.[ANN_RESTORE_HOLD], theirs);
  });

  it("past its deadline with its set gone, it fails all the same", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    await f.client.delete(COCOONSETS, NS, SET);
    f.clock.advance(60 * 60_000);
    assert.deepEqual(await f.run(), {});
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
  });

  it("a checkpoint whose delete begins as the hold is taken: the hold goes again and the restore is refused", async () => {
    const f = seeded(setIn("Running", false));
    const patch = f.client.patch.bind(f.client);
    f.client.patch = (async (...args: Parameters<typeof patch>) => {
      const out = await patch(...args);
      const ck = f.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "ck") as CocoonCheckpoint;
      if (args[0] === COCOONSETS && !ck.metadata.deletionTimestamp) {
        f.client.seed(COCOONCHECKPOINTS, {
          ...ck,
          metadata: { ...ck.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
        });
      }
      return out;
    }) as typeof f.client.patch;
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Failed");
    assert.equal(f.restore()?.status?.reason, "CheckpointDeleting");
    assert.deepEqual(setWrites(f), ["hold", "release"]);
  });

  it("a hold already gone from the deleted set when it lets go is no error; any other failure is", async () => {
    for (const [error, fails] of [
      [new NotFoundError(404, "NotFound", "cocoonsets gone"), false],
      [new ConflictError(409, "Conflict", "modified"), true],
    ] as const) {
      const f = seeded(setIn("Suspended", true));
      await f.run();
      await f.run();
      assert.equal(f.restore()?.status?.phase, "Restored");
      // The hold is still there: the pass that finished could not remove it.
      const cs = f.set();
      const hold = encodeRestoreHold({ restore: "r1", uid: "uid-r1", checkpoint: "ck", suspend: true });
      f.client.seed(COCOONSETS, {
        ...cs,
        metadata: { ...cs.metadata, annotations: { [ANN_RESTORE_HOLD]: hold } },
      });
      failPatch(f, (body) => JSON.stringify(body).includes(ANN_RESTORE_HOLD), error);
      if (fails) await assert.rejects(f.run(), /modified/);
      else assert.deepEqual(await f.run(), {});
    }
  });

  it("a deleted restore's pass lets go of its own holds only, and with none makes no call", async () => {
    const f = seeded(setIn("Running", false));
    await f.run();
    const other = (name: string, hold?: string) => {
      const cs = setIn("Running", false);
      f.client.seed(COCOONSETS, {
        ...cs,
        metadata: {
          ...cs.metadata,
          name,
          uid: `uid-${name}`,
          ...(hold ? { annotations: { [ANN_RESTORE_HOLD]: hold } } : {}),
        },
      });
    };
    other("plain");
    other("unreadable", "{");
    const theirs = encodeRestoreHold({ restore: "r9", uid: "uid-r9", checkpoint: "ck", suspend: false });
    other("theirs", theirs);
    await f.client.delete(COCOONRESTORES, NS, "r1");
    f.client.clearCalls();
    await f.run();
    assert.equal(restoreHoldOf(f.set()), undefined);
    assert.deepEqual(
      f.client.calls.map((c) => `${c.verb} ${c.resource} ${c.name}`),
      [`get cocoonrestores r1`, `get cocoonsets ${SET}`, `patch cocoonsets ${SET}`],
    );
    assert.equal(
      f.client.peek<CocoonSet>(COCOONSETS, NS, "theirs")?.metadata.annotations?.[ANN_RESTORE_HOLD],
      theirs,
    );
    f.client.clearCalls();
    await f.run("nobody");
    assert.deepEqual(f.client.calls, []);
  });
});

describe("RestoreReconciler: waiting and retrying", () => {
  /** The set "demo", suspended, in the middle of its branch from checkpoint `from`. */
  function branching(from: string): CocoonSet {
    const cs = setIn("Suspended", true);
    cs.metadata.annotations = { [ANN_FROM_CHECKPOINT]: from };
    cs.status = {
      ...(cs.status as NonNullable<CocoonSet["status"]>),
      conditions: [
        {
          type: CONDITION_BRANCHED,
          status: "False",
          reason: BRANCH_COPYING,
          message: "copying",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    };
    return cs;
  }

  it("waits for a set's branch 30 s at a time, or until its deadline if sooner, saying so once per change", async () => {
    const f = seeded(branching("ck"));
    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    f.client.clearCalls();
    assert.deepEqual(await f.run(), { requeueAfterMs: 30_000 });
    assert.deepEqual(f.client.writes(), [], "the same wait is not written again");
    assert.deepEqual(
      f.events.events.map((e) => `${e.reason} ${e.type}`),
      [`${REASON_SET_HELD} Normal`],
    );

    // The branch now comes from another checkpoint: the message changes, and is said again.
    const cs = f.set();
    f.client.seed(COCOONSETS, {
      ...cs,
      metadata: { ...cs.metadata, annotations: { [ANN_FROM_CHECKPOINT]: "ck2" } },
    });
    f.clock.advance(60 * 60_000 - 10_000);
    assert.deepEqual(await f.run(), { requeueAfterMs: 10_000 });
    assert.match(f.restore()?.status?.message ?? "", /branch from CocoonCheckpoint ck2/);
    assert.equal(f.events.events.length, 2);
  });

  it("a refused write is said once per answer: the same refusal again adds no Warning", async () => {
    const f = seeded(setIn("Running", false));
    const denied = new ApiError(403, "Forbidden", "denied by a policy");
    f.client.failNext("patch", "cocoonsets", denied);
    await assert.rejects(f.run(), /denied by a policy/);
    assert.equal(f.restore()?.status?.phase, "Pending", "a restore refused before it began is Pending");
    assert.deepEqual(
      f.restore()?.status?.conditions?.map((c) => c.type),
      ["Restored", "Progressing"],
    );
    f.client.failNext("patch", "cocoonsets", denied);
    await assert.rejects(f.run(), /denied by a policy/);
    assert.equal(f.events.events.length, 1, "the same answer again is not said again");
    f.client.failNext("patch", "cocoonsets", new ApiError(403, "Forbidden", "denied by another policy"));
    await assert.rejects(f.run(), /another policy/);
    assert.deepEqual(
      f.events.events.map((e) => `${e.reason} ${e.type}`),
      ["RestoreWriteRefused Warning", "RestoreWriteRefused Warning"],
    );
  });

  it("a begin retried after its hold was taken keeps that hold: no second hold write", async () => {
    const f = seeded(setIn("Running", false));
    f.client.failNext("patch", "cocoonrestores/status", new Error("connection reset"));
    await assert.rejects(f.run(), /connection reset/);
    assert.ok(restoreHoldBy(f.set(), "uid-r1"));
    assert.deepEqual(await f.run(), { requeue: true });
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.deepEqual(setWrites(f), ["hold"]);
  });

  it("a copy cut short by the operator's shutdown is no failed copy; past the deadline the set stays suspended", async () => {
    const f = seeded(setIn("Running", false));
    await suspendedForCopy(f);
    f.registry.failOn = (op, repo) => {
      if (op !== "put" || repo !== SUB) return undefined;
      const abort = new Error("aborted");
      abort.name = "AbortError";
      return abort;
    };
    await assert.rejects(f.run(), /aborted/);
    assert.equal(f.restore()?.status?.reason, "Copying");
    assert.ok(!f.events.reasons().includes("RestoreCopyFailed"));
    f.clock.advance(60 * 60_000);
    await f.run();
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.equal(f.set().spec.suspend, true, "copies had begun: the set stays suspended");
  });

  it("copies landed but the resume not written: past the deadline the set stays suspended", async () => {
    const f = seeded(setIn("Running", false));
    await suspendedForCopy(f);
    failPatch(
      f,
      (body) => (body as { spec?: { suspend?: boolean } }).spec?.suspend === false,
      new Error("connection reset"),
    );
    await assert.rejects(f.run(), /connection reset/);
    assert.equal(f.restore()?.status?.reason, "Resuming");
    assert.notEqual(f.restore()?.status?.members, undefined);
    f.clock.advance(60 * 60_000);
    await f.run();
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.equal(f.set().spec.suspend, true);
  });

  it("a copy that fails says so with a Warning", async () => {
    const f = seeded(setIn("Suspended", true));
    await f.run();
    f.registry.failOn = (op) => (op === "put" ? new Error("quota") : undefined);
    await assert.rejects(f.run(), /quota/);
    assert.equal(f.events.events.find((e) => e.reason === "RestoreCopyFailed")?.type, "Warning");
  });

  it("a restore refused says so with a Warning", async () => {
    const f = restoreFixture();
    f.client.seed(COCOONSETS, setIn("Running", false));
    f.client.seed(COCOONRESTORES, restoreOf("r1", "missing"));
    await f.run();
    assert.equal(f.events.events.find((e) => e.reason === "RestoreRefused")?.type, "Warning");
  });
});

describe("RestoreReconciler: what it judges a start on", () => {
  it("with the checkpoint API not served it is refused CheckpointsUnavailable", async () => {
    const f = seeded(setIn("Running", false));
    f.cachedCheckpoint.value = "unavailable";
    await f.run();
    assert.equal(f.restore()?.status?.reason, "CheckpointsUnavailable");
    assert.equal(restoreHoldOf(f.set()), undefined);
  });

  it("takes a checkpoint of the set this one was branched from, and refuses one when that is unknown", async () => {
    const cs = setIn("Running", false);
    cs.metadata.annotations = { [ANN_FROM_CHECKPOINT]: "ck-origin" };
    cs.status = {
      ...(cs.status as NonNullable<CocoonSet["status"]>),
      conditions: [
        {
          type: CONDITION_BRANCHED,
          status: "True",
          reason: "FromCheckpoint",
          message: "branched",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        },
      ],
    };
    const f = restoreFixture();
    f.client.seed(COCOONSETS, cs);
    f.client.seed(COCOONCHECKPOINTS, readyCheckpoint({ main: "sha256:m", sub: "sha256:s" }, "origin", "ck"));
    f.client.seed(COCOONRESTORES, restoreOf());
    await f.run();
    assert.equal(f.restore()?.status?.reason, "CheckpointOfAnotherSet", "ck-origin is not known yet");

    f.client.seed(
      COCOONCHECKPOINTS,
      readyCheckpoint({ main: "sha256:m", sub: "sha256:s" }, "origin", "ck-origin"),
    );
    f.client.seed(COCOONRESTORES, restoreOf("r2"));
    await f.run("r2");
    assert.equal(f.restore("r2")?.status?.phase, "Restoring");
  });

  it("takes over the hold of a restore that has finished", async () => {
    const cs = setIn("Suspended", true);
    const stale = encodeRestoreHold({ restore: "r0", uid: "uid-r0", checkpoint: "ck", suspend: false });
    const f = seeded({ ...cs, metadata: { ...cs.metadata, annotations: { [ANN_RESTORE_HOLD]: stale } } });
    f.client.seed(COCOONRESTORES, { ...restoreOf("r0"), status: { phase: "Restored" } });
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Restoring");
    assert.equal(
      restoreHoldBy(f.set(), "uid-r1")?.suspend,
      false,
      "the suspend state the stale hold recorded",
    );
  });

  it("a restore the cache shows but the API server no longer has is left alone", async () => {
    const f = seeded(setIn("Running", false));
    await f.client.delete(COCOONRESTORES, NS, "r1");
    f.restoreCache.lag = 1;
    f.client.clearCalls();
    assert.deepEqual(await f.run(), {});
    assert.deepEqual(f.client.writes(), []);
  });

  it("a set suspended before and abandoned, or expired, before any copy gets no suspend write", async () => {
    const f = seeded(setIn("Suspended", true));
    await f.client.patch(COCOONRESTORES, NS, "r1", { spec: { failureDeadline: "5m" } });
    await f.run();
    f.clock.advance(5 * 60_000);
    await f.run();
    assert.equal(f.restore()?.status?.reason, REASON_DEADLINE_EXCEEDED);
    assert.deepEqual(setWrites(f), ["hold", "release"]);
  });
});

describe("RestoreReconciler: refusals and give-ups that touch nothing more", () => {
  it("a restore of a set that does not exist is refused SetNotFound", async () => {
    const f = restoreFixture();
    f.client.seed(COCOONRESTORES, restoreOf());
    await f.run();
    assert.equal(f.restore()?.status?.phase, "Failed");
    assert.equal(f.restore()?.status?.reason, "SetNotFound");
  });

  it("a spec that no longer fits a set suspended before gives it up with no suspend write", async () => {
    const f = seeded(setIn("Suspended", true));
    f.setStatus({ ...f.set().status, phase: "Running" } as CocoonSet["status"]);
    await f.run();
    const cs = f.set();
    f.client.seed(COCOONSETS, {
      ...cs,
      spec: { ...cs.spec, agent: { ...cs.spec.agent, image: "other" } },
      status: { ...cs.status, phase: "Suspended", observedGeneration: cs.metadata.generation },
    } as CocoonSet);
    await f.run();
    assert.equal(f.restore()?.status?.reason, "Incompatible");
    assert.deepEqual(setWrites(f), ["hold", "release"]);
  });
});
