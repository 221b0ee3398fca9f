// Pure builders of the placeholder pods a CocoonSet owns (docs/cocoonset.md). vk-cocoon
// never runs the container: it builds the VM from the annotations and container[0]'s resources.

import type { NodeAffinity, NodeSelectorTerm, Pod, Toleration } from "../../apis/core.ts";
import {
  API_VERSION,
  type CocoonSet,
  DEFAULT_NODE_POOL,
  type OwnerReference,
  type Quantity,
  type ResourceRequirements,
  type ToolboxSpec,
} from "../../apis/v1/types.ts";
import {
  ANN_COCOONSET_GENERATION,
  ANN_RESTORE_FROM_HIBERNATE,
  KIND_COCOONSET,
  LABEL_APP_NAME,
  LABEL_COCOONSET,
  LABEL_HOSTNAME,
  LABEL_NODE_POOL,
  LABEL_ROLE,
  LABEL_SLOT,
  LABEL_SNAPSHOT_CPU_CLASS,
  PLACEHOLDER_CONTAINER,
  PLACEHOLDER_IMAGE,
  ROLE_MAIN,
  ROLE_SUB_AGENT,
  ROLE_TOOLBOX,
  type Role,
  TOLERATION_KEY,
  TRUE,
} from "../../contract/keys.ts";
import { canonicalQuantity, parseQuantity } from "../../contract/quantity.ts";
import { agentPodName, agentVMName, podVMName, toolboxPodName } from "../../contract/vmname.ts";
import { applyVMRuntime } from "../../contract/vmruntime.ts";
import { applyVMSpec, vmSpecFromAgent, vmSpecFromToolbox } from "../../contract/vmspec.ts";
import { deepCopyJson } from "../../controller/deepcopy.ts";

export interface BuildOptions {
  /** Mark the pod restore-from-hibernate: vk restores the VM from its `:hibernate` snapshot. */
  restore?: boolean;
}

export interface MainPodOptions extends BuildOptions {
  /** Node the set hibernated on: a weight-100 preferred hostname term, unless spec.nodeName pins. */
  wakeHintNode?: string;
}

export interface SubAgentPodOptions extends BuildOptions {
  /** VM name of the live main (its vm.cocoonstack.io/name annotation); defaults to slot 0's name. */
  mainVMName?: string;
}

const NOT_READY_TAINT = "node.kubernetes.io/not-ready";
const UNREACHABLE_TAINT = "node.kubernetes.io/unreachable";
const EPHEMERAL_STORAGE = "ephemeral-storage";

/** The controller ownerReference of every pod the set owns. */
export function cocoonSetOwnerReference(cs: CocoonSet): OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: KIND_COCOONSET,
    name: cs.metadata.name ?? "",
    uid: cs.metadata.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Pool selector always; the snapshot CPU class only when set. */
export function podNodeSelector(cs: CocoonSet): Record<string, string> {
  const selector: Record<string, string> = { [LABEL_NODE_POOL]: cs.spec.nodePool || DEFAULT_NODE_POOL };
  if (cs.spec.snapshotCompatibilityClass)
    selector[LABEL_SNAPSHOT_CPU_CLASS] = cs.spec.snapshotCompatibilityClass;
  return selector;
}

function cocoonTolerations(): Toleration[] {
  // No tolerationSeconds: a flapping virtual node must never evict the VM's placeholder.
  return [
    { key: TOLERATION_KEY, operator: "Exists" },
    { key: NOT_READY_TAINT, operator: "Exists", effect: "NoExecute" },
    { key: UNREACHABLE_TAINT, operator: "Exists", effect: "NoExecute" },
  ];
}

function hostnameTerm(node: string): NodeSelectorTerm {
  return { matchExpressions: [{ key: LABEL_HOSTNAME, operator: "In", values: [node] }] };
}

export function requiredHostnameAffinity(node: string): { nodeAffinity: NodeAffinity } {
  return {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [hostnameTerm(node)] },
    },
  };
}

export function preferredHostnameAffinity(node: string): { nodeAffinity: NodeAffinity } {
  return {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, preference: hostnameTerm(node) }],
    },
  };
}

function canonicalResourceList(list: Record<string, Quantity>): Record<string, string> {
  return Object.fromEntries(Object.entries(list).map(([name, value]) => [name, canonicalQuantity(value)]));
}

/**
 * The container's resources: the spec's, serialised as Go would, plus a non-zero storage size as
 * ephemeral-storage on both requests and limits (so Guaranteed-QoS defaulting keeps it).
 */
function containerResources(
  resources: ResourceRequirements | undefined,
  storage: Quantity | undefined,
): ResourceRequirements {
  const out: ResourceRequirements = {};
  if (resources?.limits) out.limits = canonicalResourceList(resources.limits);
  if (resources?.requests) out.requests = canonicalResourceList(resources.requests);
  if (resources?.claims) out.claims = resources.claims.map((claim) => ({ ...claim }));
  if (storage != null && parseQuantity(storage).unscaled !== 0n) {
    const size = canonicalQuantity(storage);
    out.requests = { ...out.requests, [EPHEMERAL_STORAGE]: size };
    out.limits = { ...out.limits, [EPHEMERAL_STORAGE]: size };
  }
  return out;
}

