// kubectl cocoon against the real environment: the operator in-process, vk-cocoon simulated on
// virtual nodes, a real registry. Each command succeeds and fails as the docs say, --wait ends on the
// operator's outcome at the command's generation, and the plugin runs as `kubectl cocoon` from PATH.
// With the idle policy (docs/idle.md), `status` shows when the set parks and expires, and `touch`
// postpones the park. For a set naming a guest policy (docs/guest.md), `status` shows what the
// record on each pod says its hooks did for the VM the pod runs now.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import type { CocoonHibernation, CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { ANN_VM_ID } from "../../src/contract/keys.ts";
import { ANN_GUEST_HOOKS, ANN_GUEST_POLICY } from "../../src/guest/keys.ts";
import { encodeGuestHooksRecord, type GuestHooksRecord } from "../../src/guest/record.ts";
import {
  ANN_EXPIRE_ACTION,
  ANN_EXPIRE_AT,
  ANN_PARKED_AT,
  ANN_SUSPEND_AFTER_IDLE,
} from "../../src/idle/policy.ts";
import { runPlugin } from "../../src/plugin/cli.ts";
import { EXIT_ERROR, EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE } from "../../src/plugin/errors.ts";
import { formatRFC3339 } from "../../src/rfc3339.ts";
import { controlPlaneBinDir } from "../env/controlplane.ts";
import type { Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { expectCode, type PluginRun, pluginBaseEnv, runCocoon } from "../support/pluginrun.ts";
import { getSet, setPods, setsPath } from "../support/setapi.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const IMAGE = "ubuntu-dev-base";
const env = testEnv();
const suffix = randomBytes(3).toString("hex");
const pool = `plug-${suffix}`;
const nodeA = `plug-a-${suffix}`;
const nodeB = `plug-b-${suffix}`;
/** One seat, held by a squatter, so a migration to it waits with MigrateNoCapacity. */
const nodeFull = `plug-full-${suffix}`;
const nodeElsewhere = `plug-else-${suffix}`;
const repoRoot = resolve(import.meta.dirname, "../..");
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "plugin", {
    nodes: [
      { name: nodeA, pool },
      { name: nodeB, pool },
      { name: nodeFull, pool, pods: 1 },
      { name: nodeElsewhere, pool: `other-${suffix}` },
    ],
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

type Run = PluginRun;

const baseEnv = pluginBaseEnv();

/** The plugin in-process, as the kubectl-cocoon executable runs it, in the test namespace. */
const cocoon = (argv: string[], pluginEnv: Record<string, string> = baseEnv): Promise<Run> =>
  runCocoon(ns, argv, pluginEnv);

async function createSet(
  name: string,
  spec: Partial<CocoonSetSpec>,
  annotations: Record<string, string> = {},
): Promise<void> {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns, annotations },
    spec: { nodePool: pool, agent: { image: IMAGE, replicas: 0, mode: "clone" }, ...spec },
  };
  const res = await apiRequest(env, "POST", setsPath(ns), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

function running(name: string): Promise<CocoonSet> {
  return waitFor(
    `${name} Running at its generation`,
    async () => {
      const cs = await getSet(env, ns, name);
      return cs.status?.phase === "Running" && cs.status.observedGeneration === cs.metadata.generation
        ? cs
        : undefined;
    },
    60_000,
  );
}

function condition(cs: CocoonSet, type: string) {
  return cs.status?.conditions?.find((c) => c.type === type);
}

function run(file: string, args: string[], extraEnv: Record<string, string>): Promise<Run> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { env: { ...process.env, ...extraEnv }, encoding: "utf8" },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

describe("kubectl cocoon suspend / status / snapshots / resume", () => {
  it("suspends a group with --wait, shows its snapshots, satisfies kubectl wait, and resumes it", {
    timeout: 240_000,
  }, async () => {
    await createSet("group", { agent: { image: IMAGE, replicas: 1, mode: "clone" } });
    const started = await running("group");

    const suspended = await cocoon(["suspend", "group", "--wait=120s"]);
    expectCode(suspended, EXIT_OK);
    assert.equal(suspended.stdout, "cocoonset.cocoonset.cocoonstack.io/group suspended\n");
    const generation = (started.metadata.generation ?? 0) + 1;
    assert.match(suspended.stderr, new RegExp(`is Suspended \\(generation ${generation}\\)`));
    const cs = await getSet(env, ns, "group");
    assert.equal(cs.status?.phase, "Suspended", "--wait returned only once the set was Suspended");
    assert.deepEqual(
      [condition(cs, "Suspended")?.status, condition(cs, "Suspended")?.observedGeneration],
      ["True", generation],
    );
    // vk-cocoon reports a pod hibernated before it reports it not Ready, so the status that confirms
    // the suspend may still count it ready; the pod's own update brings the status that does not.
    assert.equal(condition(cs, "Ready")?.status, "False");
    await waitFor("Ready reason AgentsNotReady once the hibernated pods are not Ready", async () => {
      const latest = await getSet(env, ns, "group");
      return condition(latest, "Ready")?.reason === "AgentsNotReady" ? true : undefined;
    });

    const kubectl = join(controlPlaneBinDir(), "kubectl");
    const waited = await run(
      kubectl,
      ["-n", ns, "wait", "--for=condition=Suspended", "cocoonset/group", "--timeout=30s"],
      {
        KUBECONFIG: env.kubeconfigPath,
      },
    );
    expectCode(waited, 0);

    const status = await cocoon(["status", "group"]);
    expectCode(status, EXIT_OK);
    assert.match(status.stdout, /^Phase: +Suspended /m);
    assert.match(
      status.stdout,
      new RegExp(`^1 +sub-agent +group-1 +(${nodeA}|${nodeB}) +hibernated +false +hibernate `, "m"),
    );
    assert.match(
      status.stdout,
      /^0 +main +group-0 +\S+ +hibernated +false +hibernate \(\d+s, [\d.]+[KM]?i?B\)$/m,
    );
    assert.match(status.stdout, /^Events:/m);

    const json = await cocoon(["status", "group", "-o", "json"]);
    expectCode(json, EXIT_OK);
    const parsed = JSON.parse(json.stdout) as {
      members: { vm: string; snapshots: { tag: string; size: number }[] }[];
    };
    assert.deepEqual(
      parsed.members.map((m) => [m.vm, m.snapshots.map((s) => s.tag)]),
      [
        [`vk-${ns}-group-0`, ["hibernate"]],
        [`vk-${ns}-group-1`, ["hibernate"]],
      ],
    );
    assert.ok(parsed.members.every((m) => m.snapshots.every((s) => s.size > 0)));

    const listed = await cocoon(["snapshots", "group"]);
    expectCode(listed, EXIT_OK);
    assert.match(listed.stdout, /^VM +TAG +SIZE +AGE$/m);
    assert.match(listed.stdout, new RegExp(`^vk-${ns}-group-1 +hibernate +[\\d.]+\\S*B +\\d+s$`, "m"));

    const resumed = await cocoon(["resume", "group", "--wait=120s"]);
    expectCode(resumed, EXIT_OK);
    assert.match(resumed.stderr, new RegExp(`is Ready \\(generation ${generation + 1}\\)`));
    const woken = await getSet(env, ns, "group");
    assert.deepEqual(
      [
        condition(woken, "Ready")?.status,
        condition(woken, "Ready")?.observedGeneration,
        woken.status?.readyAgents,
      ],
      ["True", generation + 1, 2],
    );
    assert.equal(condition(woken, "Suspended")?.reason, "NotSuspended");
  });

  it("refuses --release on a set with a sub-agent, naming the CRD rule, and changes nothing", async () => {
    const before = await getSet(env, ns, "group");
    const refused = await cocoon(["suspend", "group", "--release"]);
    expectCode(refused, EXIT_ERROR);
    assert.match(
      refused.stderr,
      /^error: --release needs a main-only set: hibernatePolicy=release requires agent.replicas=0 and no toolboxes/,
    );
    const after = await getSet(env, ns, "group");
    assert.equal(after.metadata.generation, before.metadata.generation);
    assert.equal(after.spec.suspend, before.spec.suspend);
  });

  it("releases a main-only set's seat and brings it back with --wait", { timeout: 240_000 }, async () => {
    await createSet("solo", { nodeName: nodeA });
    await running("solo");
    const released = await cocoon(["suspend", "solo", "--release", "--wait=120s"]);
    expectCode(released, EXIT_OK);
    assert.equal((await setPods(env, ns, "solo")).length, 0, "the seat is freed");
    assert.equal((await getSet(env, ns, "solo")).spec.hibernatePolicy, "release");
    const resumed = await cocoon(["resume", "solo", "--wait=120s"]);
    expectCode(resumed, EXIT_OK);
    assert.equal((await setPods(env, ns, "solo"))[0]?.spec.nodeName, nodeA);
  });

  it("needs a registry for snapshots, and reports an unknown set", async () => {
    const noRegistry = await cocoon(["snapshots", "group"], { KUBECONFIG: env.kubeconfigPath });
    expectCode(noRegistry, EXIT_ERROR);
    assert.match(noRegistry.stderr, /^error: no registry configured: pass --registry/);
    const unknown = await cocoon(["status", "ghost"]);
    expectCode(unknown, EXIT_ERROR);
    assert.equal(unknown.stderr, `error: cocoonset "ghost" not found in namespace "${ns}"\n`);
  });
});

describe("kubectl cocoon status of a set with guest hooks", () => {
  // The record is written here as the operator writes it, for a policy that does not exist: the
  // operator runs no hook without its policy, so the record stays as written.
  it("shows the policy, its GuestHooks condition and each member's record for the VM it runs", {
    timeout: 120_000,
  }, async () => {
    await createSet("hooked", {}, { [ANN_GUEST_POLICY]: "seeding" });
    // Waited for by its VM, not the set's Ready: with the policy missing, the operator may hold the
    // member back (GuestPolicyNotFound).
    const vmID = await waitFor("hooked-0 runs a VM", async () => {
      const [pod] = await setPods(env, ns, "hooked");
      return pod?.metadata.annotations?.[ANN_VM_ID] || undefined;
    });
    const writeRecord = async (record: GuestHooksRecord) => {
      const res = await apiRequest(
        env,
        "PATCH",
        `/api/v1/namespaces/${ns}/pods/hooked-0`,
        { metadata: { annotations: { [ANN_GUEST_HOOKS]: encodeGuestHooksRecord(record) } } },
        "application/merge-patch+json",
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    const at = formatRFC3339(Date.now());
    const row = (shown: Run) => shown.stdout.split("\n").find((line) => line.startsWith("hooked-0 "));

    // A record of the VM before this one says nothing of this one.
    await writeRecord({
      vmID: "an-earlier-vm",
      origin: "clone",
      post: { result: "Succeeded", at, policyGeneration: 1 },
    });
    const pending = await cocoon(["status", "hooked"]);
    expectCode(pending, EXIT_OK);
    assert.match(pending.stdout, /^Guest policy: +seeding$/m);
    assert.match(pending.stdout, /^Guest hooks: +\S/m);
    assert.match(row(pending) ?? "", /^hooked-0 +pending +- +- +- +- +-$/);

    await writeRecord({
      vmID,
      origin: "clone",
      post: { result: "Succeeded", at, policyGeneration: 1 },
      preHibernate: {
        result: "Failed",
        at,
        policyGeneration: 1,
        hook: "flush",
        message: "exited with status 3: disk full",
      },
    });
    const shown = await cocoon(["status", "hooked", "-o", "wide"]);
    expectCode(shown, EXIT_OK);
    assert.match(
      row(shown) ?? "",
      /^hooked-0 +clone +Succeeded +- +Failed +flush +exited with status 3: disk full$/,
    );

    const json = await cocoon(["status", "hooked", "-o", "json"]);
    expectCode(json, EXIT_OK);
    const parsed = JSON.parse(json.stdout) as {
      guestPolicy: { name: string };
      members: { guestHooks?: { state: string; vmID?: string; preHibernate?: { hook?: string } } }[];
    };
    assert.equal(parsed.guestPolicy.name, "seeding");
    const hooks = parsed.members[0]?.guestHooks;
    assert.deepEqual([hooks?.state, hooks?.vmID, hooks?.preHibernate?.hook], ["recorded", vmID, "flush"]);

    const deleted = await apiRequest(env, "DELETE", `${setsPath(ns)}/hooked`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
  });
});

describe("kubectl cocoon hibernate / wake", () => {
  it("hibernates one pod and wakes it through one CocoonHibernation", { timeout: 180_000 }, async () => {
    await running("group");
    const hibernated = await cocoon(["hibernate", "group-1", "--wait=120s"]);
    expectCode(hibernated, EXIT_OK);
    assert.equal(
      hibernated.stdout,
      "cocoonhibernation.cocoonset.cocoonstack.io/group-1 created (desire Hibernate)\n",
    );
    assert.match(hibernated.stderr, /pod "group-1" is Hibernated \(generation 1\)/);

    const woken = await cocoon(["wake", "group-1", "--wait=120s", "-o", "yaml"]);
    expectCode(woken, EXIT_OK);
    const ch = parse(woken.stdout) as CocoonHibernation;
    assert.deepEqual(
      [ch.metadata.name, ch.spec.desire, ch.status?.phase, ch.metadata.generation],
      ["group-1", "Wake", "Active", 2],
    );
    assert.match(woken.stderr, /pod "group-1" is Active \(generation 2\)/);
  });

  it("refuses an unknown pod and a pod vk-cocoon does not run", async () => {
    const res = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "plain" },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const plain = await cocoon(["hibernate", "plain"]);
    expectCode(plain, EXIT_ERROR);
    assert.match(plain.stderr, /^error: pod "plain" is not managed by vk-cocoon/);
    const ghost = await cocoon(["wake", "ghost"]);
    expectCode(ghost, EXIT_ERROR);
    assert.equal(ghost.stderr, `error: pod "ghost" not found in namespace "${ns}"\n`);
    const chs = await apiRequest(
      env,
      "GET",
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonhibernations`,
    );
    assert.deepEqual(
      (chs.body.items as CocoonHibernation[]).map((ch) => ch.spec.podRef.name),
      ["group-1"],
      "no CocoonHibernation for a refused pod",
    );
  });
});

describe("kubectl cocoon migrate", () => {
  it("refuses a node outside the pool or unknown, and a missing --to", async () => {
    const elsewhere = await cocoon(["migrate", "solo", "--to", nodeElsewhere]);
    expectCode(elsewhere, EXIT_ERROR);
    assert.match(
      elsewhere.stderr,
      new RegExp(`node "${nodeElsewhere}" is not in the set's pool: .*cocoonstack.io/pool=${pool}`),
    );
    expectCode(await cocoon(["migrate", "solo", "--to", "ghost-node"]), EXIT_ERROR);
    const usage = await cocoon(["migrate", "solo"]);
    expectCode(usage, EXIT_USAGE);
    assert.match(usage.stderr, /^error: migrate needs --to NODE/);
    assert.equal((await getSet(env, ns, "solo")).spec.nodeName, nodeA, "nothing was pinned");
  });

  it("moves the main to another node with --wait", { timeout: 180_000 }, async () => {
    const moved = await cocoon(["migrate", "solo", "--to", nodeB, "--wait=120s"]);
    expectCode(moved, EXIT_OK);
    assert.match(moved.stderr, new RegExp(`is Ready on node ${nodeB}`));
    const [main] = await setPods(env, ns, "solo");
    assert.equal(main?.spec.nodeName, nodeB);
    assert.equal(main?.metadata.annotations?.["vm.cocoonstack.io/restore-from-hibernate"], "true");
  });

  it("times out with the operator's MigrateNoCapacity while the node has no seat", {
    timeout: 180_000,
  }, async () => {
    await createSet("squatter", { nodeName: nodeFull });
    await running("squatter");
    await createSet("tenant", { nodeName: nodeA });
    await running("tenant");
    const stuck = await cocoon(["migrate", "tenant", "--to", nodeFull, "--wait=20s"]);
    expectCode(stuck, EXIT_TIMEOUT);
    assert.match(
      stuck.stderr,
      /error: timed out after 20s waiting for cocoonset "tenant" to move its main to node \S+ \(phase Migrating; .*\); the operator reports MigrateNoCapacity: main pod tenant-0 unschedulable: /,
    );
  });
});

describe("kubectl cocoon on a failed set", () => {
  it("--wait exits 3 with the operator's reason", { timeout: 120_000 }, async () => {
    sim.faults.failBoot(`vk-${ns}-fragile-0`, "bring-up refused by the test");
    await createSet("fragile", {});
    await waitFor(
      "fragile Failed",
      async () => ((await getSet(env, ns, "fragile")).status?.phase === "Failed" ? true : undefined),
      60_000,
    );
    const failed = await cocoon(["resume", "fragile", "--wait=60s"]);
    expectCode(failed, EXIT_FAILED);
    assert.match(
      failed.stderr,
      /error: cocoonset "fragile" to be Ready failed: PodLifecycleFailed: main pod .*bring-up refused by the test/,
    );
    sim.faults.failBoot(`vk-${ns}-fragile-0`, null);
  });
});

describe("kubectl cocoon touch, flags and kubeconfig rules", () => {
  it("touch stamps last-activity with the API server's time, without a new generation", async () => {
    const before = await getSet(env, ns, "group");
    // This machine's clock two days off: the stamp still comes from the API server's.
    const stdout: string[] = [];
    const touched = await runPlugin(["-n", ns, "touch", "group"], {
      stdout: (text) => stdout.push(text),
      stderr: () => {},
      env: pluginBaseEnv(),
      now: () => Date.now() - 2 * 24 * 60 * 60_000,
      sleep: async () => {},
    });
    assert.equal(touched, EXIT_OK, stdout.join(""));
    const after = await getSet(env, ns, "group");
    const stamp = after.metadata.annotations?.["cocoonset.cocoonstack.io/last-activity"] ?? "";
    assert.match(stamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(Math.abs(Date.parse(stamp) - Date.now()) < 60_000, stamp);
    assert.equal(after.metadata.generation, before.metadata.generation);
  });

  it("rejects bad flags and values with a usage error", async () => {
    for (const argv of [
      ["status", "group", "-o", "xml"],
      ["suspend", "group", "--wait=soon"],
      ["frobnicate"],
      ["snapshots"],
      ["status", "a", "b"],
      ["suspend", "group", "-l", "team=x"],
      ["suspend", "group", "--wait=1m", "--timeout", "2m"],
    ]) {
      const bad = await cocoon(argv);
      expectCode(bad, EXIT_USAGE);
      assert.match(bad.stderr, /^error: .+\nrun 'kubectl cocoon --help' for usage\n$/);
    }
    const noWrite = await getSet(env, ns, "group");
    assert.equal(noWrite.spec.suspend, false, "a bad --wait value stops suspend before its write");
  });

  it("lists sets by name for kubectl, and --dry-run=server has the API server admit a write it does not store", async () => {
    const listed = await cocoon(["status", "-o", "name"]);
    expectCode(listed, EXIT_OK);
    const names = listed.stdout.trim().split("\n");
    assert.ok(names.includes("cocoonset.cocoonset.cocoonstack.io/group"), listed.stdout);
    // A line kubectl takes back.
    const kubectl = join(controlPlaneBinDir(), "kubectl");
    const got = await run(
      kubectl,
      ["-n", ns, "get", "cocoonset.cocoonset.cocoonstack.io/group", "-o", "name"],
      {
        ...pluginBaseEnv(),
        PATH: process.env.PATH ?? "",
      },
    );
    assert.equal(got.stdout, "cocoonset.cocoonset.cocoonstack.io/group\n");

    const before = await getSet(env, ns, "group");
    const dry = await cocoon(["suspend", "group", "--dry-run=server"]);
    expectCode(dry, EXIT_OK);
    assert.equal(dry.stdout, "cocoonset.cocoonset.cocoonstack.io/group suspended (server dry run)\n");
    const after = await getSet(env, ns, "group");
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, "nothing stored");
    const client = await cocoon(["migrate", "group", "--to", nodeB, "--dry-run=client"]);
    expectCode(client, EXIT_OK);
    assert.equal(client.stdout, `cocoonset.cocoonset.cocoonstack.io/group migrating to ${nodeB} (dry run)\n`);
    assert.equal((await getSet(env, ns, "group")).metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it("takes the namespace from the context, --kubeconfig over KUBECONFIG, and refuses an unknown --context", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kubectl-cocoon-"));
    const config = parse(readFileSync(env.kubeconfigPath, "utf8")) as {
      contexts: { context: { namespace?: string } }[];
    };
    for (const c of config.contexts) c.context.namespace = ns;
    const withNamespace = join(dir, "config");
    writeFileSync(withNamespace, stringify(config));
    const stdout: string[] = [];
    const code = await runPlugin(["status", "group", "--kubeconfig", withNamespace], {
      stdout: (t) => stdout.push(t),
      stderr: () => {},
      env: { KUBECONFIG: join(dir, "missing") },
      now: () => Date.now(),
      sleep: async () => {},
    });
    assert.equal(code, EXIT_OK);
    assert.match(stdout.join(""), new RegExp(`^Namespace: +${ns}$`, "m"));
    const unknown = await cocoon(["status", "group", "--context", "nope"]);
    expectCode(unknown, EXIT_ERROR);
    assert.match(unknown.stderr, /context "nope" not found/);
  });

  it("runs as `kubectl cocoon` from PATH, with kubectl's completion", { timeout: 60_000 }, async () => {
    const binDir = controlPlaneBinDir();
    const path = [join(repoRoot, "bin"), binDir, process.env.PATH ?? ""].join(delimiter);
    const kubectl = join(binDir, "kubectl");
    const shown = await run(kubectl, ["cocoon", "-n", ns, "status", "group"], { ...baseEnv, PATH: path });
    expectCode(shown, 0);
    assert.match(shown.stdout, /^0 +main +group-0 /m);
    const missing = await run(kubectl, ["cocoon", "-n", ns, "status", "ghost"], { ...baseEnv, PATH: path });
    expectCode(missing, EXIT_ERROR);
    assert.match(missing.stderr, /cocoonset "ghost" not found/);
    const completed = await run(kubectl, ["__complete", "cocoon", "-n", ns, "suspend", ""], {
      ...baseEnv,
      PATH: path,
    });
    expectCode(completed, 0);
    assert.deepEqual(
      completed.stdout
        .split("\n")
        .filter((l) => l !== "" && !l.startsWith(":"))
        .sort(),
      ["fragile", "group", "solo", "squatter", "tenant"],
    );
  });
});

describe("kubectl cocoon with the idle policy", () => {
  /** `status SET` once its "Idle suspend at" line shows the status field `want` asks for. */
  function statusShowing(name: string, want: (cs: CocoonSet) => string | undefined) {
    return waitFor(`${name}: kubectl cocoon status to show the idle-suspend time`, async () => {
      const shown = await cocoon(["status", name]);
      expectCode(shown, EXIT_OK);
      const cs = await getSet(env, ns, name);
      const at = want(cs);
      return at !== undefined && shown.stdout.includes(`\nIdle suspend at: ${at} (in `)
        ? { cs, stdout: shown.stdout, at }
        : undefined;
    });
  }

  it("status shows the idle-suspend and expiry times, and touch parks the set later", {
    timeout: 180_000,
  }, async () => {
    const name = "idler";
    const expireAt = formatRFC3339(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);
    await createSet(name, {}, { [ANN_SUSPEND_AFTER_IDLE]: "12s", [ANN_EXPIRE_AT]: expireAt });
    await running(name);

    const first = await statusShowing(name, (cs) => cs.status?.idleSuspendAt);
    const clockStart = Date.parse(first.cs.status?.idleClockStart ?? "");
    const untouchedDeadline = clockStart + 12_000;
    assert.equal(Date.parse(first.at), untouchedDeadline);
    assert.match(first.stdout, new RegExp(`^Idle suspend at: ${first.at} \\(in \\d+s\\)$`, "m"));
    assert.match(first.stdout, new RegExp(`^Expires at: +${expireAt} \\(in (59|60)m\\)$`, "m"));
    const json = await cocoon(["status", name, "-o", "json"]);
    expectCode(json, EXIT_OK);
    const structured = JSON.parse(json.stdout) as { idleSuspendAt?: string; expireAt?: string };
    assert.deepEqual(
      [structured.idleSuspendAt, structured.expireAt],
      [first.cs.status?.idleSuspendAt, expireAt],
    );

    // Half-way to the deadline (the clock start is whole seconds, so the touch's second is later).
    await new Promise((done) => setTimeout(done, Math.max(0, clockStart + 6_000 - Date.now())));
    const touched = await cocoon(["touch", name]);
    expectCode(touched, EXIT_OK);
    const stamp = /last-activity=(\S+)\)$/m.exec(touched.stdout)?.[1] ?? "";
    const touchedAt = Date.parse(stamp);
    assert.ok(touchedAt >= clockStart + 6_000 && touchedAt < untouchedDeadline, stamp);

    // The pass armed for the old deadline reads the touch and re-arms: status shows the new time, and
    // the set has not parked at the time it would have without the touch.
    const postponed = await statusShowing(name, (cs) =>
      Date.parse(cs.status?.idleSuspendAt ?? "") === touchedAt + 12_000
        ? cs.status?.idleSuspendAt
        : undefined,
    );
    assert.notEqual(postponed.cs.spec.suspend, true);
    assert.match(postponed.stdout, /^Phase: +Running /m);

    const parked = await waitFor(
      `${name} Suspended`,
      async () => {
        const cs = await getSet(env, ns, name);
        return cs.status?.phase === "Suspended" ? cs : undefined;
      },
      90_000,
    );
    const parkedAt = Date.parse(parked.metadata.annotations?.[ANN_PARKED_AT] ?? "");
    assert.ok(
      parkedAt >= touchedAt + 12_000,
      `parked at ${formatRFC3339(parkedAt)}, touched at ${stamp}, untouched deadline ${formatRFC3339(untouchedDeadline)}`,
    );

    // Parked: no idle-suspend time any more; the expiry still shows, and so does the operator's event.
    const after = await cocoon(["status", name]);
    expectCode(after, EXIT_OK);
    assert.match(after.stdout, /^Phase: +Suspended /m);
    assert.doesNotMatch(after.stdout, /^Idle suspend at:/m);
    assert.match(after.stdout, new RegExp(`^Expires at: +${expireAt} \\(in (59|60)m\\)$`, "m"));
    assert.match(
      after.stdout,
      /^\S+ +Normal +IdleSuspended +idle for \d+s \(suspend-after-idle 12s\): suspending$/m,
    );
  });

  it("refuses to resume a set its expire-at keeps suspended, and writes nothing", {
    timeout: 120_000,
  }, async () => {
    const name = "expired";
    const expireAt = "2026-01-01T00:00:00Z";
    await createSet(name, {}, { [ANN_EXPIRE_AT]: expireAt, [ANN_EXPIRE_ACTION]: "Suspend" });
    const parked = await waitFor(
      `${name} Suspended by expiry`,
      async () => {
        const cs = await getSet(env, ns, name);
        return cs.status?.phase === "Suspended" ? cs : undefined;
      },
      60_000,
    );
    const refused = await cocoon(["resume", name, "--wait=20s"]);
    expectCode(refused, EXIT_ERROR);
    assert.equal(
      refused.stderr,
      `error: cocoonset "${name}" expired at ${expireAt} (${ANN_EXPIRE_AT}, ${ANN_EXPIRE_ACTION} Suspend): the operator would suspend it again at once; move or remove ${ANN_EXPIRE_AT} first, e.g. kubectl annotate cocoonset ${name} ${ANN_EXPIRE_AT}-\n`,
    );
    const after = await getSet(env, ns, name);
    assert.deepEqual(
      [after.metadata.generation, after.spec.suspend],
      [parked.metadata.generation, true],
      "nothing was written",
    );

    // With expire-at removed the set resumes as any other.
    const lifted = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/${name}`,
      { metadata: { annotations: { [ANN_EXPIRE_AT]: null } } },
      "application/merge-patch+json",
    );
    assert.equal(lifted.status, 200, JSON.stringify(lifted.body));
    expectCode(await cocoon(["resume", name, "--wait=120s"]), EXIT_OK);
  });
});
