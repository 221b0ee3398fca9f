// Step 6 (suspend) behind the guest gate: the group's pre-hibernate hooks run before any VM of it is
// annotated. While they run the set is Suspending and nothing is annotated; a failed one leaves the
// set Running with the reason in its Suspended condition, the deadline disarmed and a requeue for
// the retry; once they passed the suspend goes on as it always did.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod } from "../../../src/cocoonset/decide/pods.ts";
import { reconcileSuspend } from "../../../src/cocoonset/steps/suspend.ts";
import { ANN_LIFECYCLE_STATE, ANN_SUSPENDING_SINCE, LIFECYCLE_READY } from "../../../src/contract/keys.ts";
import { COCOONSETS } from "../../../src/controller/resources.ts";
import { hookable } from "../../../src/guest/decide.ts";
import { GuestHooksGate } from "../../../src/guest/gate.ts";
import {
  ANN_GUEST_HOOKS,
  ANN_GUEST_POLICY,
  FAILED_HOOK_RETRY_MS,
  REASON_PRE_HIBERNATE_FAILED,
} from "../../../src/guest/keys.ts";
import { encodeGuestHooksRecord, type PhaseRecord } from "../../../src/guest/record.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import { ready, type ScalingHarness, scalingHarness, scalingSet } from "../../support/scaling.ts";
import { annotate, timeline } from "../../support/suspend.ts";
import { hook, POLICY, phase, policy } from "./fixture.ts";

const flush = policy({ hooks: [hook("flush", ["PreHibernate"])] });

/** The set, suspend requested, naming the policy, its status Running as before the suspend. */
function suspending(): CocoonSet {
  const cs = scalingSet({ suspend: true, agent: { image: "ubuntu", replicas: 1 } }, 1);
  cs.metadata.annotations = { ...cs.metadata.annotations, [ANN_GUEST_POLICY]: POLICY };
  cs.status = { phase: "Running", readyAgents: 2, desiredAgents: 2, readyToolboxes: 0, desiredToolboxes: 0 };
  return cs;
}

/** Ready and reported on by vk-cocoon, with the pre-hibernate phase recorded for its VM when given. */
function running(pod: Pod, pre?: PhaseRecord): Pod {
  ready(pod);
  annotate(pod, { [ANN_LIFECYCLE_STATE]: LIFECYCLE_READY });
  if (pre) {
    const vmID = pod.metadata.annotations?.["vm.cocoonstack.io/id"] ?? "";
    annotate(pod, { [ANN_GUEST_HOOKS]: encodeGuestHooksRecord({ vmID, preHibernate: pre }) });
  }
  return pod;
}

function withGate(pods: (cs: CocoonSet) => Pod[], since?: string) {
  const h = scalingHarness(suspending(), pods);
  if (since) {
    const stored = h.set();
    stored.metadata.annotations = { ...stored.metadata.annotations, [ANN_SUSPENDING_SINCE]: since };
    h.client.seed(COCOONSETS, stored);
  }
  const requests = new PreHibernateRequests();
  const gate = new GuestHooksGate({ policy: () => flush, requests, clock: h.clock });
  const queued: string[] = [];
  gate.enqueue = (_ns, name) => queued.push(name);
  h.deps.guest = gate;
  return { h, queued, requests, calls: timeline(h) };
}

const run = (h: ScalingHarness) => reconcileSuspend(h.pass());
const suspended = (h: ScalingHarness) => h.set().status?.conditions?.find((c) => c.type === "Suspended");

describe("step 6 behind pre-hibernate hooks", () => {
  it("while the hooks are owed: Suspending, the pods queued once, nothing annotated", async () => {
    const { h, queued, calls } = withGate((cs) => [
      running(buildMainPod(cs)),
      running(buildSubAgentPod(cs, 1, "n")),
    ]);
    assert.ok(hookable(h.pod("demo-0") as Pod), "the builders' pods are hookable");
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: 5000 } });
    assert.deepEqual(calls, ["patch cocoonsets/demo status phase=Suspending"]);
    assert.deepEqual(queued, ["demo-0", "demo-1"]);
    calls.length = 0;
    await run(h);
    assert.deepEqual(calls, [], "asked again: nothing queued again, nothing written");
    assert.deepEqual(queued, ["demo-0", "demo-1"]);
  });

  it("a failed hook: nothing annotated, Running kept, the reason in Suspended, deadline cleared", async () => {
    const failed = phase("Failed", { hook: "flush", message: "exited with status 5" });
    const { h, queued, calls } = withGate(
      (cs) => [running(buildMainPod(cs), failed), running(buildSubAgentPod(cs, 1, "n"))],
      "2025-12-31T23:59:00Z",
    );
    h.clock.advance(60_000);
    const outcome = await run(h);
    assert.deepEqual(outcome, { done: true, result: { requeueAfterMs: FAILED_HOOK_RETRY_MS - 60_000 } });
    assert.deepEqual(calls, [
      "patch cocoonsets/demo suspending-since-",
      "patch cocoonsets/demo status phase=Running",
    ]);
    assert.equal(h.set().status?.phase, "Running");
    assert.deepEqual([suspended(h)?.status, suspended(h)?.reason], ["False", REASON_PRE_HIBERNATE_FAILED]);
    assert.match(
      suspended(h)?.message ?? "",
      /PreHibernate hook flush failed on pod demo-0: exited with status 5/,
    );
    assert.deepEqual(queued, ["demo-1"], "the other VM's hook is still asked for");
  });

  it("once every VM's hooks passed, the suspend goes on as before", async () => {
    const ok = phase("Succeeded");
    const { h, queued, calls } = withGate((cs) => [
      running(buildMainPod(cs), ok),
      running(buildSubAgentPod(cs, 1, "n"), ok),
    ]);
    await run(h);
    assert.deepEqual(queued, []);
    assert.deepEqual(
      calls.filter((c) => c.startsWith("patch pods/")),
      ["patch pods/demo-0 hibernate=true", "patch pods/demo-1 hibernate=true"],
    );
    assert.match(calls[0] ?? "", /^patch cocoonsets\/demo hibernate-reclaim=/);
    assert.equal(h.set().status?.phase, "Suspending");
  });
});
