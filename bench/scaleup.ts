// Benchmark 3: scale-up on the real environment. Each run starts a fresh control plane + registry,
// simulated nodes in a pool of their own (fast vk-cocoon timings) and the operator as a separate
// process, applies S sets × (1 main + 7 sub-agents) at once and measures the time until every set is
// Running with all agents Ready (and until half and 90 % of them first were, so stragglers show), the
// operator's API requests by method and code (its own /metrics rest_client_requests_total,
// before/after), the 429s among them, and the operator process's peak RSS and CPU time over the run.
//
// --request-times <file> (a diagnostic) also puts a timestamping proxy before the registry and appends
// to the file, per run, the count and time of the operator's requests by target, method and resource:
// where its reconcile time goes. That proxy's hop is on the registry calls of the run, so its figures
// are for where the time goes, not for comparing times.
//
// Per-set time to Running is each set's own: from the answer to its create to when it was first seen
// Running; the summary gives its p50 / p90 / max beside the two crossings (half and 90 % of the sets).
//
// --timeline <file> (a diagnostic) appends, per run, each set's operator writes as the counting proxy
// saw them (update/patch of the set and its status, pod creates, patches and deletes, each at its answer):
// p50 / p90 / max over the sets of the first write, the first and last pod create, the last write,
// Running and the time from the first write to Running; the sets in flight (first write done, not yet
// Running), mean and max; and the writes of the median set one by one: where the median set's time goes.
//
// With --compare-command the two operators alternate run by run (each on a fresh environment), and
// --sets may list several sizes for a scale curve. Nodes are sized to the pods (--nodes, default one
// 110-seat node per 10 sets: 80 pods a node), since sub-agents bind to their main's node past the
// scheduler and an overcommitted pool leaves mains unschedulable.
//
//   npm run bench:scaleup [-- --sets 100[,300,1000] --runs 5 [--nodes N] --operator-command "<cmd>"
//                            --label <name> --compare-command "<cmd>" --compare-label <name>
//                            --request-times <file> --timeline <file>]

import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COCOONSET_CONTROLLER } from "../src/cocoonset/setup.ts";
import {
  cocoonSet,
  createNamespace,
  createSets,
  IMAGE,
  isRunning,
  pollSets,
  sleep,
  startCluster,
  startPool,
} from "./lib/cluster.ts";
import {
  diffProxyCounts,
  type Exchange,
  type ProxyCounts,
  resourceSegments,
  startCountingProxy,
} from "./lib/countingproxy.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import {
  diffQueueTotals,
  diffTotals,
  type OperatorCommand,
  operatorCommands,
  type QueueTotals,
  type RequestTotals,
  startOperatorProcess,
} from "./lib/operator.ts";
import { startRegistryProxy } from "./lib/registryproxy.ts";
import {
  commandLine,
  fmt,
  machine,
  machineLine,
  percentile,
  printSummary,
  progress,
  spread,
  table,
  writeSection,
} from "./lib/report.ts";

const TIMINGS = { bootMs: 20, readyMs: 20, hibernateMs: 50, wakeMs: 20, deleteMs: 20 };
const SUBS = 7;

interface Run {
  seconds: number;
  /** When half, and then 90 %, of the sets were first seen Running: stragglers show as a gap to seconds. */
  halfSeconds: number;
  p90Seconds: number;
  /** Each set's own time to Running: from the answer to its create to when it was first seen Running. */
  setSeconds: number[];
  /** With --timeline: each set's operator writes, in the order answered. */
  timeline: Map<string, SetTimeline>;
  /** The operator's own rest_client_requests_total, after − before. */
  requests: RequestTotals;
  /** The counting proxy between the operator and the API server, same window. */
  proxied: ProxyCounts;
  /** The CocoonSet controller's queue and reconciles, same window. */
  queue: QueueTotals;
  /** With --request-times: requests by "<target> <method> <resource>", count and summed ms, same window. */
  requestTimes: Map<string, { count: number; totalMs: number }>;
  peakRssMiB: number;
  cpuSeconds: number;
}

