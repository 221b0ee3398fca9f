import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync, rmSync } from "node:fs";

/** A long-running child (etcd, kube-apiserver, …) in its own process group, logging to a file. */
export interface Daemon {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /**
   * SIGTERM to the whole group, SIGKILL after `graceMs` (default: the daemon's stopGraceMs);
   * resolves once the leader has exited.
   */
  stop(graceMs?: number): Promise<void>;
  /** The last lines of the log, for error messages. */
  logTail(lines?: number): string;
}

const liveGroups = new Set<number>();
const dirsToRemove = new Set<string>();
let exitHooksInstalled = false;

/**
 * Last-resort teardown when the process exits without calling stop(): an uncaught exception, a
 * signal, or process.exit(). Only synchronous work is possible in an 'exit' handler, so the
 * groups get SIGKILL and the directories are removed synchronously.
 */
function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on("exit", () => {
    for (const pgid of liveGroups) killGroup(pgid, "SIGKILL");
    for (const dir of dirsToRemove) rmSync(dir, { recursive: true, force: true });
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const exitOnSignal = (): void => {
      // Another listener (e.g. the sandbox's graceful shutdown) owns this signal: let it act.
      if (process.listenerCount(signal) > 1) return;
      process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
    };
    process.on(signal, exitOnSignal);
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is already gone.
  }
}

/** Removes `dir` when the process exits, unless forgetDirectory() is called first. */
export function removeDirectoryOnExit(dir: string): void {
  installExitHooks();
  dirsToRemove.add(dir);
}

export function forgetDirectory(dir: string): void {
  dirsToRemove.delete(dir);
}

/**
 * Starts `command` detached in a new process group (so Ctrl-C on the terminal does not reach it
 * before we can stop it in order), with stdout and stderr appended to `logFile`.
 */
export function startDaemon(
  name: string,
  command: string,
  args: string[],
  logFile: string,
  opts: { stopGraceMs?: number } = {},
): Daemon {
  const { stopGraceMs = 10_000 } = opts;
  installExitHooks();
  const logFd = openSync(logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(command, args, { detached: true, stdio: ["ignore", logFd, logFd] });
  } finally {
    closeSync(logFd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${name}: could not start ${command}`);
  liveGroups.add(pid);
  const exited = new Promise<number | string>((resolve) => {
    child.once("exit", (code, signal) => {
      liveGroups.delete(pid);
      // The leader is gone; anything it left in its group goes too.
      killGroup(pid, "SIGKILL");
      resolve(code ?? signal ?? "unknown");
    });
    child.once("error", () => {
      liveGroups.delete(pid);
      resolve("spawn error");
    });
  });
  const logTail = (lines = 20): string => {
    try {
      return readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } catch {
      return "";
    }
  };
  const stop = async (graceMs = stopGraceMs): Promise<void> => {
    if (!liveGroups.has(pid)) {
      await exited;
      return;
    }
    killGroup(pid, "SIGTERM");
    const timer = setTimeout(() => killGroup(pid, "SIGKILL"), graceMs);
    try {
      await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  return { name, pid, logFile, exited, stop, logTail };
}

/** Polls `probe` every `intervalMs` until it returns true; fails early if `daemon` exits. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs?: number; intervalMs?: number; daemon?: Daemon } = {},
): Promise<void> {
  const { timeoutMs = 60_000, intervalMs = 100, daemon } = opts;
  let daemonExit: number | string | undefined;
  void daemon?.exited.then((code) => {
    daemonExit = code;
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (daemonExit !== undefined && daemon) {
      throw new Error(`${daemon.name} exited (${daemonExit}) before ${what}:\n${daemon.logTail()}`);
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) {
      const tail = daemon ? `\n${daemon.logTail()}` : "";
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${tail}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * startDaemon() followed by waitUntil(`what`, probe); if it never gets ready, the daemon is stopped
 * before the error is thrown, so a failed start leaves nothing running.
 */
export async function startReadyDaemon(
  spec: { name: string; command: string; args: string[]; logFile: string; stopGraceMs?: number },
  what: string,
  probe: () => Promise<boolean>,
): Promise<Daemon> {
  const daemon = startDaemon(spec.name, spec.command, spec.args, spec.logFile, {
    stopGraceMs: spec.stopGraceMs,
  });
  try {
    await waitUntil(what, probe, { daemon });
  } catch (err) {
    await daemon.stop();
    throw err;
  }
  return daemon;
}
