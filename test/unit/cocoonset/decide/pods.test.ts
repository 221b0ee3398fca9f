import assert from "node:assert/strict";
import { test } from "node:test";
import type { CocoonSet, ToolboxSpec } from "../../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../../src/cocoonset/decide/pods.ts";

// The upstream fixture: set `demo` in namespace `ns`, UID `test-uid`, generation 0.
function newCocoonSet(mutate: (cs: CocoonSet) => void = () => {}): CocoonSet {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns", uid: "test-uid", generation: 0 },
    spec: { agent: { image: "ghcr.io/cocoonstack/cocoon/ubuntu:24.04" } },
  };
  mutate(cs);
  return cs;
}

const STATIC_TB: ToolboxSpec = {
  name: "tb",
  mode: "static",
  staticIP: "10.0.0.1",
  staticVMID: "qemu-1",
  vncPort: 5901,
};

test("slot 0 is the main agent without fork-from", () => {
  const pod = buildMainPod(newCocoonSet());
  assert.equal(pod.metadata.name, "demo-0");
  assert.equal(pod.metadata.namespace, "ns");
  assert.equal(pod.metadata.labels?.["cocoonset.cocoonstack.io/role"], "main");
  assert.equal(pod.metadata.labels?.["cocoonset.cocoonstack.io/slot"], "0");
  assert.equal(pod.metadata.annotations?.["vm.cocoonstack.io/name"], "vk-ns-demo-0");
  assert.equal(pod.metadata.annotations?.["vm.cocoonstack.io/fork-from"], undefined);
});

test("a sub-agent forks from the main and is bound to the main's node", () => {
  const pod = buildSubAgentPod(
    newCocoonSet((cs) => (cs.spec.agent.replicas = 2)),
    1,
    "cocoonset-node-2",
    {
      mainVMName: "vk-ns-demo-0",
    },
  );
  assert.equal(pod.metadata.name, "demo-1");
  assert.equal(pod.metadata.labels?.["cocoonset.cocoonstack.io/role"], "sub-agent");
  assert.equal(pod.metadata.labels?.["cocoonset.cocoonstack.io/slot"], "1");
  assert.equal(pod.metadata.annotations?.["vm.cocoonstack.io/name"], "vk-ns-demo-1");
  assert.equal(pod.metadata.annotations?.["vm.cocoonstack.io/fork-from"], "vk-ns-demo-0");
  assert.equal(pod.spec.nodeName, "cocoonset-node-2");
  assert.equal(pod.spec.affinity, undefined);
});

test("a sub-agent's fork-from defaults to slot 0's VM name", () => {
  const pod = buildSubAgentPod(newCocoonSet(), 2, "node-a");
  assert.equal(pod.metadata.annotations?.["vm.cocoonstack.io/fork-from"], "vk-ns-demo-0");
});

test("agent defaults: mode clone, os linux, managed", () => {
  const a = buildMainPod(newCocoonSet()).metadata.annotations ?? {};
  assert.equal(a["cocoonset.cocoonstack.io/mode"], "clone");
  assert.equal(a["cocoonset.cocoonstack.io/os"], "linux");
  assert.equal(a["cocoonset.cocoonstack.io/managed"], "true");
  assert.equal(a["vm.cocoonstack.io/backend"], "cloud-hypervisor");
  assert.equal(a["cocoonset.cocoonstack.io/snapshot-policy"], "always");
  assert.equal(a["cocoonset.cocoonstack.io/image"], "ghcr.io/cocoonstack/cocoon/ubuntu:24.04");
});

test("storage becomes the canonical annotation and ephemeral-storage on requests and limits", () => {
  const pod = buildMainPod(newCocoonSet((cs) => (cs.spec.agent.storage = "100Gi")));
  assert.equal(pod.metadata.annotations?.["cocoonset.cocoonstack.io/storage"], "100Gi");
  const canonical = buildMainPod(newCocoonSet((cs) => (cs.spec.agent.storage = "1024Mi")));
  assert.equal(canonical.metadata.annotations?.["cocoonset.cocoonstack.io/storage"], "1Gi");
  assert.deepEqual(canonical.spec.containers[0]?.resources, {
    requests: { "ephemeral-storage": "1Gi" },
    limits: { "ephemeral-storage": "1Gi" },
  });
});

test("a zero storage size adds no ephemeral-storage", () => {
  const pod = buildMainPod(newCocoonSet((cs) => (cs.spec.agent.storage = "0")));
  assert.deepEqual(pod.spec.containers[0]?.resources, {});
});

