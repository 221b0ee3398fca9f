import assert from "node:assert/strict";
import { it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import { compactCachedPod, stripUnreadPodFields } from "../../../src/informers/compact.ts";

it("the pods informer drops only fields nothing reads", () => {
  const pod = {
    metadata: { name: "p", labels: { a: "b" }, annotations: { c: "d" }, managedFields: [{ manager: "x" }] },
    spec: {
      nodeName: "n",
      volumes: [{ name: "kube-api-access", projected: {} }],
      containers: [
        { name: "agent", image: "img", volumeMounts: [{ name: "kube-api-access", mountPath: "/x" }] },
      ],
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [
        {
          name: "agent",
          image: "img",
          imageID: "sha256:abc",
          containerID: "containerd://1",
          ready: true,
          restartCount: 1,
          started: true,
          state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
          lastState: { terminated: { exitCode: 1 } },
        },
      ],
    },
  } as unknown as Pod;
  assert.deepEqual(stripUnreadPodFields(pod), {
    metadata: { name: "p", labels: { a: "b" }, annotations: { c: "d" } },
    spec: { nodeName: "n", containers: [{ name: "agent", image: "img" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: "True" }],
      containerStatuses: [
        {
          name: "agent",
          image: "img",
          ready: true,
          restartCount: 1,
          started: true,
          state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
        },
      ],
    },
  });
});

it("the cached pod keeps every value it kept before its strings were shared", () => {
  const make = () =>
    ({
      metadata: {
        name: "p",
        namespace: "team",
        uid: "u-1",
        labels: { "cocoonset.cocoonstack.io/name": "s" },
        annotations: { "vm.cocoonstack.io/image": "img" },
        ownerReferences: [{ kind: "CocoonSet", name: "s", uid: "u-0", controller: true }],
        managedFields: [{ manager: "x" }],
      },
      spec: {
        nodeName: "n",
        containers: [{ name: "agent", image: "img", resources: { requests: { cpu: "2" } } }],
        tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists", tolerationSeconds: 300 }],
      },
      status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    }) as unknown as Pod;
  assert.deepEqual(compactCachedPod(make()), stripUnreadPodFields(make()));
});
