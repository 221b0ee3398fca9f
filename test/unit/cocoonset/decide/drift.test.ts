import assert from "node:assert/strict";
import { test } from "node:test";
import type { CocoonSet, ToolboxSpec } from "../../../../src/apis/v1/types.ts";
import {
  agentDrifted,
  agentDriftReason,
  driftedPods,
  toolboxDrifted,
} from "../../../../src/cocoonset/decide/drift.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../../src/cocoonset/decide/pods.ts";
import { LABEL_SLOT } from "../../../../src/contract/keys.ts";
import { classifyPods } from "../../../../src/pass/classify.ts";

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

const CLASS = "cocoonstack.io/snapshot-cpu-class";

test("agent matches: identical spec, a sub with its fork-from, the default pool", () => {
  const cs = newCocoonSet((cs) => (cs.spec.agent.replicas = 1));
  assert.equal(agentDriftReason(buildMainPod(cs), cs, 0), undefined);
  assert.equal(agentDrifted(buildSubAgentPod(cs, 1, "node-a", { mainVMName: "vk-ns-demo-0" }), cs, 1), false);
  assert.equal(
    agentDrifted(
      buildMainPod(newCocoonSet()),
      newCocoonSet((cs) => (cs.spec.nodePool = "default")),
      0,
    ),
    false,
  );
});

test("agent matches: a pod built before nodeName was set (affinity is ignored)", () => {
  const pod = buildMainPod(newCocoonSet());
  assert.equal(
    agentDrifted(
      pod,
      newCocoonSet((cs) => (cs.spec.nodeName = "node-b")),
      0,
    ),
    false,
  );
});

test("agent matches: a live pod with no class is adopted; a Failed one is not", () => {
  const cs = newCocoonSet((cs) => (cs.spec.snapshotCompatibilityClass = "n2-cascade-lake-v1"));
  const pod = buildMainPod(cs);
  delete pod.spec.nodeSelector?.[CLASS];
  assert.equal(agentDrifted(pod, cs, 0), false);
  pod.status = { phase: "Failed" };
  assert.equal(agentDrifted(pod, cs, 0), true);
  pod.status = { phase: "Running" };
  pod.metadata.annotations = { ...pod.metadata.annotations, "vm.cocoonstack.io/lifecycle-state": "failed" };
  assert.equal(agentDrifted(pod, cs, 0), true);
});

test("agent mismatches", () => {
  type Case = [string, (cs: CocoonSet) => void, (cs: CocoonSet) => void];
  const cases: Case[] = [
    ["image", () => {}, (cs) => (cs.spec.agent.image = "ghcr.io/cocoonstack/cocoon/ubuntu:26.04")],
    ["backend", () => {}, (cs) => (cs.spec.agent.backend = "firecracker")],
    [
      "requests",
      (cs) => (cs.spec.agent.resources = { requests: { cpu: "1", memory: "1Gi" } }),
      (cs) => (cs.spec.agent.resources = { requests: { cpu: "2", memory: "2Gi" } }),
    ],
    ["probePort", () => {}, (cs) => (cs.spec.agent.probePort = 8080)],
    [
      "sa",
      (cs) => (cs.spec.agent.serviceAccountName = "sa-old"),
      (cs) => (cs.spec.agent.serviceAccountName = "sa-new"),
    ],
    [
      "envFrom",
      (cs) => (cs.spec.agent.envFrom = [{ configMapRef: { name: "cm-a" } }]),
      (cs) => (cs.spec.agent.envFrom = [{ configMapRef: { name: "cm-b" } }]),
    ],
    ["pool", (cs) => (cs.spec.nodePool = "gpu"), (cs) => (cs.spec.nodePool = "cpu")],
    ["storage", () => {}, (cs) => (cs.spec.agent.storage = "10Gi")],
    ["snapshotPolicy", () => {}, (cs) => (cs.spec.snapshotPolicy = "never")],
  ];
  for (const [name, before, after] of cases) {
    const pod = buildMainPod(newCocoonSet(before));
    assert.equal(agentDrifted(pod, newCocoonSet(after), 0), true, name);
  }
});

test("agent mismatch: the pod's class differs from the spec's", () => {
  const cs = newCocoonSet((cs) => (cs.spec.snapshotCompatibilityClass = "n2-cascade-lake-v1"));
  const pod = buildMainPod(cs);
  (pod.spec.nodeSelector as Record<string, string>)[CLASS] = "n4-emerald-rapids-v1";
  assert.equal(agentDrifted(pod, cs, 0), true);
});