/** One set as the benchmark saw it: created and first Running (epoch ms), and the operator's writes to it. */
interface SetTimeline {
  createdAt: number;
  runningAt: number;
  writes: { at: number; what: string }[];
}

async function runOnce(
  command: string,
  sets: number,
  nodes: number,
  logFile: string,
  timeRequests: boolean,
  recordTimeline: boolean,
): Promise<Run> {
  const cluster = await startCluster();
  const { info } = cluster.env;
  const pool = await startPool(info, nodes, { pods: 110, timings: TIMINGS });
  const ns = await createNamespace(info, "bench-scaleup");
  const requestTimes = new Map<string, { count: number; totalMs: number }>();
  let timedFrom = Number.POSITIVE_INFINITY;
  const timeExchange = (to: string) => (e: Exchange) => {
    if (e.start < timedFrom) return;
    const key = `${to} ${e.method} ${resourceOf(to, e.path)}`;
    const entry = requestTimes.get(key) ?? { count: 0, totalMs: 0 };
    entry.count += 1;
    entry.totalMs += e.end - e.start;
    requestTimes.set(key, entry);
  };
  const timeline = new Map<string, SetTimeline>();
  const recordWrite = (e: Exchange) => {
    if (e.start < timedFrom || e.method === "GET") return;
    const write = setWrite(e);
    if (!write) return;
    const entry = timeline.get(write.set) ?? { createdAt: 0, runningAt: 0, writes: [] };
    entry.writes.push({ at: e.end, what: write.what });
    timeline.set(write.set, entry);
  };
  const onApiExchange = (e: Exchange) => {
    if (timeRequests) timeExchange("api")(e);
    if (recordTimeline) recordWrite(e);
  };
  const proxy = await startCountingProxy(
    info,
    `${logFile}.kubeconfig`,
    timeRequests || recordTimeline ? onApiExchange : undefined,
  );
  const registryProxy = timeRequests
    ? await startRegistryProxy(info.registry, timeExchange("registry"))
    : undefined;
  const operator = await startOperatorProcess({
    command,
    kubeconfigPath: proxy.kubeconfigPath,
    registry: registryProxy?.host ?? info.registry,
    logFile,
  });
  try {
    await operator.waitReady();
    await sleep(2_000); // informers synced and the start-up lists done before the "before" scrape
    const before = await operator.requests();
    const queueBefore = await operator.queue(COCOONSET_CONTROLLER);
    const proxiedBefore = proxy.counts();
    const cpuBefore = operator.proc()?.cpuSeconds ?? 0;
    const stopSampling = operator.sampleRss(100);
    const t0 = performance.now();
    timedFrom = Date.now();
    const createdAt = await createSets(
      info,
      Array.from({ length: sets }, (_, i) =>
        cocoonSet(ns, `scale-${i}`, {
          nodePool: pool.pool,
          agent: {
            image: IMAGE,
            replicas: SUBS,
            mode: "clone",
            // Requests let the scheduler spread the mains (sub-agents follow their main's node).
            resources: { requests: { cpu: "500m", memory: "512Mi" } },
          },
        }),
      ),
      32,
    );
    const runningAt: number[] = [];
    const seenRunning = new Map<string, number>();
    const t1 = await pollSets(
      info,
      ns,
      (all) => {
        for (const cs of all) {
          const name = cs.metadata.name ?? "";
          if (!seenRunning.has(name) && isRunning(cs, SUBS + 1)) {
            const now = performance.now();
            seenRunning.set(name, now);
            runningAt.push(now);
          }
        }
        return all.length === sets && all.every((cs) => isRunning(cs, SUBS + 1));
      },
      {
        what: "every set Running",
        intervalMs: 200,
        // 10 minutes, or 1.5 s a set for larger curves on a small machine.
        timeoutMs: Math.max(600_000, sets * 1_500),
      },
    );
    const after = await operator.requests();
    const queueAfter = await operator.queue(COCOONSET_CONTROLLER);
    const proxiedAfter = proxy.counts();
    const cpuAfter = operator.proc()?.cpuSeconds ?? 0;
    const { peakRssKiB } = stopSampling();
    const secondsUntil = (share: number) =>
      ((runningAt[Math.max(0, Math.ceil(sets * share) - 1)] ?? t1) - t0) / 1000;
    const setSeconds = createdAt.map((at, i) => ((seenRunning.get(`scale-${i}`) ?? t1) - at) / 1000);
    const epoch = (at: number) => performance.timeOrigin + at;
    for (const [i, at] of createdAt.entries()) {
      if (!recordTimeline) break;
      const entry = timeline.get(`scale-${i}`) ?? { createdAt: 0, runningAt: 0, writes: [] };
      entry.createdAt = epoch(at);
      entry.runningAt = epoch(seenRunning.get(`scale-${i}`) ?? t1);
      timeline.set(`scale-${i}`, entry);
    }
    return {
      seconds: (t1 - t0) / 1000,
      halfSeconds: secondsUntil(0.5),
      p90Seconds: secondsUntil(0.9),
      setSeconds,
      timeline,
      requests: diffTotals(after, before),
      proxied: diffProxyCounts(proxiedAfter, proxiedBefore),
      queue: diffQueueTotals(queueAfter, queueBefore),
      requestTimes,
      peakRssMiB: peakRssKiB / 1024,
      cpuSeconds: cpuAfter - cpuBefore,
    };
  } finally {
    await operator.stop();
    await registryProxy?.stop();
    await proxy.stop();
    await pool.stop();
    await cluster.stop();
  }
}

