import assert from "node:assert/strict";
import { test } from "node:test";
import type { Pod, PodStatus } from "../../../src/apis/core.ts";
import { connectionType } from "../../../src/contract/conntype.ts";
import {
  annotationsMergePatch,
  cocoonSetOwnerName,
  hasCocoonToleration,
  hibernateStatePatch,
  isContainerRunning,
  isControlledBy,
  isPodFailed,
  isPodReady,
  isPodTerminal,
  isVMLive,
  podFailedReason,
  podKey,
  podNodePool,
  readHibernateState,
  readKeepSnapshotOnDelete,
  readRestoreFromHibernate,
  unschedulableMessage,
  vmNameOf,
} from "../../../src/contract/pod.ts";
import { shouldSnapshotVM } from "../../../src/contract/snapshotpolicy.ts";
import { applyVMRuntime, parseVMRuntime } from "../../../src/contract/vmruntime.ts";

function pod(
  parts: { annotations?: Record<string, string>; status?: PodStatus } & Partial<Pod["spec"]> = {},
): Pod {
  const { annotations, status, ...spec } = parts;
  return {
    metadata: { name: "demo-0", namespace: "ns", annotations },
    spec: { containers: [{ name: "agent" }], ...spec },
    status,
  };
}

const running: PodStatus = {
  phase: "Running",
  containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
  conditions: [{ type: "Ready", status: "True" }],
};

test("readiness, terminal phase and running containers", () => {
  assert.equal(isPodReady(pod({ status: running })), true);
  assert.equal(isPodReady(pod({ status: { conditions: [{ type: "Ready", status: "False" }] } })), false);
  assert.equal(isPodReady(pod()), false);
  assert.equal(isPodTerminal(pod({ status: { phase: "Failed" } })), true);
  assert.equal(isPodTerminal(pod({ status: { phase: "Succeeded" } })), false);
  assert.equal(isContainerRunning(pod({ status: running })), true);
  assert.equal(
    isContainerRunning(
      pod({
        status: {
          containerStatuses: [{ name: "agent", ready: false, restartCount: 0, state: { waiting: {} } }],
        },
      }),
    ),
    false,
  );
});

test("a VM is live only with a VM ID and a running container", () => {
  assert.equal(isVMLive(pod({ status: running, annotations: { "vm.cocoonstack.io/id": "vm-1" } })), true);
  assert.equal(isVMLive(pod({ status: running })), false);
  assert.equal(isVMLive(pod({ annotations: { "vm.cocoonstack.io/id": "vm-1" } })), false);
});

test("podFailedReason prefers the lifecycle state over the phase", () => {
  const failedLifecycle = { "vm.cocoonstack.io/lifecycle-state": "failed" };
  assert.equal(podFailedReason(pod({ status: running })), "");
  assert.equal(podFailedReason(pod({ annotations: failedLifecycle })), "PodLifecycleFailed");
  assert.equal(podFailedReason(pod({ status: { phase: "Failed" } })), "MainAgentFailed");
  assert.equal(
    podFailedReason(pod({ annotations: failedLifecycle, status: { phase: "Failed" } })),
    "PodLifecycleFailed",
  );
  assert.equal(isPodFailed(pod({ status: { phase: "Failed" } })), true);
});

test("unschedulableMessage reads PodScheduled=False/Unschedulable only", () => {
  const unschedulable = pod({
    status: {
      conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/3 nodes" }],
    },
  });
  assert.equal(unschedulableMessage(unschedulable), "0/3 nodes");
  const other = pod({
    status: {
      conditions: [{ type: "PodScheduled", status: "False", reason: "SchedulerError", message: "x" }],
    },
  });
  assert.equal(unschedulableMessage(other), undefined);
  assert.equal(unschedulableMessage(pod()), undefined);
});

test("podKey and vmNameOf", () => {
  assert.equal(podKey(pod()), "ns/demo-0");
  assert.equal(vmNameOf(pod({ annotations: { "vm.cocoonstack.io/name": "vk-ns-demo-0" } })), "vk-ns-demo-0");
  assert.equal(vmNameOf(pod()), "");
});

