// The pod side of the suspend gate (step 6) on pods that carry no annotations at all: like a Go read
// of a nil map, a missing annotation map means an unmanaged pod, never a reason for the pass to fail.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../../src/apis/core.ts";
import { buildMainPod } from "../../../../src/cocoonset/decide/pods.ts";
import { gatePod, planSuspendGate } from "../../../../src/cocoonset/decide/suspendgate.ts";
import { scalingSet } from "../../../support/scaling.ts";
import { hibernated } from "../../../support/suspend.ts";

function bare(name: string): Pod {
  return { metadata: { name, namespace: "ns" }, spec: { containers: [{ name: "agent" }] } };
}

describe("suspend gate on a pod without annotations", () => {
  it("skips it: it has no managed VM to snapshot", () => {
    assert.deepEqual(gatePod(bare("demo-x"), 3), { verdict: "skip" });
  });

  it("still probes the managed pods beside it", () => {
    const main = hibernated(buildMainPod(scalingSet({ suspend: true })), 3);
    assert.deepEqual(planSuspendGate([bare("demo-x"), main], 3), {
      waitingOn: undefined,
      probes: ["vk-ns-demo-0"],
    });
  });
});
