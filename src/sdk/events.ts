// The Warning events the operator emits about an object: a failed or timed-out wait names the
// operator's reason from them. Read when a wait starts and when it ends, never in between.

import type { ObjectMeta } from "../apis/v1/types.ts";
import type { Client } from "../controller/client.ts";
import { EVENTS } from "../controller/resources.ts";
import type { Warning } from "./errors.ts";

/** The parts of a core/v1 Event that are read. */
export interface ClusterEvent {
  metadata: ObjectMeta;
  involvedObject: { kind?: string; name?: string; uid?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
}

type Reader = { client: Pick<Client, "list">; namespace: string };

/** Events about the object of `kind` named `name`, oldest first. */
export async function objectEvents(ctx: Reader, kind: string, name: string): Promise<ClusterEvent[]> {
  const { items } = await ctx.client.list<ClusterEvent>(EVENTS, ctx.namespace, {
    fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
  });
  return items.sort((a, b) => eventTime(a).localeCompare(eventTime(b)));
}

export function eventTime(event: ClusterEvent): string {
  return (
    event.lastTimestamp || event.eventTime || event.firstTimestamp || event.metadata.creationTimestamp || ""
  );
}

/**
 * The Warning events about one object that appear, or are counted again, after start: what the
 * operator said about this change, not about an earlier one.
 */
export class WarningWatch {
  private readonly ctx: Reader;
  private readonly kind: string;
  private readonly name: string;
  private readonly before = new Map<string, number>();
  /** Set for an object this call created: only events about it count, and every one is new. */
  private readonly uid: string | undefined;

  private constructor(ctx: Reader, kind: string, name: string, uid?: string) {
    this.ctx = ctx;
    this.kind = kind;
    this.name = name;
    this.uid = uid;
  }

  static async start(ctx: Reader, kind: string, name: string): Promise<WarningWatch> {
    const watch = new WarningWatch(ctx, kind, name);
    for (const event of await objectEvents(ctx, kind, name))
      watch.before.set(eventKey(event), event.count ?? 1);
    return watch;
  }

  /**
   * For an object the call has just created: what the operator said of it is every event about its
   * uid, so no read is needed up front (a same-named object's events have another uid).
   */
  static ofCreated(ctx: Reader, kind: string, created: { metadata: ObjectMeta }): WarningWatch {
    return new WarningWatch(ctx, kind, created.metadata.name ?? "", created.metadata.uid ?? "");
  }

  /**
   * The newest Warning since start; with `orEarlier`, the newest one at all when none is new (a
   * failure the operator reported before the call, which a no-op write did not change).
   * Undefined when there is none or the events cannot be read.
   */
  async latest(orEarlier = false): Promise<Warning | undefined> {
    let events: ClusterEvent[];
    try {
      events = await objectEvents(this.ctx, this.kind, this.name);
    } catch {
      return undefined;
    }
    const warnings = events.filter(
      (e) => e.type === "Warning" && (this.uid === undefined || e.involvedObject.uid === this.uid),
    );
    const fresh = warnings.filter((e) => (e.count ?? 1) > (this.before.get(eventKey(e)) ?? 0));
    const last = fresh.at(-1) ?? (orEarlier ? warnings.at(-1) : undefined);
    return last ? { reason: last.reason ?? "", message: last.message ?? "" } : undefined;
  }
}

function eventKey(event: ClusterEvent): string {
  return event.metadata.uid ?? event.metadata.name ?? "";
}
