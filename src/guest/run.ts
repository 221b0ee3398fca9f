// One hook in one guest: its attempts over the pod's exec, each under the hook's deadline, with the
// backoff between them on the injected clock. What comes back for an event or the record is bounded
// and names how the command ended, never the command itself: vk-cocoon's SSH errors quote it.

import type { Clock } from "../clock.ts";
import {
  ExecProtocolError,
  type ExecRequest,
  ExecTimeoutError,
  exitStatusOf,
  type PodExecutor,
} from "../controller/exec.ts";
import { guestHookDurationSeconds } from "../metrics/guest.ts";
import type { HookRun } from "./decide.ts";
import { MAX_REPORTED_OUTPUT } from "./keys.ts";

/** Bytes of each output stream kept from a hook: enough for a message, never a flood in memory. */
export const HOOK_OUTPUT_BYTES = 4096;

export interface HookOutcome {
  ok: boolean;
  attempts: number;
  durationMs: number;
  /** How the last attempt failed (bounded); "" on success. */
  message: string;
}

/** At most MAX_REPORTED_OUTPUT characters, the cut marked. */
export function bounded(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > MAX_REPORTED_OUTPUT ? `${flat.slice(0, MAX_REPORTED_OUTPUT - 1)}…` : flat;
}

// vk-cocoon wraps every SSH failure as "ssh exec <command> on <ip>: <error>"; the error alone is kept.
const SSH_EXEC_PREFIX = /ssh exec .* on \S+: /s;

/** How an attempt failed, without the command: an exit status, a timeout, or the error's own words. */
export function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof ExecTimeoutError) {
    const stderr = error.stderr.toString("utf8").trim();
    return bounded(`timed out after ${timeoutMs / 1000}s${stderr ? `: ${stderr}` : ""}`);
  }
  const message = error instanceof Error ? error.message : String(error);
  const status = exitStatusOf(error);
  if (status !== undefined) return `exited with status ${status}`;
  return bounded(message.replace(SSH_EXEC_PREFIX, ""));
}

export interface HookTarget {
  namespace: string;
  pod: string;
  executor: PodExecutor;
  clock: Clock;
  signal: AbortSignal;
}

/**
 * Runs the hook until an attempt succeeds or its retries are spent. A non-zero exit (from a kubelet
 * that reports one) fails the attempt like an exec error. The command's stdin, when given, is sent
 * to every attempt.
 */
export async function runHook(
  target: HookTarget,
  run: HookRun,
  stdin: Uint8Array | undefined,
): Promise<HookOutcome> {
  const started = target.clock.now();
  let message = "";
  let attempts = 0;
  let connectionRetried = false;
  for (let attempt = 0; attempt <= run.retries; attempt++) {
    if (attempt > 0) await target.clock.sleep(run.backoffMs * 2 ** (attempt - 1), target.signal);
    attempts++;
    const request: ExecRequest = {
      namespace: target.namespace,
      pod: target.pod,
      command: run.command,
      timeoutMs: run.timeoutMs,
      signal: target.signal,
      maxOutputBytes: HOOK_OUTPUT_BYTES,
      ...(stdin ? { stdin } : {}),
    };
    try {
      const result = await target.executor.exec(request);
      if (result.exitCode === 0) {
        message = "";
        break;
      }
      // The whole message is bounded, not the output alone: it lands in events and the record as is.
      const stderr = result.stderr.toString("utf8").trim();
      message = bounded(`exited with status ${result.exitCode}${stderr ? `: ${stderr}` : ""}`);
    } catch (error) {
      if (target.signal.aborted) throw error;
      message = describeFailure(error, run.timeoutMs);
      // A connection lost before the exec's status is no answer from the hook: one more attempt, at
      // once, beside the hook's own retries (it may have run; hooks bear that).
      if (error instanceof ExecProtocolError && !connectionRetried) {
        connectionRetried = true;
        attempt--;
      }
    }
  }
  const durationMs = target.clock.now() - started;
  guestHookDurationSeconds.observe({ point: run.point }, durationMs / 1000);
  return { ok: message === "", attempts, durationMs, message };
}
