// A CocoonSet's state as the SDK reads and judges it: the members (one per agent slot and toolbox of
// the spec, plus any other pod the set still has), and the goals of the state-changing set
// operations, each judged at the generation the operation's write produced, from the watched set and
// its watched pods.

import type { Pod } from "../apis/core.ts";
import { type CocoonSet, type Condition, KIND_COCOONSET } from "../apis/v1/types.ts";
import {
  LABEL_COCOONSET,
  LABEL_ROLE,
  LABEL_SLOT,
  LIFECYCLE_HIBERNATED,
  ROLE_MAIN,
  ROLE_SUB_AGENT,
  ROLE_TOOLBOX,
} from "../contract/keys.ts";
import { readLifecycleState } from "../contract/lifecycle.ts";
import { isPodReady, unschedulableMessage, vmNameOf } from "../contract/pod.ts";
import { agentPodName, agentVMName, toolboxPodName, toolboxVMName } from "../contract/vmname.ts";
import { isNotFound } from "../controller/errors.ts";
import { COCOONSETS, PODS } from "../controller/resources.ts";
import { CocoonNotFoundError } from "./errors.ts";
import { WarningWatch } from "./events.ts";
import {
  type Session,
  type Snapshot,
  type Verdict,
  type WaitOptions,
  type WaitSpec,
  waitFor,
} from "./wait.ts";

export interface SetMember {
  /** The agent slot ("0" is the main) or the toolbox name. */
  slot: string;
  role: string;
  podName: string;
  vmName: string;
  pod: Pod | undefined;
}

/** Every member the spec asks for, in slot order then toolbox order, then any leftover pod. */
export function membersOf(cs: CocoonSet, pods: readonly Pod[]): SetMember[] {
  const ns = cs.metadata.namespace ?? "";
  const name = cs.metadata.name ?? "";
  const byName = new Map(pods.map((pod) => [pod.metadata.name ?? "", pod]));
  const members: SetMember[] = [];
  const add = (slot: string, role: string, podName: string, vmName: string) => {
    const pod = byName.get(podName);
    byName.delete(podName);
    members.push({ slot, role, podName, vmName: (pod && vmNameOf(pod)) || vmName, pod });
  };
  for (let slot = 0; slot <= (cs.spec.agent.replicas ?? 0); slot++) {
    add(
      String(slot),
      slot === 0 ? ROLE_MAIN : ROLE_SUB_AGENT,
      agentPodName(name, slot),
      agentVMName(ns, name, slot),
    );
  }
  for (const toolbox of cs.spec.toolboxes ?? []) {
    add(
      toolbox.name,
      ROLE_TOOLBOX,
      toolboxPodName(name, toolbox.name),
      toolboxVMName(ns, name, toolbox.name),
    );
  }
  for (const [podName, pod] of byName) {
    const labels = pod.metadata.labels ?? {};
    add(labels[LABEL_SLOT] ?? "?", labels[LABEL_ROLE] ?? "?", podName, vmNameOf(pod));
  }
  return members;
}

/** What a member's pod is doing, in a few words: "ready", "lifecycle hibernating", "unschedulable: …". */
export function memberState(member: SetMember): string {
  const pod = member.pod;
  if (!pod) return "no pod";
  const unschedulable = unschedulableMessage(pod);
  if (unschedulable !== undefined) return `unschedulable: ${unschedulable}`;
  const lifecycle = readLifecycleState(pod);
  if (isPodReady(pod)) return lifecycle ? `ready (lifecycle ${lifecycle})` : "ready";
  return lifecycle ? `lifecycle ${lifecycle}` : `pod ${pod.status?.phase ?? "Pending"}`;
}

export interface SetState {
  cs: CocoonSet;
  pods: Pod[];
}

/** The condition of `type` as judged at `generation` or later; undefined while only an older one exists. */
export function conditionAt(cs: CocoonSet, type: string, generation: number): Condition | undefined {
  const condition = cs.status?.conditions?.find((c) => c.type === type);
  if (!condition) return undefined;
  const judged = condition.observedGeneration ?? cs.status?.observedGeneration ?? 0;
  return judged >= generation ? condition : undefined;
}

export type SetGoal = { kind: "suspended" } | { kind: "ready" } | { kind: "migrated"; node: string };

const GOAL_TEXT: Record<SetGoal["kind"], string> = {
  suspended: "suspend",
  ready: "be Ready",
  migrated: "move its main",
};

export function judgeSet(state: SetState, generation: number, goal: SetGoal): Verdict {
  const { cs } = state;
  const reverted = revertedChange(cs, goal);
  if (reverted) return reverted;
  const observed = cs.status?.observedGeneration ?? 0;
  if (observed < generation) {
    return {
      kind: "waiting",
      progress: `waiting for the operator to observe generation ${generation} (observed ${observed})`,
    };
  }
  const phase = cs.status?.phase ?? "";
  if (phase === "Failed") {
    const ready = conditionAt(cs, "Ready", generation);
    return { kind: "failed", reason: "Failed", message: ready?.message ?? "phase Failed" };
  }
  const members = membersOf(cs, state.pods);
  const main = members[0];
  if (goal.kind === "suspended") {
    if (conditionAt(cs, "Suspended", generation)?.status === "True") {
      return {
        kind: "done",
        summary: `cocoonset "${cs.metadata.name}" is Suspended (generation ${generation})`,
      };
    }
    const pending = members.find((m) => m.pod && readLifecycleState(m.pod) !== LIFECYCLE_HIBERNATED);
    return { kind: "waiting", progress: progress(phase, pending) };
  }
  const ready = conditionAt(cs, "Ready", generation)?.status === "True";
  const placed = goal.kind !== "migrated" || main?.pod?.spec.nodeName === goal.node;
  if (ready && placed) {
    const where = goal.kind === "migrated" ? ` on node ${goal.node}` : "";
    return {
      kind: "done",
      summary: `cocoonset "${cs.metadata.name}" is Ready${where} (generation ${generation})`,
    };
  }
  const pending = !placed ? main : members.find((m) => !m.pod || !isPodReady(m.pod));
  return { kind: "waiting", progress: progress(phase, pending) };
}