test("podNodePool: nodeSelector, then label, then annotation, then default", () => {
  const p = pod({
    nodeSelector: { "cocoonstack.io/pool": "sel" },
    annotations: { "cocoonstack.io/pool": "ann" },
  });
  p.metadata.labels = { "cocoonstack.io/pool": "lab" };
  assert.equal(podNodePool(p), "sel");
  p.spec.nodeSelector = {};
  assert.equal(podNodePool(p), "lab");
  p.metadata.labels = {};
  assert.equal(podNodePool(p), "ann");
  assert.equal(podNodePool(pod()), "default");
});

test("flag annotations are true only for the exact string true", () => {
  const flags = {
    "vm.cocoonstack.io/hibernate": "true",
    "vm.cocoonstack.io/restore-from-hibernate": "true",
    "vm.cocoonstack.io/keep-snapshot-on-delete": "True",
  };
  const p = pod({ annotations: flags });
  assert.equal(readHibernateState(p), true);
  assert.equal(readRestoreFromHibernate(p), true);
  assert.equal(readKeepSnapshotOnDelete(p), false);
  assert.equal(readHibernateState(pod()), false);
});

test("hibernate patches set true or delete, never write false", () => {
  assert.deepEqual(hibernateStatePatch(true), {
    metadata: { annotations: { "vm.cocoonstack.io/hibernate": "true" } },
  });
  assert.deepEqual(hibernateStatePatch(false), {
    metadata: { annotations: { "vm.cocoonstack.io/hibernate": null } },
  });
  assert.deepEqual(annotationsMergePatch({ a: "1" }), { metadata: { annotations: { a: "1" } } });
});

test("toleration and owner helpers", () => {
  assert.equal(
    hasCocoonToleration([{ key: "virtual-kubelet.io/provider", operator: "Equal", value: "x" }]),
    true,
  );
  assert.equal(hasCocoonToleration([{ key: "other" }]), false);
  assert.equal(hasCocoonToleration(undefined), false);
  const p = pod();
  p.metadata.ownerReferences = [
    { apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "u-rs", controller: true },
    { apiVersion: "other/v9", kind: "CocoonSet", name: "demo", uid: "u-cs" },
  ];
  assert.equal(cocoonSetOwnerName(p), "demo");
  assert.equal(cocoonSetOwnerName(pod()), "");
  assert.equal(isControlledBy(p, { uid: "u-cs" }), false);
  assert.equal(isControlledBy(p, { uid: "u-rs" }), true);
  assert.equal(isControlledBy(pod(), { uid: "u-cs" }), false);
});

test("VMRuntime apply and parse", () => {
  const annotations: Record<string, string> = { "vm.cocoonstack.io/ip": "keep" };
  applyVMRuntime(annotations, { vmID: "qemu-1", ip: "", vncPort: 0 });
  assert.deepEqual(annotations, { "vm.cocoonstack.io/ip": "keep", "vm.cocoonstack.io/id": "qemu-1" });
  applyVMRuntime(annotations, { vmID: "", ip: "10.0.0.1", vncPort: 5901 });
  assert.deepEqual(parseVMRuntime(annotations), { vmID: "qemu-1", ip: "10.0.0.1", vncPort: 5901 });
  assert.equal(parseVMRuntime({ "vm.cocoonstack.io/vnc-port": "x" }).vncPort, 0);
  assert.equal(parseVMRuntime({ "vm.cocoonstack.io/vnc-port": "3000000000" }).vncPort, 0);
  assert.deepEqual(parseVMRuntime(undefined), { vmID: "", ip: "", vncPort: 0 });
});

test("shouldSnapshotVM per policy and role", () => {
  const cases: [string, string, boolean][] = [
    ["never", "main", false],
    ["main-only", "main", true],
    ["main-only", "sub-agent", false],
    ["main-only", "toolbox", false],
    ["always", "toolbox", true],
    ["", "sub-agent", true],
    ["bogus", "sub-agent", true],
  ];
  for (const [policy, role, want] of cases)
    assert.equal(shouldSnapshotVM(policy, role), want, `${policy}/${role}`);
});

test("connectionType: override, vnc port, then OS", () => {
  assert.equal(connectionType("windows", true, "ssh"), "ssh");
  assert.equal(connectionType("windows", true, ""), "vnc");
  assert.equal(connectionType("android", false, undefined), "adb");
  assert.equal(connectionType("windows", false, ""), "rdp");
  assert.equal(connectionType("macos", false, ""), "ssh");
  assert.equal(connectionType("", false, ""), "ssh");
});