test("a main carrying a fork-from drifts; a sub keeps whatever it forked from", () => {
  const cs = newCocoonSet();
  const main = buildMainPod(cs);
  main.metadata.annotations = { ...main.metadata.annotations, "vm.cocoonstack.io/fork-from": "vk-x" };
  assert.equal(agentDrifted(main, cs, 0), true);
  assert.equal(agentDrifted(buildSubAgentPod(cs, 1, "n", { mainVMName: "vk-old-main" }), cs, 1), false);
});

test("resources compare cpu and memory by value; a spec without requests compares its limits", () => {
  const cs = newCocoonSet((cs) => (cs.spec.agent.resources = { limits: { cpu: "2", memory: "1Gi" } }));
  const pod = buildMainPod(cs);
  // The apiserver's Guaranteed-QoS defaulting fills requests from limits, and adds ephemeral-storage.
  const container = pod.spec.containers[0];
  assert.ok(container);
  container.resources = {
    limits: { cpu: "2000m", memory: "1024Mi", "ephemeral-storage": "5Gi" },
    requests: { cpu: "2", memory: "1Gi", "ephemeral-storage": "5Gi" },
  };
  assert.equal(agentDrifted(pod, cs, 0), false);
  container.resources = { limits: { cpu: "2", memory: "1Gi" } };
  assert.equal(agentDrifted(pod, cs, 0), true, "requests missing on the pod");
});

test("empty and default service accounts are the same; nil and empty envFrom are the same", () => {
  const pod = buildMainPod(newCocoonSet());
  pod.spec.serviceAccountName = "default";
  const container = pod.spec.containers[0];
  assert.ok(container);
  container.envFrom = [];
  assert.equal(agentDrifted(pod, newCocoonSet(), 0), false);
  const optional = newCocoonSet(
    (cs) => (cs.spec.agent.envFrom = [{ configMapRef: { name: "cm", optional: true } }]),
  );
  container.envFrom = [{ configMapRef: { name: "cm" } }];
  assert.equal(agentDrifted(pod, optional, 0), true, "optional unset vs true differs");
  container.envFrom = [{ configMapRef: { optional: true, name: "cm" }, prefix: "" }];
  assert.equal(agentDrifted(pod, optional, 0), false, "key order and empty prefix do not matter");
});

test("labels, tolerations and the container image are ignored", () => {
  const cs = newCocoonSet();
  const pod = buildMainPod(cs);
  pod.metadata.labels = {};
  pod.spec.tolerations = [];
  const container = pod.spec.containers[0];
  assert.ok(container);
  container.image = "something-else";
  assert.equal(agentDrifted(pod, cs, 0), false);
});

test("a pod without containers drifts", () => {
  const cs = newCocoonSet();
  const pod = buildMainPod(cs);
  pod.spec.containers = [];
  assert.equal(agentDrifted(pod, cs, 0), true);
});

const RUN_TB: ToolboxSpec = { name: "tb", image: "ghcr.io/cocoonstack/cocoon/toolbox:latest", mode: "run" };
const STATIC_TB: ToolboxSpec = {
  name: "tb",
  mode: "static",
  staticVMID: "qemu-1",
  staticIP: "10.0.0.1",
  vncPort: 5901,
};

test("toolbox matches: identical run and static toolboxes, and a live pod with no class", () => {
  const cs = newCocoonSet();
  assert.equal(toolboxDrifted(buildToolboxPod(cs, RUN_TB), cs, RUN_TB), false);
  assert.equal(toolboxDrifted(buildToolboxPod(cs, STATIC_TB), cs, STATIC_TB), false);
  const classed = newCocoonSet((cs) => (cs.spec.snapshotCompatibilityClass = "n2-cascade-lake-v1"));
  const pod = buildToolboxPod(classed, RUN_TB);
  delete pod.spec.nodeSelector?.[CLASS];
  assert.equal(toolboxDrifted(pod, classed, RUN_TB), false);
});

test("toolbox mismatches", () => {
  const cs = newCocoonSet();
  const cases: [string, ToolboxSpec, ToolboxSpec][] = [
    ["probePort", RUN_TB, { ...RUN_TB, probePort: 9090 }],
    [
      "image",
      { name: "tb", image: "ghcr.io/cocoonstack/cocoon/toolbox:v1" },
      { name: "tb", image: "ghcr.io/cocoonstack/cocoon/toolbox:v2" },
    ],
    ["static VMID", STATIC_TB, { ...STATIC_TB, staticVMID: "qemu-2" }],
    ["static IP", STATIC_TB, { ...STATIC_TB, staticIP: "10.0.0.2" }],
    ["VNC port", STATIC_TB, { ...STATIC_TB, vncPort: 5902 }],
    ["resources", RUN_TB, { ...RUN_TB, resources: { limits: { memory: "2Gi" } } }],
    ["static to run", STATIC_TB, { ...STATIC_TB, mode: "run" }],
  ];
  for (const [name, before, after] of cases) {
    assert.equal(toolboxDrifted(buildToolboxPod(cs, before), cs, after), true, name);
  }
});

