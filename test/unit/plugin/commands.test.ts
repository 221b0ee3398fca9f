// The commands over the in-memory client: the writes they make (and refuse to make), the --wait loop
// against a status that moves while it sleeps, and what status prints.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet, CocoonSetSpec } from "../../../src/apis/v1/types.ts";
import type { WatchOptions } from "../../../src/controller/client.ts";
import {
  COCOONHIBERNATIONS,
  COCOONSETS,
  EVENTS,
  NODES,
  PODS,
  type ResourceType,
} from "../../../src/controller/resources.ts";
import { registryBase } from "../../../src/plugin/cli.ts";
import { hibernate } from "../../../src/plugin/commands/hibernate.ts";
import { migrate } from "../../../src/plugin/commands/migrate.ts";
import { resume } from "../../../src/plugin/commands/resume.ts";
import { snapshots } from "../../../src/plugin/commands/snapshots.ts";
import { status } from "../../../src/plugin/commands/status.ts";
import { suspend } from "../../../src/plugin/commands/suspend.ts";
import { touch } from "../../../src/plugin/commands/touch.ts";
import { wake } from "../../../src/plugin/commands/wake.ts";
import { DRY_RUN_FLAG } from "../../../src/plugin/dryrun.ts";
import { EXIT_FAILED, EXIT_TIMEOUT } from "../../../src/plugin/errors.ts";
import { parseArgs } from "../../../src/plugin/flags.ts";
import { CONFIGMAPS, DEPLOYMENTS, operatorRegistry } from "../../../src/plugin/operatorconfig.ts";
import { ANN_RELEASE_UNTIL_RESUME } from "../../../src/plugin/setstate.ts";
import { DEFAULT_WAIT_MS, WAIT_FLAGS, waitTimeout } from "../../../src/plugin/wait.ts";
import type { RegistryClient } from "../../../src/registry/index.ts";
import { NOW, rejection, run, type TestContext, testContext } from "./context.ts";

function seedSet(
  ctx: TestContext,
  spec: Partial<CocoonSetSpec> = {},
  status?: CocoonSet["status"],
): CocoonSet {
  return ctx.fake.seed<CocoonSet>(COCOONSETS, {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns" },
    spec: { agent: { image: "img", replicas: 0 }, ...spec },
    ...(status ? { status } : {}),
  });
}

function seedPod(
  ctx: TestContext,
  name: string,
  annotations: Record<string, string>,
  nodeName = "node-a",
): void {
  ctx.fake.seed<Pod>(PODS, {
    metadata: { name, namespace: "ns", labels: { "cocoonset.cocoonstack.io/name": "demo" }, annotations },
    spec: { containers: [], nodeName },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  });
}

function seedWarning(
  ctx: TestContext,
  name: string,
  reason: string,
  message: string,
  at = "2026-05-14T11:00:00Z",
): void {
  ctx.fake.seed(EVENTS, {
    metadata: { name, namespace: "ns" },
    involvedObject: { kind: "CocoonSet", name: "demo" },
    type: "Warning",
    reason,
    message,
    count: 1,
    lastTimestamp: at,
  });
}