/** The resource a request names: `pods`, `cocoonsets/status`, …; for the registry, `manifests` or `blobs`. */
function resourceOf(to: string, path: string): string {
  const pathname = path.split("?")[0] ?? "";
  if (to === "registry") {
    const parts = pathname.split("/").filter(Boolean);
    return parts.find((p) => p === "manifests" || p === "blobs") ?? parts.join("/");
  }
  const rest = resourceSegments(pathname);
  return rest.length > 2 ? `${rest[0]}/${rest[2]}` : (rest[0] ?? "");
}

const SET_NAME = /^(scale-\d+)(?:-|$)/;

/** The set an operator write is about and what it did: "update set", "patch set/status", "create pod 3", … */
function setWrite(e: Exchange): { set: string; what: string } | undefined {
  const verb = { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[e.method] ?? e.method;
  const [resource, name, sub] = resourceSegments(e.path.split("?")[0] ?? "");
  if (resource === "cocoonsets" && name) {
    const set = SET_NAME.exec(name)?.[1];
    return set ? { set, what: `${verb} set${sub ? `/${sub}` : ""}` } : undefined;
  }
  if (resource !== "pods") return undefined;
  const podName = name ?? podNameOf(e.body);
  const match = podName ? /^(scale-\d+)-(.+)$/.exec(podName) : null;
  if (!match?.[1]) return undefined;
  return { set: match[1], what: `${verb} pod ${match[2]}${sub ? `/${sub}` : ""}` };
}

/** A created pod's name: from JSON, or the first set-pod name in a protobuf body (client-go's default for pods). */
function podNameOf(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { metadata?: { name?: string } }).metadata?.name;
  } catch {
    return /scale-\d+-[0-9a-z]+/.exec(body)?.[0];
  }
}

/**
 * The timeline diagnostic: over the sets, p50 / p90 / max of each milestone (seconds from the set's
 * create), then the median set's writes one by one.
 */