test("toolbox mismatch: pool", () => {
  const pod = buildToolboxPod(
    newCocoonSet((cs) => (cs.spec.nodePool = "gpu")),
    RUN_TB,
  );
  assert.equal(
    toolboxDrifted(
      pod,
      newCocoonSet((cs) => (cs.spec.nodePool = "cpu")),
      RUN_TB,
    ),
    true,
  );
});

test("resources: a spec with requests below its limits matches the pod built from it", () => {
  const cs = newCocoonSet(
    (cs) =>
      (cs.spec.agent.resources = {
        requests: { cpu: "1", memory: "1Gi" },
        limits: { cpu: "2", memory: "2Gi" },
      }),
  );
  assert.equal(agentDrifted(buildMainPod(cs), cs, 0), false);
});

test("resources: an empty requests map compares the limits, as the defaulted pod carries them", () => {
  const cs = newCocoonSet(
    (cs) => (cs.spec.agent.resources = { requests: {}, limits: { cpu: "2", memory: "1Gi" } }),
  );
  const pod = buildMainPod(cs);
  const container = pod.spec.containers[0];
  assert.ok(container);
  container.resources = { limits: { cpu: "2", memory: "1Gi" }, requests: { cpu: "2", memory: "1Gi" } };
  assert.equal(agentDrifted(pod, cs, 0), false);
});

test("resources: a changed limit drifts though the requests hold", () => {
  const before = newCocoonSet(
    (cs) => (cs.spec.agent.resources = { requests: { cpu: "1" }, limits: { cpu: "2" } }),
  );
  const after = newCocoonSet(
    (cs) => (cs.spec.agent.resources = { requests: { cpu: "1" }, limits: { cpu: "4" } }),
  );
  assert.equal(agentDrifted(buildMainPod(before), after, 0), true);
});

test("resources: a limit the spec no longer sets drifts", () => {
  const before = newCocoonSet(
    (cs) => (cs.spec.agent.resources = { requests: { cpu: "1" }, limits: { cpu: "2" } }),
  );
  const after = newCocoonSet((cs) => (cs.spec.agent.resources = { requests: { cpu: "1" } }));
  assert.equal(agentDrifted(buildMainPod(before), after, 0), true);
});

test("a pod from before the pool selector (no nodeSelector) on the default pool is adopted", () => {
  const cs = newCocoonSet();
  const pod = buildMainPod(cs);
  delete pod.spec.nodeSelector;
  assert.equal(agentDriftReason(pod, cs, 0), undefined);
});

test("driftedPods: the drifted main, sub-agents of slots 1..replicas and the spec's toolboxes only", () => {
  const before = newCocoonSet((cs) => {
    cs.spec.agent.replicas = 2;
    cs.spec.toolboxes = [RUN_TB, { ...RUN_TB, name: "kept" }];
  });
  const after = newCocoonSet((cs) => {
    cs.spec.agent.replicas = 1;
    cs.spec.agent.probePort = 8080;
    cs.spec.toolboxes = [
      { ...RUN_TB, probePort: 9090 },
      { ...RUN_TB, name: "kept" },
      { ...RUN_TB, name: "new" },
    ];
  });
  const main = buildMainPod(before);
  const sub1 = buildSubAgentPod(before, 1, "node-a", { mainVMName: "vk-ns-demo-0" });
  const sub2 = buildSubAgentPod(before, 2, "node-a", { mainVMName: "vk-ns-demo-0" });
  // A pod labelled sub-agent in slot 0 is no slot the spec counts.
  const sub0 = buildSubAgentPod(before, 1, "node-a", { mainVMName: "vk-ns-demo-0" });
  sub0.metadata.name = "demo-sub0";
  sub0.metadata.labels = { ...sub0.metadata.labels, [LABEL_SLOT]: "0" };
  const tb = buildToolboxPod(before, RUN_TB);
  const kept = buildToolboxPod(before, { ...RUN_TB, name: "kept" });
  const pods = classifyPods([main, sub0, sub1, sub2, tb, kept], { name: "demo", uid: "test-uid" });
  assert.deepEqual(
    [...driftedPods(after, pods)].map((pod) => pod.metadata.name),
    ["demo-0", "demo-1", "demo-tb"],
  );
  assert.deepEqual([...driftedPods(before, pods)], []);
});
