// Benchmark 4: operator memory with 1k to 50k pods in its cache, and the cost per cached pod. One
// control plane; pods labelled cocoonset.cocoonstack.io/name=<set> (so every operator caches them)
// with schedulerName "none" (so nothing schedules or runs them) are added up to each size; at each
// size, each run starts a fresh operator process, waits for /readyz, lets it settle (at least 5 s,
// then until VmRSS moves less than 2% in 2 s, at most 60 s) and reads VmRSS (with its anonymous and
// file-backed parts), VmHWM and the CPU time used so far from /proc/<pid>. With --compare-command the
// two operators alternate run by run on the same pods.
//
// --unrelated N adds N standalone pods (no CocoonSet label, as cocoon-webhook leaves a pod vk-cocoon runs
// outside any set) before the first size, and --hibernations K a CocoonHibernation naming each of the
// first K of them: the operator must not cache the unrelated pods, only the K that CRs name.
//
//   npm run bench:memory [-- --sizes 1000,5000,10000,25000,50000 --runs 3
//                            --unrelated 0 --hibernations 0
//                            --operator-command "<cmd>" --label <name>
//                            --compare-command "<cmd>" --compare-label <name>]

import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod } from "../src/apis/core.ts";
import {
  apiRequest,
  createNamespace,
  createPods,
  IMAGE,
  mapLimit,
  sleep,
  startCluster,
} from "./lib/cluster.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import { type OperatorCommand, operatorCommands, startOperatorProcess } from "./lib/operator.ts";
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
const MAX_SETTLE_MS = 60_000;

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

/** A pod outside every CocoonSet; the operator sees it only if a CocoonHibernation names it. */
function unrelatedPod(ns: string, i: number): Pod {
  const pod = benchPod(ns, 0);
  pod.metadata = {
    name: `standalone-${i}`,
    namespace: ns,
    annotations: { "vm.cocoonstack.io/managed": "true" },
  };
  return pod;
}

/** Wake on a pod that carries no VM name: the CR stays Pending and makes no pod write. */
function hibernationFor(podName: string): object {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName },
    spec: { podRef: { name: podName }, desire: "Wake" },
  };
}

