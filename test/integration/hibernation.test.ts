// The CocoonHibernation controller in-process against a real kube-apiserver, the registry and the
// vk-cocoon simulator: hibernate and wake a live pod through a CR, the hibernate deadline with a
// stalled hibernate (then its recovery), and the finalizer's tag drop. The pods carry no CocoonSet
// label, and the controller sees them only through the named-pod reads of podwatch.ts.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import { API_VERSION, type CocoonHibernation, KIND_COCOONHIBERNATION } from "../../src/apis/v1/types.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_HIBERNATE,
  ANN_IMAGE,
  ANN_LIFECYCLE_STATE,
  ANN_MANAGED,
  ANN_MODE,
  ANN_VM_NAME,
  FINALIZER_COCOONHIBERNATION,
  LABEL_NODE_POOL,
  TOLERATION_KEY,
} from "../../src/contract/keys.ts";
import { createInformer, stripManagedFields } from "../../src/controller/cache.ts";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { isNotFound } from "../../src/controller/errors.ts";
import { KubeEventRecorder } from "../../src/controller/events.ts";
import { Manager } from "../../src/controller/manager.ts";
import { COCOONHIBERNATIONS, EVENTS, PODS } from "../../src/controller/resources.ts";
import { setupHibernationController } from "../../src/hibernation/setup.ts";
import { HIBERNATE_TIMEOUT_MS } from "../../src/hibernation/status.ts";
import { hibernationIndexers } from "../../src/informers/informers.ts";
import { createRegistryClient, type RegistryClient } from "../../src/registry/index.ts";
import { type Simulator, startSimulator } from "../env/simulator/index.ts";
import { createNamespace, testEnv, waitFor } from "../env/testenv.ts";
import { ShiftableClock } from "../support/shiftableclock.ts";

/** Real time for queues and sleeps; now() can be pushed ahead to reach a deadline without waiting. */
const env = testEnv();
const nodeName = `sim-${randomBytes(3).toString("hex")}`;
const client = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
const registry: RegistryClient = createRegistryClient(env.registry, { dockerConfigPath: "/nonexistent" });
const clock = new ShiftableClock();
const managerAbort = new AbortController();
let events: KubeEventRecorder;
let manager: Manager;
let sim: Simulator;
let ns: string;

const vmOf = (pod: string) => `vk-${ns}-${pod}`;

async function createPod(name: string): Promise<void> {
  await client.create<Pod>(PODS, ns, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: ns,
      annotations: {
        [ANN_VM_NAME]: vmOf(name),
        [ANN_MANAGED]: "true",
        [ANN_MODE]: "clone",
        [ANN_IMAGE]: "ubuntu-dev-base",
        [ANN_COCOONSET_GENERATION]: "1",
      },
    },
    spec: {
      nodeSelector: { [LABEL_NODE_POOL]: nodeName },
      tolerations: [{ key: TOLERATION_KEY, operator: "Exists" }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "agent", image: "ghcr.io/cocoonstack/placeholder:latest" }],
    },
  } as Pod);
  await waitFor(`${name} ready`, async () =>
    (await getPod(name)).metadata.annotations?.[ANN_LIFECYCLE_STATE] === "ready" ? true : undefined,
  );
}

async function createHibernation(name: string, desire: "Hibernate" | "Wake"): Promise<void> {
  await client.create<CocoonHibernation>(COCOONHIBERNATIONS, ns, {
    apiVersion: API_VERSION,
    kind: KIND_COCOONHIBERNATION,
    metadata: { name, namespace: ns },
    spec: { podRef: { name }, desire },
  });
}

function getPod(name: string): Promise<Pod> {
  return client.get<Pod>(PODS, ns, name);
}

