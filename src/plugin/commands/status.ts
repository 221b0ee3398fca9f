import { type CocoonSet, KIND_COCOONSET } from "../../apis/v1/types.ts";
import { ANN_IP, ANN_VM_ID } from "../../contract/keys.ts";
import { readLifecycleState } from "../../contract/lifecycle.ts";
import { isPodReady } from "../../contract/pod.ts";
import { COCOONSETS } from "../../controller/resources.ts";
import { type ClusterEvent, eventLines, objectEvents, structuredEvent } from "../cluster.ts";
import { type Command, type CommandContext, command } from "../command.ts";
import { UsageError } from "../errors.ts";
import { booleanFlag, stringFlag } from "../flags.ts";
import {
  type GuestHooksView,
  guestHooksHeader,
  guestHooksTable,
  guestHooksView,
  type MemberHooks,
} from "../guesthooks.ts";
import { age, formatStructured, formatTable, humanDuration, humanSize, objectName } from "../output.ts";
import { ALL_NAMESPACES_FLAG, listSets, SELECTOR_FLAG } from "../selection.ts";
import { type Member, membersOf, readSetState } from "../setstate.ts";
import { type SnapshotTag, vmSnapshots } from "../snapshots.ts";

/** How many of the set's events the table shows (all of them in -o json|yaml). */
const RECENT_EVENTS = 10;

export const status: Command = command({
  name: "status",
  summary: "Show a set: phase, conditions, one line per member with its snapshots, recent events",
  description: `Shows the set's phase and conditions (each with the generation it judged), then one line
per member: slot, pod, node, vk-cocoon's lifecycle state for the VM, readiness, and the snapshot tags
the VM has in the registry with their age and size (when a registry is configured: --registry or
OCI_REGISTRY), then the set's recent events. -o wide adds the VM name, VM ID and IP.
A set naming a guest policy also shows the policy, its GuestHooks condition, and one line per
member with what the hooks did for the VM the pod runs now: origin (clone or wake, "pending" while
none ran for this VM), the post, claim and pre-hibernate results, and the hook that failed and why.
Without SET it lists the namespace's sets (-A: every namespace's; -l: those the selector matches),
one line each: phase, ready agents and toolboxes, the idle-suspend and expiry times, age. -o name
prints kubectl's names of the sets.`,
  positionals: [{ name: "SET", complete: "cocoonsets", optional: true }],
  flags: [SELECTOR_FLAG, ALL_NAMESPACES_FLAG],
  examples: [
    "status demo",
    "status demo -o wide",
    "status demo -o json",
    "status -A",
    "status -l team=eval -o name",
  ],
  async run(ctx, args) {
    const [name] = args.positionals;
    const selector = stringFlag(args, "selector");
    const all = booleanFlag(args, "all-namespaces");
    if (name === undefined) {
      listing(ctx, await listSets(ctx, selector, all), all);
      return;
    }
    if (selector !== undefined || all) throw new UsageError("-l and -A list sets: give them without SET");
    if (ctx.output === "name") {
      ctx.out(objectName(COCOONSETS, (await readSetState(ctx, name)).cs.metadata.name ?? name));
      return;
    }
    const { cs, pods } = await readSetState(ctx, name);
    const members = membersOf(cs, pods);
    const view: StatusView = {
      cs,
      members,
      snapshots: await memberSnapshots(ctx, members),
      events: await objectEvents(ctx, KIND_COCOONSET, name),
      schedule: scheduleOf(cs),
      guestHooks: guestHooksView(cs, members),
    };
    if (ctx.output === "json" || ctx.output === "yaml") {
      ctx.out(formatStructured(structured(view), ctx.output));
      return;
    }
    ctx.out(render(ctx, view));
  },
});

