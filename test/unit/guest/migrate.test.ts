// Step 8 (cross-node migration) behind the guest gate: the main's pre-hibernate hooks run before it is
// quiesced for its snapshot. While they run the set is Migrating, the main is not annotated and the
// pass polls; a failed Fail hook leaves the main running where it is until its retry is due; once the
// hooks passed the quiesce goes on as it always did.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { reconcileMigration } from "../../../src/cocoonset/steps/migrate.ts";
import { ANN_HIBERNATE, ANN_VM_ID } from "../../../src/contract/keys.ts";
import { GuestHooksGate } from "../../../src/guest/gate.ts";
import { ANN_GUEST_HOOKS, ANN_GUEST_POLICY, FAILED_HOOK_RETRY_MS } from "../../../src/guest/keys.ts";
import { encodeGuestHooksRecord, type PhaseRecord } from "../../../src/guest/record.ts";
import { PreHibernateRequests } from "../../../src/guest/requests.ts";
import { REQUEUE_POLL_MS } from "../../../src/pass/pass.ts";
import {
  MAIN_VM,
  mainBuiltUnderPin,
  ready,
  type ScalingHarness,
  scalingHarness,
  scalingSet,
} from "../../support/scaling.ts";
import { annotate, timeline } from "../../support/suspend.ts";
import { hook, POLICY, phase, policy } from "./fixture.ts";

const flush = policy({ hooks: [hook("flush", ["PreHibernate"])] });
const PROBE = `registry hasManifest ${MAIN_VM}:hibernate`;
const MIGRATING = "patch cocoonsets/demo status phase=Migrating";
const QUIESCE = "patch pods/demo-0 hibernate=true";

/** Pinned to node-b and naming the policy; its main was built unpinned and runs on node-a. */
function pinnedAway(): CocoonSet {
  const cs = scalingSet({ nodeName: "node-b" });
  cs.metadata.annotations = { ...cs.metadata.annotations, [ANN_GUEST_POLICY]: POLICY };
  return cs;
}

/** The main live on node-a, with the pre-hibernate phase recorded for its VM when given. */
function mainOnNodeA(cs: CocoonSet, pre?: PhaseRecord): Pod {
  const pod = ready(mainBuiltUnderPin(cs, undefined), "node-a");
  if (pre) {
    const vmID = pod.metadata.annotations?.[ANN_VM_ID] ?? "";
    annotate(pod, { [ANN_GUEST_HOOKS]: encodeGuestHooksRecord({ vmID, preHibernate: pre }) });
  }
  return pod;
}

function withGate(pre?: PhaseRecord) {
  const h = scalingHarness(pinnedAway(), (cs) => [mainOnNodeA(cs, pre)]);
  const requests = new PreHibernateRequests();
  const gate = new GuestHooksGate({ policy: () => flush, requests, clock: h.clock });
  const queued: string[] = [];
  gate.enqueue = (_ns, name) => queued.push(name);
  h.deps.guest = gate;
  return { h, queued, calls: timeline(h) };
}

const run = (h: ScalingHarness) => reconcileMigration(h.pass());
const quiesced = (h: ScalingHarness) => h.pod("demo-0")?.metadata.annotations?.[ANN_HIBERNATE];

describe("step 8 behind pre-hibernate hooks", () => {
  it("while the main's hooks are owed: Migrating, the main queued once, not annotated, polled", async () => {
    const { h, queued, calls } = withGate();
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: REQUEUE_POLL_MS } });
    assert.deepEqual(calls, [PROBE, MIGRATING]);
    assert.equal(h.set().status?.phase, "Migrating");
    assert.equal(quiesced(h), undefined);
    assert.deepEqual(queued, ["demo-0"]);

    calls.length = 0;
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: REQUEUE_POLL_MS } });
    assert.deepEqual(calls, [PROBE], "asked again: nothing queued again, nothing written");
    assert.deepEqual(queued, ["demo-0"]);
  });

  it("once the hook is recorded for the VM, the next pass quiesces the main", async () => {
    const { h, queued, calls } = withGate();
    await run(h);
    const main = h.pod("demo-0") as Pod;
    const vmID = main.metadata.annotations?.[ANN_VM_ID] ?? "";
    h.seedPods(
      annotate(main, {
        [ANN_GUEST_HOOKS]: encodeGuestHooksRecord({ vmID, preHibernate: phase("Succeeded") }),
      }),
    );
    calls.length = 0;
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: REQUEUE_POLL_MS } });
    assert.deepEqual(calls, [PROBE, QUIESCE], "Migrating is stored already");
    assert.equal(quiesced(h), "true");
    assert.deepEqual(queued, ["demo-0"]);
  });

  it("a failed hook: the main is not annotated nor queued, retried when the retry is due", async () => {
    const failed = phase("Failed", { hook: "flush", message: "exited with status 5" });
    const { h, queued, calls } = withGate(failed);
    h.clock.advance(60_000);
    assert.deepEqual(await run(h), {
      done: true,
      result: { requeueAfterMs: FAILED_HOOK_RETRY_MS - 60_000 },
    });
    assert.deepEqual(calls, [PROBE, MIGRATING]);
    assert.equal(quiesced(h), undefined);
    assert.deepEqual(queued, []);
    // The set says why it stays Migrating.
    assert.deepEqual(
      h.events.events.map((e) => [e.type, e.reason, e.message]),
      [
        [
          "Warning",
          "PreHibernateHookFailed",
          "migration to node-b waits: PreHibernate hook flush failed on pod demo-0: exited with status 5",
        ],
      ],
    );

    // The retry is due: the hook is asked for again, and still nothing is annotated.
    h.clock.advance(FAILED_HOOK_RETRY_MS);
    calls.length = 0;
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: REQUEUE_POLL_MS } });
    assert.deepEqual(calls, [PROBE]);
    assert.equal(quiesced(h), undefined);
    assert.deepEqual(queued, ["demo-0"]);
  });

  it("hooks passed for the VM running now: Migrating, then hibernate=true, as without hooks", async () => {
    const { h, queued, calls } = withGate(phase("Succeeded"));
    assert.deepEqual(await run(h), { done: true, result: { requeueAfterMs: REQUEUE_POLL_MS } });
    assert.deepEqual(calls, [PROBE, MIGRATING, QUIESCE]);
    assert.equal(quiesced(h), "true");
    assert.deepEqual(queued, []);
  });

  it("a record of an earlier VM does not count: the hook is owed for the one running now", async () => {
    const { h, queued, calls } = withGate();
    const main = h.pod("demo-0") as Pod;
    h.seedPods(
      annotate(main, {
        [ANN_GUEST_HOOKS]: encodeGuestHooksRecord({ vmID: "vm-before", preHibernate: phase("Succeeded") }),
      }),
    );
    await run(h);
    assert.deepEqual(calls, [PROBE, MIGRATING]);
    assert.equal(quiesced(h), undefined);
    assert.deepEqual(queued, ["demo-0"]);
  });
});
