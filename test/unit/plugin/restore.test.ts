// restore over the in-memory client: the CocoonRestore it creates (after checking the set and a Ready
// checkpoint), nothing else written, and --wait ending with Restored or the operator's reason.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type {
  CocoonCheckpoint,
  CocoonRestore,
  CocoonRestoreStatus,
} from "../../../src/apis/v1alpha1/types.ts";
import { COCOONCHECKPOINTS, COCOONRESTORES, COCOONSETS } from "../../../src/controller/resources.ts";
import { restore } from "../../../src/plugin/commands/restore.ts";
import { EXIT_FAILED } from "../../../src/plugin/errors.ts";
import { rejection, run, type TestContext, testContext } from "./context.ts";

function seed(ctx: TestContext, checkpointPhase: "Ready" | "Pending" = "Ready"): void {
  ctx.fake.seed<CocoonSet>(COCOONSETS, {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns" },
    spec: { agent: { image: "img" } },
  });
  ctx.fake.seed<CocoonCheckpoint>(COCOONCHECKPOINTS, {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name: "ck1", namespace: "ns" },
    spec: { cocoonSetRef: { name: "demo" } },
    status: {
      phase: checkpointPhase,
      message: checkpointPhase === "Ready" ? "" : "waiting for CocoonSet demo",
    },
  });
}

/** Plays the operator: writes the restore's status. */
function restoreStatus(ctx: TestContext, name: string, status: CocoonRestoreStatus): void {
  const r = ctx.fake.peek<CocoonRestore>(COCOONRESTORES, "ns", name) as CocoonRestore;
  ctx.fake.seed(COCOONRESTORES, { ...r, status });
}

describe("restore", () => {
  it("creates the CocoonRestore of the set to the checkpoint, and writes nothing else", async () => {
    const ctx = testContext();
    seed(ctx);
    await run(ctx, restore, ["demo", "ck1", "--name", "undo"]);
    assert.deepEqual(
      ctx.fake.writes().map((c) => [c.verb, c.resource, (c.body as CocoonRestore).spec]),
      [["create", "cocoonrestores", { cocoonSetRef: { name: "demo" }, checkpointRef: { name: "ck1" } }]],
    );
    assert.deepEqual(ctx.stdout, [
      "cocoonrestore.cocoonset.cocoonstack.io/undo created (cocoonset demo to checkpoint ck1)",
    ]);
  });

  it("names it after the set and the checkpoint by default", async () => {
    const ctx = testContext();
    seed(ctx);
    await run(ctx, restore, ["demo", "ck1"]);
    const created = ctx.fake.writes()[0]?.body as CocoonRestore;
    assert.match(created.metadata.name ?? "", /^demo-ck1-[0-9a-f]{5}$/);
  });

  it("refuses an unknown set, an unknown or unready checkpoint, before any write", async () => {
    const ctx = testContext();
    seed(ctx, "Pending");
    assert.match(
      (await rejection(run(ctx, restore, ["ghost", "ck1"]))).message,
      /cocoonset "ghost" not found/,
    );
    assert.match(
      (await rejection(run(ctx, restore, ["demo", "nope"]))).message,
      /cocooncheckpoint "nope" not found/,
    );
    assert.match(
      (await rejection(run(ctx, restore, ["demo", "ck1"]))).message,
      /is not Ready \(phase Pending: waiting for CocoonSet demo\); a restore to it would be refused/,
    );
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("--wait returns once it is Restored, printing its progress", async () => {
    const ctx = testContext();
    seed(ctx);
    ctx.onSleep = (slept) => {
      if (slept === 1000)
        restoreStatus(ctx, "undo", { phase: "Restoring", message: "suspending CocoonSet demo" });
      if (slept === 2000) restoreStatus(ctx, "undo", { phase: "Restored", message: "2 VMs restored" });
    };
    await run(ctx, restore, ["demo", "ck1", "--name", "undo", "--wait"]);
    assert.ok(
      ctx.stderr.some((l) => l.includes("phase Restoring: suspending CocoonSet demo")),
      ctx.stderr.join("\n"),
    );
    assert.ok(ctx.stderr.some((l) => l.endsWith('cocoonrestore "undo" is Restored: 2 VMs restored')));
  });

  it("--wait exits 3 with the operator's reason when it refuses", async () => {
    const ctx = testContext();
    seed(ctx);
    ctx.onSleep = () =>
      restoreStatus(ctx, "undo", {
        phase: "Failed",
        reason: "RestoreInProgress",
        message: "CocoonRestore other is restoring CocoonSet demo; one restore at a time",
      });
    const err = await rejection(run(ctx, restore, ["demo", "ck1", "--name", "undo", "--wait"]));
    assert.equal(err.exitCode, EXIT_FAILED);
    assert.match(err.message, /\(RestoreInProgress\): CocoonRestore other is restoring/);
  });
});
