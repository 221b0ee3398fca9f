// Benchmark 4: operator memory with 1k, 5k and 10k pods in its cache. One control plane; pods
// labelled cocoonset.cocoonstack.io/name=<set> (so every operator caches them) with schedulerName
// "none" (so nothing schedules or runs them) are added up to each size; at each size, each run starts
// a fresh operator process, waits for /readyz, lets it settle (at least 5 s, then until VmRSS moves
// less than 2% in 2 s, at most 30 s) and reads VmRSS and VmHWM from /proc/<pid>/status.
//
// --unrelated N adds N standalone pods (no CocoonSet label, as cocoon-webhook leaves a pod vk-cocoon runs
// outside any set) before the first size, and --hibernations K a CocoonHibernation naming each of the
// first K of them: the operator must not cache the unrelated pods, only the K that CRs name.
//
//   npm run bench:memory [-- --sizes 1000,5000,10000 --runs 5 --unrelated 0 --hibernations 0
//                            --operator-command "<cmd>" --label <name>]

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

async function main(): Promise<void> {
  const args = parseArgs();
  const sizes = args.list("sizes", [1000, 5000, 10000]).sort((a, b) => a - b);
  const runs = args.int("runs", 5);
  // 0 is the default; args.int accepts positive counts only.
  const count = (name: string) => (args.string(name, "0") === "0" ? 0 : args.int(name, 0));
  const unrelated = count("unrelated");
  const hibernations = Math.min(count("hibernations"), unrelated);
  const { command, label } = operatorCommand(args);

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
each start a fresh operator process${unrelated > 0 ? ` (${unrelated} unrelated standalone pods in the cluster as well, ${hibernations} of them named by a CocoonHibernation)` : ""}, wait for /readyz, settle (≥ ${MIN_SETTLE_MS / 1000} s, then until VmRSS
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
    unrelated,
    hibernations,
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
