// Restores and checkpoints of one set in its own repositories, end to end on the real API server,
// registry (distribution 2.8, which deletes only by digest) and the vk-cocoon simulator: a set
// restored from a checkpoint taken of an earlier restore. Its `:hibernate` and that checkpoint's tag
// hold the same snapshot; each must outlive the other's delete. The wake's drop of `:hibernate`
// leaves the checkpoint's tag and the checkpoint Ready; the checkpoint's delete leaves a suspended
// set's `:hibernate`, from which the set then wakes.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { ANN_HIBERNATE_RECLAIM, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  checkpointsPath,
  createCheckpoint,
  getCheckpoint,
  tagDigest,
  waitCheckpointGone,
  waitCheckpointPhase,
} from "../support/checkpointapi.ts";
import { createRestore, waitRestoreDone } from "../support/restoreapi.ts";
import { createPoolSet, getSet, patchSetSpec } from "../support/setapi.ts";
import { E2E_IMAGE, type SetEnv, startSetEnv, waitPhase, waitRunning } from "../support/setwait.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "shared-digest");
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

const MAIN_ONLY: Partial<CocoonSetSpec> = { agent: { image: E2E_IMAGE, replicas: 0, mode: "run" } };
const vmName = (set: string) => `vk-${ns}-${set}-0`;

async function checkpointOf(name: string, setName: string) {
  const res = await createCheckpoint(env, ns, name, setName);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return waitCheckpointPhase(env, ns, name, "Ready");
}

async function restore(name: string, setName: string, checkpointName: string) {
  const res = await createRestore(env, ns, name, setName, checkpointName);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const done = await waitRestoreDone(env, ns, name);
  assert.equal(done.status?.phase, "Restored", JSON.stringify(done.status));
  return done;
}

/**
 * A suspended set restored from C1, checkpointed as C2 and restored from C2: its `:hibernate` is C2's
 * snapshot, in the repository that also holds `ckpt-<C2>`. Returns C2's member digest.
 */
async function restoredFromCheckpointOfRestore(set: string, c1: string, c2: string): Promise<string> {
  await createPoolSet(env, ns, pool, set, MAIN_ONLY);
  await waitRunning(env, ns, set, 1);
  await patchSetSpec(env, ns, set, { suspend: true });
  await waitPhase(env, ns, set, "Suspended", 90_000, true);
  await checkpointOf(c1, set);
  await restore(`${c1}-r`, set, c1);
  const ck = await checkpointOf(c2, set);
  const digest = ck.status?.members?.[0]?.digest;
  assert.ok(digest);
  await restore(`${c2}-r`, set, c2);
  assert.equal((await getSet(env, ns, set)).status?.phase, "Suspended");
  return digest;
}

describe("a restore from a checkpoint taken of an earlier restore", () => {
  it("the wake's drop of :hibernate leaves the checkpoint's tag, and the checkpoint stays Ready", {
    timeout: 300_000,
  }, async () => {
    const vm = vmName("s1");
    const c2Digest = await restoredFromCheckpointOfRestore("s1", "s1-c1", "s1-c2");
    const hibernate = await tagDigest(oci, vm, TAG_HIBERNATE);
    assert.ok(hibernate, "the restore's :hibernate is in place");
    assert.notEqual(hibernate, c2Digest, ":hibernate has a digest of its own");

    await patchSetSpec(env, ns, "s1", { suspend: false });
    await waitRunning(env, ns, "s1", 1);
    assert.equal(sim.record.events({ kind: "wake", vmName: vm }).at(-1)?.snapshot?.digest, hibernate);
    await waitFor(
      "s1's :hibernate dropped after the wake",
      async () => {
        const cs = await getSet(env, ns, "s1");
        if (cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] !== undefined) return undefined;
        return (await tagDigest(oci, vm, TAG_HIBERNATE)) === undefined ? true : undefined;
      },
      60_000,
    );
    assert.equal(await tagDigest(oci, vm, "ckpt-s1-c2"), c2Digest, "the checkpoint's tag is still there");
    assert.equal((await getCheckpoint(env, ns, "s1-c2"))?.status?.phase, "Ready");
  });

  it("deleting the checkpoint leaves the suspended set's :hibernate, and the set wakes Running from it", {
    timeout: 300_000,
  }, async () => {
    const vm = vmName("s2");
    await restoredFromCheckpointOfRestore("s2", "s2-c1", "s2-c2");
    const hibernate = await tagDigest(oci, vm, TAG_HIBERNATE);
    assert.ok(hibernate);

    const deleted = await apiRequest(env, "DELETE", `${checkpointsPath(ns)}/s2-c2`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await waitCheckpointGone(env, ns, "s2-c2", 60_000);
    assert.equal(await tagDigest(oci, vm, "ckpt-s2-c2"), undefined, "the checkpoint's tag went");
    assert.equal(await tagDigest(oci, vm, TAG_HIBERNATE), hibernate, "the set's :hibernate stayed");

    await patchSetSpec(env, ns, "s2", { suspend: false });
    await waitRunning(env, ns, "s2", 1);
    const woke = sim.record.events({ kind: "wake", vmName: vm }).at(-1);
    assert.equal(woke?.snapshot?.digest, hibernate, "woke from the restored snapshot");
  });
});
