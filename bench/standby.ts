// Benchmark 7: a standby replica with leader election on. Two operator processes share one lease
// with N pods in the cluster: the leader reconciles, the standby keeps its informers synced (as
// controller-runtime's replicas do) so it can take over without listing. Measured per run: both
// resident sets once settled, then the leader is SIGKILLed and the clock runs until the standby's
// /metrics shows its first reconcile (controller_runtime_reconcile_total > 0). The lease is 15 s,
// renewed every 2 s, so take-over is bounded below by the lease expiry after the last renewal.
//
//   npm run bench:standby [-- --pods 10000 --runs 3 --operator-command "<cmd>" --label <name>]

import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pod } from "../src/apis/core.ts";
import {
  cocoonSet,
  createNamespace,
  createPods,
  createSets,
  IMAGE,
  sleep,
  startCluster,
} from "./lib/cluster.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import { type OperatorProcess, operatorCommand, startOperatorProcess } from "./lib/operator.ts";
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

const SETTLE_MS = 10_000;

function pod(ns: string, i: number): Pod {
  const set = `standby-${Math.floor(i / 10)}`;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `${set}-${i % 10}`,
      namespace: ns,
      labels: { "cocoonset.cocoonstack.io/name": set },
      annotations: {
        "vm.cocoonstack.io/name": `vk-${ns}-${set}-${i % 10}`,
        "vm.cocoonstack.io/image": IMAGE,
      },
    },
    spec: { schedulerName: "none", containers: [{ name: "agent", image: IMAGE }] },
  } as Pod;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function main(): Promise<void> {
  const args = parseArgs();
  const pods = args.int("pods", 10_000);
  const runs = args.int("runs", 3);
  const { command, label } = operatorCommand(args);

  progress("starting control plane and registry");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const ns = await createNamespace(info, "bench-standby");
  progress(`creating ${pods} pods`);
  await createPods(info, ns, 0, pods, (i) => pod(ns, i));
  // One set, so a new leader has something to reconcile the moment its controllers start.
  await createSets(info, [
    cocoonSet(ns, "standby-probe", { agent: { image: IMAGE, replicas: 0, mode: "clone" } }),
  ]);

  const leaderRss: number[] = [];
  const standbyRss: number[] = [];
  const takeoverS: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = (name: string) =>
      startOperatorProcess({
        command,
        kubeconfigPath: info.kubeconfigPath,
        registry: info.registry,
        logFile: join(tmpdir(), `bench-standby-${label}-${name}-${process.pid}.log`),
        leaderElect: true,
        env: { POD_NAMESPACE: ns },
      });
    const first = await start("a");
    await until("a leader", 60_000, async () => (await first.reconciles()) > 0);
    const second = await start("b");
    let standby: OperatorProcess | undefined;
    try {
      await second.waitReady(120_000);
      await sleep(SETTLE_MS);
      if ((await second.reconciles()) > 0)
        throw new Error("the second replica reconciled while the first led");
      leaderRss.push((first.proc()?.rssKiB ?? 0) / 1024);
      standbyRss.push((second.proc()?.rssKiB ?? 0) / 1024);
      standby = second;
      const killedAt = performance.now();
      first.kill();
      await until("the standby's first reconcile", 60_000, async () => (await second.reconciles()) > 0);
      takeoverS.push((performance.now() - killedAt) / 1000);
      progress(
        `run ${r + 1}: leader ${leaderRss.at(-1)?.toFixed(1)} MiB, standby ${standbyRss.at(-1)?.toFixed(1)} MiB, ` +
          `take-over ${takeoverS.at(-1)?.toFixed(2)} s`,
      );
    } finally {
      await first.stop();
      await (standby ?? second).stop();
    }
    // The next pair must not find a live lease of this one's: a released lease is taken at once.
    await sleep(1_000);
  }

  writeSection(
    `7-standby:${label}`,
    `7. Standby replica: memory and take-over — operator \`${label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:standby")}\`
Operator command: \`${command}\` (plus \`--leader-elect=true --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`, \`POD_NAMESPACE\` for the lease)

${pods} pods in the cluster (all cached by both replicas) and one CocoonSet. Per run: replica A starts and
leads (its first reconcile), replica B starts, is ready and settles ${SETTLE_MS / 1000} s without reconciling; both
resident sets are read; A is SIGKILLed; take-over = until B's /metrics shows its first reconcile. The
lease (15 s, renewed every 2 s, retried every 2 s) bounds take-over below by ≈ 13–15 s after a kill. ${runs} runs.

${table(
  ["metric", "median (min–max)"],
  [
    ["leader VmRSS MiB", fmt(spread(leaderRss), 1)],
    ["standby VmRSS MiB", fmt(spread(standbyRss), 1)],
    ["take-over: kill → first reconcile by the new leader (s)", fmt(spread(takeoverS), 2)],
  ],
)}`,
  );
  printSummary({
    bench: "standby",
    operator: label,
    pods,
    runs,
    results: {
      leaderRssMiB: +spread(leaderRss).median.toFixed(1),
      standbyRssMiB: +spread(standbyRss).median.toFixed(1),
      takeoverS: +spread(takeoverS).median.toFixed(2),
    },
  });
}

runBenchmark(main);
