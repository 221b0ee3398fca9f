// The whole operator (both controllers, its own caches) against a real kube-apiserver, the registry
// and the vk-cocoon simulator, for the CocoonHibernation paths where it differs from the Go operator:
// a standalone pod that no CocoonSet owns is hibernated and woken through a CR, and a Wake CR settled
// Active leaves the set's pod alone when the set suspends it.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import {
  API_VERSION,
  type CocoonHibernation,
  type CocoonSet,
  KIND_COCOONHIBERNATION,
} from "../../src/apis/v1/types.ts";
import {
  ANN_HIBERNATE,
  ANN_LIFECYCLE_STATE,
  ANN_MANAGED,
  ANN_MODE,
  ANN_VM_NAME,
  LIFECYCLE_HIBERNATED,
  TAG_HIBERNATE,
  TOLERATION_KEY,
} from "../../src/contract/keys.ts";
import { createRegistryClient } from "../../src/registry/index.ts";
import { OciClient, type Simulator } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { getSet, objectEvents, patchSetSpec, setPods, setsPath } from "../support/setapi.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const IMAGE = "ubuntu-dev-base";
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `hibop-${suffix}`;
const nodeName = `hibop-${suffix}`;
let ns: string;
let sim: Simulator;
let e2e: SetEnv | undefined;
/** The operator's registry requests, as `<METHOD> <path> <status>`. */
const registryRequests: string[] = [];

const hibernationsPath = () => `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonhibernations`;

before(async () => {
  const registry = createRegistryClient(env.registry, {
    dockerConfigPath: "/nonexistent",
    onRequest: (method, path, status) => registryRequests.push(`${method} ${path} ${status}`),
  });
  e2e = await startSetEnv(env, "hibop", {
    nodes: [{ name: nodeName, pool }],
    timings: { bootMs: 50, readyMs: 50, hibernateMs: 50, wakeMs: 50, deleteMs: 20 },
    registry,
  });
  ({ ns, sim } = e2e);
});

after(async () => {
  await e2e?.stop();
});

async function hasTag(vm: string): Promise<boolean> {
  return (await oci.getManifest(oci.repository(vm), TAG_HIBERNATE)) !== null;
}

async function getPod(name: string): Promise<Pod> {
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as Pod;
}

