// Commands and files in a member's VM, through its pod's exec subresource (vk-cocoon serves it over
// SSH into the guest). vk-cocoon reports a command's non-zero exit as a failed exec whose message
// ends "Process exited with status N": that is the command's exit code, not an error. Files travel
// as the exec's stdin and stdout, which are binary-safe, so no encoding is needed.

import { isNotFound } from "../controller/errors.ts";
import {
  ExecFailedError,
  ExecPodNotRunningError,
  ExecTimeoutError,
  exitStatusOf,
  type PodExecutor,
  type ExecResult as RawExecResult,
} from "../controller/exec.ts";
import { abortReason, CocoonError, CocoonNotFoundError, CocoonTimeoutError } from "./errors.ts";

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export interface ExecOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  stdin?: string | Uint8Array;
  /** Bound on each of stdout and stderr (default 1 MiB); the rest is dropped and the result says so. */
  maxOutputBytes?: number;
}

/** Runs argv in the pod, as raw bytes. */
export async function execRaw(
  executor: PodExecutor,
  namespace: string,
  pod: string,
  argv: string[],
  opts: ExecOptions = {},
): Promise<RawExecResult> {
  if (opts.signal?.aborted) throw abortReason(opts.signal);
  const stdin = typeof opts.stdin === "string" ? new TextEncoder().encode(opts.stdin) : opts.stdin;
  try {
    return await executor.exec({
      namespace,
      pod,
      command: argv,
      ...(stdin ? { stdin } : {}),
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.maxOutputBytes !== undefined ? { maxOutputBytes: opts.maxOutputBytes } : {}),
    });
  } catch (err) {
    const status = exitStatusOf(err);
    if (status !== undefined && err instanceof ExecFailedError) {
      return {
        exitCode: status,
        stdout: err.stdout,
        stderr: err.stderr,
        stdoutTruncated: false,
        stderrTruncated: false,
        transport: "websocket",
      };
    }
    if (opts.signal?.aborted) throw abortReason(opts.signal);
    if (err instanceof ExecTimeoutError) {
      throw new CocoonTimeoutError(
        `${argv[0] ?? "exec"} in pod "${pod}"`,
        opts.timeoutMs ?? 0,
        "running",
        undefined,
      );
    }
    if (err instanceof ExecPodNotRunningError) throw new CocoonError("PodNotRunning", err.message);
    if (isNotFound(err)) throw new CocoonNotFoundError(`pod "${pod}" not found in namespace "${namespace}"`);
    if (err instanceof ExecFailedError) throw new CocoonError("ExecFailed", err.message);
    throw err;
  }
}

export async function exec(
  executor: PodExecutor,
  namespace: string,
  pod: string,
  argv: string[],
  opts: ExecOptions = {},
): Promise<ExecResult> {
  const raw = await execRaw(executor, namespace, pod, argv, opts);
  return {
    exitCode: raw.exitCode,
    stdout: raw.stdout.toString("utf8"),
    stderr: raw.stderr.toString("utf8"),
    stdoutTruncated: raw.stdoutTruncated,
    stderrTruncated: raw.stderrTruncated,
  };
}

export interface WriteFileOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** chmod mode, e.g. 0o755. */
  mode?: number;
}

/**
 * The command that writes its stdin to the path, then sets its mode when one is given. The path is
 * quoted into the script rather than passed as "$1": vk-cocoon joins argv into one shell line, and
 * a single-quoted word is read the same by every POSIX shell.
 */
export function writeFileCommand(path: string, mode?: number): string[] {
  const target = shellQuote(path);
  const chmod = mode === undefined ? "" : ` && chmod ${mode.toString(8)} ${target}`;
  return ["sh", "-c", `cat > ${target}${chmod}`];
}

/** 'word', with each ' written as '\'' (close, escaped quote, reopen). */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

export async function writeFile(
  executor: PodExecutor,
  namespace: string,
  pod: string,
  path: string,
  data: string | Uint8Array,
  opts: WriteFileOptions = {},
): Promise<void> {
  const { mode, ...rest } = opts;
  const r = await execRaw(executor, namespace, pod, writeFileCommand(path, mode), { ...rest, stdin: data });
  if (r.exitCode !== 0) {
    throw new CocoonError(
      "WriteFailed",
      `writing ${path} in pod "${pod}" exited ${r.exitCode}${r.stderr.length ? `: ${r.stderr.toString("utf8").trim()}` : ""}`,
    );
  }
}

export interface ReadFileOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Larger files fail with reason TooLarge (default 1 MiB). */
  maxBytes?: number;
}

export async function readFile(
  executor: PodExecutor,
  namespace: string,
  pod: string,
  path: string,
  opts: ReadFileOptions = {},
): Promise<Uint8Array> {
  const { maxBytes, ...rest } = opts;
  const r = await execRaw(executor, namespace, pod, ["cat", path], {
    ...rest,
    ...(maxBytes !== undefined ? { maxOutputBytes: maxBytes } : {}),
  });
  if (r.exitCode !== 0) {
    throw new CocoonError(
      "ReadFailed",
      `reading ${path} in pod "${pod}" exited ${r.exitCode}${r.stderr.length ? `: ${r.stderr.toString("utf8").trim()}` : ""}`,
    );
  }
  if (r.stdoutTruncated) {
    throw new CocoonError(
      "TooLarge",
      `${path} in pod "${pod}" is larger than ${maxBytes ?? "the limit of"} bytes`,
    );
  }
  return new Uint8Array(r.stdout);
}
