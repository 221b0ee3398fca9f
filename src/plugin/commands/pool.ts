import type { CocoonPool } from "../../apis/v1alpha1/types.ts";
import { warmthOf } from "../../pool/decide.ts";
import { getPool, type PoolMember, poolMembersOf } from "../../sdk/claims.ts";
import { type ClusterEvent, eventLines, objectEvents, structuredEvent } from "../cluster.ts";
import { type Command, type CommandContext, command } from "../command.ts";
import { UsageError } from "../errors.ts";
import { age, formatStructured, formatTable } from "../output.ts";

/** How many of the pool's events the table shows (all of them in -o json|yaml). */
const RECENT_EVENTS = 10;

export const pool: Command = command({
  name: "pool",
  summary: "Show a warm pool: its members by state, the sets claimed from it, recent events",
  description: `pool status POOL shows the CocoonPool's warmth, desired and ready members and its Ready
condition (with the generation it judged), then one line per member: ready (to claim), starting
(booting, waking or hibernating), outdated (an older template, replaced gradually) or claimed (bound to
the claim shown, no longer the pool's), and the pool's recent events.`,
  positionals: [{ name: "status" }, { name: "POOL", complete: "cocoonpools" }],
  flags: [],
  examples: ["pool status warm", "pool status warm -o yaml"],
  async run(ctx, args) {
    const [action = "", name = ""] = args.positionals;
    if (action !== "status")
      throw new UsageError(`unknown pool action "${action}": kubectl cocoon pool status POOL`);
    const found = await getPool(ctx, name);
    const members = await poolMembersOf(ctx, found);
    const events = await objectEvents(ctx, "CocoonPool", name);
    if (ctx.output === "json" || ctx.output === "yaml") {
      ctx.out(formatStructured(structured(found, members, events), ctx.output));
      return;
    }
    ctx.out(render(ctx, found, members, events));
  },
});

function structured(p: CocoonPool, members: readonly PoolMember[], events: readonly ClusterEvent[]): unknown {
  return {
    name: p.metadata.name,
    namespace: p.metadata.namespace,
    generation: p.metadata.generation,
    warmth: warmthOf(p),
    replicas: p.spec.replicas,
    fromCheckpoint: p.spec.fromCheckpoint,
    status: p.status ?? {},
    members,
    events: events.map(structuredEvent),
  };
}

function render(
  ctx: CommandContext,
  p: CocoonPool,
  members: readonly PoolMember[],
  events: readonly ClusterEvent[],
): string {
  const now = ctx.now();
  const s = p.status;
  const ready = s?.conditions?.find((c) => c.type === "Ready");
  const header: [string, string][] = [
    ["Name", p.metadata.name ?? ""],
    ["Namespace", p.metadata.namespace ?? ""],
    ["Warmth", warmthOf(p)],
    ...(p.spec.fromCheckpoint ? [["From checkpoint", p.spec.fromCheckpoint] as [string, string]] : []),
    [
      "Members",
      `${s?.ready ?? 0}/${p.spec.replicas ?? 0} ready, ${s?.starting ?? 0} starting, ${s?.outdated ?? 0} outdated, ${s?.claimed ?? 0} claimed`,
    ],
    [
      "Ready",
      ready
        ? `${ready.status} (${ready.reason}: ${ready.message}; generation ${ready.observedGeneration ?? "?"} of ${p.metadata.generation ?? 0})`
        : "(not yet reported)",
    ],
  ];
  const width = Math.max(...header.map(([k]) => k.length)) + 2;
  const lines = header.map(([k, v]) => `${`${k}:`.padEnd(width)}${v}`);
  lines.push("");
  lines.push(
    members.length === 0
      ? "No members."
      : formatTable(
          ["member", "state", "phase", "claim", "age"],
          members.map((m) => [m.name, m.state, m.phase, m.claim ?? "", m.created ? age(m.created, now) : ""]),
        ),
  );
  lines.push("");
  lines.push(...eventLines(events, RECENT_EVENTS, now));
  return lines.join("\n");
}
