// Registers a virtual node the way virtual-kubelet + vk-cocoon do: the virtual-kubelet and cocoon
// labels (pool, CPU class), the provider taint, and a status with its conditions and capacity.

import {
  LABEL_HOSTNAME,
  LABEL_NODE_POOL,
  LABEL_SNAPSHOT_CPU_CLASS,
  TOLERATION_KEY,
} from "../../../src/contract/keys.ts";
import { type KubeClient, KubeError, MERGE_PATCH, ok } from "./kube.ts";

export interface SimNodeOptions {
  name: string;
  /** cocoonstack.io/pool label; default "default". */
  pool?: string;
  /** cocoonstack.io/snapshot-cpu-class label, only when set. */
  cpuClass?: string;
  /** Allocatable pods; default 110. */
  pods?: number;
}

const NOT_READY_TAINT = "node.kubernetes.io/not-ready";
const PROVIDER_TAINT = { key: TOLERATION_KEY, value: "cocoon", effect: "NoSchedule" };
const KUBELET_VERSION = "v0.0.0-cocoon-sim";

interface Taint {
  key: string;
  value?: string;
  effect: string;
}

function nodeLabels(opts: SimNodeOptions): Record<string, string | null> {
  return {
    [LABEL_HOSTNAME]: opts.name,
    "kubernetes.io/os": "linux",
    type: "virtual-kubelet",
    "kubernetes.io/role": "agent",
    [LABEL_NODE_POOL]: opts.pool ?? "default",
    "node-role.kubernetes.io/cocoon-vm": "",
    [LABEL_SNAPSHOT_CPU_CLASS]: opts.cpuClass ?? null,
  };
}

function nodeStatus(opts: SimNodeOptions, internalIP: string, kubeletPort: number) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const condition = (type: string, status: string, reason: string) => ({
    type,
    status,
    reason,
    message: reason,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  const resources = {
    cpu: "64",
    memory: "256Gi",
    "ephemeral-storage": "10Ti",
    pods: String(opts.pods ?? 110),
  };
  return {
    capacity: resources,
    allocatable: resources,
    conditions: [
      condition("Ready", "True", "KubeletReady"),
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID"),
      condition("NetworkUnavailable", "False", "RouteCreated"),
    ],
    addresses: [
      { type: "InternalIP", address: internalIP },
      { type: "Hostname", address: opts.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
    nodeInfo: {
      kubeletVersion: KUBELET_VERSION,
      operatingSystem: "linux",
      architecture: "amd64",
      containerRuntimeVersion: "cocoon://sim",
      kernelVersion: "",
      osImage: "cocoon simulator",
      machineID: "",
      systemUUID: "",
      bootID: "",
      kubeProxyVersion: "",
    },
  };
}

/**
 * Creates the Node (or refreshes an existing one) and returns it with Ready=True and no not-ready taint.
 * Its InternalIP and kubelet port are where the node's kubelet API listens (vk-cocoon: VK_NODE_IP and
 * VK_KUBELET_PORT, 10250 by default; a simulated node takes a free port).
 */
export async function registerNode(
  kube: KubeClient,
  opts: SimNodeOptions,
  internalIP: string,
  kubeletPort: number,
): Promise<void> {
  const labels = nodeLabels(opts);
  const createLabels = Object.fromEntries(Object.entries(labels).filter(([, v]) => v !== null));
  const status = nodeStatus(opts, internalIP, kubeletPort);
  const created = await kube.request<{ spec?: { taints?: Taint[] } }>("POST", "/api/v1/nodes", {
    body: {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: opts.name, labels: createLabels },
      spec: { taints: [PROVIDER_TAINT] },
      status,
    },
  });
  let taints: Taint[];
  if (created.status === 409) {
    const existing = await kube.request<{ spec?: { taints?: Taint[] } }>("GET", nodePath(opts.name));
    if (!ok(existing)) throw new KubeError(`get node ${opts.name}`, existing);
    taints = existing.body.spec?.taints ?? [];
    const relabel = await kube.request("PATCH", nodePath(opts.name), {
      body: { metadata: { labels } },
      contentType: MERGE_PATCH,
    });
    if (!ok(relabel)) throw new KubeError(`label node ${opts.name}`, relabel);
  } else if (ok(created)) {
    taints = created.body.spec?.taints ?? [];
  } else {
    throw new KubeError(`create node ${opts.name}`, created);
  }
  // Status on create may be dropped by older servers and never survives a re-registration.
  const statusPatch = await kube.request("PATCH", `${nodePath(opts.name)}/status`, {
    body: { status },
    contentType: MERGE_PATCH,
  });
  if (!ok(statusPatch)) throw new KubeError(`patch node ${opts.name} status`, statusPatch);
  const wanted = taints.filter((t) => t.key !== NOT_READY_TAINT);
  if (!wanted.some((t) => t.key === TOLERATION_KEY)) wanted.push(PROVIDER_TAINT);
  if (wanted.length !== taints.length || wanted.some((t, i) => t.key !== taints[i]?.key)) {
    // TaintNodesByCondition admission adds not-ready; no node lifecycle controller would remove it.
    const retaint = await kube.request("PATCH", nodePath(opts.name), {
      body: { spec: { taints: wanted } },
      contentType: MERGE_PATCH,
    });
    if (!ok(retaint)) throw new KubeError(`taint node ${opts.name}`, retaint);
  }
}

export async function deleteNode(kube: KubeClient, name: string): Promise<void> {
  const res = await kube.request("DELETE", nodePath(name));
  if (!ok(res) && res.status !== 404) throw new KubeError(`delete node ${name}`, res);
}

function nodePath(name: string): string {
  return `/api/v1/nodes/${encodeURIComponent(name)}`;
}