/** Plays the operator: replaces the set's status as stored. */
function writeStatus(ctx: TestContext, status: CocoonSet["status"]): void {
  ctx.fake.seed(COCOONSETS, { ...(ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo") as CocoonSet), status });
}

describe("suspend", () => {
  it("patches spec.suspend (and hibernatePolicy for --release, with what resume puts back) on a main-only set", async () => {
    const ctx = testContext();
    seedSet(ctx, { hibernatePolicy: "retain" });
    await run(ctx, suspend, ["demo", "--release"]);
    const patch = ctx.fake.writes().map((c) => [c.verb, c.resource, c.body]);
    assert.deepEqual(patch, [
      [
        "patch",
        "cocoonsets",
        {
          metadata: { annotations: { [ANN_RELEASE_UNTIL_RESUME]: "retain" } },
          spec: { suspend: true, hibernatePolicy: "release" },
        },
      ],
    ]);
    assert.deepEqual(ctx.stdout, ["cocoonset.cocoonset.cocoonstack.io/demo suspended"]);
  });

  it("resume after suspend --release puts the previous hibernatePolicy back; --keep-release keeps release", async () => {
    const ctx = testContext();
    seedSet(ctx);
    await run(ctx, suspend, ["demo", "--release"]);
    await run(ctx, resume, ["demo"]);
    const afterOnce = ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo");
    assert.equal(afterOnce?.spec.hibernatePolicy, undefined);
    assert.equal(afterOnce?.metadata.annotations?.[ANN_RELEASE_UNTIL_RESUME], undefined);
    // A later plain suspend keeps every seat.
    await run(ctx, suspend, ["demo"]);
    assert.equal(ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo")?.spec.hibernatePolicy, undefined);
    await run(ctx, resume, ["demo"]);

    await run(ctx, suspend, ["demo", "--release", "--keep-release"]);
    await run(ctx, resume, ["demo"]);
    assert.equal(ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo")?.spec.hibernatePolicy, "release");
  });

  it("-l suspends every set of the namespace the selector matches, and refuses SET with -l", async () => {
    const ctx = testContext();
    for (const [name, team] of [
      ["a", "eval"],
      ["b", "prod"],
      ["c", "eval"],
    ] as const) {
      ctx.fake.seed<CocoonSet>(COCOONSETS, {
        apiVersion: "cocoonset.cocoonstack.io/v1",
        kind: "CocoonSet",
        metadata: { name, namespace: "ns", labels: { team } },
        spec: { agent: { image: "img", replicas: 0 } },
      });
    }
    await run(ctx, suspend, ["-l", "team=eval"]);
    assert.deepEqual(
      ctx.fake.writes().map((c) => [c.verb, c.name, c.body]),
      [
        ["patch", "a", { spec: { suspend: true } }],
        ["patch", "c", { spec: { suspend: true } }],
      ],
    );
    assert.deepEqual(ctx.stdout, [
      "cocoonset.cocoonset.cocoonstack.io/a suspended",
      "cocoonset.cocoonset.cocoonstack.io/c suspended",
    ]);
    await assert.rejects(run(ctx, suspend, ["a", "-l", "team=eval"]), /give SET or -l SELECTOR, not both/);
    const none = await rejection(run(ctx, resume, ["-l", "team=none"]));
    assert.equal(none.message, 'no cocoonsets in namespace "ns" match -l team=none');
  });

  it("--dry-run=client sends no write and says so; --dry-run=server sends the write with dryRun", async () => {
    const client = testContext({ dryRun: "client" });
    seedSet(client);
    await run(client, suspend, ["demo", "--dry-run=client"]);
    assert.deepEqual(client.fake.writes(), []);
    assert.deepEqual(client.stdout, ["cocoonset.cocoonset.cocoonstack.io/demo suspended (dry run)"]);

    const server = testContext({ dryRun: "server" });
    seedSet(server);
    await run(server, suspend, ["demo", "--dry-run=server"]);
    assert.deepEqual(
      server.fake.writes().map((c) => [c.verb, c.resource, c.dryRun]),
      [["patch", "cocoonsets", true]],
    );
    assert.equal(server.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo")?.spec.suspend, undefined);
    assert.deepEqual(server.stdout, ["cocoonset.cocoonset.cocoonstack.io/demo suspended (server dry run)"]);
    await assert.rejects(run(server, suspend, ["demo", "--dry-run=server", "--wait"]), /do not go together/);
  });

  it("-o name prints only kubectl's name of the set", async () => {
    const ctx = testContext({ output: "name" });
    seedSet(ctx);
    await run(ctx, suspend, ["demo"]);
    assert.deepEqual(ctx.stdout, ["cocoonset.cocoonset.cocoonstack.io/demo"]);
  });

  it("refuses --release on a set with sub-agents or toolboxes, writing nothing", async () => {
    const ctx = testContext();
    seedSet(ctx, { agent: { image: "img", replicas: 2 }, toolboxes: [{ name: "tb" }] });
    const err = await rejection(run(ctx, suspend, ["demo", "--release"]));
    assert.match(
      err.message,
      /requires agent.replicas=0 and no toolboxes.*has 2 sub-agent\(s\) and 1 toolbox/,
    );
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("names the set and namespace when the set does not exist", async () => {
    const err = await rejection(run(testContext(), suspend, ["nope"]));
    assert.equal(err.message, 'cocoonset "nope" not found in namespace "ns"');
  });

  it("--wait times out with the operator's warning from after the change, not an older one", async () => {
    const ctx = testContext();
    seedSet(
      ctx,
      {},
      {
        readyAgents: 1,
        desiredAgents: 1,
        readyToolboxes: 0,
        desiredToolboxes: 0,
        observedGeneration: 1,
        phase: "Running",
      },
    );
    // Stamped later than the new one, so only "seen before the change" keeps it out.
    seedWarning(ctx, "old", "WakeNoCapacity", "from before", "2026-05-14T11:59:00Z");
    ctx.onSleep = (slept) => {
      if (slept === 1000) {
        writeStatus(ctx, {
          readyAgents: 1,
          desiredAgents: 1,
          readyToolboxes: 0,
          desiredToolboxes: 0,
          observedGeneration: 2,
          phase: "Suspending",
        });
        seedWarning(
          ctx,
          "new",
          "SuspendTimedOut",
          "suspend not confirmed within 3m0s: vk-ns-demo-0:hibernate is not in the registry yet",
        );
      }
    };
    const err = await rejection(run(ctx, suspend, ["demo", "--wait=3s"]));
    assert.equal(err.exitCode, EXIT_TIMEOUT);
    assert.match(
      err.message,
      /^timed out after 3s waiting for cocoonset "demo" to suspend \(phase Suspending/,
    );
    assert.match(err.message, /the operator reports SuspendTimedOut: suspend not confirmed within 3m0s/);
    assert.ok(
      ctx.stderr.some((line) =>
        line.includes("waiting for the operator to observe generation 2 (observed 1)"),
      ),
    );
  });

  it("--wait exits with the operator's reason when the set turns Failed at the new generation", async () => {
    const ctx = testContext();
    seedSet(ctx);
    ctx.onSleep = () => {
      writeStatus(ctx, {
        readyAgents: 0,
        desiredAgents: 1,
        readyToolboxes: 0,
        desiredToolboxes: 0,
        observedGeneration: 2,
        phase: "Failed",
      });
      seedWarning(ctx, "fail", "PodLifecycleFailed", "main pod ns/demo-0: VM gone");
    };
    const err = await rejection(run(ctx, suspend, ["demo", "--wait"]));
    assert.equal(err.exitCode, EXIT_FAILED);
    assert.equal(
      err.message,
      'cocoonset "demo" to suspend failed: PodLifecycleFailed: main pod ns/demo-0: VM gone',
    );
  });
});

describe("migrate", () => {
  const seedNode = (ctx: TestContext, name: string, labels: Record<string, string>) =>
    ctx.fake.seed(NODES, { metadata: { name, labels } });

  it("refuses a node outside the set's pool, writing nothing", async () => {
    const ctx = testContext();
    seedSet(ctx, { nodePool: "gpu" });
    seedNode(ctx, "node-b", { "cocoonstack.io/pool": "default" });
    seedNode(ctx, "node-c", {});
    const wrong = await rejection(run(ctx, migrate, ["demo", "--to", "node-b"]));
    assert.match(wrong.message, /cocoonstack.io\/pool=gpu, and the node is in pool "default"/);
    const none = await rejection(run(ctx, migrate, ["demo", "--to", "node-c"]));
    assert.match(none.message, /and the node has no such label/);
    const missing = await rejection(run(ctx, migrate, ["demo", "--to", "node-z"]));
    assert.equal(missing.message, 'node "node-z" not found');
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("refuses a node of another snapshot CPU class, and pins an eligible one", async () => {
    const ctx = testContext();
    seedSet(ctx, { snapshotCompatibilityClass: "milan" });
    seedNode(ctx, "node-b", {
      "cocoonstack.io/pool": "default",
      "cocoonstack.io/snapshot-cpu-class": "rome",
    });
    seedNode(ctx, "node-c", {
      "cocoonstack.io/pool": "default",
      "cocoonstack.io/snapshot-cpu-class": "milan",
    });
    await rejection(run(ctx, migrate, ["demo", "--to", "node-b"]));
    await run(ctx, migrate, ["demo", "--to", "node-c"]);
    assert.deepEqual(
      ctx.fake.writes().map((c) => c.body),
      [{ spec: { nodeName: "node-c" } }],
    );
  });
});

describe("hibernate / wake", () => {
  it("refuses a pod vk-cocoon does not run a VM for", async () => {
    const ctx = testContext();
    seedPod(ctx, "web", {});
    const err = await rejection(run(ctx, hibernate, ["web"]));
    assert.match(err.message, /^pod "web" is not managed by vk-cocoon/);
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("creates the pod's CocoonHibernation, then flips the same one to Wake", async () => {
    const ctx = testContext();
    seedPod(ctx, "demo-0", { "vm.cocoonstack.io/name": "vk-ns-demo-0" });
    await run(ctx, hibernate, ["demo-0"]);
    await run(ctx, wake, ["demo-0"]);
    const chs = ctx.fake.all<CocoonHibernation>(COCOONHIBERNATIONS, "ns");
    assert.deepEqual(
      chs.map((ch) => [ch.metadata.name, ch.spec]),
      [["demo-0", { podRef: { name: "demo-0" }, desire: "Wake" }]],
    );
    assert.deepEqual(
      ctx.fake.writes().map((c) => c.verb),
      ["create", "patch"],
    );
    assert.deepEqual(ctx.stdout, [
      "cocoonhibernation.cocoonset.cocoonstack.io/demo-0 created (desire Hibernate)",
      "cocoonhibernation.cocoonset.cocoonstack.io/demo-0 patched (desire Wake)",
    ]);
  });
});

describe("touch", () => {
  it("merge-patches the last-activity annotation with the time now, RFC 3339 UTC", async () => {
    const ctx = testContext();
    seedSet(ctx);
    await run(ctx, touch, ["demo"]);
    assert.deepEqual(
      ctx.fake.writes().map((c) => c.body),
      [{ metadata: { annotations: { "cocoonset.cocoonstack.io/last-activity": "2026-05-14T12:00:00Z" } } }],
    );
    assert.equal(ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo")?.metadata.generation, 1);
  });

  it("stamps the API server's time, not this machine's", async () => {
    const ctx = testContext();
    seedSet(ctx);
    ctx.serverNow = () => Date.parse("2026-05-14T15:30:00Z");
    await run(ctx, touch, ["demo"]);
    assert.deepEqual(ctx.stdout, [
      "cocoonset.cocoonset.cocoonstack.io/demo touched (cocoonset.cocoonstack.io/last-activity=2026-05-14T15:30:00Z)",
    ]);
  });
});

describe("resume", () => {
  function seedExpiring(ctx: TestContext, expireAt: string, action?: string): void {
    ctx.fake.seed<CocoonSet>(COCOONSETS, {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonSet",
      metadata: {
        name: "demo",
        namespace: "ns",
        annotations: {
          "cocoonset.cocoonstack.io/expire-at": expireAt,
          ...(action ? { "cocoonset.cocoonstack.io/expire-action": action } : {}),
        },
      },
      spec: { agent: { image: "img", replicas: 0 }, suspend: true },
    });
  }

  it("refuses a set whose expire-at (Suspend, the default) has come, writing nothing", async () => {
    const ctx = testContext();
    seedExpiring(ctx, "2026-05-14T12:00:00Z");
    const err = await rejection(run(ctx, resume, ["demo"]));
    assert.match(
      err.message,
      /^cocoonset "demo" expired at 2026-05-14T12:00:00Z \(cocoonset.cocoonstack.io\/expire-at, cocoonset.cocoonstack.io\/expire-action Suspend\): the operator would suspend it again at once; move or remove/,
    );
    assert.deepEqual(ctx.fake.writes(), []);
  });

  it("resumes a set whose expire-at is still ahead, or whose expiry deletes", async () => {
    for (const [expireAt, action] of [["2026-05-14T12:00:01Z"], ["2026-05-14T11:00:00Z", "Delete"]]) {
      const ctx = testContext();
      seedExpiring(ctx, expireAt ?? "", action);
      await run(ctx, resume, ["demo"]);
      assert.deepEqual(
        ctx.fake.writes().map((c) => c.body),
        [{ spec: { suspend: false } }],
        `${expireAt} ${action}`,
      );
    }
  });
});

function fakeRegistry(tags: Record<string, string[]>): RegistryClient {
  return {
    base: { host: "reg.example.com", path: "cocoon", insecure: false },
    listTags: async (repo: string) => tags[repo] ?? [],
    getManifest: async (repo: string, ref: string) => ({
      digest: `sha256:${repo}-${ref}`,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      raw: Buffer.from("{}"),
      manifest: {
        config: { size: 1024 },
        layers: [{ size: 3 * 1024 * 1024 }],
        annotations: { "org.opencontainers.image.created": new Date(NOW - 180_000).toISOString() },
      },
    }),
  } as unknown as RegistryClient;
}

describe("status", () => {
  const settled = {
    readyAgents: 1,
    desiredAgents: 1,
    readyToolboxes: 0,
    desiredToolboxes: 0,
    observedGeneration: 1,
    phase: "Suspended" as const,
  };

  it("prints a line per member with its snapshot tags, age and size", async () => {
    const ctx = testContext({ registry: fakeRegistry({ "vk-ns-demo-0": ["hibernate"] }) });
    seedSet(ctx, {}, settled);
    seedPod(ctx, "demo-0", {
      "vm.cocoonstack.io/name": "vk-ns-demo-0",
      "vm.cocoonstack.io/lifecycle-state": "hibernated",
    });
    await run(ctx, status, ["demo"]);
    const text = ctx.stdout.join("\n");
    assert.match(text, /^Phase: +Suspended \(generation 1, observed 1\)$/m);
    assert.match(text, /^0 +main +demo-0 +node-a +hibernated +true +hibernate \(3m, 3\.0MiB\)$/m);
    assert.doesNotMatch(text, /Idle suspend at|Expires at/);
  });

  it("shows the idle-suspend and expiry times when the status has them", async () => {
    const ctx = testContext();
    seedSet(ctx, {}, {
      ...settled,
      idleSuspendAt: "2026-05-14T12:30:00Z",
      expireAt: "2026-05-13T12:00:00Z",
    } as CocoonSet["status"]);
    await run(ctx, status, ["demo"]);
    const text = ctx.stdout.join("\n");
    assert.match(text, /^Idle suspend at: +2026-05-14T12:30:00Z \(in 30m\)$/m);
    assert.match(text, /^Expires at: +2026-05-13T12:00:00Z \(24h ago\)$/m);
    assert.ok(ctx.stderr.some((line) => line.startsWith("snapshots not shown: no registry configured")));
  });
});

describe("status of a set naming a guest policy", () => {
  const ANN_POLICY = "cocoonset.cocoonstack.io/guest-policy";
  const ANN_RECORD = "cocoonset.cocoonstack.io/guest-hooks";
  const managed = { "cocoonset.cocoonstack.io/managed": "true" };

  /** The stored set, named to follow policy `warmup`. */
  function followWarmup(ctx: TestContext): void {
    const cs = ctx.fake.peek<CocoonSet>(COCOONSETS, "ns", "demo") as CocoonSet;
    ctx.fake.seed(COCOONSETS, {
      ...cs,
      metadata: { ...cs.metadata, annotations: { [ANN_POLICY]: "warmup" } },
    });
  }

  function seedHookedSet(ctx: TestContext): void {
    seedSet(
      ctx,
      { agent: { image: "img", replicas: 2 }, toolboxes: [{ name: "tb" }] },
      {
        phase: "Running",
        observedGeneration: 1,
        readyAgents: 1,
        desiredAgents: 3,
        readyToolboxes: 0,
        desiredToolboxes: 1,
        conditions: [
          {
            type: "GuestHooks",
            status: "False",
            reason: "HookFailed",
            message: "demo-1: PostClone hook warm failed",
            lastTransitionTime: "2026-05-14T11:00:00Z",
          },
        ],
      },
    );
    followWarmup(ctx);
    const phase = (result: string, extra: Record<string, string> = {}) => ({
      result,
      at: "2026-05-14T11:59:00Z",
      policyGeneration: 1,
      ...extra,
    });
    // The main's record is its VM's: every phase ran, a claim's PostClaim among them.
    seedPod(ctx, "demo-0", {
      ...managed,
      "vm.cocoonstack.io/id": "vm-a2",
      [ANN_RECORD]: JSON.stringify({
        vmID: "vm-a2",
        origin: "wake",
        post: phase("Succeeded"),
        claim: { name: "job-7", ...phase("Succeeded") },
        preHibernate: phase("Succeeded"),
      }),
    });
    // A Fail hook failed after a clone; its output spans lines and runs long.
    seedPod(ctx, "demo-1", {
      ...managed,
      "vm.cocoonstack.io/id": "vm-b1",
      [ANN_RECORD]: JSON.stringify({
        vmID: "vm-b1",
        origin: "clone",
        post: phase("Failed", { hook: "warm", message: `exit status 3:\n${"x".repeat(300)}` }),
      }),
    });
    // The record is of the VM before the last wake: nothing has run for this one yet.
    seedPod(ctx, "demo-2", {
      ...managed,
      "vm.cocoonstack.io/id": "vm-c2",
      [ANN_RECORD]: JSON.stringify({ vmID: "vm-c1", origin: "clone", post: phase("Succeeded") }),
    });
    // Unmanaged: hooks never run in it.
    seedPod(ctx, "demo-tb", { "vm.cocoonstack.io/id": "vm-d1" });
  }

  it("shows the policy, the GuestHooks condition and each member's hooks for the VM it runs", async () => {
    const ctx = testContext();
    seedHookedSet(ctx);
    await run(ctx, status, ["demo"]);
    const text = ctx.stdout.join("\n");
    assert.match(text, /^Guest policy: +warmup$/m);
    assert.match(text, /^Guest hooks: +False \(HookFailed\): demo-1: PostClone hook warm failed$/m);
    const table = text.slice(text.indexOf("Member hooks:\n") + "Member hooks:\n".length).split("\n\n")[0];
    const rows = table?.split("\n").map((line) => line.split(/ {3,}/));
    assert.deepEqual(rows, [
      ["POD", "ORIGIN", "POST", "CLAIM", "PRE-HIBERNATE", "HOOK", "MESSAGE"],
      ["demo-0", "wake", "Succeeded", "job-7: Succeeded", "Succeeded", "-", "-"],
      ["demo-1", "clone", "Failed", "-", "-", "warm", `exit status 3: ${"x".repeat(64)}…`],
      ["demo-2", "pending", "-", "-", "-", "-", "-"],
      ["demo-tb", "n/a", "-", "-", "-", "-", "-"],
    ]);
  });

  it("names a hook that failed under Ignore beside the phase's success", async () => {
    const ctx = testContext({ output: "wide" });
    seedSet(ctx);
    followWarmup(ctx);
    seedPod(ctx, "demo-0", {
      ...managed,
      "vm.cocoonstack.io/id": "vm-a1",
      [ANN_RECORD]: JSON.stringify({
        vmID: "vm-a1",
        origin: "clone",
        post: {
          result: "Succeeded",
          at: "2026-05-14T11:59:00Z",
          policyGeneration: 2,
          hook: "notify",
          message: "timed out",
        },
      }),
    });
    await run(ctx, status, ["demo"]);
    const text = ctx.stdout.join("\n");
    assert.match(text, /^Guest hooks: +\(not reported yet\)$/m);
    assert.match(text, /^demo-0 +clone +Succeeded +- +- +notify \(ignored\) +timed out$/m);
  });

  it("gives the policy, the condition and each member's record in -o json", async () => {
    const ctx = testContext({ output: "json" });
    seedHookedSet(ctx);
    await run(ctx, status, ["demo"]);
    const shown = JSON.parse(ctx.stdout.join("\n")) as {
      guestPolicy: unknown;
      members: { pod?: string; guestHooks: Record<string, unknown> }[];
    };
    assert.deepEqual(shown.guestPolicy, {
      name: "warmup",
      condition: { status: "False", reason: "HookFailed", message: "demo-1: PostClone hook warm failed" },
    });
    const [main, failed, pending, unmanaged] = shown.members.map((m) => m.guestHooks);
    assert.deepEqual(main, {
      state: "recorded",
      vmID: "vm-a2",
      origin: "wake",
      post: { result: "Succeeded", at: "2026-05-14T11:59:00Z", policyGeneration: 1 },
      claim: { result: "Succeeded", at: "2026-05-14T11:59:00Z", policyGeneration: 1, name: "job-7" },
      preHibernate: { result: "Succeeded", at: "2026-05-14T11:59:00Z", policyGeneration: 1 },
    });
    const post = failed?.post as { hook: string; message: string };
    assert.equal(post.hook, "warm");
    assert.equal(post.message.length, 256, "the message is held to the record's bound");
    assert.ok(post.message.startsWith("exit status 3: xxx"), post.message);
    assert.deepEqual(pending, { state: "pending", vmID: "vm-c2" });
    assert.deepEqual(unmanaged, { state: "not-hookable", vmID: "vm-d1" });
  });

  it("adds nothing for a set naming no policy, even with records on its pods", async () => {
    const ctx = testContext({ output: "json" });
    seedSet(ctx);
    seedPod(ctx, "demo-0", {
      ...managed,
      "vm.cocoonstack.io/id": "vm-a1",
      [ANN_RECORD]: JSON.stringify({ vmID: "vm-a1", origin: "clone" }),
    });
    await run(ctx, status, ["demo"]);
    const shown = JSON.parse(ctx.stdout.join("\n")) as Record<string, unknown> & { members: object[] };
    assert.ok(!("guestPolicy" in shown));
    assert.ok(!("guestHooks" in (shown.members[0] ?? {})));
    const table = testContext();
    seedSet(table);
    await run(table, status, ["demo"]);
    assert.doesNotMatch(table.stdout.join("\n"), /Guest|Member hooks/);
  });
});

describe("snapshots", () => {
  it("needs a registry", async () => {
    const ctx = testContext();
    seedSet(ctx);
    const err = await rejection(run(ctx, snapshots, ["demo"]));
    assert.match(err.message, /^no registry configured: pass --registry/);
  });

  it("lists every tag of every VM of the set as JSON", async () => {
    const ctx = testContext({
      output: "json",
      registry: fakeRegistry({ "vk-ns-demo-0": ["latest", "hibernate"], "vk-ns-demo-tb": ["latest"] }),
    });
    seedSet(ctx, { toolboxes: [{ name: "tb" }] });
    await run(ctx, snapshots, ["demo"]);
    const listed = JSON.parse(ctx.stdout.join("\n")) as {
      snapshots: { vm: string; tag: string; size: number }[];
    };
    assert.deepEqual(
      listed.snapshots.map((s) => [s.vm, s.tag, s.size]),
      [
        ["vk-ns-demo-0", "hibernate", 1024 + 3 * 1024 * 1024],
        ["vk-ns-demo-0", "latest", 1024 + 3 * 1024 * 1024],
        ["vk-ns-demo-tb", "latest", 1024 + 3 * 1024 * 1024],
      ],
    );
  });
});

describe("status without a set", () => {
  function seedListed(ctx: TestContext): void {
    for (const [ns, name, team] of [
      ["ns", "b", "eval"],
      ["ns", "a", "prod"],
      ["other", "c", "eval"],
    ] as const) {
      ctx.fake.seed<CocoonSet>(COCOONSETS, {
        apiVersion: "cocoonset.cocoonstack.io/v1",
        kind: "CocoonSet",
        metadata: { name, namespace: ns, labels: { team }, creationTimestamp: "2026-05-14T11:00:00Z" },
        spec: { agent: { image: "img", replicas: 0 } },
        status: {
          phase: "Running",
          readyAgents: 1,
          desiredAgents: 1,
          readyToolboxes: 0,
          desiredToolboxes: 0,
        },
      });
    }
  }

  it("lists the namespace's sets, -l those the selector matches, -A every namespace's", async () => {
    const ctx = testContext();
    seedListed(ctx);
    await run(ctx, status, []);
    assert.deepEqual(ctx.stdout[0]?.split("\n"), [
      "NAME   PHASE     AGENTS   TOOLBOXES   IDLE SUSPEND AT   EXPIRES AT   AGE",
      "a      Running   1/1      0/0         <none>            <none>       60m",
      "b      Running   1/1      0/0         <none>            <none>       60m",
    ]);
    const all = testContext({ output: "name" });
    seedListed(all);
    await run(all, status, ["-A", "-l", "team=eval"]);
    assert.deepEqual(all.stdout, [
      "cocoonset.cocoonset.cocoonstack.io/b",
      "cocoonset.cocoonset.cocoonstack.io/c",
    ]);
    await assert.rejects(run(ctx, status, ["a", "-A"]), /-l and -A list sets/);
  });
});

describe("--wait and --timeout", () => {
  const timeoutOf = (argv: string[]) => waitTimeout(parseArgs(argv, [...WAIT_FLAGS, DRY_RUN_FLAG]));

  it("take --wait bare, --wait=DURATION, --wait --timeout DURATION and --wait=false as kubectl does", () => {
    assert.equal(timeoutOf([]), undefined);
    assert.equal(timeoutOf(["--wait"]), DEFAULT_WAIT_MS);
    assert.equal(timeoutOf(["--wait=true"]), DEFAULT_WAIT_MS);
    assert.equal(timeoutOf(["--wait=5m"]), 300_000);
    assert.equal(timeoutOf(["--wait", "--timeout", "90s"]), 90_000);
    assert.equal(timeoutOf(["--timeout=2m"]), 120_000);
    assert.equal(timeoutOf(["--wait=false"]), undefined);
    assert.throws(() => timeoutOf(["--wait=5m", "--timeout", "1m"]), /both set the timeout/);
    assert.throws(() => timeoutOf(["--wait", "--timeout", "soon"]), /invalid duration "soon"/);
  });
});

describe("the registry, found without a flag", () => {
  function seedOperator(
    ctx: TestContext,
    env: { name: string; value?: string }[],
    data?: Record<string, string>,
  ) {
    ctx.fake.seed(DEPLOYMENTS, {
      metadata: { name: "cocoon-operator", namespace: "cocoon-system" },
      spec: {
        template: {
          spec: {
            containers: [
              { name: "manager", env, envFrom: [{ configMapRef: { name: "cocoon-operator-config-h4sh" } }] },
            ],
          },
        },
      },
    });
    if (data)
      ctx.fake.seed(CONFIGMAPS, {
        metadata: { name: "cocoon-operator-config-h4sh", namespace: "cocoon-system" },
        data,
      });
  }

  it("is the operator's OCI_REGISTRY from the ConfigMap its Deployment reads, or its own env value", async () => {
    const ctx = testContext();
    seedOperator(ctx, [{ name: "OPERATOR_LOG_LEVEL", value: "info" }], {
      OCI_REGISTRY: "registry.example/snap",
    });
    assert.deepEqual(await operatorRegistry(ctx), {
      base: "registry.example/snap",
      from: "configmap cocoon-system/cocoon-operator-config-h4sh",
    });
    const direct = testContext();
    seedOperator(direct, [{ name: "OCI_REGISTRY", value: "other.example/x" }]);
    assert.equal((await operatorRegistry(direct)).base, "other.example/x");
  });

  it("is taken from --registry, else OCI_REGISTRY, and only then read from the cluster", async () => {
    let reads = 0;
    const installed = async () => {
      reads++;
      return { base: "installed.example/r", from: "configmap cocoon-system/c" };
    };
    assert.deepEqual(await registryBase("flag.example/r", "env.example/r", installed), {
      base: "flag.example/r",
      from: "--registry",
    });
    assert.deepEqual(await registryBase(undefined, "env.example/r", installed), {
      base: "env.example/r",
      from: "OCI_REGISTRY",
    });
    assert.equal(reads, 0, "an explicit choice reads nothing from the cluster");
    assert.deepEqual(await registryBase(undefined, undefined, installed), {
      base: "installed.example/r",
      from: "configmap cocoon-system/c",
    });
    assert.equal(await registryBase(undefined, undefined, async () => ({ base: undefined })), undefined);
  });

  it("says why when there is no operator installation to read", async () => {
    assert.deepEqual(await operatorRegistry(testContext()), {
      base: undefined,
      why: "no deployment cocoon-system/cocoon-operator (or its ConfigMap)",
    });
  });
});

describe("--wait follows a watch", () => {
  it("judges again on the set's watch event, with no read interval at all", {
    timeout: 5_000,
  }, async () => {
    const ctx = testContext();
    seedSet(ctx);
    const slept: number[] = [];
    // Time stands still: only a watch event can wake the loop (a poll would sleep out its interval).
    ctx.sleep = (ms, signal) =>
      new Promise<void>((_, reject) => {
        slept.push(ms);
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      });
    let emit: () => void = () => {};
    const watched: string[] = [];
    ctx.watcher = {
      list: (rt, namespace, opts) => ctx.fake.list(rt, namespace, opts),
      watch: <T>(rt: ResourceType, namespace: string | undefined, opts: WatchOptions) => ({
        async *[Symbol.asyncIterator]() {
          watched.push(`${rt.plural} ${opts.fieldSelector ?? opts.labelSelector}`);
          while (!opts.signal?.aborted) {
            await new Promise<void>((resolve) => {
              if (rt === COCOONSETS) emit = resolve;
            });
            const object = (await ctx.fake.get(rt, namespace ?? "", "demo")) as T;
            yield { type: "MODIFIED" as const, object };
          }
        },
      }),
    };
    const waiting = run(ctx, suspend, ["demo", "--wait"]);
    await new Promise((done) => setTimeout(done, 20));
    writeStatus(ctx, {
      phase: "Suspended",
      observedGeneration: 2,
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
      conditions: [
        {
          type: "Suspended",
          status: "True",
          reason: "Suspended",
          message: "",
          observedGeneration: 2,
          lastTransitionTime: "",
        },
      ],
    });
    emit();
    await waiting;
    assert.match(ctx.stderr.at(-1) ?? "", /cocoonset "demo" is Suspended \(generation 2\)/);
    assert.deepEqual(slept, [DEFAULT_WAIT_MS], "only the deadline's timer: no read interval");
    assert.deepEqual(watched.sort(), [
      "cocoonsets metadata.name=demo",
      "pods cocoonset.cocoonstack.io/name=demo",
    ]);
  });
});
