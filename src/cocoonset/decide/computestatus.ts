// Step 14: the status is computed from the classification of step 4 (no re-list), its conditions
// merged with the current ones so an unchanged condition keeps its lastTransitionTime, and it is
// written only when it differs structurally from the current status.

import type { Pod } from "../../apis/core.ts";
import { type ConditionUpdate, setStatusConditions } from "../../apis/status.ts";
import type {
  AgentStatus,
  CocoonSet,
  CocoonSetPhase,
  CocoonSetStatus,
  ToolboxStatus,
} from "../../apis/v1/types.ts";
import { connectionType } from "../../contract/conntype.ts";
import { ANN_CONN_TYPE, ANN_OS, ROLE_MAIN, ROLE_SUB_AGENT } from "../../contract/keys.ts";
import { byteOrder } from "../../contract/order.ts";
import { isPodReady, vmNameOf } from "../../contract/pod.ts";
import { parseVMRuntime } from "../../contract/vmruntime.ts";
import {
  CONDITION_GUEST_HOOKS,
  REASON_HOOK_FAILED,
  REASON_HOOKS_PENDING,
  REASON_HOOKS_SUCCEEDED,
} from "../../guest/keys.ts";
import type { HeldMember } from "../../guestgate.ts";
import { idleStatusFields } from "../../idle/deadlines.ts";
import { readIdlePolicy } from "../../idle/policy.ts";
import type { Classification } from "../../pass/classify.ts";

export const CONDITION_READY = "Ready";
export const CONDITION_PROGRESSING = "Progressing";
export const CONDITION_SUSPENDED = "Suspended";
export const REASON_ALL_AGENTS_READY = "AllAgentsReady";
export const REASON_AGENTS_NOT_READY = "AgentsNotReady";
export const REASON_RECONCILING = "Reconciling";
export const REASON_STABLE = "Stable";
export const REASON_SUSPENDED = "Suspended";
export const REASON_SUSPEND_IN_PROGRESS = "SuspendInProgress";
export const REASON_NOT_SUSPENDED = "NotSuspended";

export interface StatusOptions {
  /** A phase a step forces (Pending, Suspending, Suspended, Waking, Migrating, Failed); else derived. */
  phase?: CocoonSetPhase;
  /** RFC 3339 time stamped on a condition whose status changes. */
  now: string;
  /** Why the set is Failed, when a step knows: the Ready condition's reason and message. */
  failure?: { reason: string; message: string };
  /** Why a requested suspend does not go ahead (a failed pre-hibernate hook): the Suspended condition's. */
  suspendHeld?: { reason: string; message: string };
  /** The set's last use reported beside its last-activity annotation (its activity Lease). */
  lastUseMs?: number;
  /**
   * For a set naming a guest policy: the members its hooks hold back from Ready, by pod name. They
   * count as not ready, and the GuestHooks condition says why.
   */
  guestHooks?: { held: ReadonlyMap<string, HeldMember> };
}

