// Registry faults: the operator reaches the registry through a proxy that answers 5xx,
// holds requests past the client's timeout, answers 401 with a challenge no client can satisfy, or
// refuses connections — each kind in turn, during each phase: pod creation (the snapshot image rule's
// manifest read), suspend (the :hibernate probe), unsuspend (the tag drop), migration (the probe before
// the old pod may go) and teardown (the tag GC). The simulator reaches the registry directly. No unsafe
// step is taken meanwhile (no pod created, no quiesced pod deleted, no finalizer dropped, no phase
// claimed), the operator retries, a suspend stuck behind the registry surfaces SuspendTimedOut after
// the 3-minute deadline (the clock is pushed ahead), and each phase completes once the registry is back.

import assert from "node:assert/strict";
import { randomBytes, randomInt } from "node:crypto";
import { after, before, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { ANN_HIBERNATE, LABEL_COCOONSET, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { COCOONSETS } from "../../src/controller/resources.ts";
import { createRegistryClient } from "../../src/registry/index.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import {
  type RegistryFault,
  type RegistryProxy,
  seededRandom,
  startRegistryProxy,
} from "../support/faultproxy.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";
import { ShiftableClock } from "../support/shiftableclock.ts";

const IMAGE = "ubuntu-dev-base";
const seed = process.env.CHAOS_SEED ? Number(process.env.CHAOS_SEED) : randomInt(2 ** 31);
const random = seededRandom(seed);
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `rf-${suffix}`;
const nodeA = `rf-a-${suffix}`;
const nodeB = `rf-b-${suffix}`;
const clock = new ShiftableClock();
const watcher = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
const CLIENT_TIMEOUT_MS = 1500;
const KINDS: RegistryFault[] = ["5xx", "timeout", "401", "refused"];
let ns: string;
let sim: Simulator;
let proxy: RegistryProxy;
let e2e: SetEnv | undefined;
let checker: InvariantChecker;
const injected: Record<string, number> = {};

before(async () => {
  process.stderr.write(`registry-faults.test: CHAOS_SEED=${seed}\n`);
  e2e = await startSetEnv(env, "regfault", {
    nodes: [
      { name: nodeA, pool },
      { name: nodeB, pool },
    ],
    clock,
    beforeOperator: async ({ sim }) => {
      proxy = await startRegistryProxy(env.registry);
      checker = new InvariantChecker({ record: sim.record, registry: proxy });
      return {
        registry: createRegistryClient(proxy.host, {
          timeoutMs: CLIENT_TIMEOUT_MS,
          dockerConfigPath: "/nonexistent",
        }),
      };
    },
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
  await proxy?.stop();
  process.stderr.write(`registry-faults.test: seed=${seed} injected=${JSON.stringify(injected)}\n`);
});

const setsPath = () => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;
const VM = () => `vk-${ns}-rf-0`;

async function getSet(): Promise<CocoonSet | undefined> {
  const res = await apiRequest(env, "GET", `${setsPath()}/rf`);
  return res.status === 404 ? undefined : (res.body as CocoonSet);
}
async function patchSpec(spec: Partial<CocoonSetSpec>): Promise<void> {
  checker.note(`spec ← ${JSON.stringify(spec)}`);
  const res = await apiRequest(env, "PATCH", `${setsPath()}/rf`, { spec }, "application/merge-patch+json");
  assert.equal(res.status, 200, JSON.stringify(res.body));
}
async function pods(): Promise<Pod[]> {
  const sel = encodeURIComponent(`${LABEL_COCOONSET}=rf`);
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${sel}`);
  return res.body.items as Pod[];
}
async function hasTag(): Promise<boolean> {
  return (await oci.getManifest(oci.repository(VM()), TAG_HIBERNATE)) !== null;
}
async function running(node: string): Promise<void> {
  await waitFor(
    `rf Running on ${node}`,
    async () => {
      const cs = await getSet();
      const main = (await pods()).find((p) => p.metadata.name === "rf-0" && !p.metadata.deletionTimestamp);
      return cs?.status?.phase === "Running" &&
        cs.status.readyAgents === 1 &&
        cs.status.observedGeneration === cs.metadata.generation &&
        main?.spec.nodeName === node
        ? true
        : undefined;
    },
    60_000,
  );
}
async function warnings(reason: string): Promise<{ message: string }[]> {
  const sel = encodeURIComponent("involvedObject.name=rf");
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/events?fieldSelector=${sel}`);
  return (res.body.items as { reason: string; message: string }[]).filter((e) => e.reason === reason);
}

/**
 * Injects every fault kind in turn (seeded order), each long enough for the operator to meet it
 * more than once, checking `unsafe` (must stay false) and the invariants throughout; then lifts it.
 */
async function faultWindow(phase: string, unsafe: () => Promise<string | undefined>): Promise<void> {
  const kinds = [...KINDS].sort(() => random() - 0.5);
  for (const kind of kinds) {
    checker.note(`${phase}: registry fault ${kind}`);
    const before = proxy.requests.length;
    await proxy.setFault(kind);
    const end = Date.now() + (kind === "timeout" ? 2 * CLIENT_TIMEOUT_MS + 500 : 1800);
    while (Date.now() < end) {
      const why = await unsafe();
      assert.equal(why, undefined, `${phase} under ${kind}: ${why}`);
      checker.check();
      await new Promise((r) => setTimeout(r, 150));
    }
    const hits = proxy.requests.slice(before).filter((r) => r.fault === kind).length;
    injected[`${phase}/${kind}`] = hits;
  }
  await proxy.setFault("none");
  checker.note(`${phase}: registry back`);
}

it("creates no pod while the image rule cannot read the registry", { timeout: 90_000 }, async () => {
  await proxy.setFault("5xx");
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "rf", namespace: ns },
    spec: { nodePool: pool, nodeName: nodeA, agent: { image: IMAGE, replicas: 0, mode: "clone" } },
  };
  const res = await apiRequest(env, "POST", setsPath(), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  await faultWindow("create", async () => ((await pods()).length > 0 ? "a pod was created" : undefined));
  await running(nodeA);
  checker.check();
});

it("stays Suspending while the probe fails, surfaces SuspendTimedOut, then suspends", {
  timeout: 120_000,
}, async () => {
  await patchSpec({ suspend: true });
  const notSuspended = async () =>
    (await getSet())?.status?.phase === "Suspended" ? "Suspended claimed without a probe" : undefined;
  await faultWindow("suspend", notSuspended);
  // The registry still refuses: push the clock past the 3-minute deadline.
  await proxy.setFault("5xx");
  await waitFor("Suspending", async () =>
    (await getSet())?.status?.phase === "Suspending" ? true : undefined,
  );
  // Failed lasts one pass (its own status write re-enters Suspending), so watch for it.
  const watchAbort = new AbortController();
  const sawFailed = (async () => {
    const current = await getSet();
    for await (const ev of watcher.watch<CocoonSet>(COCOONSETS, ns, {
      resourceVersion: current?.metadata.resourceVersion ?? "",
      fieldSelector: "metadata.name=rf",
      signal: watchAbort.signal,
    })) {
      if (ev.object.status?.phase === "Failed") return true;
    }
    return false;
  })();
  try {
    clock.offsetMs += 3 * 60_000 + 5_000;
    checker.note("clock +3m05s");
    const timedOut = await waitFor(
      "SuspendTimedOut",
      async () => (await warnings("SuspendTimedOut"))[0],
      60_000,
    );
    assert.match(timedOut.message, /.+/);
    assert.equal(
      await Promise.race([sawFailed, new Promise((r) => setTimeout(() => r("timeout"), 30_000))]),
      true,
    );
  } finally {
    watchAbort.abort();
    watcher.close();
  }
  assert.equal(await notSuspended(), undefined);
  await proxy.setFault("none");
  await waitFor(
    "Suspended",
    async () => ((await getSet())?.status?.phase === "Suspended" ? true : undefined),
    60_000,
  );
  assert.ok(await hasTag(), "the snapshot exists");
  checker.check();
});

it("keeps the tag while its delete fails on unsuspend, then drops it", { timeout: 90_000 }, async () => {
  await patchSpec({ suspend: false });
  await faultWindow("unsuspend", async () =>
    (await hasTag()) ? undefined : "tag dropped without the registry",
  );
  await running(nodeA);
  await waitFor("tag dropped", async () => ((await hasTag()) ? undefined : true), 30_000);
  checker.check();
});

it("never deletes the quiesced main while the probe fails, then migrates", { timeout: 90_000 }, async () => {
  const main = (await pods()).find((p) => p.metadata.name === "rf-0");
  const uid = main?.metadata.uid;
  assert.ok(uid);
  // The migration probes for a leftover tag before it quiesces, so the registry is up until the
  // quiesce; the hibernate is held until the registry fails, then the snapshot lands unconfirmable.
  sim.faults.stallHibernate(VM(), true);
  await patchSpec({ nodeName: nodeB });
  await waitFor(
    "the main quiesced",
    async () =>
      (await pods()).find((p) => p.metadata.uid === uid)?.metadata.annotations?.[ANN_HIBERNATE]
        ? true
        : undefined,
    30_000,
  );
  await proxy.setFault("timeout");
  sim.faults.stallHibernate(VM(), false);
  await faultWindow("migrate", async () => {
    const old = (await pods()).find((p) => p.metadata.uid === uid);
    return old === undefined || old.metadata.deletionTimestamp
      ? "the quiesced main was deleted unprobed"
      : undefined;
  });
  await running(nodeB);
  await waitFor("tag dropped", async () => ((await hasTag()) ? undefined : true), 30_000);
  checker.check();
});

it("keeps the finalizer while the tag GC fails, then tears down", { timeout: 90_000 }, async () => {
  // Leave a snapshot for the GC to find: suspend again.
  await patchSpec({ suspend: true });
  await waitFor(
    "Suspended",
    async () => ((await getSet())?.status?.phase === "Suspended" ? true : undefined),
    60_000,
  );
  checker.teardown(`vk-${ns}-rf-`);
  await proxy.setFault("refused");
  const res = await apiRequest(env, "DELETE", `${setsPath()}/rf`);
  assert.ok(res.status === 200 || res.status === 202);
  await faultWindow("teardown", async () =>
    (await getSet()) === undefined ? "finalizer dropped with the tag in place" : undefined,
  );
  await waitFor("rf gone", async () => ((await getSet()) === undefined ? true : undefined), 60_000);
  assert.equal(await hasTag(), false, "the tag was collected");
  checker.check();
  const total = Object.values(injected).reduce((a, b) => a + b, 0);
  assert.ok(total > 0, "faults were met");
});