async function getHibernation(name: string): Promise<CocoonHibernation | undefined> {
  try {
    return await client.get<CocoonHibernation>(COCOONHIBERNATIONS, ns, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function waitPhase(name: string, phase: string): Promise<CocoonHibernation> {
  return waitFor(`${name} phase ${phase}`, async () => {
    const ch = await getHibernation(name);
    return ch?.status?.phase === phase ? ch : undefined;
  });
}

function readySince(ch: CocoonHibernation): number {
  return Date.parse(ch.status?.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime ?? "");
}

async function eventReasons(name: string): Promise<string[]> {
  await events.flush();
  const list = await client.list<{ reason: string; involvedObject: { name: string; kind: string } }>(
    EVENTS,
    ns,
  );
  return list.items
    .filter((e) => e.involvedObject.name === name && e.involvedObject.kind === KIND_COCOONHIBERNATION)
    .map((e) => e.reason);
}

before(async () => {
  ns = await createNamespace(env, "hib");
  sim = await startSimulator({
    ...env,
    nodes: [{ name: nodeName, pool: nodeName }],
    timings: { bootMs: 50, readyMs: 50, hibernateMs: 50, wakeMs: 50, deleteMs: 20 },
  });
  events = new KubeEventRecorder({ client });
  manager = new Manager({ metricsBindAddress: "0", healthProbeBindAddress: "0" });
  setupHibernationController(manager, {
    client,
    informers: {
      hibernations: createInformer<CocoonHibernation>(client, COCOONHIBERNATIONS, {
        namespace: ns,
        indexers: hibernationIndexers,
        transform: stripManagedFields,
      }),
    },
    namespace: ns,
    registry,
    events,
    clock,
    concurrency: 4,
  });
  await manager.start(managerAbort.signal);
});

after(async () => {
  await manager?.stop(1_000);
  await sim?.stop({ removeNodes: true });
  client.close();
});

describe("CocoonHibernation controller", () => {
  it("hibernates a live pod, wakes it again, and drops the tag after the wake", async () => {
    await createPod("demo-0");
    await createHibernation("demo-0", "Hibernate");

    const hibernated = await waitPhase("demo-0", "Hibernated");
    assert.equal(hibernated.status?.vmName, vmOf("demo-0"));
    assert.deepEqual(hibernated.metadata.finalizers, [FINALIZER_COCOONHIBERNATION]);
    assert.equal(hibernated.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    const pod = await getPod("demo-0");
    assert.equal(pod.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.equal(pod.metadata.annotations?.[ANN_LIFECYCLE_STATE], "hibernated");
    assert.equal(await registry.hasManifest(vmOf("demo-0"), "hibernate"), true);

    await client.patch(COCOONHIBERNATIONS, ns, "demo-0", { spec: { desire: "Wake" } });
    const active = await waitPhase("demo-0", "Active");
    assert.equal(active.status?.observedGeneration, 2);
    const woken = await getPod("demo-0");
    assert.equal(woken.metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.equal(woken.metadata.annotations?.[ANN_LIFECYCLE_STATE], "ready");
    assert.equal(await registry.hasManifest(vmOf("demo-0"), "hibernate"), false);

    const reasons = await eventReasons("demo-0");
    assert.ok(reasons.includes("Hibernated"), reasons.join(","));
    assert.ok(reasons.includes("WokenActive"), reasons.join(","));
  });

  it("times a stalled hibernate out after 3 minutes, retries it, and confirms it once vk finishes", async () => {
    await createPod("demo-1");
    sim.faults.stallHibernate(vmOf("demo-1"), true);
    await createHibernation("demo-1", "Hibernate");
    const hibernating = await waitPhase("demo-1", "Hibernating");
    const firstDeadlineStart = readySince(hibernating);

    // The 5 s requeue then finds the deadline past: Failed with a Warning. The CR's own status
    // write re-runs it at once, and the retry re-enters Hibernating with a fresh deadline.
    clock.offsetMs += HIBERNATE_TIMEOUT_MS + 1_000;
    await waitFor("HibernateTimedOut and RetryRequested", async () => {
      const reasons = await eventReasons("demo-1");
      return reasons.includes("HibernateTimedOut") && reasons.includes("RetryRequested") ? true : undefined;
    });
    const retried = await waitPhase("demo-1", "Hibernating");
    assert.ok(
      readySince(retried) > firstDeadlineStart + HIBERNATE_TIMEOUT_MS,
      "the retry has a fresh deadline",
    );

    // vk finishing the hibernate is a pod event: the retry confirms it.
    sim.faults.stallHibernate(vmOf("demo-1"), false);
    await waitPhase("demo-1", "Hibernated");
    assert.ok((await eventReasons("demo-1")).includes("Hibernated"));
  });

  it("drops the tag and the finalizer when the CR is deleted", async () => {
    await createPod("demo-2");
    await createHibernation("demo-2", "Hibernate");
    await waitPhase("demo-2", "Hibernated");
    assert.equal(await registry.hasManifest(vmOf("demo-2"), "hibernate"), true);

    await client.delete(COCOONHIBERNATIONS, ns, "demo-2");
    await waitFor("demo-2 CR gone", async () => ((await getHibernation("demo-2")) ? undefined : true));
    assert.equal(await registry.hasManifest(vmOf("demo-2"), "hibernate"), false);
  });
});
