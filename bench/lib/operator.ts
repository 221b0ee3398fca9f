// The operator under measurement as a separate process: any binary that reads KUBECONFIG and
// OCI_REGISTRY and accepts the Go operator's --metrics-bind-address, --health-probe-bind-address and
// --leader-elect flags. The benchmark appends those three flags to --operator-command (a later flag
// wins in both Go's flag package and ours), runs it through `sh -c "exec …"` so the pid measured is
// the operator's own, and reads its memory and CPU from /proc and its API requests from /metrics.

import { execFileSync, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePortPair } from "../../test/env/ports.ts";
import { IMAGE_NODE_FLAGS } from "../../test/support/build.ts";
import { onTeardown } from "./lifecycle.ts";
import { repoRoot } from "./report.ts";

/**
 * This operator as the image and `npm start` run it: the compiled build under the Dockerfile's Node
 * flags, on the Node 24 that runs the benchmark.
 */
export const DEFAULT_OPERATOR_COMMAND = `${process.execPath} ${IMAGE_NODE_FLAGS.join(" ")} ${join(repoRoot, "dist/main.js")}`;

export interface OperatorCommand {
  command: string;
  /** "ts" for this operator, else --label (default "custom"). */
  label: string;
}

export function operatorCommand(args: { string(name: string, fallback: string): string }): OperatorCommand {
  const command = args.string("operator-command", DEFAULT_OPERATOR_COMMAND);
  const label = args.string("label", command === DEFAULT_OPERATOR_COMMAND ? "ts" : "custom");
  // dist/ from the sources as they are now, so the numbers are never those of a stale build.
  if (command === DEFAULT_OPERATOR_COMMAND)
    execFileSync("npm", ["run", "--silent", "build"], { cwd: repoRoot });
  return { command, label };
}

/**
 * The operator under measurement, then the one to compare with (`--compare-command`, label
 * `--compare-label`, default "go") when given: benchmarks that take both run them in turn on the same
 * environment, so both see the same machine load.
 */
export function operatorCommands(args: {
  string(name: string, fallback: string): string;
}): OperatorCommand[] {
  const commands = [operatorCommand(args)];
  const compare = args.string("compare-command", "");
  if (compare) commands.push({ command: compare, label: args.string("compare-label", "go") });
  return commands;
}

export interface ProcSample {
  rssKiB: number;
  hwmKiB: number;
  /** The parts of rssKiB: anonymous (heaps, malloc) and file-backed (the binary's and libraries' pages). */
  anonKiB: number;
  fileKiB: number;
  /** utime + stime, seconds. */
  cpuSeconds: number;
}

const CLK_TCK = 100;

export function readProc(pid: number): ProcSample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const cpu = (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
    return {
      rssKiB: kib("VmRSS"),
      hwmKiB: kib("VmHWM"),
      anonKiB: kib("RssAnon"),
      fileKiB: kib("RssFile"),
      cpuSeconds: cpu,
    };
  } catch {
    return undefined;
  }
}

/** rest_client_requests_total summed by method and by code. */
export interface RequestTotals {
  byMethod: Record<string, number>;
  byCode: Record<string, number>;
  total: number;
}

export function parseRestClientRequests(metricsText: string): RequestTotals {
  const totals: RequestTotals = { byMethod: {}, byCode: {}, total: 0 };
  for (const line of metricsText.split("\n")) {
    if (!line.startsWith("rest_client_requests_total{")) continue;
    const labels = line.slice(line.indexOf("{") + 1, line.lastIndexOf("}"));
    const value = Number(line.slice(line.lastIndexOf("}") + 1).trim());
    const label = (name: string) => new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(labels)?.[1] ?? "";
    const method = label("method");
    const code = label("code");
    totals.byMethod[method] = (totals.byMethod[method] ?? 0) + value;
    totals.byCode[code] = (totals.byCode[code] ?? 0) + value;
    totals.total += value;
  }
  return totals;
}

export function diffTotals(after: RequestTotals, before: RequestTotals): RequestTotals {
  const sub = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(
      Object.entries(a)
        .map(([k, v]) => [k, v - (b[k] ?? 0)] as const)
        .filter(([, v]) => v !== 0),
    );
  return {
    byMethod: sub(after.byMethod, before.byMethod),
    byCode: sub(after.byCode, before.byCode),
    total: after.total - before.total,
  };
}

/**
 * One controller's work queue and reconciles, from the metrics controller-runtime and this operator
 * both export: workqueue_* (label name=<controller>) and controller_runtime_reconcile_total (label
 * controller=<controller>, by result).
 */
export interface QueueTotals {
  adds: number;
  /** Rate-limited re-adds (a requeue or an error). */
  retries: number;
  /** Sum and count of the time items waited in the queue. */
  waitSeconds: number;
  waits: number;
  /** Sum and count of the time a reconcile took. */
  workSeconds: number;
  works: number;
  reconcilesByResult: Record<string, number>;
}

