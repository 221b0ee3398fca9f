// The plugin's reads, each turning "not found" into a message naming what was asked for.

import type { Pod } from "../apis/core.ts";
import type { CocoonHibernation, CocoonSet, ObjectMeta } from "../apis/v1/types.ts";
import { LABEL_COCOONSET } from "../contract/keys.ts";
import { isNotFound, unlessNotFound } from "../controller/errors.ts";
import { COCOONHIBERNATIONS, COCOONSETS, NODES, PODS } from "../controller/resources.ts";
import { type ClusterEvent, eventTime } from "../sdk/events.ts";
import type { CommandContext } from "./command.ts";
import { PluginError } from "./errors.ts";
import { age, formatTable } from "./output.ts";

export { type ClusterEvent, eventTime, objectEvents } from "../sdk/events.ts";

export interface Node {
  metadata: ObjectMeta;
  spec?: { unschedulable?: boolean };
}

type Reader = Pick<CommandContext, "client" | "namespace">;

async function getOrExplain<T>(read: () => Promise<T>, missing: string): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) throw new PluginError(missing);
    throw err;
  }
}

export function getSet(ctx: Reader, name: string): Promise<CocoonSet> {
  return getOrExplain(
    () => ctx.client.get<CocoonSet>(COCOONSETS, ctx.namespace, name),
    `cocoonset "${name}" not found in namespace "${ctx.namespace}"`,
  );
}

/** The set, or undefined when there is none of that name. */
export function findSet(ctx: Reader, name: string): Promise<CocoonSet | undefined> {
  return unlessNotFound(() => ctx.client.get<CocoonSet>(COCOONSETS, ctx.namespace, name));
}

export function getPod(ctx: Reader, name: string): Promise<Pod> {
  return getOrExplain(
    () => ctx.client.get<Pod>(PODS, ctx.namespace, name),
    `pod "${name}" not found in namespace "${ctx.namespace}"`,
  );
}

export function getNode(ctx: Pick<CommandContext, "client">, name: string): Promise<Node> {
  return getOrExplain(() => ctx.client.get<Node>(NODES, "", name), `node "${name}" not found`);
}

/** The set's pods that are not being deleted, by name. */
export async function setPods(ctx: Reader, set: string): Promise<Pod[]> {
  const { items } = await ctx.client.list<Pod>(PODS, ctx.namespace, {
    labelSelector: `${LABEL_COCOONSET}=${set}`,
  });
  return items
    .filter((pod) => !pod.metadata.deletionTimestamp)
    .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
}

/** An event as -o json|yaml prints it. */
export function structuredEvent(e: ClusterEvent): Record<string, unknown> {
  return { type: e.type, reason: e.reason, message: e.message, count: e.count, lastTimestamp: eventTime(e) };
}

/** The newest `recent` events under "Events:", or "Events: <none>". */
export function eventLines(events: readonly ClusterEvent[], recent: number, now: number): string[] {
  const shown = events.slice(-recent);
  if (shown.length === 0) return ["Events: <none>"];
  return [
    "Events:",
    formatTable(
      ["last seen", "type", "reason", "message"],
      shown.map((e) => [age(eventTime(e), now), e.type ?? "", e.reason ?? "", e.message ?? ""]),
    ),
  ];
}

/** Every CocoonHibernation of the namespace. */
export async function hibernations(ctx: Reader): Promise<CocoonHibernation[]> {
  return (await ctx.client.list<CocoonHibernation>(COCOONHIBERNATIONS, ctx.namespace)).items;
}