export function computeStatus(
  cs: CocoonSet,
  classification: Classification,
  opts: StatusOptions,
): CocoonSetStatus {
  const generation = cs.metadata.generation ?? 0;
  const desiredAgents = 1 + (cs.spec.agent.replicas ?? 0);
  const desiredToolboxes = cs.spec.toolboxes?.length ?? 0;
  const { main } = classification;
  const held = opts.guestHooks?.held;
  const ready = (pod: Pod): boolean => isPodReady(pod) && !held?.has(pod.metadata.name ?? "");

  const agents: AgentStatus[] = [];
  const mainVMName = main ? vmNameOf(main) : "";
  if (main) agents.push(agentStatus(main, 0, ROLE_MAIN, ""));
  for (const slot of [...classification.subAgents.keys()].sort((a, b) => a - b)) {
    const pod = classification.subAgents.get(slot);
    if (pod) agents.push(agentStatus(pod, slot, ROLE_SUB_AGENT, mainVMName));
  }
  const readyAgents = (main && ready(main) ? 1 : 0) + countReady(classification.subAgents.values(), ready);

  const toolboxes: ToolboxStatus[] = [];
  for (const name of [...classification.toolboxes.keys()].sort(byteOrder)) {
    const pod = classification.toolboxes.get(name);
    if (pod) toolboxes.push(toolboxStatus(pod, name));
  }
  const readyToolboxes = countReady(classification.toolboxes.values(), ready);

  const counts = { readyAgents, desiredAgents, readyToolboxes, desiredToolboxes };
  const phase = opts.phase ?? derivePhase(main !== undefined && ready(main), counts);
  const status: CocoonSetStatus = { ...counts, phase };
  if (generation !== 0) status.observedGeneration = generation;
  if (agents.length > 0) status.agents = agents;
  if (toolboxes.length > 0) status.toolboxes = toolboxes;
  // When the idle or expiry policy will act (docs/idle.md), computed by the policy's own room.
  Object.assign(
    status,
    idleStatusFields(
      cs,
      readIdlePolicy(cs.metadata.annotations, opts.lastUseMs),
      phase,
      Date.parse(opts.now),
    ),
  );
  // A set that no longer names a guest policy drops the condition that reported on its hooks.
  const current = (cs.status?.conditions ?? []).filter(
    (c) => opts.guestHooks !== undefined || c.type !== CONDITION_GUEST_HOOKS,
  );
  status.conditions = setStatusConditions(
    current,
    buildConditions(
      generation,
      counts,
      phase,
      cs.spec.suspend === true,
      opts.failure,
      opts.suspendHeld,
      held && held.size > 0 ? guestHooksVerdict(held) : undefined,
      opts.guestHooks ? guestHooksCondition(generation, opts.guestHooks.held) : undefined,
    ),
    Date.parse(opts.now),
  );
  return status;
}

interface Counts {
  readyAgents: number;
  desiredAgents: number;
  readyToolboxes: number;
  desiredToolboxes: number;
}

function derivePhase(mainReady: boolean, counts: Counts): CocoonSetPhase {
  // Sub-agents and toolboxes wait for a Ready main (step 11), so until then the set is Pending.
  if (!mainReady) return "Pending";
  if (counts.readyAgents < counts.desiredAgents || counts.readyToolboxes < counts.desiredToolboxes)
    return "Scaling";
  return "Running";
}

function countReady(pods: Iterable<Pod>, isReady: (pod: Pod) => boolean): number {
  let ready = 0;
  for (const pod of pods) if (isReady(pod)) ready++;
  return ready;
}

/** Members named in a condition message at most; the rest are counted. */
const MAX_MEMBERS_NAMED = 3;

/** The held members' reason (a failure before a missing policy before hooks still to run) and their messages. */
function guestHooksVerdict(held: ReadonlyMap<string, HeldMember>): { reason: string; message: string } {
  const members = [...held.entries()].sort(([a], [b]) => byteOrder(a, b)).map(([, m]) => m);
  const reasons = new Set(members.map((m) => m.reason));
  const reason = reasons.has(REASON_HOOK_FAILED)
    ? REASON_HOOK_FAILED
    : (members.find((m) => m.reason !== REASON_HOOKS_PENDING)?.reason ?? REASON_HOOKS_PENDING);
  const named = members
    .filter((m) => m.reason === reason)
    .slice(0, MAX_MEMBERS_NAMED)
    .map((m) => m.message);
  const more = members.length - named.length;
  return {
    reason,
    message: `${named.join("; ")}${more > 0 ? `; and ${more} more held by guest hooks` : ""}`,
  };
}

function guestHooksCondition(generation: number, held: ReadonlyMap<string, HeldMember>): ConditionUpdate {
  if (held.size === 0) {
    return {
      type: CONDITION_GUEST_HOOKS,
      status: "True",
      reason: REASON_HOOKS_SUCCEEDED,
      message: "no member is held by its guest hooks",
      observedGeneration: generation,
    };
  }
  return {
    type: CONDITION_GUEST_HOOKS,
    status: "False",
    ...guestHooksVerdict(held),
    observedGeneration: generation,
  };
}

function agentStatus(pod: Pod, slot: number, role: string, forkedFrom: string): AgentStatus {
  const runtime = parseVMRuntime(pod.metadata.annotations);
  return withoutEmpty({
    slot,
    role,
    podName: pod.metadata.name,
    vmName: vmNameOf(pod),
    vmID: runtime.vmID,
    ip: runtime.ip,
    phase: pod.status?.phase,
    forkedFrom,
  });
}