function appendTimeline(file: string, title: string, run: Run): void {
  const sets = [...run.timeline.entries()].filter(([, t]) => t.createdAt > 0);
  const since = (t: SetTimeline, at: number | undefined) => ((at ?? t.runningAt) - t.createdAt) / 1000;
  const podCreates = (t: SetTimeline) => t.writes.filter((w) => w.what.startsWith("create pod"));
  const milestones: [string, (t: SetTimeline) => number][] = [
    ["first write", (t) => since(t, t.writes[0]?.at)],
    ["first pod create", (t) => since(t, podCreates(t)[0]?.at)],
    ["last pod create", (t) => since(t, podCreates(t).at(-1)?.at)],
    ["last write before Running", (t) => since(t, t.writes.filter((w) => w.at <= t.runningAt).at(-1)?.at)],
    ["Running", (t) => since(t, t.runningAt)],
    ["first write to Running", (t) => since(t, t.runningAt) - since(t, t.writes[0]?.at)],
    ["writes (count)", (t) => t.writes.length],
    ["status writes (count)", (t) => t.writes.filter((w) => w.what.endsWith("set/status")).length],
  ];
  const cell = (value: number) => value.toFixed(2).padStart(7);
  const q = (values: number[]) =>
    `p50 ${cell(percentile(values, 50))}  p90 ${cell(percentile(values, 90))}  max ${cell(Math.max(...values))}`;
  const lines = milestones.map(([name, pick]) => `${name.padEnd(28)} ${q(sets.map(([, t]) => pick(t)))}`);
  lines.push(inFlight(sets.map(([, t]) => t)));
  const byTime = [...sets].sort(([, a], [, b]) => since(a, a.runningAt) - since(b, b.runningAt));
  const median = byTime[Math.max(0, Math.ceil(byTime.length / 2) - 1)];
  if (median) {
    const [name, t] = median;
    lines.push(`median set ${name}: Running at ${since(t, t.runningAt).toFixed(2)} s`);
    for (const w of t.writes) lines.push(`  ${since(t, w.at).toFixed(2).padStart(7)} s  ${w.what}`);
  }
  appendFileSync(file, `# ${title}\n${lines.join("\n")}\n\n`);
}

/**
 * Sets in flight (the operator's first write of the set done, the set not yet Running), sampled every
 * 100 ms from the first write of the run to the last Running: mean and max, and the first set's Running.
 */
function inFlight(timelines: SetTimeline[]): string {
  const spans = timelines.flatMap((t) => (t.writes[0] ? [[t.writes[0].at, t.runningAt] as const] : []));
  if (spans.length === 0) return "sets in flight               none";
  const from = Math.min(...spans.map(([start]) => start));
  const to = Math.max(...spans.map(([, end]) => end));
  const counts: number[] = [];
  for (let at = from; at <= to; at += 100)
    counts.push(spans.filter(([start, end]) => start <= at && at < end).length);
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
  const firstRunning = Math.min(...timelines.map((t) => t.runningAt - t.createdAt)) / 1000;
  return `sets in flight               mean ${mean.toFixed(1).padStart(6)}  max ${String(Math.max(...counts)).padStart(6)}  first set Running at ${firstRunning.toFixed(2)} s`;
}

function appendRequestTimes(file: string, title: string, run: Run): void {
  const rows = [...run.requestTimes.entries()].sort(([, a], [, b]) => b.totalMs - a.totalMs);
  const lines = rows.map(
    ([key, { count, totalMs }]) =>
      `${key.padEnd(44)} ${String(count).padStart(6)} requests, mean ${(totalMs / count).toFixed(1).padStart(7)} ms, sum ${(totalMs / 1000).toFixed(1).padStart(7)} s`,
  );
  appendFileSync(file, `# ${title}: ${run.seconds.toFixed(2)} s\n${lines.join("\n")}\n\n`);
}

/** A run's per-set times to Running as "p50 / p90 / max s". */
function setTimes(run: Run): string {
  const [p50, p90, max] = setQuantiles(run);
  return `p50 ${p50.toFixed(2)} / p90 ${p90.toFixed(2)} / max ${max.toFixed(2)} s`;
}

function setQuantiles(run: Run): [number, number, number] {
  return [percentile(run.setSeconds, 50), percentile(run.setSeconds, 90), Math.max(...run.setSeconds)];
}