test("a static toolbox is unmanaged and carries the VM runtime annotations", () => {
  const pod = buildToolboxPod(newCocoonSet(), STATIC_TB);
  const a = pod.metadata.annotations ?? {};
  assert.equal(pod.metadata.name, "demo-tb");
  assert.equal(pod.metadata.labels?.["cocoonset.cocoonstack.io/role"], "toolbox");
  assert.equal(pod.metadata.labels?.["cocoonset.cocoonstack.io/slot"], "tb");
  assert.equal(a["vm.cocoonstack.io/name"], "vk-ns-demo-tb");
  assert.equal(a["cocoonset.cocoonstack.io/managed"], undefined);
  assert.equal(a["cocoonset.cocoonstack.io/mode"], "static");
  assert.equal(a["vm.cocoonstack.io/id"], "qemu-1");
  assert.equal(a["vm.cocoonstack.io/ip"], "10.0.0.1");
  assert.equal(a["vm.cocoonstack.io/vnc-port"], "5901");
});

test("a run-mode toolbox is managed, without runtime annotations, SA, envFrom or placement", () => {
  const cs = newCocoonSet((cs) => {
    cs.spec.agent.serviceAccountName = "sa";
    cs.spec.agent.envFrom = [{ configMapRef: { name: "cm" } }];
    cs.spec.nodeName = "node-b";
  });
  const pod = buildToolboxPod(cs, {
    name: "tb",
    mode: "run",
    image: "ghcr.io/cocoonstack/cocoon/toolbox:latest",
  });
  const a = pod.metadata.annotations ?? {};
  assert.equal(a["cocoonset.cocoonstack.io/managed"], "true");
  assert.equal(a["vm.cocoonstack.io/id"], undefined);
  assert.equal(pod.spec.serviceAccountName, undefined);
  assert.equal(pod.spec.containers[0]?.envFrom, undefined);
  assert.equal(pod.spec.affinity, undefined);
  assert.equal(pod.spec.nodeName, undefined);
});

test("exactly one controller ownerReference to the set", () => {
  const refs = buildMainPod(newCocoonSet()).metadata.ownerReferences;
  assert.deepEqual(refs, [
    {
      apiVersion: "cocoonset.cocoonstack.io/v1",
      kind: "CocoonSet",
      name: "demo",
      uid: "test-uid",
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
});

test("pool and snapshot CPU class both select", () => {
  const cs = newCocoonSet((cs) => {
    cs.spec.nodePool = "purpose-a";
    cs.spec.snapshotCompatibilityClass = "n2-cascade-lake-v1";
  });
  for (const pod of [buildMainPod(cs), buildSubAgentPod(cs, 1, "n"), buildToolboxPod(cs, STATIC_TB)]) {
    assert.deepEqual(pod.spec.nodeSelector, {
      "cocoonstack.io/pool": "purpose-a",
      "cocoonstack.io/snapshot-cpu-class": "n2-cascade-lake-v1",
    });
  }
});

test("no class, no class key; the pool defaults to default", () => {
  assert.deepEqual(buildMainPod(newCocoonSet()).spec.nodeSelector, { "cocoonstack.io/pool": "default" });
});

test("tolerations: the cocoon key, and node flaps tolerated forever", () => {
  assert.deepEqual(buildMainPod(newCocoonSet()).spec.tolerations, [
    { key: "virtual-kubelet.io/provider", operator: "Exists" },
    { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" },
    { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
  ]);
});

test("the generation is stamped on every pod and survives the VMSpec merge", () => {
  const stamp = (generation: number) => newCocoonSet((cs) => (cs.metadata.generation = generation));
  const gen = "cocoonset.cocoonstack.io/generation";
  assert.equal(buildMainPod(stamp(42)).metadata.annotations?.[gen], "42");
  assert.equal(buildMainPod(stamp(11)).metadata.annotations?.[gen], "11");
  assert.equal(buildSubAgentPod(stamp(11), 1, "n").metadata.annotations?.[gen], "11");
  assert.equal(buildToolboxPod(stamp(13), { name: "tb", image: "x" }).metadata.annotations?.[gen], "13");
});

test("spec.nodeName pins the main with one required hostname term and no nodeName", () => {
  const pod = buildMainPod(newCocoonSet((cs) => (cs.spec.nodeName = "node-b")));
  assert.equal(pod.spec.nodeName, undefined);
  assert.deepEqual(pod.spec.affinity, {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-b"] }] },
        ],
      },
    },
  });
});

test("no nodeName, no affinity", () => {
  assert.equal(buildMainPod(newCocoonSet()).spec.affinity, undefined);
});

test("a sub-agent is bound to the main's node even when the set pins another", () => {
  const pod = buildSubAgentPod(
    newCocoonSet((cs) => (cs.spec.nodeName = "node-b")),
    1,
    "node-a",
  );
  assert.equal(pod.spec.nodeName, "node-a");
  assert.equal(pod.spec.affinity, undefined);
});

test("a wake hint is one preferred weight-100 term; restore flag and class kept", () => {
  const cs = newCocoonSet((cs) => (cs.spec.snapshotCompatibilityClass = "n2"));
  const pod = buildMainPod(cs, { restore: true, wakeHintNode: "node-a" });
  assert.equal(pod.metadata.annotations?.["vm.cocoonstack.io/restore-from-hibernate"], "true");
  assert.equal(pod.spec.nodeName, undefined);
  assert.equal(pod.spec.nodeSelector?.["cocoonstack.io/snapshot-cpu-class"], "n2");
  assert.deepEqual(pod.spec.affinity, {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 100,
          preference: {
            matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-a"] }],
          },
        },
      ],
    },
  });
});

