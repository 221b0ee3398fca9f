// The --wait loop every state-changing command shares: read the object, judge it, print progress
// when it changes, and end with success, the operator's failure, or a timeout. It reads again on each
// watch event of the object (its status is where the operator reports), and at least every few
// seconds for the progress of its pods; without a watch it polls every second. Judges decide by
// generation (the one the command's write produced), never by a condition left from before it; the
// operator's reason comes from the Warning events it emitted after the command started.

import type { ResourceType } from "../controller/resources.ts";
import { type ClusterEvent, objectEvents } from "./cluster.ts";
import type { CommandContext } from "./command.ts";
import { EXIT_FAILED, EXIT_TIMEOUT, PluginError, UsageError } from "./errors.ts";
import { type FlagSpec, type ParsedArgs, stringFlag } from "./flags.ts";
import { formatDuration, humanDuration, parseDuration } from "./output.ts";

/** Longer than the operator's own deadlines (3 min to suspend, 5 min to wake), so its verdict comes first. */
export const DEFAULT_WAIT_MS = 6 * 60_000;
export const POLL_INTERVAL_MS = 1_000;
/** With a watch of the object: a read this often anyway, for progress the object does not carry (pods). */
export const WATCHED_READ_INTERVAL_MS = 5_000;

/** --wait, --wait=DURATION (or true, false) and kubectl's --timeout DURATION, which implies --wait. */
export const WAIT_FLAGS: readonly FlagSpec[] = [
  {
    name: "wait",
    kind: "optional",
    value: "DURATION",
    help: `wait until the operator has carried the change out (default ${formatDuration(DEFAULT_WAIT_MS)}); exit 3 if it reports failure, 4 on timeout`,
  },
  {
    name: "timeout",
    kind: "string",
    value: "DURATION",
    help: "how long --wait waits (kubectl's form of --wait=DURATION)",
  },
];

/** The --wait timeout in ms; undefined when the command does not wait. */
export function waitTimeout(args: ParsedArgs): number | undefined {
  const wait = args.flags.get("wait");
  const timeout = stringFlag(args, "timeout");
  if (wait === "false") {
    if (timeout !== undefined)
      throw new UsageError("--timeout is how long --wait waits, and --wait=false waits not");
    return undefined;
  }
  if (wait === undefined && timeout === undefined) return undefined;
  const dryRun = stringFlag(args, "dry-run");
  if (dryRun !== undefined && dryRun !== "none") {
    throw new UsageError("--wait and --dry-run do not go together: a dry run changes nothing to wait for");
  }
  const inline = typeof wait === "string" && wait !== "true" ? wait : undefined;
  if (inline !== undefined && timeout !== undefined) {
    throw new UsageError(`--wait=${inline} and --timeout ${timeout} both set the timeout: give one`);
  }
  const value = inline ?? timeout;
  return value === undefined ? DEFAULT_WAIT_MS : parseDuration(value);
}

export type Verdict =
  | { kind: "done"; summary: string }
  | { kind: "failed"; reason: string; message: string }
  | { kind: "waiting"; progress: string };

export interface Warning {
  reason: string;
  message: string;
}

/**
 * The Warning events about one object that appear, or are counted again, after construction: what
 * the operator said about this change, not about an earlier one.
 */
export class WarningWatch {
  private readonly ctx: CommandContext;
  private readonly kind: string;
  private readonly name: string;
  private readonly before = new Map<string, number>();

  private constructor(ctx: CommandContext, kind: string, name: string) {
    this.ctx = ctx;
    this.kind = kind;
    this.name = name;
  }

  static async start(ctx: CommandContext, kind: string, name: string): Promise<WarningWatch> {
    const watch = new WarningWatch(ctx, kind, name);
    for (const event of await objectEvents(ctx, kind, name))
      watch.before.set(eventKey(event), event.count ?? 1);
    return watch;
  }