const meanMs = (sum: number, count: number) => (count > 0 ? (sum / count) * 1000 : 0);

function queueLine(queue: QueueTotals): string {
  return (
    `adds ${queue.adds}, retries ${queue.retries}, mean wait ${meanMs(queue.waitSeconds, queue.waits).toFixed(1)} ms, ` +
    `mean reconcile ${meanMs(queue.workSeconds, queue.works).toFixed(1)} ms, reconciles ${JSON.stringify(queue.reconcilesByResult)}`
  );
}

const WRITE_VERBS = ["create", "update", "patch", "delete"];

function writes(run: Run): number {
  return WRITE_VERBS.reduce((sum, verb) => sum + (run.proxied.byVerb[verb] ?? 0), 0);
}

async function main(): Promise<void> {
  const args = parseArgs();
  const sizes = args.list("sets", [100]);
  const runs = args.int("runs", 5);
  const requestTimesFile = args.string("request-times", "");
  const timelineFile = args.string("timeline", "");
  const operators = operatorCommands(args);
  const logDir = tmpdir();

  const curve: { sets: number; nodes: number; byLabel: Map<string, Run[]> }[] = [];
  for (const sets of sizes) {
    const nodes = args.int("nodes", Math.max(1, Math.ceil(sets / 10)));
    const byLabel = new Map<string, Run[]>(operators.map((o) => [o.label, []]));
    for (let r = 0; r < runs; r++) {
      for (const { command, label } of operators) {
        progress(
          `run ${r + 1}/${runs}: ${sets} sets × ${SUBS + 1} pods on ${nodes} nodes, operator ${label}`,
        );
        const run = await runOnce(
          command,
          sets,
          nodes,
          join(logDir, `bench-scaleup-${label}-${process.pid}-${sets}-${r}.log`),
          requestTimesFile !== "",
          timelineFile !== "",
        );
        if (requestTimesFile)
          appendRequestTimes(requestTimesFile, `${label} run ${r + 1}, ${sets} sets`, run);
        if (timelineFile) appendTimeline(timelineFile, `${label} run ${r + 1}, ${sets} sets`, run);
        byLabel.get(label)?.push(run);
        progress(
          `run ${r + 1}: ${run.seconds.toFixed(2)} s (half the sets ${run.halfSeconds.toFixed(2)} s, ` +
            `90 % ${run.p90Seconds.toFixed(2)} s; a set's own time to Running ${setTimes(run)}), proxy ${JSON.stringify(run.proxied.byVerb)} ` +
            `codes ${JSON.stringify(run.proxied.byCode)}; /metrics ${JSON.stringify(run.requests.byMethod)} ` +
            `codes ${JSON.stringify(run.requests.byCode)}; queue ${queueLine(run.queue)}, peak RSS ${run.peakRssMiB.toFixed(1)} MiB, CPU ${run.cpuSeconds.toFixed(2)} s`,
        );
      }
    }
    for (const operator of operators) {
      report(
        operator,
        sets,
        nodes,
        runs,
        byLabel.get(operator.label) ?? [],
        sizes.length > 1 || sets !== 100,
      );
    }
    curve.push({ sets, nodes, byLabel });
  }
  const [first, second] = operators;
  if (first && second) writeCurve(first.label, second.label, runs, curve);
}