/** The skeleton every owned pod shares: labels, generation stamp, tolerations, placement, owner. */
function newManagedPod(cs: CocoonSet, podName: string, role: Role, slotLabel: string): Pod {
  const setName = cs.metadata.name ?? "";
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: podName,
      namespace: cs.metadata.namespace,
      labels: {
        [LABEL_COCOONSET]: setName,
        [LABEL_ROLE]: role,
        [LABEL_SLOT]: slotLabel,
        [LABEL_APP_NAME]: setName,
      },
      annotations: { [ANN_COCOONSET_GENERATION]: String(cs.metadata.generation ?? 0) },
      ownerReferences: [cocoonSetOwnerReference(cs)],
    },
    spec: {
      terminationGracePeriodSeconds: 1,
      tolerations: cocoonTolerations(),
      nodeSelector: podNodeSelector(cs),
      containers: [{ name: PLACEHOLDER_CONTAINER, image: PLACEHOLDER_IMAGE }],
    },
  };
}

function annotationsOf(pod: Pod): Record<string, string> {
  pod.metadata.annotations ??= {};
  return pod.metadata.annotations;
}

function markRestore(pod: Pod, opts: BuildOptions): void {
  if (opts.restore) annotationsOf(pod)[ANN_RESTORE_FROM_HIBERNATE] = TRUE;
}

function buildAgentPod(cs: CocoonSet, slot: number, forkFrom: string, opts: BuildOptions): Pod {
  const namespace = cs.metadata.namespace ?? "";
  const setName = cs.metadata.name ?? "";
  const agent = cs.spec.agent;
  const pod = newManagedPod(
    cs,
    agentPodName(setName, slot),
    slot === 0 ? ROLE_MAIN : ROLE_SUB_AGENT,
    String(slot),
  );
  applyVMSpec(
    annotationsOf(pod),
    vmSpecFromAgent(agent, agentVMName(namespace, setName, slot), cs.spec.snapshotPolicy, forkFrom),
  );
  markRestore(pod, opts);
  const container = pod.spec.containers[0];
  if (container) {
    container.resources = containerResources(agent.resources, agent.storage);
    if (agent.envFrom) container.envFrom = deepCopyJson(agent.envFrom);
  }
  if (agent.serviceAccountName) pod.spec.serviceAccountName = agent.serviceAccountName;
  return pod;
}

/**
 * The main agent (slot 0). spec.nodeName becomes a required hostname affinity (the pod stays
 * Pending rather than land elsewhere); otherwise a wake hint becomes a preferred one.
 */
export function buildMainPod(cs: CocoonSet, opts: MainPodOptions = {}): Pod {
  const pod = buildAgentPod(cs, 0, "", opts);
  if (cs.spec.nodeName) pod.spec.affinity = requiredHostnameAffinity(cs.spec.nodeName);
  else if (opts.wakeHintNode) pod.spec.affinity = preferredHostnameAffinity(opts.wakeHintNode);
  return pod;
}

/** A sub-agent (slot ≥ 1): forks from the main VM and is bound hard to the main's node. */
export function buildSubAgentPod(
  cs: CocoonSet,
  slot: number,
  mainNode: string,
  opts: SubAgentPodOptions = {},
): Pod {
  const mainVMName = opts.mainVMName || agentVMName(cs.metadata.namespace ?? "", cs.metadata.name ?? "", 0);
  const pod = buildAgentPod(cs, slot, mainVMName, opts);
  if (mainNode) pod.spec.nodeName = mainNode;
  return pod;
}

/**
 * A toolbox pod `<cs>-<name>`. Static toolboxes adopt a user-managed VM: unmanaged, with the VM's
 * id, IP and VNC port written by the operator instead of vk-cocoon. No SA, envFrom or pinning.
 */
export function buildToolboxPod(cs: CocoonSet, toolbox: ToolboxSpec, opts: BuildOptions = {}): Pod {
  const podName = toolboxPodName(cs.metadata.name ?? "", toolbox.name);
  const pod = newManagedPod(cs, podName, ROLE_TOOLBOX, toolbox.name);
  const annotations = annotationsOf(pod);
  applyVMSpec(
    annotations,
    vmSpecFromToolbox(toolbox, podVMName(cs.metadata.namespace ?? "", podName), cs.spec.snapshotPolicy),
  );
  if (toolbox.mode === "static") {
    applyVMRuntime(annotations, {
      vmID: toolbox.staticVMID ?? "",
      ip: toolbox.staticIP ?? "",
      vncPort: toolbox.vncPort ?? 0,
    });
  }
  markRestore(pod, opts);
  const container = pod.spec.containers[0];
  if (container) container.resources = containerResources(toolbox.resources, toolbox.storage);
  return pod;
}
