import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Counter } from "prom-client";
import type { Pod } from "../../../src/apis/core.ts";
import { buildSubAgentPod } from "../../../src/cocoonset/decide/pods.ts";
import { readRebuildHistory } from "../../../src/cocoonset/decide/rebuildrules.ts";
import { isMissingPodParked, spendRebuildBudget } from "../../../src/cocoonset/rebuildbudget.ts";
import { ANN_DEAD_LETTER, ANN_REBUILD_HISTORY } from "../../../src/contract/keys.ts";
import { subagentDeadLetterTotal, subagentRebuildTotal } from "../../../src/metrics/cocoon.ts";
import {
  phaseFailed,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";

async function count(counter: Counter<"namespace" | "cocoonset">): Promise<number> {
  const metric = await counter.get();
  return metric.values.find((v) => v.labels.namespace === "ns" && v.labels.cocoonset === "demo")?.value ?? 0;
}

function failedSub(h: ScalingHarness): Pod {
  const pod = h.pod("demo-1");
  if (!pod) throw new Error("demo-1 missing");
  return pod;
}

function historyOf(h: ScalingHarness) {
  return readRebuildHistory(h.set().metadata.annotations?.[ANN_REBUILD_HISTORY], "demo").value;
}

function harnessWithFailedSub(generation = 1, annotations: Record<string, string> = {}): ScalingHarness {
  const cs = scalingSet({ agent: { image: "ubuntu", replicas: 1 } }, generation);
  cs.metadata.annotations = annotations;
  return scalingHarness(cs, (cs) => [phaseFailed(ready(buildSubAgentPod(cs, 1, "node-a")))]);
}

const TERMINAL = { drifted: false, reason: "MainAgentFailed" };

describe("spendRebuildBudget", () => {
  it("writes the history first, then deletes, counts and reports attempt 1/4", async () => {
    const h = harnessWithFailedSub();
    const before = await count(subagentRebuildTotal);
    const pass = h.pass();
    const decision = await spendRebuildBudget(pass, failedSub(h), TERMINAL);
    assert.deepEqual(decision, { action: "rebuild-now", attempt: 1 });
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}/${c.name}`),
      ["patch cocoonsets/demo", "delete pods/demo-1"],
    );
    assert.deepEqual(historyOf(h).get("demo-1"), { count: 1, lastDeleted: "2026-01-01T00:00:00Z" });
    assert.equal(pass.changed, true);
    assert.equal(await count(subagentRebuildTotal), before + 1);
    assert.deepEqual(h.events.events, [
      { object: "demo", type: "Normal", reason: "SubAgentRebuilding", message: "demo-1 attempt 1/4" },
    ]);
  });

  it("waits out the backoff (0 / 1 / 5 / 30 s) without a call, requeueing after what remains", async () => {
    const h = harnessWithFailedSub();
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt++) {
      const pass = h.pass();
      const decision = await spendRebuildBudget(pass, failedSub(h), TERMINAL);
      assert.deepEqual(decision, { action: "rebuild-now", attempt });
      // The recreated pod fails again at once.
      h.seedPods(phaseFailed(ready(buildSubAgentPod(h.set(), 1, "node-a"))));
      h.client.clearCalls();
      const waiting = h.pass();
      const next = await spendRebuildBudget(waiting, failedSub(h), TERMINAL);
      if (attempt === 4) {
        assert.equal(next.action, "dead-letter");
        break;
      }
      assert.equal(next.action, "wait");
      assert.deepEqual(h.client.writes(), []);
      waits.push(waiting.requeueAfterMs ?? -1);
      h.clock.advance(waiting.requeueAfterMs ?? 0);
    }
    assert.deepEqual(waits, [1_000, 5_000, 30_000]);
  });

  it("dead-letters after 4 rebuilds at the set's generation, with a Warning and the metric; then leaves the pod be", async () => {
    const h = harnessWithFailedSub(7, {
      [ANN_REBUILD_HISTORY]: JSON.stringify({ "demo-1": { count: 4, lastDeleted: "2025-12-31T00:00:00Z" } }),
    });
    const before = await count(subagentDeadLetterTotal);
    const pass = h.pass();
    assert.deepEqual(await spendRebuildBudget(pass, failedSub(h), TERMINAL), { action: "dead-letter" });
    assert.equal(h.pod("demo-1")?.metadata.annotations?.[ANN_DEAD_LETTER], "7");
    assert.deepEqual(h.deleted(), []);
    assert.equal(await count(subagentDeadLetterTotal), before + 1);
    assert.equal(h.events.events[0]?.type, "Warning");
    assert.equal(h.events.events[0]?.reason, "SubAgentDeadLetter");
    assert.equal(isMissingPodParked(h.pass(), "demo-1"), true);

    h.client.clearCalls();
    assert.deepEqual(await spendRebuildBudget(h.pass(), failedSub(h), TERMINAL), { action: "parked" });
    assert.deepEqual(h.client.writes(), []);
    assert.equal(h.events.events.length, 1);
  });
});
