// checkpoint / branch / checkpoints over the in-memory client: the writes each makes and refuses to
// make, the order of checkpoint's suspend, copy and resume (the resume only after Ready, and even
// after a failure), and what the list prints.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet, CocoonSetSpec } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonCheckpointStatus } from "../../../src/apis/v1alpha1/types.ts";
import { COCOONCHECKPOINTS, COCOONSETS } from "../../../src/controller/resources.ts";
import { GLOBAL_FLAGS } from "../../../src/plugin/cli.ts";
import { branch } from "../../../src/plugin/commands/branch.ts";
import { checkpoint } from "../../../src/plugin/commands/checkpoint.ts";
import { checkpoints } from "../../../src/plugin/commands/checkpoints.ts";
import { COMMANDS } from "../../../src/plugin/commands/index.ts";
import { complete } from "../../../src/plugin/completion.ts";
import { EXIT_FAILED, EXIT_TIMEOUT, EXIT_USAGE } from "../../../src/plugin/errors.ts";
import { rejection, run, type TestContext, testContext } from "./context.ts";

const SOURCE_SPEC: CocoonSetSpec = {
  agent: { image: "img", replicas: 2 },
  toolboxes: [{ name: "tools", image: "img" }],
};

function seedSet(ctx: TestContext, name: string, spec: Partial<CocoonSetSpec> = {}): void {
  ctx.fake.seed<CocoonSet>(COCOONSETS, {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: "ns" },
    spec: { ...SOURCE_SPEC, ...spec },
    status: {
      readyAgents: 3,
      desiredAgents: 3,
      readyToolboxes: 1,
      desiredToolboxes: 1,
      observedGeneration: 1,
      phase: "Running",
    },
  });
}

function seedCheckpoint(
  ctx: TestContext,
  name: string,
  set: string,
  status: CocoonCheckpointStatus,
  created = "2026-05-14T11:00:00Z",
): void {
  ctx.fake.seed<CocoonCheckpoint>(COCOONCHECKPOINTS, {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name, namespace: "ns", creationTimestamp: created },
    spec: { cocoonSetRef: { name: set } },
    status,
  });
}

const READY: CocoonCheckpointStatus = {
  phase: "Ready",
  message: "2 snapshots of CocoonSet demo",
  members: [
    { role: "main", slot: 0, vmName: "vk-ns-demo-0", digest: "sha256:a", image: "img", bytes: 2048 },
    {
      role: "toolbox",
      toolbox: "tools",
      vmName: "vk-ns-demo-tools",
      digest: "sha256:b",
      image: "img",
      bytes: 1024,
    },
    { role: "sub-agent", slot: 1, vmName: "vk-ns-demo-1" },
  ],
  totalBytes: 3072,
};

/** Plays the operator: merges status fields into the stored set. */
function setStatus(ctx: TestContext, name: string, status: Partial<NonNullable<CocoonSet["status"]>>): void {
  const cs = ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", name) as CocoonSet;
  ctx.fake.seed(COCOONSETS, { ...cs, status: { ...cs.status, ...status } as CocoonSet["status"] });
}

function checkpointStatus(ctx: TestContext, name: string, status: CocoonCheckpointStatus): void {
  const ck = ctx.fake.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, "ns", name) as CocoonCheckpoint;
  ctx.fake.seed(COCOONCHECKPOINTS, { ...ck, status });
}

const suspendedAt = (generation: number) => ({
  observedGeneration: generation,
  phase: "Suspended" as const,
  conditions: [
    {
      type: "Suspended",
      status: "True" as const,
      reason: "Suspended",
      message: "",
      lastTransitionTime: "2026-05-14T12:00:00Z",
      observedGeneration: generation,
    },
  ],
});