function toolboxStatus(pod: Pod, name: string): ToolboxStatus {
  const annotations = pod.metadata.annotations ?? {};
  const runtime = parseVMRuntime(annotations);
  return withoutEmpty({
    name,
    podName: pod.metadata.name,
    vmName: vmNameOf(pod),
    vmID: runtime.vmID,
    ip: runtime.ip,
    phase: pod.status?.phase,
    connType: connectionType(annotations[ANN_OS] ?? "", runtime.vncPort > 0, annotations[ANN_CONN_TYPE]),
    vncPort: runtime.vncPort,
  });
}

/** Go's omitempty: empty strings, zero numbers and undefined fields are not serialised. */
function withoutEmpty<T extends object>(entry: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (value !== undefined && value !== "" && !(value === 0 && key !== "slot")) out[key] = value;
  }
  return out as T;
}

/**
 * Ready, Progressing and Suspended, each stamped with the generation they judge. Ready is True only
 * in the derived Running phase: a phase a step forces (Suspending, Migrating, Waking, Failed, …) means
 * the generation has not converged, whatever the pod counts say, so `kubectl wait --for=condition=Ready`
 * never passes on a set that is still moving.
 */
function buildConditions(
  generation: number,
  counts: Counts,
  phase: CocoonSetPhase,
  suspendRequested: boolean,
  failure: StatusOptions["failure"],
  suspendHeld: StatusOptions["suspendHeld"],
  guestHeld: { reason: string; message: string } | undefined,
  guestHooks: ConditionUpdate | undefined,
): ConditionUpdate[] {
  const { readyAgents, desiredAgents, readyToolboxes, desiredToolboxes } = counts;
  const allReady = readyAgents === desiredAgents && desiredAgents > 0 && readyToolboxes === desiredToolboxes;
  const ready = allReady && phase === "Running";
  const progressing = phase === "Pending" || phase === "Scaling";
  const suspended = phase === "Suspended";
  const conditions: ConditionUpdate[] = [
    {
      type: CONDITION_READY,
      status: ready ? "True" : "False",
      reason:
        failure?.reason ??
        (ready ? REASON_ALL_AGENTS_READY : allReady ? phase : (guestHeld?.reason ?? REASON_AGENTS_NOT_READY)),
      message:
        failure?.message ??
        `${readyAgents}/${desiredAgents} agents ready, ${readyToolboxes}/${desiredToolboxes} toolboxes ready${guestHeld ? `; ${guestHeld.message}` : ""}`,
      observedGeneration: generation,
    },
    {
      type: CONDITION_PROGRESSING,
      status: progressing ? "True" : "False",
      reason: progressing ? REASON_RECONCILING : REASON_STABLE,
      message: phase,
      observedGeneration: generation,
    },
    {
      type: CONDITION_SUSPENDED,
      status: suspended ? "True" : "False",
      reason: suspended
        ? REASON_SUSPENDED
        : suspendRequested
          ? (suspendHeld?.reason ?? REASON_SUSPEND_IN_PROGRESS)
          : REASON_NOT_SUSPENDED,
      message: suspended
        ? "every VM is hibernated"
        : suspendRequested
          ? (suspendHeld?.message ?? phase)
          : "spec.suspend is false",
      observedGeneration: generation,
    },
  ];
  if (guestHooks) conditions.push(guestHooks);
  // metav1.Condition omits a zero observedGeneration on the wire.
  if (generation === 0) for (const condition of conditions) delete condition.observedGeneration;
  return conditions;
}

/**
 * Structural equality as apimachinery's semantic DeepEqual sees two statuses read off the wire: a
 * field Go omits when empty (undefined, "", 0, an empty list) equals its absence.
 */
export function statusEqual(a: CocoonSetStatus | undefined, b: CocoonSetStatus | undefined): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map(canonical);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const field = canonical((value as Record<string, unknown>)[key]);
      if (field !== undefined) out[key] = field;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  if (value === null || value === "" || value === 0 || value === false) return undefined;
  return value;
}