/** Snapshot tags per VM; undefined without a registry. A registry error is reported, not fatal. */
async function memberSnapshots(
  ctx: CommandContext,
  members: readonly Member[],
): Promise<Map<string, SnapshotTag[]> | undefined> {
  const registry = await ctx.registry();
  if (!registry) {
    ctx.info("snapshots not shown: no registry configured (--registry or OCI_REGISTRY)");
    return undefined;
  }
  const out = new Map<string, SnapshotTag[]>();
  try {
    for (const member of members) out.set(member.vmName, await vmSnapshots(registry, member.vmName));
  } catch (err) {
    ctx.info(`snapshots not shown: registry ${registry.base.host}: ${(err as Error).message}`);
    return undefined;
  }
  return out;
}

/** One line per set, as kubectl get lists them. */
function listing(ctx: CommandContext, sets: readonly CocoonSet[], allNamespaces: boolean): void {
  if (ctx.output === "name") {
    for (const cs of sets) ctx.out(objectName(COCOONSETS, cs.metadata.name ?? ""));
    return;
  }
  if (ctx.output === "json" || ctx.output === "yaml") {
    ctx.out(
      formatStructured(
        sets.map((cs) => ({
          name: cs.metadata.name,
          namespace: cs.metadata.namespace,
          phase: cs.status?.phase,
          ...scheduleOf(cs),
        })),
        ctx.output,
      ),
    );
    return;
  }
  if (sets.length === 0) {
    ctx.info(allNamespaces ? "No cocoonsets found" : `No cocoonsets found in ${ctx.namespace} namespace.`);
    return;
  }
  const now = ctx.now();
  const rows = sets.map((cs) => {
    const s = cs.status;
    const schedule = scheduleOf(cs);
    return [
      ...(allNamespaces ? [cs.metadata.namespace ?? ""] : []),
      cs.metadata.name ?? "",
      s?.phase ?? "<none>",
      `${s?.readyAgents ?? 0}/${s?.desiredAgents ?? 0}`,
      `${s?.readyToolboxes ?? 0}/${s?.desiredToolboxes ?? 0}`,
      schedule.idleSuspendAt ?? "<none>",
      schedule.expireAt ?? "<none>",
      age(cs.metadata.creationTimestamp, now),
    ];
  });
  const headers = ["name", "phase", "agents", "toolboxes", "idle suspend at", "expires at", "age"];
  ctx.out(formatTable(allNamespaces ? ["namespace", ...headers] : headers, rows));
}

function scheduleOf(cs: CocoonSet): { idleSuspendAt?: string; expireAt?: string } {
  // Written by this operator's idle policy only (src/idle): absent under the Go operator.
  const fields: { idleSuspendAt?: unknown; expireAt?: unknown } = cs.status ?? {};
  const out: { idleSuspendAt?: string; expireAt?: string } = {};
  if (typeof fields.idleSuspendAt === "string" && fields.idleSuspendAt)
    out.idleSuspendAt = fields.idleSuspendAt;
  if (typeof fields.expireAt === "string" && fields.expireAt) out.expireAt = fields.expireAt;
  return out;
}

interface StatusView {
  cs: CocoonSet;
  members: readonly Member[];
  /** Tags per VM name; undefined when no registry could be read. */
  snapshots: Map<string, SnapshotTag[]> | undefined;
  events: readonly ClusterEvent[];
  schedule: { idleSuspendAt?: string; expireAt?: string };
  /** Undefined for a set naming no guest policy. */
  guestHooks: GuestHooksView | undefined;
}

function structured({ cs, members, snapshots, events, schedule, guestHooks }: StatusView): unknown {
  const s = cs.status;
  return {
    name: cs.metadata.name,
    namespace: cs.metadata.namespace,
    generation: cs.metadata.generation,
    observedGeneration: s?.observedGeneration,
    phase: s?.phase,
    readyAgents: s?.readyAgents,
    desiredAgents: s?.desiredAgents,
    readyToolboxes: s?.readyToolboxes,
    desiredToolboxes: s?.desiredToolboxes,
    ...schedule,
    conditions: s?.conditions ?? [],
    ...(guestHooks
      ? {
          guestPolicy: {
            name: guestHooks.policy,
            ...(guestHooks.condition ? { condition: guestHooks.condition } : {}),
          },
        }
      : {}),
    members: members.map((m, i) => ({
      slot: m.slot,
      role: m.role,
      pod: m.pod ? m.podName : undefined,
      node: m.pod?.spec.nodeName,
      vm: m.vmName,
      lifecycleState: m.pod ? readLifecycleState(m.pod) || undefined : undefined,
      ready: m.pod ? isPodReady(m.pod) : false,
      snapshots: snapshots?.get(m.vmName),
      ...(guestHooks ? { guestHooks: withoutPod(guestHooks.members[i]) } : {}),
    })),
    events: events.map(structuredEvent),
  };
}

