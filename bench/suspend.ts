// Benchmark 5: suspend / wake latency. One control plane + registry, one simulated node with fixed
// vk-cocoon timings, the operator as a separate process, one set (main + 1 sub-agent). Each cycle
// patches spec.suspend=true and times until status.phase is Suspended, then patches it back to false
// and times until the set is Running with every agent Ready again. Operator overhead = total − the
// simulator's fixed time on the critical path (hibernate: hibernateMs; wake: wakeMs + readyMs); it
// still includes API server, registry and simulator bookkeeping, the same for any operator measured.
//
//   npm run bench:suspend [-- --runs 7 --operator-command "<cmd>" --label <name>]

import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CocoonSet } from "../src/apis/v1/types.ts";
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
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import { operatorCommand, startOperatorProcess } from "./lib/operator.ts";
import {
  commandLine,
  fmt,
  machine,
  machineLine,
  printSummary,
  progress,
  spread,
  table,
  writeSection,
} from "./lib/report.ts";

const TIMINGS = { bootMs: 200, readyMs: 200, hibernateMs: 500, wakeMs: 300, deleteMs: 100 };
const SUSPEND_SIM_MS = TIMINGS.hibernateMs;
const WAKE_SIM_MS = TIMINGS.wakeMs + TIMINGS.readyMs;
const POLL_MS = 20;
const AGENTS = 2;

async function main(): Promise<void> {
  const args = parseArgs();
  const runs = args.int("runs", 7);
  const { command, label } = operatorCommand(args);

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const pool = await startPool(info, 1, { pods: 110, timings: TIMINGS });
  const ns = await createNamespace(info, "bench-suspend");
  const operator = await startOperatorProcess({
    command,
    kubeconfigPath: info.kubeconfigPath,
    registry: info.registry,
    logFile: join(tmpdir(), `bench-suspend-${label}-${process.pid}.log`),
  });
  await operator.waitReady();

  const name = "latency";
  const path = `${setsPath(ns)}/${name}`;
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
      if (done(cs)) return performance.now();
      if (performance.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; phase ${cs.status?.phase}; see ${operator.logFile}`);
      }
      await sleep(POLL_MS);
    }
  };
  const setSuspend = async (suspend: boolean): Promise<number> => {
    const t = performance.now();
    const res = await apiRequest(info, "PATCH", path, { spec: { suspend } }, "application/merge-patch+json");
    if (res.status !== 200) throw new Error(`patch suspend=${suspend}: ${res.status}`);
    return t;
  };

  await createSets(info, [
    cocoonSet(ns, name, {
      nodePool: pool.pool,
      agent: { image: IMAGE, replicas: AGENTS - 1, mode: "clone" },
    }),
  ]);
  await until("Running", (cs) => isRunning(cs, AGENTS));
  await sleep(1_000);

  const suspendMs: number[] = [];
  const wakeMs: number[] = [];
  for (let r = 0; r < runs; r++) {
    const s0 = await setSuspend(true);
    const s1 = await until("Suspended", (cs) => cs.status?.phase === "Suspended");
    await sleep(1_000);
    const w0 = await setSuspend(false);
    const w1 = await until("Running", (cs) => isRunning(cs, AGENTS));
    suspendMs.push(s1 - s0);
    wakeMs.push(w1 - w0);
    progress(`cycle ${r + 1}: suspend ${(s1 - s0).toFixed(0)} ms, wake ${(w1 - w0).toFixed(0)} ms`);
    await sleep(1_000);
  }
  await operator.stop();

  const suspend = spread(suspendMs);
  const wake = spread(wakeMs);
  const suspendOverhead = spread(suspendMs.map((v) => v - SUSPEND_SIM_MS));
  const wakeOverhead = spread(wakeMs.map((v) => v - WAKE_SIM_MS));
  writeSection(
    `5-suspend:${label}`,
    `5. Suspend / wake latency — operator \`${label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:suspend")}\`
Operator command: \`${command}\` (plus \`--leader-elect=false --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`)

One set (main + 1 sub-agent) on one simulated node, simulator timings ${JSON.stringify(TIMINGS)}.
Suspend = from the \`spec.suspend: true\` patch to \`status.phase: Suspended\`; wake = from the
\`spec.suspend: false\` patch to Running with ${AGENTS}/${AGENTS} agents Ready at the generation; polled every
${POLL_MS} ms. Simulator time on the critical path: suspend ${SUSPEND_SIM_MS} ms (hibernateMs), wake
${WAKE_SIM_MS} ms (wakeMs + readyMs). Overhead = total − simulator time. ${runs} cycles.

${table(
  ["transition", "total ms", "simulator ms", "operator overhead ms"],
  [
    ["suspend → Suspended", fmt(suspend, 0), String(SUSPEND_SIM_MS), fmt(suspendOverhead, 0)],
    ["wake → Running", fmt(wake, 0), String(WAKE_SIM_MS), fmt(wakeOverhead, 0)],
  ],
)}`,
  );
  printSummary({
    bench: "suspend",
    operator: label,
    runs,
    suspendMsMedian: +suspend.median.toFixed(1),
    suspendMsMin: +suspend.min.toFixed(1),
    suspendMsMax: +suspend.max.toFixed(1),
    suspendOverheadMsMedian: +suspendOverhead.median.toFixed(1),
    wakeMsMedian: +wake.median.toFixed(1),
    wakeMsMin: +wake.min.toFixed(1),
    wakeMsMax: +wake.max.toFixed(1),
    wakeOverheadMsMedian: +wakeOverhead.median.toFixed(1),
  });
}

runBenchmark(main);
