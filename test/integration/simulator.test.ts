// The vk-cocoon simulator against a real kube-apiserver, kube-scheduler and registry.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import {
  ANN_BACKEND,
  ANN_COCOONSET_GENERATION,
  ANN_FORK_FROM,
  ANN_HIBERNATE,
  ANN_IMAGE,
  ANN_IP,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
  ANN_LIFECYCLE_OBSERVED_GENERATION,
  ANN_LIFECYCLE_STATE,
  ANN_LIFECYCLE_STATE_MESSAGE,
  ANN_MANAGED,
  ANN_MODE,
  ANN_OS,
  ANN_RESTORE_FROM_HIBERNATE,
  ANN_SNAPSHOT_POLICY,
  ANN_VM_ID,
  ANN_VM_NAME,
  LABEL_NODE_POOL,
  MANIFEST_ANN_BASE_IMAGE,
  MANIFEST_ANN_FROM_NODE,
  TOLERATION_KEY,
} from "../../src/contract/keys.ts";
import { type Simulator, startSimulator } from "../env/simulator/index.ts";
import { KubeClient } from "../env/simulator/kube.ts";
import { OciClient } from "../env/simulator/oci.ts";
import { pushSnapshot, readSnapshotHypervisor, readSnapshotId } from "../env/simulator/snapshot.ts";
import { apiRequest, createNamespace, testEnv, waitFor } from "../env/testenv.ts";

const env = testEnv();
const nodeName = `sim-${randomBytes(3).toString("hex")}`;
const oci = new OciClient(env.registry);
let sim: Simulator;
let ns: string;

before(async () => {
  ns = await createNamespace(env, "sim");
  sim = await startSimulator({
    ...env,
    registry: env.registry,
    // The node's pool is unique, so the scheduler can place test pods only here.
    nodes: [{ name: nodeName, pool: nodeName }],
    timings: { bootMs: 50, readyMs: 50, hibernateMs: 50, wakeMs: 50, deleteMs: 20 },
  });
});

after(async () => {
  await sim?.stop({ removeNodes: true });
});

function vmName(suffix: string): string {
  return `vk-${ns}-${suffix}`;
}

interface PodOptions {
  annotations: Record<string, string>;
  /** Bind directly instead of letting the scheduler place the pod by pool. */
  bind?: boolean;
  ownerCocoonSet?: string;
}

async function createPod(name: string, opts: PodOptions): Promise<Pod> {
  const pod = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: ns,
      annotations: opts.annotations,
      ...(opts.ownerCocoonSet === undefined
        ? {}
        : {
            ownerReferences: [
              {
                apiVersion: "cocoonset.cocoonstack.io/v1",
                kind: "CocoonSet",
                name: opts.ownerCocoonSet,
                uid: "00000000-0000-0000-0000-000000000001",
              },
            ],
          }),
    },
    spec: {
      ...(opts.bind === true ? { nodeName } : { nodeSelector: { [LABEL_NODE_POOL]: nodeName } }),
      tolerations: [{ key: TOLERATION_KEY, operator: "Exists" }],
      terminationGracePeriodSeconds: 1,
      containers: [{ name: "agent", image: "ghcr.io/cocoonstack/placeholder:latest" }],
    },
  };
  const res = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, pod);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as Pod;
}

function managedAnnotations(vm: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    [ANN_VM_NAME]: vm,
    [ANN_MANAGED]: "true",
    [ANN_MODE]: "clone",
    [ANN_IMAGE]: "ubuntu-dev-base",
    [ANN_COCOONSET_GENERATION]: "1",
    ...extra,
  };
}

