// Pure drift checks (steps 7 and 11–13): does a live pod still match what the
// builders would make from the current spec? A drifted pod is recreated. Only what shapes the VM
// or its placement counts; affinity, nodeName, tolerations, labels and the container image don't.

import type { Pod } from "../../apis/core.ts";
import {
  type CocoonSet,
  DEFAULT_NODE_POOL,
  type EnvFromSource,
  type Quantity,
  type ResourceRequirements,
  type ToolboxSpec,
} from "../../apis/v1/types.ts";
import { LABEL_SNAPSHOT_CPU_CLASS } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { isPodFailed, podNodePool } from "../../contract/pod.ts";
import { compareQuantities } from "../../contract/quantity.ts";
import { parseVMRuntime } from "../../contract/vmruntime.ts";
import {
  parseVMSpec,
  type VMSpec,
  vmSpecEqual,
  vmSpecFromAgent,
  vmSpecFromToolbox,
} from "../../contract/vmspec.ts";
import type { Classification } from "../../pass/classify.ts";

const DEFAULT_SERVICE_ACCOUNT = "default";
const COMPARED_RESOURCES = ["cpu", "memory"] as const;

function vmSpecDrift(current: VMSpec, want: VMSpec): string | undefined {
  if (vmSpecEqual(current, want)) return undefined;
  const fields = (Object.keys(want) as (keyof VMSpec)[]).filter((field) => current[field] !== want[field]);
  return `vm spec differs: ${fields.join(", ")}`;
}

function quantityEqual(
  got: Record<string, Quantity> | undefined,
  want: Record<string, Quantity> | undefined,
  name: string,
): boolean {
  const a = got?.[name];
  const b = want?.[name];
  if (a == null || b == null) return a == null && b == null;
  try {
    return compareQuantities(a, b) === 0;
  } catch {
    return false;
  }
}

/**
 * CPU and memory only: ephemeral-storage is injected from the storage size, never in the spec.
 * A spec without requests compares its limits, as Guaranteed-QoS defaulting fills requests from them.
 */
function resourcesDrift(pod: Pod, want: ResourceRequirements | undefined): string | undefined {
  const container = pod.spec.containers?.[0];
  if (!container) return "pod has no container";
  const got = container.resources;
  const wantRequests = want?.requests && Object.keys(want.requests).length > 0 ? want.requests : want?.limits;
  for (const name of COMPARED_RESOURCES) {
    if (!quantityEqual(got?.limits, want?.limits, name)) return `${name} limit differs`;
    if (!quantityEqual(got?.requests, wantRequests, name)) return `${name} request differs`;
  }
  return undefined;
}

/**
 * Pool and snapshot CPU class. nodeSelector is immutable, so a live pod from before the class was
 * set (no class key) is adopted until it fails and is recreated anyway.
 */
function schedulingDrift(pod: Pod, cs: CocoonSet): string | undefined {
  const wantPool = cs.spec.nodePool || DEFAULT_NODE_POOL;
  const pool = podNodePool(pod);
  if (pool !== wantPool) return `node pool ${pool} != ${wantPool}`;
  const podClass = pod.spec.nodeSelector?.[LABEL_SNAPSHOT_CPU_CLASS] ?? "";
  const wantClass = cs.spec.snapshotCompatibilityClass ?? "";
  if (podClass === wantClass || (podClass === "" && !isPodFailed(pod))) return undefined;
  return `snapshot cpu class ${podClass || "(none)"} != ${wantClass || "(none)"}`;
}

/** JSON with Go's zero values dropped (absent = "" = [] = null), so DeepEqual semantics hold. */
function normalized(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map(normalized);
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .map(([key, inner]) => [key, normalized(inner)] as const)
      .filter(([, inner]) => inner !== undefined)
      .sort(([a], [b]) => byteOrder(a, b));
    return Object.fromEntries(entries);
  }
  return value === null || value === "" ? undefined : value;
}

function envFromEqual(got: EnvFromSource[] | undefined, want: EnvFromSource[] | undefined): boolean {
  return JSON.stringify(normalized(got ?? [])) === JSON.stringify(normalized(want ?? []));
}

/** Why an agent pod no longer matches the spec for its slot, or undefined when it matches. */
export function agentDriftReason(pod: Pod, cs: CocoonSet, slot: number): string | undefined {
  const agent = cs.spec.agent;
  const current = parseVMSpec(pod.metadata.annotations);
  // Sub-agents keep the main they forked from; a main must carry no fork-from at all.
  const forkFrom = slot > 0 ? current.forkFrom : "";
  const want = vmSpecFromAgent(agent, current.vmName, cs.spec.snapshotPolicy, forkFrom);
  const vmDrift = vmSpecDrift(current, want) ?? resourcesDrift(pod, agent.resources);
  if (vmDrift) return vmDrift;
  // The apiserver fills an unset service account with "default".
  const podSA = pod.spec.serviceAccountName || DEFAULT_SERVICE_ACCOUNT;
  const wantSA = agent.serviceAccountName || DEFAULT_SERVICE_ACCOUNT;
  if (podSA !== wantSA) return `service account ${podSA} != ${wantSA}`;
  if (!envFromEqual(pod.spec.containers?.[0]?.envFrom, agent.envFrom)) return "envFrom differs";
  return schedulingDrift(pod, cs);
}

export function agentDrifted(pod: Pod, cs: CocoonSet, slot: number): boolean {
  return agentDriftReason(pod, cs, slot) !== undefined;
}

/** Why a toolbox pod no longer matches its spec entry, or undefined when it matches. */
export function toolboxDriftReason(pod: Pod, cs: CocoonSet, toolbox: ToolboxSpec): string | undefined {
  const current = parseVMSpec(pod.metadata.annotations);
  const want = vmSpecFromToolbox(toolbox, current.vmName, cs.spec.snapshotPolicy);
  const drift =
    vmSpecDrift(current, want) ?? resourcesDrift(pod, toolbox.resources) ?? schedulingDrift(pod, cs);
  if (drift) return drift;
  if (toolbox.mode === "static") {
    const runtime = parseVMRuntime(pod.metadata.annotations);
    if (runtime.vmID !== (toolbox.staticVMID ?? "")) return "static VM id differs";
    if (runtime.ip !== (toolbox.staticIP ?? "")) return "static IP differs";
    if (runtime.vncPort !== (toolbox.vncPort ?? 0)) return "VNC port differs";
  }
  return undefined;
}

export function toolboxDrifted(pod: Pod, cs: CocoonSet, toolbox: ToolboxSpec): boolean {
  return toolboxDriftReason(pod, cs, toolbox) !== undefined;
}

/**
 * The owned pods steps 11–13 will rebuild because they drifted from the spec: the main, the
 * sub-agents the spec still counts, the toolboxes it still names. Scaled-away pods are not rebuilt.
 */
export function driftedPods(cs: CocoonSet, pods: Classification): Set<Pod> {
  const drifted = new Set<Pod>();
  if (pods.main && agentDrifted(pods.main, cs, 0)) drifted.add(pods.main);
  const replicas = cs.spec.agent.replicas ?? 0;
  for (const [slot, pod] of pods.subAgents) {
    if (slot >= 1 && slot <= replicas && agentDrifted(pod, cs, slot)) drifted.add(pod);
  }
  for (const toolbox of cs.spec.toolboxes ?? []) {
    const pod = pods.toolboxes.get(toolbox.name);
    if (pod && toolboxDrifted(pod, cs, toolbox)) drifted.add(pod);
  }
  return drifted;
}