  /**
   * The newest Warning since start; with `orEarlier`, the newest one at all when none is new (a
   * failure the operator reported before the command, which a no-op write did not change).
   * Undefined when there is none or the events cannot be read.
   */
  async latest(orEarlier = false): Promise<Warning | undefined> {
    let events: ClusterEvent[];
    try {
      events = await objectEvents(this.ctx, this.kind, this.name);
    } catch {
      return undefined;
    }
    const warnings = events.filter((e) => e.type === "Warning");
    const fresh = warnings.filter((e) => (e.count ?? 1) > (this.before.get(eventKey(e)) ?? 0));
    const last = fresh.at(-1) ?? (orEarlier ? warnings.at(-1) : undefined);
    return last ? { reason: last.reason ?? "", message: last.message ?? "" } : undefined;
  }
}

function eventKey(event: ClusterEvent): string {
  return event.metadata.uid ?? event.metadata.name ?? "";
}

export interface WaitSpec<T> {
  /** What is awaited, completing "waiting for …", e.g. `cocoonset "demo" to suspend`. */
  what: string;
  /** The object whose watch events wake the loop. */
  watched?: { rt: ResourceType; name: string };
  read(): Promise<T>;
  judge(state: T): Verdict;
  warnings: WarningWatch;
}

/**
 * Reads and judges until the judge says done, woken by the watched object's events; throws
 * PluginError with EXIT_FAILED or EXIT_TIMEOUT otherwise.
 */
export async function waitUntil<T>(ctx: CommandContext, spec: WaitSpec<T>, timeoutMs: number): Promise<T> {
  const stop = new AbortController();
  const changes =
    spec.watched && ctx.watchObject
      ? new ChangeSignal(ctx.watchObject(spec.watched.rt, spec.watched.name, stop.signal))
      : undefined;
  try {
    return await waitLoop(ctx, spec, timeoutMs, changes);
  } finally {
    stop.abort();
  }
}

/** Turns a watch into "something changed since you last asked"; a watch that fails just stops waking. */
class ChangeSignal {
  private changed = false;
  private wake: (() => void) | undefined;
  alive = true;

  constructor(events: AsyncIterable<unknown>) {
    (async () => {
      for await (const _ of events) {
        this.changed = true;
        this.wake?.();
      }
    })()
      .catch(() => {})
      .finally(() => {
        this.alive = false;
        this.wake?.();
      });
  }

  /** Resolves at the next change, at once when one came since the last call, or after ms. */
  async next(ctx: CommandContext, ms: number): Promise<void> {
    if (this.changed) {
      this.changed = false;
      return;
    }
    const timer = new AbortController();
    const changed = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
    await Promise.race([changed, ctx.sleep(ms, timer.signal).catch(() => {})]);
    timer.abort();
    this.wake = undefined;
    this.changed = false;
  }
}

async function waitLoop<T>(
  ctx: CommandContext,
  spec: WaitSpec<T>,
  timeoutMs: number,
  changes: ChangeSignal | undefined,
): Promise<T> {
  const start = ctx.now();
  let shown = "";
  ctx.info(`waiting for ${spec.what} (timeout ${formatDuration(timeoutMs)})`);
  for (;;) {
    const state = await spec.read();
    const verdict = spec.judge(state);
    const elapsed = ctx.now() - start;
    if (verdict.kind === "done") {
      ctx.info(`[${humanDuration(elapsed)}] ${verdict.summary}`);
      return state;
    }
    if (verdict.kind === "failed") {
      const warning = await spec.warnings.latest(true);
      const reason = warning?.reason || verdict.reason;
      const message = warning?.message || verdict.message;
      throw new PluginError(`${spec.what} failed: ${reason}: ${message}`, EXIT_FAILED);
    }
    if (verdict.progress !== shown) {
      shown = verdict.progress;
      ctx.info(`[${humanDuration(elapsed)}] ${verdict.progress}`);
    }
    if (elapsed >= timeoutMs) {
      const warning = await spec.warnings.latest();
      const said = warning ? `; the operator reports ${warning.reason}: ${warning.message}` : "";
      throw new PluginError(
        `timed out after ${formatDuration(timeoutMs)} waiting for ${spec.what} (${verdict.progress})${said}`,
        EXIT_TIMEOUT,
      );
    }
    const remaining = timeoutMs - elapsed;
    if (changes?.alive) await changes.next(ctx, Math.min(WATCHED_READ_INTERVAL_MS, remaining));
    else await ctx.sleep(Math.min(POLL_INTERVAL_MS, remaining));
  }
}