async function getPod(name: string): Promise<Pod | undefined> {
  const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods/${name}`);
  if (res.status === 404) return undefined;
  assert.equal(res.status, 200);
  return res.body as Pod;
}

function waitPod(name: string, what: string, match: (pod: Pod) => boolean): Promise<Pod> {
  return waitFor(`${name}: ${what}`, async () => {
    const pod = await getPod(name);
    return pod !== undefined && match(pod) ? pod : undefined;
  });
}

async function patchAnnotations(name: string, annotations: Record<string, string | null>): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    `/api/v1/namespaces/${ns}/pods/${name}`,
    { metadata: { annotations } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

const ann = (pod: Pod, key: string): string | undefined => pod.metadata.annotations?.[key];
const isReady = (pod: Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
const lifecycleAt = (state: string, generation: number) => (pod: Pod) =>
  ann(pod, ANN_LIFECYCLE_STATE) === state &&
  ann(pod, ANN_LIFECYCLE_OBSERVED_GENERATION) === String(generation);

async function eventReasons(podName: string): Promise<string[]> {
  const res = await apiRequest(
    env,
    "GET",
    `/api/v1/namespaces/${ns}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${podName}`)}`,
  );
  return (res.body.items as { reason: string }[]).map((e) => e.reason);
}

interface Observation {
  state: string;
  hasID: boolean;
  phase: string;
  ready: boolean;
}

/**
 * Watches one pod and keeps every distinct (lifecycle, id present, phase, Ready) it passes through,
 * and every version of the object in `versions`.
 */
function observe(name: string): { seen: Observation[]; versions: Pod[]; stop: () => Promise<void> } {
  const kube = new KubeClient(env.server, env.token, env.caFile);
  const abort = new AbortController();
  const seen: Observation[] = [];
  const versions: Pod[] = [];
  const selector = encodeURIComponent(`metadata.name=${name}`);
  const done = kube
    .watch(`/api/v1/namespaces/${ns}/pods?watch=1&fieldSelector=${selector}`, abort.signal, (event) => {
      const pod = event.object as unknown as Pod;
      versions.push(pod);
      const next = {
        state: ann(pod, ANN_LIFECYCLE_STATE) ?? "",
        hasID: (ann(pod, ANN_VM_ID) ?? "") !== "",
        phase: pod.status?.phase ?? "",
        ready: isReady(pod),
      };
      if (JSON.stringify(seen.at(-1)) !== JSON.stringify(next)) seen.push(next);
    })
    .catch(() => undefined);
  return {
    seen,
    versions,
    stop: async () => {
      abort.abort();
      await done;
      kube.close();
    },
  };
}

function firstIndex(seen: Observation[], match: (o: Observation) => boolean): number {
  const i = seen.findIndex(match);
  assert.ok(i >= 0, `no observation matched in ${JSON.stringify(seen)}`);
  return i;
}

