// Benchmark 5: suspend / wake latency. One control plane + registry, one simulated node with fixed
// vk-cocoon timings, one set (main + 1 sub-agent), the operator as a separate process. Each cycle
// patches spec.suspend=true and times until status.phase is Suspended, then patches it back to false
// and times until the set is Running with every agent Ready again. Operator overhead = total − the
// simulator's fixed time on the critical path (hibernate: hibernateMs; wake: wakeMs + readyMs); it
// still includes API server, registry and simulator bookkeeping, the same for any operator measured.
// The simulator's journal splits each transition at the VM events: before them is the operator's
// reaction (patch → pod annotations) plus the simulator's own work, after them the operator's noticing
// (pod status → set status).
//
// Each turn starts a fresh operator process on the same set, waits for Running, runs one untimed
// warm-up cycle and then --cycles timed ones, and stops it. With --compare-command the two operators
// take turns (--runs turns each), so both see the same environment and the same machine load.
//
//   npm run bench:suspend [-- --runs 5 --cycles 2 --operator-command "<cmd>" --label <name>
//                             --compare-command "<cmd>" --compare-label <name> --trace <file>]
//
// --trace puts a timestamping proxy between each operator and the API server and another before the
// registry, and appends to <file>, per timed wake, every request either operator made (start and end,
// ms after the wake patch) interleaved with the simulator's VM events and the moment the set was seen
// Running. The proxies add a hop of their own, so traced timings are for where the time goes, not for
// the table.

import { appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CocoonSet } from "../src/apis/v1/types.ts";
import type { VmEvent } from "../test/env/simulator/index.ts";
import {
  apiRequest,
  cocoonSet,
  createNamespace,
  createSets,
  IMAGE,
  isRunning,
  setsPath,
  sleep,
  startCluster,
  startPool,
} from "./lib/cluster.ts";
import { type Exchange, startCountingProxy } from "./lib/countingproxy.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import {
  diffTotals,
  type OperatorCommand,
  type OperatorProcess,
  operatorCommands,
  type RequestTotals,
  startOperatorProcess,
} from "./lib/operator.ts";
import { startRegistryProxy } from "./lib/registryproxy.ts";
import {
  commandLine,
  fmt,
  machine,
  machineLine,
  printSummary,
  progress,
  type Spread,
  spread,
  table,
  writeSection,
} from "./lib/report.ts";

const TIMINGS = { bootMs: 200, readyMs: 200, hibernateMs: 500, wakeMs: 300, deleteMs: 100 };
const SUSPEND_SIM_MS = TIMINGS.hibernateMs;
const WAKE_SIM_MS = TIMINGS.wakeMs + TIMINGS.readyMs;
const POLL_MS = 20;
const AGENTS = 2;

/** One timed cycle; every time in epoch milliseconds. */
interface Cycle {
  suspendPatch: number;
  /** The last VM of the set hibernated (journal), then the set Suspended. */
  hibernated: number;
  suspended: number;
  wakePatch: number;
  /** The last VM of the set woken (journal), then the set Running with every agent Ready. */
  woken: number;
  running: number;
  /** The operator's own rest_client_requests_total over each transition and the 1 s after it. */
  suspendRequests: RequestTotals;
  wakeRequests: RequestTotals;
  /** The operator's CPU time from the wake patch to Running (10 ms ticks). */
  wakeCpuMs: number;
  /** With --trace: controller_runtime_reconcile_total over the wake and the 1 s after it. */
  wakeReconciles: number;
}

const suspendMs = (c: Cycle) => c.suspended - c.suspendPatch;
const wakeMs = (c: Cycle) => c.running - c.wakePatch;
/** Patch → last VM hibernated, less hibernateMs: the operator's reaction plus the simulator's push. */
const suspendBefore = (c: Cycle) => c.hibernated - c.suspendPatch - TIMINGS.hibernateMs;
/** Last VM hibernated → Suspended: the operator noticing the pods and writing the status. */
const suspendAfter = (c: Cycle) => c.suspended - c.hibernated;
/** Patch → last VM woken, less wakeMs: the operator's reaction plus the simulator's pull. */
const wakeBefore = (c: Cycle) => c.woken - c.wakePatch - TIMINGS.wakeMs;
/** Last VM woken → Running, less readyMs: the operator noticing readiness and writing the status. */
const wakeAfter = (c: Cycle) => c.running - c.woken - TIMINGS.readyMs;