function writeCurve(
  a: string,
  b: string,
  runs: number,
  curve: { sets: number; nodes: number; byLabel: Map<string, Run[]> }[],
): void {
  const cell = (values: number[], digits: number) => fmt(spread(values), digits);
  const rows: string[][] = [];
  for (const { sets, nodes, byLabel } of curve) {
    const ra = byLabel.get(a) ?? [];
    const rb = byLabel.get(b) ?? [];
    const both = (name: string, pick: (r: Run) => number, digits: number) =>
      rows.push([
        `${sets} sets (${sets * (SUBS + 1)} pods, ${nodes} nodes)`,
        name,
        cell(ra.map(pick), digits),
        cell(rb.map(pick), digits),
      ]);
    both("time until all Running (s)", (r) => r.seconds, 2);
    both("time until half the sets Running (s)", (r) => r.halfSeconds, 2);
    both("time until 90 % of the sets Running (s)", (r) => r.p90Seconds, 2);
    both("a set's own time to Running, p50 (s)", (r) => setQuantiles(r)[0], 2);
    both("a set's own time to Running, p90 (s)", (r) => setQuantiles(r)[1], 2);
    both("a set's own time to Running, max (s)", (r) => setQuantiles(r)[2], 2);
    both("API writes (create+update+patch+delete, proxy)", writes, 0);
    both("429s (proxy)", (r) => r.proxied.byCode["429"] ?? 0, 0);
    both("operator CPU (s)", (r) => r.cpuSeconds, 2);
    both("operator peak RSS (MiB)", (r) => r.peakRssMiB, 1);
  }
  writeSection(
    `3-scaleup-curve:${a}-vs-${b}`,
    `3. Scale curve, \`${a}\` against \`${b}\` (same run, alternating)`,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:scaleup")}\`

Each size: ${runs} run(s) per operator, alternating, each on a fresh environment (sections 3 per operator
and size have the details).

${table(["size", "metric", a, b], rows)}`,
  );
}

function report(
  { command, label }: OperatorCommand,
  sets: number,
  nodes: number,
  runs: number,
  results: Run[],
  sizedId: boolean,
): void {
  const seconds = spread(results.map((r) => r.seconds));
  const setP50 = spread(results.map((r) => setQuantiles(r)[0]));
  const setP90 = spread(results.map((r) => setQuantiles(r)[1]));
  const setMax = spread(results.map((r) => setQuantiles(r)[2]));
  const rss = spread(results.map((r) => r.peakRssMiB));
  const cpu = spread(results.map((r) => r.cpuSeconds));
  const total = spread(results.map((r) => r.proxied.total));
  const metricsTotal = spread(results.map((r) => r.requests.total));
  const throttled = spread(results.map((r) => r.proxied.byCode["429"] ?? 0));
  const metrics429 = spread(results.map((r) => r.requests.byCode["429"] ?? 0));
  const keys = (pick: (r: Run) => Record<string, number>) =>
    [...new Set(results.flatMap((r) => Object.keys(pick(r))))].sort();
  const row = (name: string, pick: (r: Run) => Record<string, number>, key: string) => [
    name,
    fmt(spread(results.map((r) => pick(r)[key] ?? 0)), 0),
  ];
  const verbs = keys((r) => r.proxied.byVerb);
  const codes = keys((r) => r.proxied.byCode);
  const methods = keys((r) => r.requests.byMethod);
  const metricCodes = keys((r) => r.requests.byCode);
  const reconcileResults = keys((r) => r.queue.reconcilesByResult);

  writeSection(
    sizedId ? `3-scaleup-${sets}:${label}` : `3-scaleup:${label}`,
    `3. Scale-up, ${sets} sets × (1 main + ${SUBS} sub-agents) — operator \`${label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:scaleup")}\`
Operator command: \`${command}\` (plus \`--leader-elect=false --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`)

Each run: a fresh control plane + registry, ${nodes} simulated nodes × 110 pod seats in a pool of their own
(simulator timings ${JSON.stringify(TIMINGS)}), the operator process started and ready; then ${sets} sets
(${sets * (SUBS + 1)} pods; agent requests 500m CPU / 512Mi) are created 32 at a time, and the clock stops
when every set reports Running with ${SUBS + 1}/${SUBS + 1} agents Ready at its generation ("half" and "90 %":
when that share of the sets was first seen so, polled every 200 ms; "a set's own time": from the answer
to that set's create to when it was first seen so, p50 / p90 / max over the sets of a run). The operator
reaches the API server through a counting proxy of the benchmark (plain HTTP on loopback, so it counts
whatever the operator exports): "(proxy)" rows count by Kubernetes verb and response code; "(/metrics)"
rows are the operator's own \`rest_client_requests_total\`, after minus before; the CocoonSet queue rows are its
\`workqueue_*\` and \`controller_runtime_reconcile_total\` series for that controller, same window. CPU = utime + stime of the
operator process over the same window; peak RSS = the highest VmRSS sampled every 100 ms. ${runs} runs.

${table(
  ["metric", "median (min–max)"],
  [
    ["time until all Running (s)", fmt(seconds, 2)],
    ["time until half the sets Running (s)", fmt(spread(results.map((r) => r.halfSeconds)), 2)],
    ["time until 90 % of the sets Running (s)", fmt(spread(results.map((r) => r.p90Seconds)), 2)],
    ["a set's own time to Running, p50 (s)", fmt(setP50, 2)],
    ["a set's own time to Running, p90 (s)", fmt(setP90, 2)],
    ["a set's own time to Running, max (s)", fmt(setMax, 2)],
    ["API requests, total (proxy)", fmt(total, 0)],
    ...verbs.map((v) => row(`API requests, ${v} (proxy)`, (r) => r.proxied.byVerb, v)),
    ...codes.map((c) => row(`responses with code ${c} (proxy)`, (r) => r.proxied.byCode, c)),
    ["429s seen (proxy)", fmt(throttled, 0)],
    [
      "rest_client_requests_total, total (/metrics)",
      metricsTotal.max === 0 ? "no samples exported" : fmt(metricsTotal, 0),
    ],
    ...methods.map((m) => row(`rest_client_requests_total, ${m} (/metrics)`, (r) => r.requests.byMethod, m)),
    ...metricCodes.map((c) =>
      row(`rest_client_requests_total, code ${c} (/metrics)`, (r) => r.requests.byCode, c),
    ),
    ["429s seen (/metrics)", metricsTotal.max === 0 ? "n/a" : fmt(metrics429, 0)],
    ["CocoonSet queue adds", fmt(spread(results.map((r) => r.queue.adds)), 0)],
    ["CocoonSet queue retries (rate-limited re-adds)", fmt(spread(results.map((r) => r.queue.retries)), 0)],
    [
      "CocoonSet queue, mean wait (ms)",
      fmt(spread(results.map((r) => meanMs(r.queue.waitSeconds, r.queue.waits))), 1),
    ],
    [
      "CocoonSet reconcile, mean time (ms)",
      fmt(spread(results.map((r) => meanMs(r.queue.workSeconds, r.queue.works))), 1),
    ],
    ...reconcileResults.map((result) =>
      row(`CocoonSet reconciles, result ${result}`, (r) => r.queue.reconcilesByResult, result),
    ),
    ["operator peak RSS (MiB)", fmt(rss, 1)],
    ["operator CPU time (s)", fmt(cpu, 2)],
  ],
)}`,
  );
  printSummary({
    bench: "scaleup",
    operator: label,
    sets,
    pods: sets * (SUBS + 1),
    runs,
    secondsMedian: +seconds.median.toFixed(3),
    secondsMin: +seconds.min.toFixed(3),
    secondsMax: +seconds.max.toFixed(3),
    halfSecondsMedian: +spread(results.map((r) => r.halfSeconds)).median.toFixed(3),
    p90SecondsMedian: +spread(results.map((r) => r.p90Seconds)).median.toFixed(3),
    setSecondsP50Median: +setP50.median.toFixed(3),
    setSecondsP90Median: +setP90.median.toFixed(3),
    setSecondsMaxMedian: +setMax.median.toFixed(3),
    requestsMedian: total.median,
    byVerbMedian: Object.fromEntries(
      verbs.map((v) => [v, spread(results.map((r) => r.proxied.byVerb[v] ?? 0)).median]),
    ),
    throttled429Max: throttled.max,
    metricsRequestsMedian: metricsTotal.median,
    peakRssMiBMedian: +rss.median.toFixed(1),
    cpuSecondsMedian: +cpu.median.toFixed(2),
  });
}

runBenchmark(main);
