// Benchmark 4: operator memory with 1k, 5k and 10k pods in its cache. One control plane; pods
// labelled cocoonset.cocoonstack.io/name=<set> (so every operator caches them) with schedulerName
// "none" (so nothing schedules or runs them) are added up to each size; at each size, each run starts
// a fresh operator process, waits for /readyz, lets it settle (at least 5 s, then until VmRSS moves
// less than 2% in 2 s, at most 30 s) and reads VmRSS and VmHWM from /proc/<pid>/status.
//
//   npm run bench:memory [-- --sizes 1000,5000,10000 --runs 5 --operator-command "<cmd>" --label <name>]

import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod } from "../src/apis/core.ts";
import { apiRequest, createNamespace, IMAGE, mapLimit, sleep, startCluster } from "./lib/cluster.ts";
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

const MIN_SETTLE_MS = 5_000;
const MAX_SETTLE_MS = 30_000;

/** A pod shaped like an operator-made agent pod, that the scheduler leaves alone. */
function benchPod(ns: string, i: number): Pod {
  const set = `mem-${Math.floor(i / 10)}`;
  const slot = i % 10;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${set}-${slot}`,
      namespace: ns,
      labels: {
        "cocoonset.cocoonstack.io/name": set,
        "cocoonset.cocoonstack.io/role": slot === 0 ? "main" : "sub-agent",
        "cocoonset.cocoonstack.io/slot": String(slot),
      },
      annotations: {
        "vm.cocoonstack.io/name": `vk-${ns}-${set}-${slot}`,
        "vm.cocoonstack.io/mode": "clone",
        "vm.cocoonstack.io/image": IMAGE,
        "vm.cocoonstack.io/managed": "true",
        "cocoonset.cocoonstack.io/generation": "1",
      },
    },
    spec: {
      schedulerName: "none",
      nodeSelector: { "cocoonstack.io/pool": "bench-memory" },
      tolerations: [{ key: "virtual-kubelet.io/provider", operator: "Exists", effect: "NoSchedule" }],
      containers: [
        {
          name: "agent",
          image: IMAGE,
          resources: { requests: { cpu: "2", memory: "4Gi" }, limits: { cpu: "2", memory: "4Gi" } },
        },
      ],
    },
  } as Pod;
}

async function main(): Promise<void> {
  const args = parseArgs();
  const sizes = args.list("sizes", [1000, 5000, 10000]).sort((a, b) => a - b);
  const runs = args.int("runs", 5);
  const { command, label } = operatorCommand(args);

  progress("starting control plane and registry");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const ns = await createNamespace(info, "bench-memory");

  interface Point {
    size: number;
    rss: number[];
    hwm: number[];
    settleS: number[];
  }
  const points: Point[] = [];
  let created = 0;
  for (const size of sizes) {
    progress(`creating pods ${created}..${size - 1}`);
    await mapLimit(
      Array.from({ length: size - created }, (_, k) => created + k),
      32,
      async (i) => {
        const res = await apiRequest(info, "POST", `/api/v1/namespaces/${ns}/pods`, benchPod(ns, i));
        if (res.status !== 201) throw new Error(`create pod ${i}: ${res.status} ${JSON.stringify(res.body)}`);
      },
    );
    created = size;
    const point: Point = { size, rss: [], hwm: [], settleS: [] };
    for (let r = 0; r < runs; r++) {
      const operator = await startOperatorProcess({
        command,
        kubeconfigPath: info.kubeconfigPath,
        registry: info.registry,
        logFile: join(tmpdir(), `bench-memory-${label}-${process.pid}.log`),
      });
      try {
        const t0 = performance.now();
        await operator.waitReady();
        await sleep(MIN_SETTLE_MS);
        let last = operator.proc()?.rssKiB ?? 0;
        while (performance.now() - t0 < MAX_SETTLE_MS) {
          await sleep(2_000);
          const now = operator.proc()?.rssKiB ?? 0;
          const stable = Math.abs(now - last) / Math.max(last, 1) < 0.02;
          last = now;
          if (stable) break;
        }
        const sample = operator.proc();
        if (!sample || operator.exited()) throw new Error(`operator exited; see ${operator.logFile}`);
        point.rss.push(sample.rssKiB / 1024);
        point.hwm.push(sample.hwmKiB / 1024);
        point.settleS.push((performance.now() - t0) / 1000);
        progress(
          `${size} pods, run ${r + 1}: RSS ${(sample.rssKiB / 1024).toFixed(1)} MiB, ` +
            `HWM ${(sample.hwmKiB / 1024).toFixed(1)} MiB`,
        );
      } finally {
        await operator.stop();
      }
    }
    points.push(point);
  }

  writeSection(
    `4-memory:${label}`,
    `4. Memory with pods in the cache — operator \`${label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:memory")}\`
Operator command: \`${command}\` (plus \`--leader-elect=false --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`)

One control plane; pods labelled \`cocoonset.cocoonstack.io/name=<set>\` (10 per set, agent-pod shaped,
\`schedulerName: none\` so they stay Pending and untouched) are added up to each size. Per size, ${runs} runs
each start a fresh operator process, wait for /readyz, settle (≥ ${MIN_SETTLE_MS / 1000} s, then until VmRSS
moves < 2% in 2 s, ≤ ${MAX_SETTLE_MS / 1000} s) and read /proc/<pid>/status.

${table(
  ["pods in cache", "VmRSS MiB", "VmHWM (peak) MiB", "settle s"],
  points.map((p) => [
    String(p.size),
    fmt(spread(p.rss), 1),
    fmt(spread(p.hwm), 1),
    fmt(spread(p.settleS), 1),
  ]),
)}`,
  );
  printSummary({
    bench: "memory",
    operator: label,
    runs,
    results: Object.fromEntries(
      points.map((p) => [
        p.size,
        {
          rssMiBMedian: +spread(p.rss).median.toFixed(1),
          rssMiBMin: +spread(p.rss).min.toFixed(1),
          rssMiBMax: +spread(p.rss).max.toFixed(1),
          hwmMiBMedian: +spread(p.hwm).median.toFixed(1),
        },
      ]),
    ),
  });
}

runBenchmark(main);