test("a required pin wins over the wake hint", () => {
  const pod = buildMainPod(
    newCocoonSet((cs) => (cs.spec.nodeName = "node-b")),
    { wakeHintNode: "node-a" },
  );
  const affinity = pod.spec.affinity?.nodeAffinity;
  assert.equal(affinity?.preferredDuringSchedulingIgnoredDuringExecution, undefined);
  assert.deepEqual(
    affinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]?.matchExpressions,
    [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-b"] }],
  );
});

test("no restore flag unless asked; toolboxes and sub-agents can be restore-flagged", () => {
  const key = "vm.cocoonstack.io/restore-from-hibernate";
  assert.equal(buildMainPod(newCocoonSet()).metadata.annotations?.[key], undefined);
  assert.equal(
    buildToolboxPod(newCocoonSet(), { name: "tb", image: "x" }, { restore: true }).metadata.annotations?.[
      key
    ],
    "true",
  );
  assert.equal(
    buildSubAgentPod(newCocoonSet(), 1, "n", { restore: true }).metadata.annotations?.[key],
    "true",
  );
});

test("the placeholder container carries resources, envFrom and the service account", () => {
  const cs = newCocoonSet((cs) => {
    cs.spec.agent.resources = {
      requests: { cpu: "2000m", memory: "1024Mi" },
      limits: { cpu: 2, memory: "1Gi" },
    };
    cs.spec.agent.envFrom = [{ secretRef: { name: "s" } }];
    cs.spec.agent.serviceAccountName = "agent-sa";
    cs.spec.agent.storage = "20G";
  });
  const pod = buildMainPod(cs);
  assert.equal(pod.spec.terminationGracePeriodSeconds, 1);
  assert.equal(pod.spec.serviceAccountName, "agent-sa");
  assert.deepEqual(pod.spec.containers, [
    {
      name: "agent",
      image: "ghcr.io/cocoonstack/placeholder:latest",
      resources: {
        requests: { cpu: "2", memory: "1Gi", "ephemeral-storage": "20G" },
        limits: { cpu: "2", memory: "1Gi", "ephemeral-storage": "20G" },
      },
      envFrom: [{ secretRef: { name: "s" } }],
    },
  ]);
  assert.notEqual(pod.spec.containers[0]?.envFrom, cs.spec.agent.envFrom, "envFrom is copied, not shared");
  assert.deepEqual(pod.metadata.labels, {
    "cocoonset.cocoonstack.io/name": "demo",
    "cocoonset.cocoonstack.io/role": "main",
    "cocoonset.cocoonstack.io/slot": "0",
    "app.kubernetes.io/name": "demo",
  });
});

test("the spec's resource claims land on the container, copied", () => {
  const claims = [{ name: "gpu", request: "one" }];
  const pod = buildMainPod(newCocoonSet((cs) => (cs.spec.agent.resources = { claims })));
  assert.deepEqual(pod.spec.containers[0]?.resources?.claims, [{ name: "gpu", request: "one" }]);
  assert.notEqual(pod.spec.containers[0]?.resources?.claims?.[0], claims[0], "a claim is copied, not shared");
});

test("a toolbox's container carries its resources, which vk-cocoon sizes the VM from", () => {
  const pod = buildToolboxPod(newCocoonSet(), {
    name: "tb",
    mode: "run",
    image: "ghcr.io/cocoonstack/cocoon/toolbox:latest",
    resources: { limits: { cpu: "2", memory: "2Gi" } },
  });
  assert.deepEqual(pod.spec.containers[0]?.resources, { limits: { cpu: "2", memory: "2Gi" } });
});

test("a run-mode toolbox gets no operator-written IP or VNC port, whatever its spec carries", () => {
  const pod = buildToolboxPod(newCocoonSet(), {
    name: "tb",
    mode: "run",
    image: "ghcr.io/cocoonstack/cocoon/toolbox:latest",
    staticIP: "10.0.0.9",
    staticVMID: "qemu-9",
    vncPort: 5901,
  });
  const a = pod.metadata.annotations ?? {};
  assert.deepEqual(
    [a["vm.cocoonstack.io/id"], a["vm.cocoonstack.io/ip"], a["vm.cocoonstack.io/vnc-port"]],
    [undefined, undefined, undefined],
  );
});