export function parseQueueTotals(metricsText: string, controller: string): QueueTotals {
  const totals: QueueTotals = {
    adds: 0,
    retries: 0,
    waitSeconds: 0,
    waits: 0,
    workSeconds: 0,
    works: 0,
    reconcilesByResult: {},
  };
  for (const line of metricsText.split("\n")) {
    const brace = line.indexOf("{");
    if (brace < 0 || line.startsWith("#")) continue;
    const name = line.slice(0, brace);
    const labels = line.slice(brace + 1, line.lastIndexOf("}"));
    const value = Number(line.slice(line.lastIndexOf("}") + 1).trim());
    const label = (key: string) => new RegExp(`(?:^|,)${key}="([^"]*)"`).exec(labels)?.[1];
    if (name === "controller_runtime_reconcile_total" && label("controller") === controller) {
      const result = label("result") ?? "";
      totals.reconcilesByResult[result] = (totals.reconcilesByResult[result] ?? 0) + value;
      continue;
    }
    if (label("name") !== controller) continue;
    if (name === "workqueue_adds_total") totals.adds += value;
    else if (name === "workqueue_retries_total") totals.retries += value;
    else if (name === "workqueue_queue_duration_seconds_sum") totals.waitSeconds += value;
    else if (name === "workqueue_queue_duration_seconds_count") totals.waits += value;
    else if (name === "workqueue_work_duration_seconds_sum") totals.workSeconds += value;
    else if (name === "workqueue_work_duration_seconds_count") totals.works += value;
  }
  return totals;
}

export function diffQueueTotals(after: QueueTotals, before: QueueTotals): QueueTotals {
  const results = new Set([
    ...Object.keys(after.reconcilesByResult),
    ...Object.keys(before.reconcilesByResult),
  ]);
  return {
    adds: after.adds - before.adds,
    retries: after.retries - before.retries,
    waitSeconds: after.waitSeconds - before.waitSeconds,
    waits: after.waits - before.waits,
    workSeconds: after.workSeconds - before.workSeconds,
    works: after.works - before.works,
    reconcilesByResult: Object.fromEntries(
      [...results]
        .map((r) => [r, (after.reconcilesByResult[r] ?? 0) - (before.reconcilesByResult[r] ?? 0)] as const)
        .filter(([, v]) => v !== 0),
    ),
  };
}

export interface OperatorProcess {
  readonly pid: number;
  readonly metricsPort: number;
  readonly probePort: number;
  readonly logFile: string;
  /** Resolves once /readyz answers 200. */
  waitReady(timeoutMs?: number): Promise<void>;
  requests(): Promise<RequestTotals>;
  queue(controller: string): Promise<QueueTotals>;
  /** controller_runtime_reconcile_total summed over controllers and results. */
  reconciles(): Promise<number>;
  proc(): ProcSample | undefined;
  /** Samples /proc every intervalMs until the returned stop; stop gives the peak RSS seen. */
  sampleRss(intervalMs?: number): () => { peakRssKiB: number };
  exited(): boolean;
  /** SIGKILL, as a crashed leader. */
  kill(): void;
  stop(): Promise<void>;
}

export interface StartOperatorOptions {
  command: string;
  kubeconfigPath: string;
  registry: string;
  /** Where stdout and stderr go. */
  logFile: string;
  env?: Record<string, string>;
  /** --leader-elect (default false); the lease namespace then comes from POD_NAMESPACE in env. */
  leaderElect?: boolean;
}

export async function startOperatorProcess(opts: StartOperatorOptions): Promise<OperatorProcess> {
  const [metricsPort, probePort] = await freePortPair();
  const flags = [
    `--leader-elect=${opts.leaderElect ?? false}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    `--health-probe-bind-address=127.0.0.1:${probePort}`,
  ];
  const out = openSync(opts.logFile, "a");
  const child = spawn("sh", ["-c", `exec ${opts.command} ${flags.join(" ")}`], {
    cwd: repoRoot,
    env: {
      ...process.env,
      KUBECONFIG: opts.kubeconfigPath,
      OCI_REGISTRY: opts.registry,
      ...opts.env,
    },
    stdio: ["ignore", out, out],
  });
  closeSync(out);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${opts.command}`);
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once("exit", (code, signal) => {
      exitCode = code ?? (signal ? -1 : 0);
      resolve();
    }),
  );

  const stop = onTeardown(async () => {
    if (exitCode !== undefined) return;
    child.kill("SIGTERM");
    const killed = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(killed);
  });

  const get = async (port: number, path: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, text: await res.text() };
  };
  const scrape = async (): Promise<string> => {
    const res = await get(metricsPort, "/metrics");
    if (res.status !== 200) throw new Error(`/metrics: HTTP ${res.status}`);
    return res.text;
  };

  return {
    pid,
    metricsPort,
    probePort,
    logFile: opts.logFile,
    async waitReady(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (exitCode !== undefined) {
          throw new Error(`operator exited with ${exitCode} before ready; see ${opts.logFile}`);
        }
        const ready = await get(probePort, "/readyz").then(
          (r) => r.status === 200,
          () => false,
        );
        if (ready) return;
        if (Date.now() > deadline) throw new Error(`operator not ready after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async requests() {
      return parseRestClientRequests(await scrape());
    },
    async queue(controller: string) {
      return parseQueueTotals(await scrape(), controller);
    },
    async reconciles() {
      return (await scrape())
        .split("\n")
        .filter((line) => line.startsWith("controller_runtime_reconcile_total{"))
        .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
    },
    proc: () => readProc(pid),
    sampleRss(intervalMs = 200) {
      let peak = readProc(pid)?.rssKiB ?? 0;
      const timer = setInterval(() => {
        peak = Math.max(peak, readProc(pid)?.rssKiB ?? 0);
      }, intervalMs);
      return () => {
        clearInterval(timer);
        peak = Math.max(peak, readProc(pid)?.rssKiB ?? 0);
        return { peakRssKiB: peak };
      };
    },
    exited: () => exitCode !== undefined,
    kill: () => {
      child.kill("SIGKILL");
    },
    stop,
  };
}