async function createHibernation(podName: string, desire: "Hibernate" | "Wake"): Promise<void> {
  const ch: CocoonHibernation = {
    apiVersion: API_VERSION,
    kind: KIND_COCOONHIBERNATION,
    metadata: { name: podName, namespace: ns },
    spec: { podRef: { name: podName }, desire },
  };
  const res = await apiRequest(env, "POST", hibernationsPath(), ch);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

async function setDesire(podName: string, desire: "Hibernate" | "Wake"): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    `${hibernationsPath()}/${podName}`,
    { spec: { desire } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

async function getHibernation(name: string): Promise<CocoonHibernation> {
  const res = await apiRequest(env, "GET", `${hibernationsPath()}/${name}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as CocoonHibernation;
}

function hibernationPhase(name: string, phase: string, generation?: number): Promise<CocoonHibernation> {
  return waitFor(
    `${name} ${phase}`,
    async () => {
      const ch = await getHibernation(name);
      const current = generation === undefined || ch.status?.observedGeneration === generation;
      return ch.status?.phase === phase && current ? ch : undefined;
    },
    60_000,
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe("CocoonHibernation under the whole operator", () => {
  it("hibernates and wakes a standalone pod no CocoonSet owns (the upstream test-ubuntu sample)", {
    timeout: 90_000,
  }, async () => {
    // Shaped like ../shared/reference/samples/test-ubuntu.yaml: bound to the node by name, no
    // CocoonSet label; the VM name is what cocoon-webhook would have added.
    const name = "test-ubuntu";
    const vm = `vk-${ns}-${name}`;
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name,
        namespace: ns,
        labels: { app: "test", runtime: "cocoon" },
        annotations: { [ANN_VM_NAME]: vm, [ANN_MANAGED]: "true", [ANN_MODE]: "run" },
      },
      spec: {
        nodeName,
        tolerations: [{ key: TOLERATION_KEY, operator: "Exists", effect: "NoSchedule" }],
        terminationGracePeriodSeconds: 1,
        containers: [{ name: "ubuntu", image: IMAGE, resources: { limits: { cpu: "1", memory: "1Gi" } } }],
      },
    };
    const created = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, pod);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await waitFor(`${name} ready`, async () =>
      (await getPod(name)).metadata.annotations?.[ANN_LIFECYCLE_STATE] === "ready" ? true : undefined,
    );

    await createHibernation(name, "Hibernate");
    const hibernated = await hibernationPhase(name, "Hibernated");
    assert.equal(hibernated.status?.vmName, vm);
    assert.equal((await getPod(name)).metadata.annotations?.[ANN_LIFECYCLE_STATE], LIFECYCLE_HIBERNATED);
    assert.equal(await hasTag(vm), true);
    assert.ok(sim.record.events({ kind: "hibernate", vmName: vm }).length > 0);

    registryRequests.length = 0;
    await setDesire(name, "Wake");
    await hibernationPhase(name, "Active", 2);
    assert.equal((await getPod(name)).metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.equal(await hasTag(vm), false, "the snapshot is dropped once the VM runs again");
    assert.ok(sim.record.events({ kind: "wake", vmName: vm }).length > 0);
    const manifest = `/v2/${vm}/manifests/hibernate`;
    const tagRequests = () => registryRequests.filter((r) => r.includes(`/v2/${vm}/manifests/`));
    // Probe first; distribution refuses DELETE by tag, so the digest the probe saw goes instead.
    assert.deepEqual(tagRequests().slice(0, 2), [`HEAD ${manifest} 200`, `DELETE ${manifest} 400`]);
    assert.match(tagRequests()[2] ?? "", new RegExp(`^DELETE /v2/${vm}/manifests/sha256:[0-9a-f]{64} 202$`));

    // The finalizer finds the tag gone: a probe, and no DELETE.
    registryRequests.length = 0;
    const deleted = await apiRequest(env, "DELETE", `${hibernationsPath()}/${name}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    await waitFor(`${name} CR gone`, async () => {
      const res = await apiRequest(env, "GET", `${hibernationsPath()}/${name}`);
      return res.status === 404 ? true : undefined;
    });
    assert.deepEqual(tagRequests(), [`HEAD ${manifest} 404`]);
  });

  it("a Wake CR settled Active leaves the sub-agent to the set's suspend: Suspended stays, tag kept", {
    timeout: 150_000,
  }, async () => {
    const set = "settled";
    const sub = `${set}-1`;
    const subVM = `vk-${ns}-${sub}`;
    const cs: CocoonSet = {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonSet",
      metadata: { name: set, namespace: ns },
      spec: { nodePool: pool, agent: { image: IMAGE, replicas: 1, mode: "clone" } },
    };
    const res = await apiRequest(env, "POST", setsPath(ns), cs);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    await waitFor(
      `${set} Running`,
      async () => {
        const current = await getSet(env, ns, set);
        return current.status?.phase === "Running" && current.status.readyAgents === 2 ? true : undefined;
      },
      60_000,
    );

    // CR Hibernate → Wake → Active on the sub-agent.
    await createHibernation(sub, "Hibernate");
    await hibernationPhase(sub, "Hibernated");
    await setDesire(sub, "Wake");
    await hibernationPhase(sub, "Active", 2);
    await waitFor(`${subVM} tag dropped after the wake`, async () => !(await hasTag(subVM)) || undefined);

    registryRequests.length = 0;
    await patchSetSpec(env, ns, set, { suspend: true });
    await waitFor(
      `${set} Suspended`,
      async () => ((await getSet(env, ns, set)).status?.phase === "Suspended" ? true : undefined),
      90_000,
    );
    const wakesBefore = sim.record.events({ kind: "wake", vmName: subVM }).length;

    // Long enough for a flapping CR to clear the annotation several times (it did about once a second).
    await sleep(6_000);

    assert.equal((await getSet(env, ns, set)).status?.phase, "Suspended", "the set stays Suspended");
    const pods = await setPods(env, ns, set);
    const subPod = pods.find((pod) => pod.metadata.name === sub);
    assert.equal(subPod?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.equal(subPod?.metadata.annotations?.[ANN_LIFECYCLE_STATE], LIFECYCLE_HIBERNATED);
    assert.equal(await hasTag(subVM), true, "the suspend's snapshot is kept");
    assert.deepEqual(
      registryRequests.filter((r) => r.startsWith(`DELETE /v2/${subVM}/`)),
      [],
      "no tag delete for the sub-agent",
    );
    assert.equal(
      sim.record.events({ kind: "wake", vmName: subVM }).length,
      wakesBefore,
      "vk-cocoon was never asked to wake the sub-agent",
    );
    const ch = await getHibernation(sub);
    assert.equal(ch.status?.phase, "Active");
    assert.equal(ch.status?.observedGeneration, 2);
    const setEvents = (await objectEvents(env, ns, set)).map((e) => e.reason);
    assert.ok(!setEvents.includes("SuspendTimedOut"), setEvents.join(","));
  });
});
