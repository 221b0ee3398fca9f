// A macOS main end to end (steps 6 and 7 of docs/cocoonset.md): vk-cocoon refuses to hibernate a macOS
// guest (HibernateUnsupported, lifecycle failed, the guest keeps running), so a
// suspend can never be confirmed. Each 3-minute deadline (reached by pushing the operator's clock)
// reports SuspendTimedOut and phase Failed, and the next pass re-arms a fresh deadline. On unsuspend
// step 7 clears the refused hibernate request, vk lifts the failure, and the set reports
// RecoveredFromFailure and is Running again with the same pod and the same VM: no manual delete, no
// lost guest.

import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { SUSPEND_TIMEOUT_MS } from "../../src/cocoonset/decide/suspenddeadline.ts";
import {
  ANN_HIBERNATE,
  ANN_LIFECYCLE_STATE,
  ANN_SUSPENDING_SINCE,
  ANN_VM_ID,
} from "../../src/contract/keys.ts";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { COCOONSETS } from "../../src/controller/resources.ts";
import type { Simulator } from "../env/simulator/index.ts";
import { testEnv, waitFor } from "../env/testenv.ts";
import { getSet, objectEvents, patchSetSpec } from "../support/setapi.ts";
import {
  createSet,
  E2E_IMAGE,
  livePod,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";
import { ShiftableClock } from "../support/shiftableclock.ts";

const env = testEnv();
const clock = new ShiftableClock();
const watcher = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
let ns: string;
let pool: string;
let sim: Simulator;
let e2e: SetEnv | undefined;

before(async () => {
  e2e = await startSetEnv(env, "csmacos", { clock });
  ({ ns, pool, sim } = e2e);
});

after(async () => {
  watcher.close();
  await e2e?.stop();
});

/** How many times the operator reported SuspendTimedOut on the set (aggregated events counted). */
async function timeouts(): Promise<number> {
  const events = (await objectEvents(env, ns, "mac")) as { reason: string; count?: number }[];
  return events.filter((e) => e.reason === "SuspendTimedOut").reduce((n, e) => n + (e.count ?? 1), 0);
}

/** Resolves true once a watch of the set sees phase Failed (it lasts one pass). */
function watchForFailed(fromVersion: string, signal: AbortSignal): Promise<boolean> {
  return (async () => {
    for await (const ev of watcher.watch<CocoonSet>(COCOONSETS, ns, {
      resourceVersion: fromVersion,
      fieldSelector: "metadata.name=mac",
      signal,
    })) {
      if (ev.object.status?.phase === "Failed") return true;
    }
    return false;
  })().catch(() => false);
}

it("times out every suspend deadline with SuspendTimedOut, then runs again on unsuspend", {
  timeout: 180_000,
}, async () => {
  await createSet(env, ns, "mac", {
    nodePool: pool,
    agent: { image: E2E_IMAGE, replicas: 0, mode: "clone", os: "macos" },
  });
  await waitRunning(env, ns, "mac", 1);
  const main = await livePod(env, ns, "mac", "mac-0");
  const uid = main?.metadata.uid;
  const vmID = main?.metadata.annotations?.[ANN_VM_ID];
  assert.ok(uid && vmID);
  const vm = `vk-${ns}-mac-0`;

  await patchSetSpec(env, ns, "mac", { suspend: true });
  await sim.record.waitFor(
    (e) => e.kind === "refuse" && e.vmName === vm && /HibernateUnsupported/.test(e.detail ?? ""),
  );
  let since = (await waitPhase(env, ns, "mac", "Suspending")).metadata.annotations?.[ANN_SUSPENDING_SINCE];
  assert.ok(since, "the deadline is armed");

  for (let deadline = 1; deadline <= 2; deadline++) {
    const abort = new AbortController();
    const sawFailed = watchForFailed(
      (await getSet(env, ns, "mac")).metadata.resourceVersion ?? "",
      abort.signal,
    );
    try {
      clock.offsetMs += SUSPEND_TIMEOUT_MS + 5_000;
      await waitFor(
        `SuspendTimedOut #${deadline}`,
        async () => ((await timeouts()) >= deadline ? true : undefined),
        60_000,
      );
      const seen = await Promise.race([
        sawFailed,
        new Promise((r) => setTimeout(() => r("no Failed within 30 s"), 30_000).unref()),
      ]);
      assert.equal(seen, true, `phase Failed at deadline ${deadline}`);
    } finally {
      abort.abort();
    }
    // The next pass re-enters Suspending under a fresh deadline.
    const rearmed = await waitFor(
      `a fresh deadline after #${deadline}`,
      async () => {
        const cs = await getSet(env, ns, "mac");
        const next = cs.metadata.annotations?.[ANN_SUSPENDING_SINCE];
        return cs.status?.phase === "Suspending" && next !== undefined && next !== since ? next : undefined;
      },
      60_000,
    );
    since = rearmed;
  }
  const events = (await objectEvents(env, ns, "mac")).filter((e) => e.reason === "SuspendTimedOut");
  assert.ok(events.every((e) => e.type === "Warning"));
  assert.match(events[0]?.message ?? "", /^suspend not confirmed within 3m0s: /);

  // vk-cocoon refuses every hibernate of a macOS guest, this re-entered suspend's too: the resume
  // starts from that refusal, which step 7 reports as a failed main and lifts by clearing the request.
  // The refusal must be in the operator's cache, not only on the API server, before the unsuspend:
  // a pass that reads the main before its failure clears the request itself (step 10), vk lifts the
  // failure, and a set that never saw its main failed has nothing to recover from. Under load the
  // set's watch event can overtake the pod's.
  await waitFor("vk-cocoon's refusal of the last hibernate request, in the operator's cache", async () => {
    const cached = e2e?.operator.operator.informers.pods.get(ns, "mac-0");
    return cached?.metadata.annotations?.[ANN_LIFECYCLE_STATE] === "failed" || undefined;
  });
  await patchSetSpec(env, ns, "mac", { suspend: false });
  await waitRunning(env, ns, "mac", 1);
  const after = await livePod(env, ns, "mac", "mac-0");
  assert.equal(after?.metadata.uid, uid, "the same pod: no delete was needed");
  assert.equal(after?.metadata.annotations?.[ANN_VM_ID], vmID, "the same guest kept running");
  assert.equal(after?.metadata.annotations?.[ANN_HIBERNATE], undefined, "the hibernate request is cleared");
  // Events are posted asynchronously by the recorder: the Running status can land first.
  const recovered = await waitFor("the RecoveredFromFailure event", async () => {
    const found = (await objectEvents(env, ns, "mac")).filter((e) => e.reason === "RecoveredFromFailure");
    return found.length > 0 ? found : undefined;
  });
  assert.deepEqual(
    recovered.map((e) => e.message),
    [`main pod ${ns}/mac-0 is Ready again`],
  );
  const journal = sim.record.events({ vmName: vm });
  assert.deepEqual(
    journal.filter((e) => e.kind !== "refuse").map((e) => e.kind),
    ["boot"],
    "the guest was never hibernated or destroyed",
  );
});