/** Each write as verb, resource, body, with the checkpoint's phase at the moment of the write. */
function recordWrites(ctx: TestContext): [string, string, unknown, string][] {
  const seen: [string, string, unknown, string][] = [];
  const phase = () => ctx.fake.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, "ns", "ck1")?.status?.phase ?? "-";
  const { create, patch } = ctx.fake;
  ctx.fake.create = (async (rt, ns, obj) => {
    seen.push(["create", rt.plural, (obj as { spec: unknown }).spec, phase()]);
    return create.call(ctx.fake, rt, ns, obj);
  }) as typeof create;
  ctx.fake.patch = (async (rt, ns, name, body, opts) => {
    seen.push(["patch", rt.plural, body, phase()]);
    return patch.call(ctx.fake, rt, ns, name, body, opts);
  }) as typeof patch;
  return seen;
}

/** After the create: the suspend, then the resume, and no other write. */
function assertSuspendedThenResumed(ctx: TestContext): void {
  assert.deepEqual(
    ctx.fake
      .writes()
      .map((c) => c.body)
      .slice(1),
    [{ spec: { suspend: true } }, { spec: { suspend: false } }],
  );
}

describe("checkpoint", () => {
  it("suspends a running set, waits for Ready, and only then resumes it", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo");
    const writes = recordWrites(ctx);
    ctx.onSleep = (slept) => {
      if (slept === 1000) setStatus(ctx, "demo", suspendedAt(2));
      if (slept === 2000) checkpointStatus(ctx, "ck1", { phase: "Copying", message: "copying 4 snapshots" });
      if (slept === 3000) checkpointStatus(ctx, "ck1", READY);
    };
    await run(ctx, checkpoint, ["demo", "ck1"]);
    assert.deepEqual(writes, [
      ["create", "cocooncheckpoints", { cocoonSetRef: { name: "demo" } }, "-"],
      ["patch", "cocoonsets", { spec: { suspend: true } }, "-"],
      ["patch", "cocoonsets", { spec: { suspend: false } }, "Ready"],
    ]);
    assert.deepEqual(ctx.stdout, [
      "cocooncheckpoint.cocoonset.cocoonstack.io/ck1 created",
      "cocoonset.cocoonset.cocoonstack.io/demo suspended",
      "cocoonset.cocoonset.cocoonstack.io/demo resumed",
    ]);
    assert.ok(
      ctx.stderr.some((l) => l.includes("phase Copying: copying 4 snapshots")),
      ctx.stderr.join("\n"),
    );
    assert.ok(ctx.stderr.some((l) => l.endsWith('cocooncheckpoint "ck1" is Ready: 2 snapshots, 3.0KiB')));
  });

  it("leaves an already suspended set suspended, and without --wait returns after the create", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo", { suspend: true });
    await run(ctx, checkpoint, ["demo", "ck1"]);
    assert.deepEqual(
      ctx.fake.writes().map((c) => [c.verb, c.resource]),
      [["create", "cocooncheckpoints"]],
    );
  });

  it("resumes the set it suspended when the copy times out, and exits 4", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo");
    ctx.onSleep = () => setStatus(ctx, "demo", suspendedAt(2));
    const err = await rejection(run(ctx, checkpoint, ["demo", "ck1", "--wait=3s"]));
    assert.equal(err.exitCode, EXIT_TIMEOUT);
    assert.match(err.message, /^timed out after 3s waiting for cocooncheckpoint "ck1" to be Ready/);
    assert.deepEqual(
      ctx.fake.writes().map((c) => [c.verb, c.body]),
      [
        ["create", ctx.fake.writes()[0]?.body],
        ["patch", { spec: { suspend: true } }],
        ["patch", { spec: { suspend: false } }],
      ],
    );
    assert.ok(ctx.stderr.some((l) => l.startsWith('cocooncheckpoint "ck1" is left in phase')));
  });

  it("resumes the set when its suspend fails, and exits 3 with the reason", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo");
    ctx.onSleep = () => setStatus(ctx, "demo", { observedGeneration: 2, phase: "Failed" });
    const err = await rejection(run(ctx, checkpoint, ["demo", "ck1"]));
    assert.equal(err.exitCode, EXIT_FAILED);
    assert.match(err.message, /^cocoonset "demo" to suspend failed/);
    assertSuspendedThenResumed(ctx);
  });

  it("fails when the checkpoint is deleted while it waits", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo", { suspend: true });
    ctx.onSleep = () => ctx.fake.delete(COCOONCHECKPOINTS, "ns", "ck1").catch(() => {});
    const err = await rejection(run(ctx, checkpoint, ["demo", "ck1", "--wait"]));
    assert.equal(err.exitCode, EXIT_FAILED);
    assert.match(err.message, /Deleted: cocooncheckpoint "ck1" was deleted/);
  });

  it("stops waiting at a Failed checkpoint with its message, and still resumes the set it suspended", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo");
    ctx.onSleep = () => {
      setStatus(ctx, "demo", suspendedAt(2));
      checkpointStatus(ctx, "ck1", {
        phase: "Failed",
        message: "not Ready within failureDeadline 1m: copy failed: denied",
      });
    };
    const err = await rejection(run(ctx, checkpoint, ["demo", "ck1"]));
    assert.equal(err.exitCode, EXIT_FAILED);
    assert.match(
      err.message,
      /cocooncheckpoint "ck1" is Failed: not Ready within failureDeadline 1m: copy failed: denied/,
    );
    assertSuspendedThenResumed(ctx);
  });

  it("refuses an unknown set and an existing checkpoint, writing nothing", async () => {
    const ctx = testContext();
    const unknown = await rejection(run(ctx, checkpoint, ["ghost", "ck1"]));
    assert.equal(unknown.message, 'cocoonset "ghost" not found in namespace "ns"');
    seedSet(ctx, "demo");
    seedCheckpoint(ctx, "ck1", "other", READY);
    const taken = await rejection(run(ctx, checkpoint, ["demo", "ck1"]));
    assert.match(
      taken.message,
      /^cocooncheckpoint "ck1" already exists in namespace "ns" \(of cocoonset "other", phase Ready\)/,
    );
    assert.deepEqual(ctx.fake.writes(), []);
  });
});