async function main(): Promise<void> {
  const args = parseArgs();
  const runs = args.int("runs", 5);
  const cycles = args.int("cycles", 2);
  const operators = operatorCommands(args);
  const traceFile = args.string("trace", "");

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const pool = await startPool(info, 1, { pods: 110, timings: TIMINGS });
  const ns = await createNamespace(info, "bench-suspend");

  const name = "latency";
  const path = `${setsPath(ns)}/${name}`;
  let logFile = "";
  const get = async (): Promise<CocoonSet> => {
    const res = await apiRequest(info, "GET", path);
    if (res.status !== 200) throw new Error(`get ${name}: ${res.status}`);
    return res.body as CocoonSet;
  };
  const until = async (
    what: string,
    done: (cs: CocoonSet) => boolean,
    timeoutMs = 120_000,
  ): Promise<number> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const cs = await get();
      if (done(cs)) return Date.now();
      if (performance.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; phase ${cs.status?.phase}; see ${logFile}`);
      }
      await sleep(POLL_MS);
    }
  };
  const setSuspend = async (suspend: boolean): Promise<number> => {
    const t = Date.now();
    const res = await apiRequest(info, "PATCH", path, { spec: { suspend } }, "application/merge-patch+json");
    if (res.status !== 200) throw new Error(`patch suspend=${suspend}: ${res.status}`);
    return t;
  };
  /** The time of the last `kind` VM event of the set's pods since `since`. */
  const lastVmEvent = (kind: VmEvent["kind"], since: number): number => {
    const times = pool.sim.record
      .events({ kind })
      .filter((e) => e.namespace === ns && e.time >= since)
      .map((e) => e.time);
    if (times.length < AGENTS) throw new Error(`${times.length} ${kind} events for ${AGENTS} agents`);
    return Math.max(...times);
  };
  const cycle = async (operator: OperatorProcess): Promise<Cycle> => {
    const beforeSuspend = await operator.requests();
    const suspendPatch = await setSuspend(true);
    const suspended = await until("Suspended", (cs) => cs.status?.phase === "Suspended");
    const hibernated = lastVmEvent("hibernate", suspendPatch);
    await sleep(1_000);
    const beforeWake = await operator.requests();
    const reconcilesBeforeWake = traceFile ? await operator.reconciles() : 0;
    const cpuBeforeWake = operator.proc()?.cpuSeconds ?? 0;
    const wakePatch = await setSuspend(false);
    const running = await until("Running", (cs) => isRunning(cs, AGENTS));
    const woken = lastVmEvent("wake", wakePatch);
    const wakeCpuMs = Math.round(((operator.proc()?.cpuSeconds ?? 0) - cpuBeforeWake) * 1000);
    await sleep(1_000);
    const afterWake = await operator.requests();
    const wakeReconciles = traceFile ? (await operator.reconciles()) - reconcilesBeforeWake : 0;
    return {
      suspendPatch,
      hibernated,
      suspended,
      wakePatch,
      woken,
      running,
      suspendRequests: diffTotals(beforeWake, beforeSuspend),
      wakeRequests: diffTotals(afterWake, beforeWake),
      wakeCpuMs,
      wakeReconciles,
    };
  };

  /** The traced exchanges of the running turn, tagged "api" or "registry". */
  const exchanges: (Exchange & { to: string })[] = [];
  const writeTrace = (label: string, run: number, c: Cycle): void => {
    const at = (t: number) => String(t - c.wakePatch).padStart(5);
    const lines: [number, string][] = [
      ...exchanges
        .filter((e) => e.start >= c.wakePatch && e.start <= c.running)
        .map((e): [number, string] => [
          e.start,
          `${at(e.start)} …${at(e.end)}  ${e.to} ${e.method} ${e.status} ${e.path} ${e.body.slice(0, 200)}`,
        ]),
      ...pool.sim.record
        .events()
        .filter((e) => e.namespace === ns && e.time >= c.wakePatch && e.time <= c.running)
        .map((e): [number, string] => [e.time, `${at(e.time)}         vm ${e.kind} ${e.podName}`]),
      [c.running, `${at(c.running)}         set seen Running`],
    ];
    lines.sort((a, b) => a[0] - b[0]);
    appendFileSync(
      traceFile,
      `# ${label} turn ${run + 1}: wake ${wakeMs(c)} ms, operator CPU ${c.wakeCpuMs} ms, ${c.wakeReconciles} reconciles\n${lines.map(([, line]) => line).join("\n")}\n\n`,
    );
  };

  const results = new Map<string, Cycle[]>(operators.map((o) => [o.label, []]));
  let created = false;
  const turn = async (operator: OperatorCommand, run: number): Promise<void> => {
    logFile = join(tmpdir(), `bench-suspend-${operator.label}-${process.pid}.log`);
    exchanges.length = 0;
    const record = (to: string) => (e: Exchange) => exchanges.push({ ...e, to });
    const apiProxy = traceFile
      ? await startCountingProxy(info, `${logFile}.kubeconfig`, record("api"))
      : undefined;
    const registryProxy = traceFile ? await startRegistryProxy(info.registry, record("registry")) : undefined;
    const process_ = await startOperatorProcess({
      command: operator.command,
      kubeconfigPath: apiProxy?.kubeconfigPath ?? info.kubeconfigPath,
      registry: registryProxy?.host ?? info.registry,
      logFile,
    });
    try {
      await process_.waitReady();
      if (!created) {
        await createSets(info, [
          cocoonSet(ns, name, {
            nodePool: pool.pool,
            agent: { image: IMAGE, replicas: AGENTS - 1, mode: "clone" },
          }),
        ]);
        created = true;
      }
      await until("Running", (cs) => isRunning(cs, AGENTS));
      await sleep(1_000);
      await cycle(process_);
      for (let c = 0; c < cycles; c++) {
        const result = await cycle(process_);
        results.get(operator.label)?.push(result);
        if (traceFile) writeTrace(operator.label, run, result);
        progress(
          `${operator.label} turn ${run + 1} cycle ${c + 1}: suspend ${suspendMs(result)} ms ` +
            `(${suspendBefore(result)} + ${TIMINGS.hibernateMs} + ${suspendAfter(result)}), wake ${wakeMs(result)} ms ` +
            `(${wakeBefore(result)} + ${TIMINGS.wakeMs} + ${wakeAfter(result)} + ${TIMINGS.readyMs}); API requests ` +
            `suspend ${JSON.stringify(result.suspendRequests.byMethod)}, wake ${JSON.stringify(result.wakeRequests.byMethod)}`,
        );
      }
    } finally {
      await process_.stop();
      await apiProxy?.stop();
      await registryProxy?.stop();
    }
  };
  for (let r = 0; r < runs; r++) {
    for (const operator of operators) await turn(operator, r);
  }

  const header = `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:suspend")}\``;
  const method = `One set (main + 1 sub-agent) on one simulated node, simulator timings ${JSON.stringify(TIMINGS)}.
Suspend = from the \`spec.suspend: true\` patch to \`status.phase: Suspended\`; wake = from the
\`spec.suspend: false\` patch to Running with ${AGENTS}/${AGENTS} agents Ready at the generation; polled every
${POLL_MS} ms. Simulator time on the critical path: suspend ${SUSPEND_SIM_MS} ms (hibernateMs), wake
${WAKE_SIM_MS} ms (wakeMs + readyMs). Overhead = total − simulator time. ${runs} turns of a fresh operator
process${operators.length > 1 ? `, the operators (${operators.map((o) => `\`${o.label}\``).join(", ")}) taking turns on the same set` : ""}; each turn
waits for Running, runs one untimed warm-up cycle, then ${cycles} timed cycles (${runs * cycles} in all).
"Before the VMs" = patch → the last VM event in the simulator's journal (hibernated; woken) less
hibernateMs / wakeMs: the operator's reaction plus the simulator's own bookkeeping (registry push or
pull, annotation patches); "after the VMs" = that event → the set's status (wake: less readyMs): the
operator noticing the pods and writing the status. API requests = the operator's own
\`rest_client_requests_total\` from just before the patch to 1 s after the transition, by method.`;
  const methods = [
    ...new Set(
      [...results.values()]
        .flat()
        .flatMap((c) => [
          ...Object.keys(c.suspendRequests.byMethod),
          ...Object.keys(c.wakeRequests.byMethod),
        ]),
    ),
  ].sort();
  const requestRows = (transition: string, pick: (c: Cycle) => RequestTotals, own: readonly Cycle[]) =>
    methods.map((method) => ({
      name: `API requests per ${transition}, ${method}`,
      sim: "",
      values: spread(own.map((c) => pick(c).byMethod[method] ?? 0)),
    }));
  const rows = (own: readonly Cycle[]): { name: string; sim: string; values: Spread }[] => [
    {
      name: "suspend → Suspended, total (ms)",
      sim: String(SUSPEND_SIM_MS),
      values: spread(own.map(suspendMs)),
    },
    {
      name: "suspend operator overhead (ms)",
      sim: "",
      values: spread(own.map((c) => suspendMs(c) - SUSPEND_SIM_MS)),
    },
    { name: "suspend, before the VMs (ms)", sim: "", values: spread(own.map(suspendBefore)) },
    { name: "suspend, after the VMs (ms)", sim: "", values: spread(own.map(suspendAfter)) },
    { name: "wake → Running, total (ms)", sim: String(WAKE_SIM_MS), values: spread(own.map(wakeMs)) },
    { name: "wake operator overhead (ms)", sim: "", values: spread(own.map((c) => wakeMs(c) - WAKE_SIM_MS)) },
    { name: "wake, before the VMs (ms)", sim: "", values: spread(own.map(wakeBefore)) },
    { name: "wake, after the VMs (ms)", sim: "", values: spread(own.map(wakeAfter)) },
    ...requestRows("suspend", (c) => c.suspendRequests, own),
    ...requestRows("wake", (c) => c.wakeRequests, own),
  ];

  for (const operator of operators) {
    writeSection(
      `5-suspend:${operator.label}`,
      `5. Suspend / wake latency — operator \`${operator.label}\``,
      `${header}
Operator command: \`${operator.command}\` (plus \`--leader-elect=false --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`)

${method}

${table(
  ["metric", "median (min–max)", "simulator ms"],
  rows(results.get(operator.label) ?? []).map((row) => [row.name, fmt(row.values, 0), row.sim]),
)}`,
    );
  }
  const [first, second] = operators;
  if (first && second) {
    const a = rows(results.get(first.label) ?? []);
    const b = rows(results.get(second.label) ?? []);
    writeSection(
      `5-suspend:${first.label}-vs-${second.label}`,
      `5. Suspend / wake, \`${first.label}\` against \`${second.label}\` (same run, taking turns)`,
      `${header}

${runs} turns per operator × ${cycles} timed cycles, alternating (sections 5 per operator have the method).

${table(
  ["metric", first.label, second.label, `${first.label} − ${second.label} (medians)`],
  a.map((row, i) => {
    const other = (b[i] as (typeof b)[number]).values;
    return [row.name, fmt(row.values, 0), fmt(other, 0), (row.values.median - other.median).toFixed(0)];
  }),
)}`,
    );
  }
  printSummary({
    bench: "suspend",
    runs,
    cycles,
    results: Object.fromEntries(
      operators.map((o) => [
        o.label,
        Object.fromEntries(
          rows(results.get(o.label) ?? []).map((row) => [
            row.name,
            { median: row.values.median, min: row.values.min, max: row.values.max },
          ]),
        ),
      ]),
    ),
  });
}

runBenchmark(main);