/** A member's hooks as -o json|yaml prints them, without the pod name the member already gives. */
function withoutPod(hooks: MemberHooks | undefined): Omit<MemberHooks, "pod"> | undefined {
  if (!hooks) return undefined;
  const { pod: _pod, ...fields } = hooks;
  return fields;
}

function render(
  ctx: CommandContext,
  { cs, members, snapshots, events, schedule, guestHooks }: StatusView,
): string {
  const now = ctx.now();
  const s = cs.status;
  const when = (at: string) => {
    const ms = Date.parse(at) - now;
    if (Number.isNaN(ms)) return at;
    return ms >= 0 ? `${at} (in ${humanDuration(ms)})` : `${at} (${humanDuration(-ms)} ago)`;
  };
  const header: [string, string][] = [
    ["Name", cs.metadata.name ?? ""],
    ["Namespace", cs.metadata.namespace ?? ""],
    [
      "Phase",
      `${s?.phase ?? "(none)"} (generation ${cs.metadata.generation ?? 0}, observed ${s?.observedGeneration ?? 0})`,
    ],
    ["Agents", `${s?.readyAgents ?? 0}/${s?.desiredAgents ?? 0} ready`],
    ["Toolboxes", `${s?.readyToolboxes ?? 0}/${s?.desiredToolboxes ?? 0} ready`],
    [
      "Conditions",
      (s?.conditions ?? [])
        .map((c) => `${c.type}=${c.status} (${c.reason}, generation ${c.observedGeneration ?? "?"})`)
        .join(", ") || "(none)",
    ],
  ];
  if (schedule.idleSuspendAt) header.push(["Idle suspend at", when(schedule.idleSuspendAt)]);
  if (schedule.expireAt) header.push(["Expires at", when(schedule.expireAt)]);
  if (guestHooks) header.push(...guestHooksHeader(guestHooks));
  const width = Math.max(...header.map(([k]) => k.length)) + 2;
  const lines = header.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}`);

  const wide = ctx.output === "wide";
  const rows = members.map((m) => {
    const tags = snapshots?.get(m.vmName);
    const shown =
      tags === undefined
        ? "-"
        : tags.length === 0
          ? "<none>"
          : tags.map((t) => `${t.tag} (${age(t.created, now)}, ${humanSize(t.size)})`).join(", ");
    const pod = m.pod;
    return [
      m.slot,
      m.role,
      pod ? m.podName : "<none>",
      pod?.spec.nodeName || "<none>",
      (pod && readLifecycleState(pod)) || "-",
      pod && isPodReady(pod) ? "true" : "false",
      shown,
      ...(wide
        ? [
            m.vmName,
            pod?.metadata.annotations?.[ANN_VM_ID] || "-",
            pod?.metadata.annotations?.[ANN_IP] || "-",
          ]
        : []),
    ];
  });
  const headers = [
    "slot",
    "role",
    "pod",
    "node",
    "state",
    "ready",
    "snapshots",
    ...(wide ? ["vm", "vm id", "ip"] : []),
  ];
  lines.push("", formatTable(headers, rows), "");
  if (guestHooks) lines.push("Member hooks:", guestHooksTable(guestHooks, wide), "");
  lines.push(...eventLines(events, RECENT_EVENTS, now));
  return lines.join("\n");
}
