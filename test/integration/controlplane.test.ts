import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { parse } from "yaml";
import { startControlPlane } from "../env/controlplane.ts";
import { apiRequest, createNamespace, type TestEnvInfo, testEnv, waitFor } from "../env/testenv.ts";
import { referenceSamplesDir } from "../support/shared.ts";

const crdBase = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const providerTaint = { key: "virtual-kubelet.io/provider", value: "cocoon", effect: "NoSchedule" };

describe("test control plane", () => {
  let env: TestEnvInfo;
  let namespace: string;
  before(async () => {
    env = testEnv();
    namespace = await createNamespace(env, "controlplane");
  });

  test("our CRDs are installed and Established", async () => {
    for (const name of [
      "cocoonsets.cocoonset.cocoonstack.io",
      "cocoonhibernations.cocoonset.cocoonstack.io",
    ]) {
      const res = await apiRequest(env, "GET", `${crdBase}/${name}`);
      assert.equal(res.status, 200, `CRD ${name}`);
      const established = res.body.status.conditions.find((c: { type: string }) => c.type === "Established");
      assert.equal(established?.status, "True", `CRD ${name} Established`);
    }
  });

  test("accepts the sample CocoonSet", async () => {
    const sample = parse(readFileSync(join(referenceSamplesDir, "test-cocoonset.yaml"), "utf8"));
    sample.metadata.namespace = namespace;
    const res = await apiRequest(
      env,
      "POST",
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${namespace}/cocoonsets`,
      sample,
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.spec.agent.image, "ubuntu-dev-base");
    assert.equal(res.body.metadata.generation, 1);
  });

  describe("kube-scheduler", () => {
    const suffix = randomBytes(3).toString("hex");
    const nodeName = `controlplane-${suffix}`;
    // A pool of its own, so pods of other tests never land on this node and vice versa.
    const pool = `controlplane-${suffix}`;
    const podPath = (name: string): string => `/api/v1/namespaces/${namespace}/pods/${name}`;

    before(async () => {
      const res = await apiRequest(env, "POST", "/api/v1/nodes", {
        apiVersion: "v1",
        kind: "Node",
        metadata: {
          name: nodeName,
          labels: { "kubernetes.io/hostname": nodeName, "cocoonstack.io/pool": pool },
        },
        spec: { taints: [providerTaint] },
        status: {
          capacity: { pods: "1", cpu: "8", memory: "16Gi", "ephemeral-storage": "100Gi" },
          allocatable: { pods: "1", cpu: "8", memory: "16Gi", "ephemeral-storage": "100Gi" },
          conditions: [{ type: "Ready", status: "True", reason: "KubeletReady" }],
        },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });

    after(async () => {
      // No kubelet finishes a graceful delete, so bound pods go with grace 0.
      for (const pod of ["first", "second"]) {
        await apiRequest(env, "DELETE", podPath(pod), { gracePeriodSeconds: 0 });
      }
      const res = await apiRequest(env, "DELETE", `/api/v1/nodes/${nodeName}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    });

    const pod = (name: string): object => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name },
      spec: {
        nodeSelector: { "cocoonstack.io/pool": pool },
        tolerations: [{ key: providerTaint.key, operator: "Exists" }],
        terminationGracePeriodSeconds: 1,
        containers: [{ name: "agent", image: "ghcr.io/cocoonstack/placeholder:latest" }],
      },
    });

    test("binds a tolerating pod to the node and reports the next one Unschedulable", async () => {
      const created = await apiRequest(env, "POST", `/api/v1/namespaces/${namespace}/pods`, pod("first"));
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const boundTo = await waitFor("the first pod to be bound", async () => {
        const res = await apiRequest(env, "GET", podPath("first"));
        return res.body.spec.nodeName || undefined;
      });
      assert.equal(boundTo, nodeName);

      const second = await apiRequest(env, "POST", `/api/v1/namespaces/${namespace}/pods`, pod("second"));
      assert.equal(second.status, 201, JSON.stringify(second.body));
      const scheduled = await waitFor("the second pod's PodScheduled condition", async () => {
        const res = await apiRequest(env, "GET", podPath("second"));
        const conditions: { type: string; status: string; reason?: string }[] =
          res.body.status.conditions ?? [];
        return conditions.find((c) => c.type === "PodScheduled");
      });
      assert.equal(scheduled.status, "False");
      assert.equal(scheduled.reason, "Unschedulable");
      const res = await apiRequest(env, "GET", podPath("second"));
      assert.equal(res.body.spec.nodeName, undefined);
    });
  });
});

// A control plane of its own: restarting the shared one would disturb tests running alongside.
test("restartApiServer brings kube-apiserver back on the same port with the same data", async () => {
  const controlPlane = await startControlPlane({ scheduler: false });
  try {
    const namespace = await createNamespace(controlPlane, "restart");
    await controlPlane.restartApiServer();
    // Same URL as before the restart: the port was kept; the namespace shows etcd was.
    const res = await apiRequest(controlPlane, "GET", `/api/v1/namespaces/${namespace}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.metadata.name, namespace);
  } finally {
    await controlPlane.stop();
  }
});