async function createAll(
  info: Parameters<typeof apiRequest>[0],
  path: string,
  objects: object[],
): Promise<void> {
  await mapLimit(objects, 32, async (obj) => {
    const res = await apiRequest(info, "POST", path, obj);
    if (res.status !== 201) throw new Error(`create ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  });
}

interface Point {
  size: number;
  rss: number[];
  hwm: number[];
  /** VmRSS's anonymous and file-backed parts (RssAnon, RssFile). */
  anon: number[];
  file: number[];
  /** CPU time from start to the sample: start-up, the initial lists and settling. */
  cpuS: number[];
  settleS: number[];
}

/** Least-squares line through (pods, median VmRSS): the cost of one more cached pod, and the base. */
function slope(points: readonly Point[]): { kibPerPod: number; baseMiB: number } {
  const xs = points.map((p) => p.size);
  const ys = points.map((p) => spread(p.rss).median);
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += ((xs[i] ?? 0) - mx) * ((ys[i] ?? 0) - my);
    sxx += ((xs[i] ?? 0) - mx) ** 2;
  }
  const perPod = sxx > 0 ? sxy / sxx : Number.NaN;
  return { kibPerPod: perPod * 1024, baseMiB: my - perPod * mx };
}

/** KiB per pod between consecutive sizes. */
function marginalSlopes(points: readonly Point[]): string {
  const parts: string[] = [];
  for (let i = 1; i < points.length; i++) {
    const [a, b] = [points[i - 1] as Point, points[i] as Point];
    const kib = ((spread(b.rss).median - spread(a.rss).median) * 1024) / (b.size - a.size);
    parts.push(`${a.size}→${b.size}: ${kib.toFixed(2)}`);
  }
  return parts.join(", ");
}

async function measureOnce(
  operator: OperatorCommand,
  info: { kubeconfigPath: string; registry: string },
  point: Point,
): Promise<void> {
  const process_ = await startOperatorProcess({
    command: operator.command,
    kubeconfigPath: info.kubeconfigPath,
    registry: info.registry,
    logFile: join(tmpdir(), `bench-memory-${operator.label}-${process.pid}.log`),
  });
  try {
    const t0 = performance.now();
    await process_.waitReady(120_000);
    await sleep(MIN_SETTLE_MS);
    let last = process_.proc()?.rssKiB ?? 0;
    while (performance.now() - t0 < MAX_SETTLE_MS) {
      await sleep(2_000);
      const now = process_.proc()?.rssKiB ?? 0;
      const stable = Math.abs(now - last) / Math.max(last, 1) < 0.02;
      last = now;
      if (stable) break;
    }
    const sample = process_.proc();
    if (!sample || process_.exited()) throw new Error(`operator exited; see ${process_.logFile}`);
    point.rss.push(sample.rssKiB / 1024);
    point.hwm.push(sample.hwmKiB / 1024);
    point.anon.push(sample.anonKiB / 1024);
    point.file.push(sample.fileKiB / 1024);
    point.cpuS.push(sample.cpuSeconds);
    point.settleS.push((performance.now() - t0) / 1000);
    progress(
      `${operator.label}: ${point.size} pods, run ${point.rss.length}: RSS ${(sample.rssKiB / 1024).toFixed(1)} MiB, ` +
        `HWM ${(sample.hwmKiB / 1024).toFixed(1)} MiB (anonymous ${(sample.anonKiB / 1024).toFixed(1)}, file ${(sample.fileKiB / 1024).toFixed(1)}), CPU ${sample.cpuSeconds.toFixed(2)} s`,
    );
  } finally {
    await process_.stop();
  }
}

async function main(): Promise<void> {
  const args = parseArgs();
  const sizes = args.list("sizes", [1000, 5000, 10000, 25000, 50000]).sort((a, b) => a - b);
  const runs = args.int("runs", 3);
  // 0 is the default; args.int accepts positive counts only.
  const count = (name: string) => (args.string(name, "0") === "0" ? 0 : args.int(name, 0));
  const unrelated = count("unrelated");
  const hibernations = Math.min(count("hibernations"), unrelated);
  const operators = operatorCommands(args);

  progress("starting control plane and registry");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const ns = await createNamespace(info, "bench-memory");
  if (unrelated > 0) {
    progress(`creating ${unrelated} unrelated pods and ${hibernations} CocoonHibernations naming them`);
    const standalone = Array.from({ length: unrelated }, (_, i) => unrelatedPod(ns, i));
    await createAll(info, `/api/v1/namespaces/${ns}/pods`, standalone);
    await createAll(
      info,
      `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonhibernations`,
      standalone.slice(0, hibernations).map((pod) => hibernationFor(pod.metadata.name ?? "")),
    );
  }

  const points = new Map<string, Point[]>(operators.map((o) => [o.label, []]));
  let created = 0;
  for (const size of sizes) {
    progress(`creating pods ${created}..${size - 1}`);
    await createPods(info, ns, created, size, (i) => benchPod(ns, i));
    created = size;
    const atSize = operators.map((o) => {
      const point: Point = { size, rss: [], hwm: [], anon: [], file: [], cpuS: [], settleS: [] };
      points.get(o.label)?.push(point);
      return point;
    });
    for (let r = 0; r < runs; r++) {
      for (const [i, operator] of operators.entries()) await measureOnce(operator, info, atSize[i] as Point);
    }
  }

  const method = `One control plane; pods labelled \`cocoonset.cocoonstack.io/name=<set>\` (10 per set, agent-pod shaped,
\`schedulerName: none\` so they stay Pending and untouched) are added up to each size. Per size, ${runs} runs
each start a fresh operator process${unrelated > 0 ? ` (${unrelated} unrelated standalone pods in the cluster as well, ${hibernations} of them named by a CocoonHibernation)` : ""}, wait for /readyz, settle (≥ ${MIN_SETTLE_MS / 1000} s, then until VmRSS
moves < 2% in 2 s, ≤ ${MAX_SETTLE_MS / 1000} s) and read /proc/<pid>/status (VmRSS = anonymous + file-backed pages) and the CPU time so far (start-up, lists, settling).${
    operators.length > 1
      ? ` The operators (${operators.map((o) => `\`${o.label}\``).join(", ")}) take turns run by run on the same pods.`
      : ""
  } Slope = least-squares KiB of VmRSS per cached pod over all sizes (base = its intercept).`;
  const header = `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:memory")}\``;

  for (const operator of operators) {
    const own = points.get(operator.label) ?? [];
    const fit = slope(own);
    writeSection(
      `4-memory:${operator.label}`,
      `4. Memory with pods in the cache — operator \`${operator.label}\``,
      `${header}
Operator command: \`${operator.command}\` (plus \`--leader-elect=false --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`)

${method}

${table(
  ["pods in cache", "VmRSS MiB", "anonymous MiB", "file-backed MiB", "VmHWM (peak) MiB", "CPU s", "settle s"],
  own.map((p) => [
    String(p.size),
    fmt(spread(p.rss), 1),
    fmt(spread(p.anon), 1),
    fmt(spread(p.file), 1),
    fmt(spread(p.hwm), 1),
    fmt(spread(p.cpuS), 2),
    fmt(spread(p.settleS), 1),
  ]),
)}

Slope: ${fit.kibPerPod.toFixed(2)} KiB per cached pod (base ${fit.baseMiB.toFixed(1)} MiB); between sizes (KiB/pod): ${marginalSlopes(own)}.`,
    );
  }
  const [first, second] = operators;
  if (first && second) {
    const a = points.get(first.label) ?? [];
    const b = points.get(second.label) ?? [];
    const [fa, fb] = [slope(a), slope(b)];
    writeSection(
      `4-memory:${first.label}-vs-${second.label}`,
      `4. Memory, \`${first.label}\` against \`${second.label}\` (same run)`,
      `${header}

${table(
  [
    "pods in cache",
    `${first.label} VmRSS MiB`,
    `${second.label} VmRSS MiB`,
    `${first.label} / ${second.label}`,
  ],
  a.map((p, i) => {
    const q = b[i] as Point;
    const ratio = spread(p.rss).median / spread(q.rss).median;
    return [String(p.size), fmt(spread(p.rss), 1), fmt(spread(q.rss), 1), `${ratio.toFixed(2)}x`];
  }),
)}
| KiB per cached pod (slope) | ${fa.kibPerPod.toFixed(2)} | ${fb.kibPerPod.toFixed(2)} | ${(fa.kibPerPod / fb.kibPerPod).toFixed(2)}x |
| base (intercept) MiB | ${fa.baseMiB.toFixed(1)} | ${fb.baseMiB.toFixed(1)} | ${(fa.baseMiB / fb.baseMiB).toFixed(2)}x |`,
    );
  }
  printSummary({
    bench: "memory",
    runs,
    unrelated,
    hibernations,
    results: Object.fromEntries(
      operators.map((o) => {
        const own = points.get(o.label) ?? [];
        return [
          o.label,
          {
            slopeKiBPerPod: +slope(own).kibPerPod.toFixed(2),
            bySize: Object.fromEntries(
              own.map((p) => [
                p.size,
                {
                  rssMiBMedian: +spread(p.rss).median.toFixed(1),
                  hwmMiBMedian: +spread(p.hwm).median.toFixed(1),
                },
              ]),
            ),
          },
        ];
      }),
    ),
  });
}

runBenchmark(main);