describe("branch", () => {
  it("creates the new set from the source's spec with the annotation and --replicas", async () => {
    const ctx = testContext({ output: "json" });
    seedSet(ctx, "demo", { suspend: true, nodeName: "node-a" });
    seedCheckpoint(ctx, "ck1", "demo", READY);
    await run(ctx, branch, ["ck1", "run-1", "--replicas", "4"]);
    const [write] = ctx.fake.writes();
    const created = write?.body as CocoonSet;
    assert.deepEqual(
      [write?.verb, created.metadata.name, created.metadata.annotations, created.spec],
      [
        "create",
        "run-1",
        { "cocoonset.cocoonstack.io/from-checkpoint": "ck1" },
        { agent: { image: "img", replicas: 4 }, toolboxes: [{ name: "tools", image: "img" }] },
      ],
    );
    assert.equal((JSON.parse(ctx.stdout.join("\n")) as CocoonSet).metadata.name, "run-1");
  });

  it("refuses an unknown or unready checkpoint and an existing set, writing nothing", async () => {
    const ctx = testContext();
    seedSet(ctx, "demo");
    const unknown = await rejection(run(ctx, branch, ["ghost", "run-1"]));
    assert.equal(unknown.message, 'cocooncheckpoint "ghost" not found in namespace "ns"');
    seedCheckpoint(ctx, "pending", "demo", {
      phase: "Pending",
      message: "waiting for CocoonSet demo to be Suspended (phase Running)",
    });
    const notReady = await rejection(run(ctx, branch, ["pending", "run-1"]));
    assert.match(
      notReady.message,
      /^cocooncheckpoint "pending" is not Ready \(phase Pending: waiting for CocoonSet demo/,
    );
    assert.match(
      notReady.message,
      /kubectl wait --for=jsonpath='\{\.status\.phase\}'=Ready cocooncheckpoint\/pending$/,
    );
    seedCheckpoint(ctx, "ck1", "demo", READY);
    const exists = await rejection(run(ctx, branch, ["ck1", "demo"]));
    assert.match(exists.message, /^cocoonset "demo" already exists in namespace "ns"/);
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("explains what is needed when the source set is gone", async () => {
    const ctx = testContext();
    seedCheckpoint(ctx, "ck1", "demo", READY);
    const err = await rejection(run(ctx, branch, ["ck1", "run-1"]));
    assert.match(
      err.message,
      /^cocoonset "demo", which cocooncheckpoint "ck1" was taken from, no longer exists/,
    );
    assert.match(err.message, /annotation cocoonset.cocoonstack.io\/from-checkpoint: ck1/);
    assert.match(err.message, /holds main \(image img\), toolbox tools \(image img\);/);
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("takes --replicas as a whole number only", async () => {
    for (const bad of ["-1", "two", "1.5"]) {
      const ctx = testContext();
      const err = await rejection(run(ctx, branch, ["ck1", "run-1", `--replicas=${bad}`]));
      assert.equal(err.exitCode, EXIT_USAGE, bad);
      assert.match(err.message, /for "--replicas": want a whole number/);
      assert.deepEqual(ctx.fake.calls, [], "refused before any API call");
    }
  });
});

describe("checkpoints", () => {
  it("lists the set's checkpoints oldest first, with members held and bytes", async () => {
    const ctx = testContext({ output: "wide" });
    seedSet(ctx, "demo");
    seedCheckpoint(ctx, "newer", "demo", READY, "2026-05-14T11:50:00Z");
    seedCheckpoint(ctx, "older", "demo", { phase: "Pending", message: "waiting" }, "2026-05-14T10:00:00Z");
    seedCheckpoint(ctx, "theirs", "other", READY);
    await run(ctx, checkpoints, ["demo"]);
    assert.deepEqual(ctx.stdout.join("\n").split("\n"), [
      "NAME    PHASE     MEMBERS   BYTES    AGE    TAG          MESSAGE",
      "older   Pending   0         -        120m   ckpt-older   waiting",
      "newer   Ready     2         3.0KiB   10m    ckpt-newer   2 snapshots of CocoonSet demo",
    ]);
  });

  it("still lists a deleted set's checkpoints (as JSON), and refuses a set with neither", async () => {
    const ctx = testContext({ output: "json" });
    seedCheckpoint(ctx, "ck1", "gone", READY);
    await run(ctx, checkpoints, ["gone"]);
    const listed = JSON.parse(ctx.stdout.join("\n")) as {
      checkpoints: { name: string; members: unknown[] }[];
    };
    assert.deepEqual(
      listed.checkpoints.map((c) => [c.name, c.members.length]),
      [["ck1", 3]],
    );
    assert.ok(ctx.stderr.includes('cocoonset "gone" no longer exists; its checkpoints remain'));
    const err = await rejection(run(ctx, checkpoints, ["ghost"]));
    assert.equal(err.message, 'cocoonset "ghost" not found in namespace "ns", and no checkpoint names it');
  });
});

it("completes branch's CHECKPOINT with the namespace's checkpoints", async () => {
  const ctx = testContext();
  seedCheckpoint(ctx, "ck1", "demo", READY);
  const sources = { context: () => ctx, contexts: () => [] };
  assert.equal(await complete(["branch", ""], COMMANDS, GLOBAL_FLAGS, [], sources), "ck1\n:4");
  assert.equal(await complete(["checkpoint", "demo", ""], COMMANDS, GLOBAL_FLAGS, [], sources), "\n:4");
});

it("help brackets an optional string flag (--replicas) and not a required one (--to)", async () => {
  const { runPlugin } = await import("../../../src/plugin/cli.ts");
  const help = async (command: string) => {
    const stdout: string[] = [];
    const io = {
      stdout: (t: string) => stdout.push(t),
      stderr: () => {},
      env: {},
      now: () => 0,
      sleep: async () => {},
    };
    assert.equal(await runPlugin(["help", command], io), 0);
    return stdout.join("");
  };
  assert.match(
    await help("branch"),
    /^ {2}kubectl cocoon branch CHECKPOINT NEWSET \[--replicas N\] \[--wait\[=DURATION\]\]/m,
  );
  assert.match(await help("migrate"), /^ {2}kubectl cocoon migrate SET --to NODE \[--wait/m);
});