/**
 * The change the command made, put back by someone else since: a GitOps controller (Argo CD, Flux)
 * restores spec as its source has it. Named after the field's manager, so the wait ends at once
 * with who to talk to instead of timing out.
 */
function revertedChange(cs: CocoonSet, goal: SetGoal): Verdict | undefined {
  const suspend = cs.spec.suspend === true;
  let field: string;
  let now: string;
  if (goal.kind === "suspended" && !suspend) [field, now] = ["suspend", "false"];
  else if (goal.kind !== "suspended" && suspend) [field, now] = ["suspend", "true"];
  else if (goal.kind === "migrated" && (cs.spec.nodeName ?? "") !== goal.node)
    [field, now] = ["nodeName", JSON.stringify(cs.spec.nodeName ?? "")];
  else return undefined;
  const manager = fieldManager(cs, field);
  return {
    kind: "failed",
    reason: "Reverted",
    message: `spec.${field} was set back to ${now}${manager ? ` by ${manager}` : ""}: a GitOps controller (Argo CD, Flux) puts the set back as its source has it; make the change in the source (docs/idle.md, GitOps)`,
  };
}

/** One entry of metadata.managedFields (server-side field ownership), as far as it is read here. */
interface ManagedFieldsEntry {
  manager?: string;
  time?: string;
  fieldsV1?: unknown;
}

/** The manager that last wrote spec.FIELD, from the object's managedFields. */
export function fieldManager(cs: CocoonSet, field: string): string | undefined {
  const { managedFields = [] } = cs.metadata as { managedFields?: ManagedFieldsEntry[] };
  const entries = managedFields.filter((e) => {
    const spec = (e.fieldsV1 as Record<string, Record<string, unknown>> | undefined)?.["f:spec"];
    return spec !== undefined && `f:${field}` in spec;
  });
  entries.sort((a, b) => (a.time ?? "").localeCompare(b.time ?? ""));
  return entries.at(-1)?.manager;
}

function progress(phase: string, member: SetMember | undefined): string {
  const where = member?.pod?.spec.nodeName ? ` on ${member.pod.spec.nodeName}` : "";
  const waitingOn = member ? `; waiting on pod ${member.podName}${where}: ${memberState(member)}` : "";
  return `phase ${phase || "(none)"}${waitingOn}`;
}

/**
 * Written by `suspend --release` beside the hibernatePolicy=release it sets for that suspend alone:
 * the policy the set had before ("" when it had none), which `resume` puts back, removing this.
 */
export const ANN_RELEASE_UNTIL_RESUME = "cocoonset.cocoonstack.io/release-until-resume";

/** The wait of a set goal, judged at `generation`, over the watched set and its watched pods. */
export function setWait(
  name: string,
  generation: number,
  goal: SetGoal,
  warnings?: WarningWatch,
): WaitSpec<SetState | undefined> {
  return {
    what: `cocoonset "${name}" to ${GOAL_TEXT[goal.kind]}${goal.kind === "migrated" ? ` to node ${goal.node}` : ""}`,
    queries: [
      { rt: COCOONSETS, name },
      { rt: PODS, labelSelector: `${LABEL_COCOONSET}=${name}` },
    ],
    state: (snapshot) => setState(snapshot),
    judge: (state) =>
      state
        ? judgeSet(state, generation, goal)
        : { kind: "failed", reason: "Deleted", message: `cocoonset "${name}" was deleted` },
    ...(warnings ? { warnings } : {}),
  };
}

/** The set and its pods that are not being deleted, by name; undefined when the set is gone. */
function setState(snapshot: Snapshot): SetState | undefined {
  const [sets = [], pods = []] = snapshot as [CocoonSet[], Pod[]];
  const cs = sets[0];
  if (!cs) return undefined;
  return {
    cs,
    pods: pods
      .filter((pod) => !pod.metadata.deletionTimestamp)
      .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "")),
  };
}

/** A merge patch of a set: its spec, and annotations to set (null removes one). */
export interface SetPatch {
  spec: Record<string, unknown>;
  annotations?: Record<string, string | null>;
}

export function setNotFound(session: Pick<Session, "namespace">, name: string): CocoonNotFoundError {
  return new CocoonNotFoundError(`cocoonset "${name}" not found in namespace "${session.namespace}"`);
}

/**
 * Merge-patches the set and, when `wait` is given, waits until `goal` holds at the generation the
 * write produced. `onWritten` sees the patched set before the wait begins. Returns the set as last seen.
 */
export async function changeSet(
  session: Session,
  name: string,
  patch: SetPatch,
  goal: SetGoal,
  wait: WaitOptions | undefined,
  onWritten?: (cs: CocoonSet) => void,
): Promise<CocoonSet> {
  const warnings = wait ? await WarningWatch.start(session, KIND_COCOONSET, name) : undefined;
  let cs: CocoonSet;
  try {
    cs = await session.client.patch<CocoonSet>(COCOONSETS, session.namespace, name, {
      ...(patch.annotations ? { metadata: { annotations: patch.annotations } } : {}),
      spec: patch.spec,
    });
  } catch (err) {
    if (isNotFound(err)) throw setNotFound(session, name);
    throw err;
  }
  onWritten?.(cs);
  if (!wait) return cs;
  const state = await waitFor(session, setWait(name, cs.metadata.generation ?? 0, goal, warnings), wait);
  return state?.cs ?? cs;
}
