// kubectl cocoon checkpoint / checkpoints / branch on the real environment: the operator in-process,
// vk-cocoon simulated on one node, a real registry. `checkpoint` suspends a running group for the copy
// and resumes it after, leaves a suspended one suspended; `branch` starts a set whose VMs restore
// from the checkpointed snapshots (the simulator journal says which); each refuses bad input with
// a message and exit 1, writing nothing.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import type { CocoonCheckpoint } from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, CONDITION_BRANCHED } from "../../src/checkpoint/keys.ts";
import { TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { EXIT_ERROR, EXIT_OK, EXIT_USAGE } from "../../src/plugin/errors.ts";
import { OciClient } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { expectCode, runCocoon } from "../support/pluginrun.ts";
import { getSet, setsPath } from "../support/setapi.ts";
import { createSet, E2E_IMAGE, type SetEnv, startSetEnv, waitRunning } from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let e2e: SetEnv;
let ns: string;

before(async () => {
  e2e = await startSetEnv(env, "plugck");
  ns = e2e.ns;
});

after(async () => {
  await e2e?.stop();
});

const cocoon = (argv: string[]) => runCocoon(ns, argv);
const vmName = (set: string, slot: number | string) => `vk-${ns}-${set}-${slot}`;
const checkpointsPath = () => `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`;
const SRC_SLOTS = [0, 1, "tools"] as const;

const groupSpec = (): Partial<CocoonSetSpec> => ({
  nodePool: e2e.pool,
  agent: { image: E2E_IMAGE, replicas: 1, mode: "clone" },
  toolboxes: [{ name: "tools", image: E2E_IMAGE, mode: "run" }],
});

async function getCheckpoint(name: string): Promise<CocoonCheckpoint | undefined> {
  const res = await apiRequest(env, "GET", `${checkpointsPath()}/${name}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonCheckpoint;
}

async function setExists(name: string): Promise<boolean> {
  return (await apiRequest(env, "GET", `${setsPath(ns)}/${name}`)).status === 200;
}

function condition(cs: CocoonSet, type: string) {
  return cs.status?.conditions?.find((c) => c.type === type);
}

describe("kubectl cocoon checkpoint", () => {
  it("suspends a running group, waits for the copy, then resumes it", { timeout: 240_000 }, async () => {
    await createSet(env, ns, "src", groupSpec());
    const started = await waitRunning(env, ns, "src", 2, 1);
    const generation = started.metadata.generation ?? 0;

    const made = await cocoon(["checkpoint", "src", "ck1", "--wait=120s"]);
    expectCode(made, EXIT_OK);
    assert.equal(
      made.stdout,
      [
        "cocooncheckpoint.cocoonset.cocoonstack.io/ck1 created",
        "cocoonset.cocoonset.cocoonstack.io/src suspended",
        "cocoonset.cocoonset.cocoonstack.io/src resumed",
        "",
      ].join("\n"),
    );
    assert.match(made.stderr, new RegExp(`cocoonset "src" is Suspended \\(generation ${generation + 1}\\)`));
    assert.match(made.stderr, /cocooncheckpoint "ck1" is Ready: 3 snapshots, /);
    assert.match(made.stderr, new RegExp(`cocoonset "src" is Ready \\(generation ${generation + 2}\\)`));

    const ck = await getCheckpoint("ck1");
    assert.equal(ck?.status?.phase, "Ready");
    const members = ck?.status?.members ?? [];
    assert.deepEqual(
      members.map((m) => m.vmName),
      SRC_SLOTS.map((slot) => vmName("src", slot)),
    );
    const readyAt = Date.parse(ck?.status?.readyTime ?? "");
    for (const member of members) {
      assert.ok(member.digest);
      assert.equal((await oci.getManifest(oci.repository(member.vmName), "ckpt-ck1"))?.digest, member.digest);
      // The resume came after the copy: each VM woke from its own snapshot, after Ready.
      const woke = e2e.sim.record.events({ kind: "wake", vmName: member.vmName }).at(-1);
      assert.ok(woke && woke.time >= readyAt, `${member.vmName} woke after the checkpoint was Ready`);
      assert.notEqual(woke.snapshot?.digest, member.digest);
    }
    const cs = await getSet(env, ns, "src");
    assert.equal(cs.spec.suspend, false, "the previous suspend state is restored");
    assert.deepEqual(
      [condition(cs, "Ready")?.status, condition(cs, "Ready")?.observedGeneration],
      ["True", generation + 2],
    );
  });

  it("leaves an already suspended set suspended", { timeout: 180_000 }, async () => {
    expectCode(await cocoon(["suspend", "src", "--wait=120s"]), EXIT_OK);
    const before = await getSet(env, ns, "src");
    const made = await cocoon(["checkpoint", "src", "ck2", "--wait=120s", "-o", "json"]);
    expectCode(made, EXIT_OK);
    const ck = JSON.parse(made.stdout) as CocoonCheckpoint;
    assert.deepEqual([ck.metadata.name, ck.status?.phase], ["ck2", "Ready"]);
    const after = await getSet(env, ns, "src");
    assert.deepEqual(
      [after.spec.suspend, after.metadata.generation, after.status?.phase],
      [true, before.metadata.generation, "Suspended"],
    );
    expectCode(await cocoon(["resume", "src", "--wait=120s"]), EXIT_OK);
  });

  it("refuses an unknown set, an invalid name (the CRD's message) and an existing checkpoint", async () => {
    const before = await getSet(env, ns, "src");
    const unknown = await cocoon(["checkpoint", "ghost", "ck9"]);
    expectCode(unknown, EXIT_ERROR);
    assert.equal(unknown.stderr, `error: cocoonset "ghost" not found in namespace "${ns}"\n`);

    const tooLong = await cocoon(["checkpoint", "src", "x".repeat(124)]);
    expectCode(tooLong, EXIT_ERROR);
    assert.match(
      tooLong.stderr,
      /^Error from server \(Invalid\): .*metadata\.name must be at most 123 characters: the registry tag ckpt-<name> is limited to 128/,
    );
    const upper = await cocoon(["checkpoint", "src", "Before_Eval"]);
    expectCode(upper, EXIT_ERROR);
    assert.match(upper.stderr, /^Error from server \(Invalid\): .*RFC 1123 subdomain/);

    const taken = await cocoon(["checkpoint", "src", "ck1"]);
    expectCode(taken, EXIT_ERROR);
    assert.match(
      taken.stderr,
      new RegExp(
        `^error: cocooncheckpoint "ck1" already exists in namespace "${ns}" \\(of cocoonset "src", phase Ready\\)`,
      ),
    );
    const usage = await cocoon(["checkpoint", "src"]);
    expectCode(usage, EXIT_USAGE);
    assert.match(usage.stderr, /^error: checkpoint needs NAME/);

    const after = await getSet(env, ns, "src");
    assert.deepEqual(
      [after.metadata.generation, after.spec.suspend],
      [before.metadata.generation, false],
      "nothing was suspended",
    );
    assert.equal(await getCheckpoint("x".repeat(124)), undefined);
  });
});

describe("kubectl cocoon checkpoints", () => {
  it("lists the set's checkpoints with phase, members, bytes and age", async () => {
    const listed = await cocoon(["checkpoints", "src"]);
    expectCode(listed, EXIT_OK);
    const lines = listed.stdout.trimEnd().split("\n");
    assert.match(lines[0] ?? "", /^NAME +PHASE +MEMBERS +BYTES +AGE$/);
    assert.deepEqual(
      lines.slice(1).map((l) => l.split(/ +/).slice(0, 3)),
      [
        ["ck1", "Ready", "3"],
        ["ck2", "Ready", "3"],
      ],
    );
    assert.match(lines[1] ?? "", /^ck1 +Ready +3 +[\d.]+\S*B +\d+[sm]$/);
    const yaml = await cocoon(["checkpoints", "src", "-o", "json"]);
    expectCode(yaml, EXIT_OK);
    const parsed = JSON.parse(yaml.stdout) as {
      checkpoints: { name: string; members: { vmName: string }[] }[];
    };
    assert.deepEqual(
      parsed.checkpoints[0]?.members.map((m) => m.vmName),
      SRC_SLOTS.map((slot) => vmName("src", slot)),
    );
    const unknown = await cocoon(["checkpoints", "ghost"]);
    expectCode(unknown, EXIT_ERROR);
    assert.match(unknown.stderr, /^error: cocoonset "ghost" not found/);
  });
});

describe("kubectl cocoon branch", () => {
  it("starts a set whose VMs restore from the checkpoint, with --replicas", {
    timeout: 240_000,
  }, async () => {
    const ck = await getCheckpoint("ck1");
    const digests = new Map((ck?.status?.members ?? []).map((m) => [m.slot ?? m.toolbox, m.digest]));
    const made = await cocoon(["branch", "ck1", "b1", "--replicas", "2", "--wait=120s"]);
    expectCode(made, EXIT_OK);
    assert.equal(made.stdout, "cocoonset.cocoonset.cocoonstack.io/b1 created (from checkpoint ck1)\n");
    assert.match(made.stderr, /cocoonset "b1" is Ready \(generation 1\)/);
    const cs = await waitRunning(env, ns, "b1", 3, 1);
    assert.equal(cs.metadata.annotations?.[ANN_FROM_CHECKPOINT], "ck1");
    assert.deepEqual([cs.spec.agent.replicas, cs.spec.suspend], [2, undefined]);
    assert.equal(condition(cs, CONDITION_BRANCHED)?.status, "True");
    for (const slot of SRC_SLOTS) {
      const restores = e2e.sim.record.events({ kind: "restore", vmName: vmName("b1", slot) });
      assert.equal(restores.length, 1, `b1 ${slot} restored`);
      assert.equal(restores[0]?.snapshot?.digest, digests.get(slot));
      assert.equal(restores[0]?.snapshot?.ref, `${oci.repository(vmName("b1", slot))}:${TAG_HIBERNATE}`);
    }
    assert.equal(e2e.sim.record.events({ kind: "restore", vmName: vmName("b1", 2) }).length, 0);
  });

  it("refuses an unknown or unready checkpoint and an existing set, creating nothing", async () => {
    const unknown = await cocoon(["branch", "ghost", "b9"]);
    expectCode(unknown, EXIT_ERROR);
    assert.equal(unknown.stderr, `error: cocooncheckpoint "ghost" not found in namespace "${ns}"\n`);

    const pending = await apiRequest(env, "POST", checkpointsPath(), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonCheckpoint",
      metadata: { name: "unready" },
      spec: { cocoonSetRef: { name: "no-such-set" } },
    });
    assert.equal(pending.status, 201, JSON.stringify(pending.body));
    await waitFor("unready Pending", async () =>
      (await getCheckpoint("unready"))?.status?.phase === "Pending" ? true : undefined,
    );
    const notReady = await cocoon(["branch", "unready", "b9"]);
    expectCode(notReady, EXIT_ERROR);
    assert.match(
      notReady.stderr,
      /^error: cocooncheckpoint "unready" is not Ready \(phase Pending: CocoonSet no-such-set not found\)/,
    );
    const exists = await cocoon(["branch", "ck1", "b1"]);
    expectCode(exists, EXIT_ERROR);
    assert.match(exists.stderr, new RegExp(`^error: cocoonset "b1" already exists in namespace "${ns}"`));
    assert.equal(await setExists("b9"), false);
  });

  it("explains what is needed once the source set is gone; its checkpoints are still listed", {
    timeout: 180_000,
  }, async () => {
    await createSet(env, ns, "tmp", { nodePool: e2e.pool });
    await waitRunning(env, ns, "tmp", 1, 0);
    expectCode(await cocoon(["checkpoint", "tmp", "ck-tmp"]), EXIT_OK);
    const deleted = await apiRequest(env, "DELETE", `${setsPath(ns)}/tmp`);
    assert.ok(deleted.status === 200 || deleted.status === 202, JSON.stringify(deleted.body));
    await waitFor("tmp gone", async () => ((await setExists("tmp")) ? undefined : true), 60_000);

    const gone = await cocoon(["branch", "ck-tmp", "b9"]);
    expectCode(gone, EXIT_ERROR);
    assert.match(
      gone.stderr,
      /^error: cocoonset "tmp", which cocooncheckpoint "ck-tmp" was taken from, no longer exists, .*annotation cocoonset.cocoonstack.io\/from-checkpoint: ck-tmp\. The checkpoint holds main \(image ubuntu-dev-base\);/,
    );
    assert.equal(await setExists("b9"), false);
    const listed = await cocoon(["checkpoints", "tmp"]);
    expectCode(listed, EXIT_OK);
    assert.match(listed.stdout, /^ck-tmp +Ready +1 /m);
    assert.match(listed.stderr, /cocoonset "tmp" no longer exists; its checkpoints remain/);
  });
});
