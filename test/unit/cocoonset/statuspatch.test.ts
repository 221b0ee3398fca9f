// Step 14: /status from the classification, patched only when it differs (docs/cocoonset.md,
// "14. Status").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { computeStatus } from "../../../src/cocoonset/decide/computestatus.ts";
import { patchStatus } from "../../../src/cocoonset/steps/status.ts";
import { PODS } from "../../../src/controller/resources.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { Pass } from "../../../src/pass/pass.ts";
import {
  cocoonSet,
  type Harness,
  harness,
  SET,
  SET_UID,
  seedSet,
  setPod,
  storedSet,
} from "../../support/cocoonset.ts";

const NOW = "2026-01-01T00:00:00Z";

function passOver(h: Harness, cs: CocoonSet, podsOf: (cs: CocoonSet) => Pod[] = () => []): Pass {
  const stored = seedSet(h.client, cs);
  const pods = podsOf(stored).map((pod) => h.client.seed(PODS, pod));
  const owner = { name: stored.metadata.name ?? "", uid: stored.metadata.uid ?? "" };
  return new Pass(stored, classifyPods(pods, owner), h.deps, new AbortController().signal);
}

const mainOnly = (cs: CocoonSet) => [setPod(cs, "demo-0", "main", "0")];

/** A set whose stored status is what step 14 computes for just a Ready main. */
function settledSet(): CocoonSet {
  const cs = cocoonSet();
  const status = computeStatus(cs, classifyPods(mainOnly(cs), { name: SET, uid: SET_UID }), { now: NOW });
  return { ...cs, status };
}

describe("patchStatus", () => {
  it("patches /status with the computed status when it differs", async () => {
    const h = harness();
    const pass = passOver(h, cocoonSet(), mainOnly);

    assert.deepEqual(await patchStatus(pass), { done: true, result: {} });

    const writes = h.client.writes();
    assert.deepEqual(
      writes.map((c) => `${c.verb} ${c.resource}/${c.subresource}`),
      ["patch cocoonsets/status"],
    );
    const status = storedSet(h.client)?.status;
    assert.equal(status?.phase, "Running");
    assert.equal(status?.readyAgents, 1);
    assert.equal(status?.agents?.[0]?.vmName, "vk-ns-demo-0");
    assert.equal(status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime, NOW);
  });

  it("makes no call when the status is already current", async () => {
    const h = harness();
    const pass = passOver(h, settledSet(), mainOnly);

    assert.deepEqual(await patchStatus(pass), { done: true, result: {} });
    assert.deepEqual(h.client.calls, []);
  });

  it("removes fields the new status no longer has", async () => {
    const h = harness();
    const cs = settledSet();
    const status = cs.status ?? assert.fail("settled set has a status");
    const pass = passOver(
      h,
      { ...cs, status: { ...status, toolboxes: [{ name: "tb", vmName: "vk-ns-demo-tb" }] } },
      mainOnly,
    );

    await patchStatus(pass);

    const body = h.client.writes()[0]?.body as { status: Record<string, unknown> };
    assert.equal(body.status.toolboxes, null);
    assert.equal(storedSet(h.client)?.status?.toolboxes, undefined);
  });

  it("reports the phase a step forced", async () => {
    const h = harness();
    const pass = passOver(h, settledSet(), mainOnly);
    pass.phase = "Suspended";

    await patchStatus(pass);
    assert.equal(storedSet(h.client)?.status?.phase, "Suspended");
  });

  it("requeues at once and skips the patch when steps 12–13 wrote", async () => {
    const h = harness();
    const pass = passOver(h, cocoonSet(), mainOnly);
    pass.changed = true;

    assert.deepEqual(await patchStatus(pass), { done: true, result: { requeue: true } });
    assert.deepEqual(h.client.calls, []);
  });

  it("requeues after the smallest pending rebuild backoff", async () => {
    const h = harness();
    const pass = passOver(h, settledSet(), mainOnly);
    pass.requeueWithin(30_000);
    pass.requeueWithin(5_000);

    assert.deepEqual(await patchStatus(pass), { done: true, result: { requeueAfterMs: 5_000 } });
    assert.deepEqual(h.client.calls, []);
  });
});
