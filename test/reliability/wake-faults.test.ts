// Wake under faults (WakeTimedOut on the real environment): the operator in-process with a
// pushable clock, its registry calls through the fault proxy, and the vk-cocoon simulator. A CocoonSet's
// main pod is hibernated through a CocoonHibernation, then asked to wake while vk-cocoon cannot wake the
// VM (first refuseWake, then its registry down) and the operator's registry answers 5xx, then refuses
// connections. The CR stays Waking and no tag delete is even attempted: the snapshot is the VM's only
// state. The clock is pushed past the 5-minute deadline: Failed (for one pass, seen through a watch)
// with a Warning WakeTimedOut, then RetryRequested and Waking with a fresh deadline. Once the faults
// lift the VM wakes, the CR goes Active with WokenActive, and the tag is dropped only after the wake.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import {
  API_VERSION,
  type CocoonHibernation,
  type CocoonSet,
  KIND_COCOONHIBERNATION,
} from "../../src/apis/v1/types.ts";
import { ANN_HIBERNATE, ANN_LIFECYCLE_STATE, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { COCOONHIBERNATIONS } from "../../src/controller/resources.ts";
import { WAKE_TIMEOUT_MS } from "../../src/hibernation/status.ts";
import { createRegistryClient } from "../../src/registry/index.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { type RegistryProxy, type RegistryRequest, startRegistryProxy } from "../support/faultproxy.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";
import { ShiftableClock } from "../support/shiftableclock.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const node = `wf-${suffix}`;
const SET = "wk";
const POD = "wk-0";
const clock = new ShiftableClock();
const watcher = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
let ns: string;
let sim: Simulator;
let proxy: RegistryProxy;
let e2e: SetEnv | undefined;
let checker: InvariantChecker;
/** Each manifest DELETE the operator sent, with whether the VM had woken from its snapshot by then. */
const deletes: { req: RegistryRequest; wokenBefore: boolean }[] = [];

const VM = () => `vk-${ns}-${POD}`;
const chPath = (name = "") =>
  `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonhibernations${name ? `/${name}` : ""}`;

before(async () => {
  e2e = await startSetEnv(env, "wakefault", {
    pool: node,
    timings: { bootMs: 50, readyMs: 50, hibernateMs: 50, wakeMs: 50, deleteMs: 20 },
    clock,
    beforeOperator: async ({ sim }) => {
      proxy = await startRegistryProxy(env.registry);
      checker = new InvariantChecker({ record: sim.record, registry: proxy });
      proxy.onRequest((req) => {
        if (req.method !== "DELETE" || !req.path.includes("/manifests/")) return;
        const lastHibernate = sim.record.events({ kind: "hibernate", vmName: VM() }).at(-1)?.time ?? 0;
        const wokenBefore = sim.record
          .events({ kind: "wake", vmName: VM() })
          .some((e) => e.time >= lastHibernate && e.source === "restore");
        deletes.push({ req, wokenBefore });
        checker.note(`operator DELETE ${req.path} → ${req.status}${req.fault ? ` [${req.fault}]` : ""}`);
      });
      return {
        registry: createRegistryClient(proxy.host, { timeoutMs: 1500, dockerConfigPath: "/nonexistent" }),
      };
    },
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
  await proxy?.stop();
  watcher.close();
  const faulted = proxy?.requests.filter((r) => r.fault !== undefined) ?? [];
  process.stderr.write(
    `wake-faults.test: operator registry requests ${proxy?.requests.length ?? 0}, faulted ${faulted.length}` +
      ` ${JSON.stringify(faulted.map((r) => `${r.method} ${r.path} [${r.fault}]`))}\n`,
  );
});

async function getCH(): Promise<CocoonHibernation | undefined> {
  const res = await apiRequest(env, "GET", chPath(POD));
  return res.status === 404 ? undefined : (res.body as CocoonHibernation);
}
async function getPod(): Promise<Pod | undefined> {
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${POD}`);
  return res.status === 404 ? undefined : (res.body as Pod);
}
async function hasTag(): Promise<boolean> {
  return (await oci.getManifest(oci.repository(VM()), TAG_HIBERNATE)) !== null;
}
function waitPhase(phase: string, timeoutMs = 30_000): Promise<CocoonHibernation> {
  return waitFor(
    `${POD} phase ${phase}`,
    async () => {
      const ch = await getCH();
      return ch?.status?.phase === phase ? ch : undefined;
    },
    timeoutMs,
  );
}
function readySince(ch: CocoonHibernation): number {
  return Date.parse(ch.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "");
}
/** The CR's events of this reason (the recorder folds repeats into count). */
async function crEvents(reason: string): Promise<{ type: string; message: string; count?: number }[]> {
  const sel = encodeURIComponent(`involvedObject.name=${POD}`);
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/events?fieldSelector=${sel}`);
  return (
    res.body.items as {
      reason: string;
      type: string;
      message: string;
      count?: number;
      involvedObject: { kind: string };
    }[]
  ).filter((e) => e.reason === reason && e.involvedObject.kind === KIND_COCOONHIBERNATION);
}
const eventCount = (evs: { count?: number }[]) => evs.reduce((n, e) => n + (e.count ?? 1), 0);

/** Polls for windowMs that the CR stays Waking, the pod has not woken, and the tag is untouched. */
async function holdsWaking(what: string, windowMs: number): Promise<void> {
  const end = Date.now() + windowMs;
  while (Date.now() < end) {
    const ch = await getCH();
    // Failed may appear for the one pass around the deadline; any other phase is a violation.
    assert.ok(
      ch?.status?.phase === "Waking" || ch?.status?.phase === "Failed",
      `${what}: phase ${ch?.status?.phase}`,
    );
    assert.ok(await hasTag(), `${what}: the :hibernate tag is gone from the registry`);
    assert.deepEqual(
      deletes.map((d) => d.req.path),
      [],
      `${what}: the operator tried to delete a tag`,
    );
    checkInvariants();
    await new Promise((r) => setTimeout(r, 150));
  }
}

/**
 * The checker's tag and VM-loss invariants. Its (c) rule (vk never refuses a pod) is off here: the
 * refused wakes are the injected fault.
 */
function checkInvariants(): void {
  const fatal = checker.violations.filter((v) => !v.startsWith("invariant (c)"));
  assert.deepEqual(fatal, []);
}

it("hibernates the set's main through a CocoonHibernation", { timeout: 60_000 }, async () => {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: SET, namespace: ns },
    spec: { nodePool: node, nodeName: node, agent: { image: "ubuntu-dev-base", replicas: 0, mode: "clone" } },
  };
  const created = await apiRequest(
    env,
    "POST",
    `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`,
    cs,
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await waitFor(`${POD} ready`, async () =>
    (await getPod())?.metadata.annotations?.[ANN_LIFECYCLE_STATE] === "ready" ? true : undefined,
  );

  const ch: CocoonHibernation = {
    apiVersion: API_VERSION,
    kind: KIND_COCOONHIBERNATION,
    metadata: { name: POD, namespace: ns },
    spec: { podRef: { name: POD }, desire: "Hibernate" },
  };
  const res = await apiRequest(env, "POST", chPath(), ch);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const hibernated = await waitPhase("Hibernated");
  assert.equal(hibernated.status?.vmName, VM());
  assert.equal((await getPod())?.metadata.annotations?.[ANN_HIBERNATE], "true");
  assert.ok(await hasTag(), "the snapshot is in the registry");
  assert.equal(sim.record.events({ kind: "hibernate", vmName: VM() }).length, 1);
  checkInvariants();
});

it("stays Waking under faults, surfaces WakeTimedOut, retries, then wakes and drops the tag", {
  timeout: 90_000,
}, async () => {
  // (a) vk-cocoon cannot wake the VM; (b) the operator's registry answers 5xx.
  sim.faults.refuseWake(VM(), true);
  await proxy.setFault("5xx");
  checker.note("refuseWake on, registry 5xx");
  const patched = await apiRequest(
    env,
    "PATCH",
    chPath(POD),
    { spec: { desire: "Wake" } },
    "application/merge-patch+json",
  );
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  const waking = await waitPhase("Waking");
  const firstDeadlineStart = readySince(waking);
  assert.ok(Number.isFinite(firstDeadlineStart), "Waking has a Ready.lastTransitionTime");
  await waitFor("the hibernate annotation cleared", async () =>
    (await getPod())?.metadata.annotations?.[ANN_HIBERNATE] === undefined ? true : undefined,
  );
  await waitFor("vk refused the wake", async () =>
    sim.record.events({ kind: "refuse", vmName: VM() }).length > 0 ? true : undefined,
  );
  await holdsWaking("refuseWake + registry 5xx", 3_000);

  // vk's registry goes down instead (the pull fails), the operator's registry refuses connections.
  // The wake refusal is lifted only after an attempt refused with vk's registry down: an attempt
  // whose pull had already succeeded would otherwise find no refusal left and wake the VM.
  sim.faults.registryDown(true);
  const refusalsBefore = sim.record.events({ kind: "refuse", vmName: VM() }).length;
  await waitFor("a wake refused after vk's registry went down", async () =>
    sim.record.events({ kind: "refuse", vmName: VM() }).length > refusalsBefore ? true : undefined,
  );
  sim.faults.refuseWake(VM(), false);
  await proxy.setFault("refused");
  checker.note("vk registry down, operator registry refused");
  // The pull's own refusal (the attempt counted above may have been the wake refusal).
  await waitFor("vk failed the pull", async () =>
    sim.record
      .events({ kind: "refuse", vmName: VM() })
      .some((e) => e.detail?.startsWith("WakePullFailed") === true)
      ? true
      : undefined,
  ).catch(async (err: Error) => {
    const journal = sim.record.events({ vmName: VM() }).map((e) => `${e.kind} ${e.detail ?? ""}`);
    const pod = await getPod();
    throw new Error(
      `${err.message}; vk journal: ${JSON.stringify(journal)}; pod ${pod?.metadata.uid} annotations ${JSON.stringify(pod?.metadata.annotations)}`,
    );
  });
  await holdsWaking("vk registry down + registry refused", 3_000);
  assert.equal(sim.record.events({ kind: "wake", vmName: VM() }).length, 0, "no wake happened");
  assert.equal(eventCount(await crEvents("WakeTimedOut")), 0, "no timeout before the deadline");

  // Failed lasts one pass (its own status write re-enters Waking), so watch for it.
  const watchAbort = new AbortController();
  const current = await getCH();
  const sawFailed = (async () => {
    for await (const ev of watcher.watch<CocoonHibernation>(COCOONHIBERNATIONS, ns, {
      resourceVersion: current?.metadata.resourceVersion ?? "",
      fieldSelector: `metadata.name=${POD}`,
      signal: watchAbort.signal,
    })) {
      if (ev.object.status?.phase === "Failed") return ev.object;
    }
    return undefined;
  })();
  let failed: CocoonHibernation | undefined;
  let raceTimer: NodeJS.Timeout | undefined;
  try {
    clock.offsetMs += WAKE_TIMEOUT_MS + 5_000;
    checker.note("clock +5m05s");
    const timedOut = await waitFor("WakeTimedOut", async () => (await crEvents("WakeTimedOut"))[0], 30_000);
    assert.equal(timedOut.type, "Warning");
    assert.match(timedOut.message, /within 5m0s/);
    failed = await Promise.race([
      sawFailed,
      new Promise<undefined>((r) => {
        raceTimer = setTimeout(() => r(undefined), 30_000);
      }),
    ]);
  } finally {
    clearTimeout(raceTimer);
    watchAbort.abort();
  }
  assert.ok(failed, "the CR passed through Failed");
  assert.match(
    failed.status?.conditions?.find((c) => c.type === "Ready")?.message ?? "",
    /wake timed out after 5m0s/,
  );

  // The next pass retries: RetryRequested, Waking again with a fresh deadline.
  await waitFor("RetryRequested", async () => (await crEvents("RetryRequested"))[0], 30_000);
  const retried = await waitPhase("Waking");
  assert.ok(
    readySince(retried) > firstDeadlineStart + WAKE_TIMEOUT_MS,
    `the retry has a fresh deadline (${retried.status?.conditions?.[0]?.lastTransitionTime})`,
  );
  // The fresh deadline holds: still Waking, the tag untouched, one timeout only.
  await holdsWaking("after the retry", 3_000);
  assert.equal(eventCount(await crEvents("WakeTimedOut")), 1, "one WakeTimedOut per deadline");

  // Lift the faults: the operator's registry first, then vk's.
  await proxy.setFault("none");
  checker.note("operator registry back");
  await holdsWaking("operator registry back, vk still down", 1_000);
  sim.faults.registryDown(false);
  checker.note("vk registry back");
  const active = await waitPhase("Active");
  assert.equal(active.status?.observedGeneration, 2);
  const wokenActive = await waitFor("WokenActive", async () => (await crEvents("WokenActive"))[0]);
  assert.equal(wokenActive.type, "Normal");
  const pod = await getPod();
  assert.equal(pod?.metadata.annotations?.[ANN_LIFECYCLE_STATE], "ready");
  assert.equal(pod?.metadata.annotations?.[ANN_HIBERNATE], undefined);

  // The tag is dropped, and only after the VM ran from it.
  await waitFor("tag dropped", async () => ((await hasTag()) ? undefined : true), 15_000);
  const wakes = sim.record.events({ kind: "wake", vmName: VM() });
  assert.equal(wakes.length, 1, "one wake");
  assert.ok(deletes.length > 0, "the operator deleted the tag");
  for (const d of deletes) {
    assert.ok(d.wokenBefore, `DELETE ${d.req.path} before the VM woke`);
    assert.equal(d.req.fault, undefined, "no DELETE was attempted while the registry failed");
  }
  const firstDelete = deletes.find((d) => d.req.status === 202);
  assert.ok(firstDelete, "a DELETE succeeded");
  assert.ok((wakes[0]?.time ?? Infinity) <= firstDelete.req.time, "the wake precedes the delete");
  assert.equal(sim.record.liveVMs().filter((v) => v.vmName === VM()).length, 1, "the VM runs");
  checkInvariants();
});
