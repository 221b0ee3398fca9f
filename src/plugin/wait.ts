// The --wait flags, and the plugin's side of the SDK's waits (src/sdk/wait.ts): progress printed as
// "[elapsed] …" lines on stderr, the SDK's typed errors turned into the plugin's exit codes (operator
// failure 3, timeout 4), and the waits' source. With the cluster's watch (every real run) the waits
// are the SDK's list + watch; a context without one (the unit tests' in-memory API) observes by
// listing once a second instead, on the context's clock.

import type { Clock } from "../clock.ts";
import { formatDuration } from "../sdk/errors.ts";
import {
  DEFAULT_WAIT_MS,
  type Observe,
  type Query,
  type Session,
  type WaitOptions,
  watchQueries,
} from "../sdk/wait.ts";
import type { CommandContext } from "./command.ts";
import { UsageError } from "./errors.ts";
import { type FlagSpec, type ParsedArgs, stringFlag } from "./flags.ts";
import { humanDuration, parseDuration } from "./output.ts";

export { DEFAULT_WAIT_MS };
/** Without a watch: how often the waits list what they judge. */
export const POLL_INTERVAL_MS = 1_000;

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

/** The SDK session a command's operations run in. */
export function pluginSession(ctx: CommandContext, timeoutMs: number | undefined): Session {
  const watcher = ctx.watcher;
  if (watcher) {
    const clock: Clock = { now: () => ctx.now(), sleep: (ms, signal) => ctx.sleep(ms, signal) };
    return { client: ctx.client, namespace: ctx.namespace, clock, observe: watchQueries(watcher, clock) };
  }
  // The listing rounds end the wait at its deadline (the SDK judges the deadline on every snapshot),
  // so the deadline needs no timer of its own here.
  const clock: Clock = {
    now: () => ctx.now(),
    sleep: (_ms, signal) =>
      new Promise<void>((_, reject) =>
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true }),
      ),
  };
  return { client: ctx.client, namespace: ctx.namespace, clock, observe: pollQueries(ctx, timeoutMs) };
}

function pollQueries(ctx: CommandContext, timeoutMs: number | undefined): Observe {
  return async function* (namespace: string, queries: readonly Query[], signal: AbortSignal) {
    const start = ctx.now();
    while (!signal.aborted) {
      yield await Promise.all(queries.map((q) => listQuery(ctx, namespace, q)));
      const remaining = (timeoutMs ?? DEFAULT_WAIT_MS) - (ctx.now() - start);
      await ctx.sleep(Math.max(0, Math.min(POLL_INTERVAL_MS, remaining)), signal);
    }
  };
}

async function listQuery(ctx: CommandContext, namespace: string, q: Query): Promise<unknown[]> {
  const { items } = await ctx.client.list<{ metadata?: { name?: string } }>(
    q.rt,
    namespace,
    "name" in q ? { fieldSelector: `metadata.name=${q.name}` } : { labelSelector: q.labelSelector },
  );
  return "name" in q ? items.filter((o) => o.metadata?.name === q.name) : items;
}

/** The SDK wait options that print the plugin's progress lines. */
export function pluginWait(ctx: CommandContext, timeoutMs: number): WaitOptions {
  let start = ctx.now();
  return {
    timeoutMs,
    onWait: (what, ms) => {
      start = ctx.now();
      ctx.info(`waiting for ${what} (timeout ${formatDuration(ms)})`);
    },
    onProgress: (text) => ctx.info(`[${humanDuration(ctx.now() - start)}] ${text}`),
  };
}