describe("vk-cocoon simulator", () => {
  test("registers a schedulable virtual node with the vk-cocoon labels and taint", async () => {
    const res = await apiRequest(env, "GET", `/api/v1/nodes/${nodeName}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.metadata.labels.type, "virtual-kubelet");
    assert.equal(res.body.metadata.labels[LABEL_NODE_POOL], nodeName);
    assert.equal(res.body.metadata.labels["node-role.kubernetes.io/cocoon-vm"], "");
    assert.deepEqual(
      res.body.spec.taints.map((t: { key: string }) => t.key),
      [TOLERATION_KEY],
    );
    assert.equal(res.body.status.allocatable.pods, "110");
  });

  test("a scheduled pod boots, goes Ready, then lifecycle ready at its generation", async () => {
    const vm = vmName("boot-0");
    await createPod("boot-0", { annotations: managedAnnotations(vm, { [ANN_COCOONSET_GENERATION]: "3" }) });
    const pod = await waitPod("boot-0", "ready@3", lifecycleAt("ready", 3));
    assert.ok(isReady(pod), "Ready is published before lifecycle ready");
    assert.equal(pod.spec.nodeName, nodeName);
    assert.equal(pod.status?.phase, "Running");
    assert.ok((ann(pod, ANN_VM_ID) ?? "") !== "");
    assert.equal(pod.status?.podIP, ann(pod, ANN_IP));
    assert.equal(ann(pod, ANN_LIFECYCLE_STATE_MESSAGE), undefined);
    const boot = sim.record.events({ kind: "boot", vmName: vm });
    assert.equal(boot.length, 1);
    assert.equal(boot[0]?.source, "clone");
    assert.ok(sim.record.liveVMs().some((v) => v.vmName === vm && v.vmID === ann(pod, ANN_VM_ID)));

    await patchAnnotations("boot-0", { [ANN_COCOONSET_GENERATION]: "5" });
    await waitPod("boot-0", "ready republished at 5", lifecycleAt("ready", 5));
  });

  test("hibernate pushes a real :hibernate manifest; wake brings a new VM ID", async () => {
    const vm = vmName("hib-0");
    await createPod("hib-0", { annotations: managedAnnotations(vm), bind: true });
    const booted = await waitPod("hib-0", "ready@1", lifecycleAt("ready", 1));
    const firstID = ann(booted, ANN_VM_ID);

    await patchAnnotations("hib-0", { [ANN_HIBERNATE]: "true", [ANN_COCOONSET_GENERATION]: "2" });
    const atHibernated = await waitPod("hib-0", "hibernated@2", lifecycleAt("hibernated", 2));
    assert.equal(ann(atHibernated, ANN_VM_ID), undefined);
    assert.ok(
      (await oci.getManifest(oci.repository(vm), "hibernate")) !== null,
      "the :hibernate tag exists once hibernated is visible",
    );
    // Status Pending follows the hibernated annotation.
    const hibernated = await waitPod("hib-0", "Pending", (p) => p.status?.phase === "Pending");
    assert.equal(hibernated.status?.phase, "Pending");
    assert.equal(hibernated.status?.conditions, undefined);
    assert.equal(hibernated.status?.containerStatuses, undefined);
    const manifest = await oci.getManifest(oci.repository(vm), "hibernate");
    assert.ok(manifest !== null);
    assert.equal(manifest.mediaType, "application/vnd.oci.image.manifest.v1+json");
    assert.equal(manifest.json.annotations?.[MANIFEST_ANN_BASE_IMAGE], "ubuntu-dev-base");
    assert.equal(manifest.json.annotations?.[MANIFEST_ANN_FROM_NODE], nodeName);
    assert.ok(manifest.json.layers.length >= 1);
    assert.notEqual(await readSnapshotId(oci, oci.repository(vm), manifest.json), "");

    await patchAnnotations("hib-0", { [ANN_HIBERNATE]: null, [ANN_COCOONSET_GENERATION]: "3" });
    const woken = await waitPod("hib-0", "ready@3", lifecycleAt("ready", 3));
    assert.ok(isReady(woken));
    const secondID = ann(woken, ANN_VM_ID) ?? "";
    assert.notEqual(secondID, "");
    assert.notEqual(secondID, firstID);
    const wake = sim.record.events({ kind: "wake", vmName: vm });
    assert.equal(wake.length, 1);
    assert.equal(wake[0]?.fromLocalCache, true);
    assert.ok(
      (await oci.getManifest(oci.repository(vm), "hibernate")) !== null,
      "wake never deletes the tag",
    );
  });

  test("writes happen in vk-cocoon's order for boot, hibernate and wake", async () => {
    const watch = observe("order-0");
    await createPod("order-0", { annotations: managedAnnotations(vmName("order-0")), bind: true });
    await waitPod("order-0", "ready@1", lifecycleAt("ready", 1));
    await patchAnnotations("order-0", { [ANN_HIBERNATE]: "true" });
    await waitPod(
      "order-0",
      "Pending after hibernated",
      (p) => p.status?.phase === "Pending" && !p.metadata.annotations?.[ANN_VM_ID],
    );
    const hibernatedAt = watch.seen.length;
    await patchAnnotations("order-0", { [ANN_HIBERNATE]: null });
    await waitPod("order-0", "ready after wake", (p) => lifecycleAt("ready", 1)(p) && isReady(p));
    await watch.stop();
    const boot = watch.seen.slice(0, hibernatedAt);
    const wake = watch.seen.slice(hibernatedAt);

    const creating = firstIndex(boot, (o) => o.state === "creating");
    const withID = firstIndex(boot, (o) => o.hasID);
    const running = firstIndex(boot, (o) => o.phase === "Running");
    const podReady = firstIndex(boot, (o) => o.ready);
    const lifecycleReady = firstIndex(boot, (o) => o.state === "ready");
    assert.ok(creating < withID && withID <= running && running < podReady && podReady < lifecycleReady);

    const hibernating = firstIndex(boot, (o) => o.state === "hibernating");
    const hibernated = firstIndex(boot, (o) => o.state === "hibernated");
    assert.ok(hibernating < hibernated);
    assert.ok(
      boot.slice(hibernated).every((o) => !o.hasID),
      "id is cleared before hibernated",
    );
    assert.equal(boot.at(-1)?.phase, "Pending");

    const waking = firstIndex(wake, (o) => o.state === "creating");
    const newID = firstIndex(wake, (o) => o.hasID);
    const woken = firstIndex(wake, (o) => o.ready);
    assert.ok(waking < newID && newID < woken && woken < firstIndex(wake, (o) => o.state === "ready"));
  });

  test("fault knobs: failVM, stalled hibernate, failed push, refused wake, registry down", async () => {
    const vm = vmName("fault-0");
    await createPod("fault-0", { annotations: managedAnnotations(vm), bind: true });
    await waitPod("fault-0", "ready", lifecycleAt("ready", 1));

    sim.faults.failVM(vm, "vm gone");
    const failed = await waitPod("fault-0", "failed", lifecycleAt("failed", 1));
    assert.equal(ann(failed, ANN_LIFECYCLE_STATE_MESSAGE), "vm gone");
    assert.equal(failed.status?.phase, "Running");
    assert.ok(!isReady(failed));

    sim.faults.stallHibernate("*", true);
    sim.faults.failPush(vm, true);
    await patchAnnotations("fault-0", { [ANN_HIBERNATE]: "true" });
    await waitPod("fault-0", "hibernating", lifecycleAt("hibernating", 1));
    sim.faults.stallHibernate("*", false);
    const pushFailed = await waitPod("fault-0", "push failed", lifecycleAt("failed", 1));
    assert.match(ann(pushFailed, ANN_LIFECYCLE_STATE_MESSAGE) ?? "", /^push .*:hibernate: push refused/);
    assert.ok((ann(pushFailed, ANN_VM_ID) ?? "") !== "", "a failed push keeps the VM");
    sim.faults.failPush(vm, false);
    await waitPod("fault-0", "hibernated", lifecycleAt("hibernated", 1));

    sim.faults.refuseWake(vm, true);
    await patchAnnotations("fault-0", { [ANN_HIBERNATE]: null });
    const refused = await waitPod("fault-0", "wake refused", lifecycleAt("failed", 1));
    assert.match(ann(refused, ANN_LIFECYCLE_STATE_MESSAGE) ?? "", /refused by simulator fault/);
    sim.faults.refuseWake(vm, false);
    await waitPod("fault-0", "woken", (p) => lifecycleAt("ready", 1)(p) && isReady(p));

    sim.faults.registryDown(true);
    const blocked = vmName("fault-1");
    await createPod("fault-1", { annotations: managedAnnotations(blocked), bind: true });
    const unavailable = await waitPod("fault-1", "refused", lifecycleAt("failed", 1));
    assert.match(
      ann(unavailable, ANN_LIFECYCLE_STATE_MESSAGE) ?? "",
      /^hibernate evidence for .*\(refusing fresh boot\)$/,
    );
    sim.faults.registryDown(false);
    await waitPod("fault-1", "ready", lifecycleAt("ready", 1));
  });

  test("a full node leaves the next pod Unschedulable; nodes come and go", async () => {
    const small = `${nodeName}-small`;
    await sim.addNode({ name: small, pool: small, pods: 1 });
    const onSmall = (name: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, annotations: managedAnnotations(vmName(name)) },
      spec: {
        nodeSelector: { [LABEL_NODE_POOL]: small },
        tolerations: [{ key: TOLERATION_KEY, operator: "Exists" }],
        containers: [{ name: "agent", image: "ghcr.io/cocoonstack/placeholder:latest" }],
      },
    });
    for (const name of ["small-0", "small-1"]) {
      const res = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, onSmall(name));
      assert.equal(res.status, 201);
    }
    await waitPod("small-0", "ready", lifecycleAt("ready", 1));
    await waitPod("small-1", "Unschedulable", (p) =>
      (p.status?.conditions ?? []).some((c) => c.type === "PodScheduled" && c.reason === "Unschedulable"),
    );
    await sim.removeNode(small);
    const gone = await apiRequest(env, "GET", `/api/v1/nodes/${small}`);
    assert.equal(gone.status, 404);
  });

  test("an unmanaged pod adopts its pre-written VM; hibernate is a no-op; delete pushes nothing", async () => {
    const vm = vmName("static-tools");
    const annotations = {
      [ANN_VM_NAME]: vm,
      [ANN_MODE]: "static",
      [ANN_VM_ID]: "static-vm-id",
      [ANN_IP]: "192.168.7.7",
    };
    await createPod("static-tools", { annotations, bind: true });
    const ready = await waitPod("static-tools", "ready", (p) => lifecycleAt("ready", 0)(p) && isReady(p));
    assert.equal(ann(ready, ANN_VM_ID), "static-vm-id");
    assert.equal(ready.status?.podIP, "192.168.7.7");

    await patchAnnotations("static-tools", { [ANN_HIBERNATE]: "true", [ANN_COCOONSET_GENERATION]: "2" });
    const still = await waitPod("static-tools", "ready@2", lifecycleAt("ready", 2));
    assert.equal(ann(still, ANN_VM_ID), "static-vm-id");

    await apiRequest(env, "DELETE", `/api/v1/namespaces/${ns}/pods/static-tools`);
    await waitFor("static pod removed", async () =>
      (await getPod("static-tools")) === undefined ? true : undefined,
    );
    assert.equal(await oci.getManifest(oci.repository(vm), "hibernate"), null);
    assert.equal(await oci.getManifest(oci.repository(vm), "latest"), null);
  });

  test("a pod asking for another snapshot CPU class is refused without a lifecycle write", async () => {
    const res = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "cpu-class", annotations: managedAnnotations(vmName("cpu-class")) },
      spec: {
        nodeName,
        nodeSelector: { "cocoonstack.io/snapshot-cpu-class": "icelake" },
        tolerations: [{ key: TOLERATION_KEY, operator: "Exists" }],
        containers: [{ name: "agent", image: "ghcr.io/cocoonstack/placeholder:latest" }],
      },
    });
    assert.equal(res.status, 201);
    const pod = await waitPod("cpu-class", "ProviderFailed", (p) => p.status?.reason === "ProviderFailed");
    assert.match(pod.status?.message ?? "", /snapshot cpu class "icelake"/);
    assert.equal(ann(pod, ANN_LIFECYCLE_STATE), undefined);
  });

  test("a pod without a VM name gets ProviderFailed and no lifecycle", async () => {
    // The shape of the upstream manifests/test-ubuntu.yaml sample, bound to the simulated node.
    const res = await apiRequest(env, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "test-ubuntu",
        labels: { app: "test", runtime: "cocoon" },
        annotations: {
          [ANN_MODE]: "run",
          "cocoonset.cocoonstack.io/storage": "10G",
          [ANN_MANAGED]: "true",
        },
      },
      spec: {
        nodeName,
        tolerations: [{ key: TOLERATION_KEY, operator: "Exists", effect: "NoSchedule" }],
        containers: [
          { name: "ubuntu", image: "ubuntu-dev-base", resources: { limits: { cpu: "1", memory: "1Gi" } } },
        ],
      },
    });
    assert.equal(res.status, 201);
    const pod = await waitPod("test-ubuntu", "ProviderFailed", (p) => p.status?.reason === "ProviderFailed");
    assert.equal(pod.status?.phase, "Pending");
    assert.equal(pod.status?.message, `pod ${ns}/test-ubuntu missing vm.cocoonstack.io/name annotation`);
    assert.equal(ann(pod, ANN_LIFECYCLE_STATE), undefined);
  });

  test("an existing :hibernate tag refuses explicit clone sources and other images, and restores otherwise", async () => {
    const vm = vmName("held-0");
    await pushSnapshot(oci, {
      vmName: vm,
      vmID: "old",
      tag: "hibernate",
      baseImage: "img-a",
      fromNode: "elsewhere",
    });

    await createPod("held-fork", {
      annotations: managedAnnotations(vm, { [ANN_IMAGE]: "img-a", [ANN_FORK_FROM]: vmName("held-main") }),
      bind: true,
    });
    const forked = await waitPod("held-fork", "failed", lifecycleAt("failed", 1));
    assert.equal(
      ann(forked, ANN_LIFECYCLE_STATE_MESSAGE),
      `vm ${vm} has a hibernate snapshot but the pod requests an explicit clone source; delete the hibernate tag to discard the hibernated state`,
    );
    assert.equal(ann(forked, ANN_VM_ID), undefined);

    await createPod("held-image", {
      annotations: managedAnnotations(vm, { [ANN_IMAGE]: "img-b" }),
      bind: true,
    });
    const swapped = await waitPod("held-image", "failed", lifecycleAt("failed", 1));
    assert.equal(
      ann(swapped, ANN_LIFECYCLE_STATE_MESSAGE),
      `hibernate snapshot of vm ${vm} came from image "img-a" but the pod requests "img-b"; delete the hibernate tag to discard the hibernated state`,
    );
    await waitPod("held-image", "ProviderFailed", (p) => p.status?.reason === "ProviderFailed");
    assert.ok((await eventReasons("held-image")).includes("HibernateEvidenceFailed"));

    // Stop the refused pods' retries before a compatible pod takes the VM name.
    for (const name of ["held-fork", "held-image"]) {
      await apiRequest(env, "DELETE", `/api/v1/namespaces/${ns}/pods/${name}`);
      await waitFor(`${name} deleted`, async () => ((await getPod(name)) === undefined ? true : undefined));
    }

    await createPod("held-ok", { annotations: managedAnnotations(vm, { [ANN_IMAGE]: "img-a" }), bind: true });
    await waitPod("held-ok", "ready", lifecycleAt("ready", 1));
    const restore = sim.record.events({ kind: "restore", vmName: vm });
    assert.equal(restore.length, 1);
    assert.equal(restore[0]?.fromLocalCache, false);
    assert.ok((await eventReasons("held-ok")).includes("HibernateSnapshotExists"));
  });

  test("restore-from-hibernate needs the tag and uses the snapshot a seat release kept on the node", async () => {
    const missing = vmName("norestore-0");
    await createPod("norestore-0", {
      annotations: managedAnnotations(missing, { [ANN_RESTORE_FROM_HIBERNATE]: "true" }),
      bind: true,
    });
    const refused = await waitPod("norestore-0", "failed", lifecycleAt("failed", 1));
    assert.match(ann(refused, ANN_LIFECYCLE_STATE_MESSAGE) ?? "", /^pull .*:hibernate: manifest not found$/);
    assert.ok((await eventReasons("norestore-0")).includes("WakePullFailed"));

    const vm = vmName("seat-0");
    await createPod("seat-0", { annotations: managedAnnotations(vm), bind: true });
    await waitPod("seat-0", "ready", lifecycleAt("ready", 1));
    await patchAnnotations("seat-0", { [ANN_HIBERNATE]: "true" });
    await waitPod("seat-0", "hibernated", lifecycleAt("hibernated", 1));
    await patchAnnotations("seat-0", { [ANN_KEEP_SNAPSHOT_ON_DELETE]: "true" });
    await apiRequest(env, "DELETE", `/api/v1/namespaces/${ns}/pods/seat-0`);
    await waitFor("seat-0 removed", async () => ((await getPod("seat-0")) === undefined ? true : undefined));
    const released = sim.record.events({ kind: "destroy", vmName: vm });
    assert.equal(released[0]?.keptLocalSnapshot, true);
    assert.equal(await oci.getManifest(oci.repository(vm), "latest"), null, "no :latest without a live VM");

    await createPod("seat-0", {
      annotations: managedAnnotations(vm, { [ANN_RESTORE_FROM_HIBERNATE]: "true" }),
      bind: true,
    });
    await waitPod("seat-0", "restored", (p) => lifecycleAt("ready", 1)(p) && isReady(p));
    const restore = sim.record.events({ kind: "restore", vmName: vm });
    assert.equal(restore.length, 1);
    assert.equal(restore[0]?.fromLocalCache, true);
  });

  test("the OCI client works under a registry path prefix", async () => {
    const prefixed = new OciClient(`${env.registry}/team/cocoon`);
    const vm = vmName("prefixed");
    assert.equal(prefixed.repository(vm), `team/cocoon/${vm}`);
    await pushSnapshot(prefixed, {
      vmName: vm,
      vmID: "x",
      tag: "hibernate",
      baseImage: "img",
      fromNode: nodeName,
    });
    const manifest = await prefixed.getManifest(prefixed.repository(vm), "hibernate");
    assert.equal(manifest?.json.annotations?.[MANIFEST_ANN_BASE_IMAGE], "img");
    await prefixed.deleteTag(prefixed.repository(vm), "hibernate");
    assert.equal(await prefixed.getManifest(prefixed.repository(vm), "hibernate"), null);
  });

  test("macOS hibernate fails with HibernateUnsupported and is lifted when the request is cleared", async () => {
    const vm = vmName("mac-0");
    await createPod("mac-0", { annotations: managedAnnotations(vm, { [ANN_OS]: "macos" }), bind: true });
    await waitPod("mac-0", "ready", lifecycleAt("ready", 1));

    await patchAnnotations("mac-0", { [ANN_HIBERNATE]: "true" });
    const refused = await waitPod("mac-0", "failed", lifecycleAt("failed", 1));
    assert.equal(ann(refused, ANN_LIFECYCLE_STATE_MESSAGE), `macOS guest ${vm} does not support hibernate`);
    assert.ok((ann(refused, ANN_VM_ID) ?? "") !== "", "the guest keeps running");
    assert.ok((await eventReasons("mac-0")).includes("HibernateUnsupported"));

    await patchAnnotations("mac-0", { [ANN_HIBERNATE]: null });
    const lifted = await waitPod("mac-0", "ready again", (p) => lifecycleAt("ready", 1)(p) && isReady(p));
    assert.equal(ann(lifted, ANN_LIFECYCLE_STATE_MESSAGE), undefined);
    assert.equal(await oci.getManifest(oci.repository(vm), "hibernate"), null);
  });

  test("deletion pushes :latest per snapshot policy and removes the pod", async () => {
    const main = vmName("del-0");
    const sub = vmName("del-1");
    for (const [name, vm] of [
      ["del-0", main],
      ["del-1", sub],
    ] as const) {
      await createPod(name, {
        annotations: managedAnnotations(vm, {
          [ANN_SNAPSHOT_POLICY]: "main-only",
          [ANN_KEEP_SNAPSHOT_ON_DELETE]: "true",
        }),
        ownerCocoonSet: "del",
        bind: true,
      });
      await waitPod(name, "ready", lifecycleAt("ready", 1));
    }
    for (const name of ["del-0", "del-1"]) {
      const res = await apiRequest(env, "DELETE", `/api/v1/namespaces/${ns}/pods/${name}`);
      assert.equal(res.status, 200);
    }
    for (const name of ["del-0", "del-1"]) {
      await waitFor(`${name} removed`, async () => ((await getPod(name)) === undefined ? true : undefined));
    }
    const latest = await oci.getManifest(oci.repository(main), "latest");
    assert.ok(latest !== null, "main-only pushes the main's :latest");
    assert.equal(latest.json.annotations?.[MANIFEST_ANN_BASE_IMAGE], "ubuntu-dev-base");
    assert.equal(await oci.getManifest(oci.repository(sub), "latest"), null, "no :latest for a sub-agent");
    assert.equal(sim.record.events({ kind: "push-latest", vmName: main }).length, 1);
    const destroyed = sim.record.events({ kind: "destroy", vmName: main });
    assert.equal(destroyed[0]?.keptLocalSnapshot, true);
    assert.ok(!sim.record.liveVMs().some((v) => v.vmName === main || v.vmName === sub));
  });
  test("eviction: vk deletes the pod whose VM is gone, then reports it Failed with the reason", async () => {
    const vm = vmName("evict-0");
    const watch = observe("evict-0");
    await createPod("evict-0", { annotations: managedAnnotations(vm), bind: true });
    const ready = await waitPod("evict-0", "ready", (p) => lifecycleAt("ready", 1)(p) && isReady(p));
    const vmID = ann(ready, ANN_VM_ID);

    sim.faults.evict(vm);
    await waitFor("evicted pod removed", async () =>
      (await getPod("evict-0")) === undefined ? true : undefined,
    );
    await watch.stop();
    const failed = watch.versions.find((p) => p.status?.phase === "Failed");
    assert.ok(failed, "phase Failed was published");
    assert.ok(failed.metadata.deletionTimestamp, "the delete comes before the Failed notify");
    assert.equal(failed.metadata.uid, ready.metadata.uid);
    assert.deepEqual(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    assert.equal(failed.status?.containerStatuses?.[0]?.state?.terminated?.reason, "VMGone");
    assert.equal(failed.status?.containerStatuses?.[0]?.state?.terminated?.message, "vm no longer exists");
    assert.ok(!isReady(failed));
    const evicted = sim.record.events({ kind: "evict", vmName: vm });
    assert.equal(evicted.length, 1);
    assert.equal(evicted[0]?.vmID, vmID);
    assert.deepEqual(sim.record.events({ kind: "push-latest", vmName: vm }), [], "nothing is left to save");
    assert.deepEqual(sim.record.events({ kind: "destroy", vmName: vm }), []);
    assert.ok(!sim.record.liveVMs().some((v) => v.vmName === vm));
  });

  test("a snapshot another hypervisor took is refused for a restore and for a clone source", async () => {
    const vm = vmName("fc-0");
    await pushSnapshot(oci, {
      vmName: vm,
      vmID: "old",
      tag: "hibernate",
      baseImage: "ubuntu-dev-base",
      fromNode: "elsewhere",
      hypervisor: "firecracker",
    });
    await createPod("fc-0", {
      annotations: managedAnnotations(vm, { [ANN_BACKEND]: "cloud-hypervisor" }),
      bind: true,
    });
    const refused = await waitPod("fc-0", "failed", lifecycleAt("failed", 1));
    const ref = `${oci.repository(vm)}:hibernate`;
    assert.equal(
      ann(refused, ANN_LIFECYCLE_STATE_MESSAGE),
      `clone vm ${vm} from ${ref}: snapshot ${ref} was taken with firecracker but CocoonSet requests cloud-hypervisor`,
    );
    assert.ok((await eventReasons("fc-0")).includes("CreateBringUpFailed"));
    assert.deepEqual(sim.record.events({ kind: "restore", vmName: vm }), []);
    await apiRequest(env, "DELETE", `/api/v1/namespaces/${ns}/pods/fc-0`);
    await waitFor("fc-0 deleted", async () => ((await getPod("fc-0")) === undefined ? true : undefined));

    // The same snapshot restores for the backend that took it, and a hibernate records that backend.
    await createPod("fc-0", {
      annotations: managedAnnotations(vm, { [ANN_BACKEND]: "firecracker" }),
      bind: true,
    });
    await waitPod("fc-0", "restored", lifecycleAt("ready", 1));
    assert.equal(sim.record.events({ kind: "restore", vmName: vm }).length, 1);
    await patchAnnotations("fc-0", { [ANN_HIBERNATE]: "true" });
    await waitPod("fc-0", "hibernated", lifecycleAt("hibernated", 1));
    const pushed = await oci.getManifest(oci.repository(vm), "hibernate");
    assert.ok(pushed !== null);
    assert.equal(await readSnapshotHypervisor(oci, oci.repository(vm), pushed.json), "firecracker");

    const base = `fc-base-${ns}`;
    await pushSnapshot(oci, {
      vmName: base,
      vmID: "base",
      tag: "v1",
      baseImage: "",
      fromNode: "elsewhere",
      hypervisor: "firecracker",
    });
    const clone = vmName("fc-clone");
    await createPod("fc-clone", {
      annotations: managedAnnotations(clone, {
        [ANN_IMAGE]: `${base}:v1`,
        [ANN_BACKEND]: "cloud-hypervisor",
      }),
      bind: true,
    });
    const cloneRefused = await waitPod("fc-clone", "failed", lifecycleAt("failed", 1));
    assert.equal(
      ann(cloneRefused, ANN_LIFECYCLE_STATE_MESSAGE),
      `clone vm ${clone} from ${base}:v1: snapshot ${base}:v1 was taken with firecracker but CocoonSet requests cloud-hypervisor`,
    );
    assert.deepEqual(sim.record.events({ kind: "boot", vmName: clone }), []);
  });
});
