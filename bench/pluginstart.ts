// Benchmark 8: how fast `kubectl cocoon` starts, as the krew archive runs it (bin/kubectl-cocoon →
// lib/kubectl-cocoon.mjs, the esbuild bundle) against a checkout (bin/kubectl-cocoon → the
// TypeScript sources, type-stripped): wall time of a whole process for `--help` (no cluster) and
// `status SET` (a kubeconfig read, two API reads, no registry), each a fresh process.
//
//   npm run bench:pluginstart [-- --runs 15]

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { buildPluginRelease } from "../scripts/plugin.ts";
import { apiRequest, cocoonSet, createNamespace, startCluster } from "./lib/cluster.ts";
import { onTeardown, parseArgs, runBenchmark } from "./lib/lifecycle.ts";
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

const repoRoot = resolve(import.meta.dirname, "..");

async function main(): Promise<void> {
  const args = parseArgs();
  const runs = args.int("runs", 15);
  const dir = mkdtempSync(join(tmpdir(), "bench-pluginstart-"));
  onTeardown(() => rmSync(dir, { recursive: true, force: true }));
  progress("bundling the plugin");
  const release = await buildPluginRelease(join(dir, "out"), "v0.0.0-bench", "https://example.invalid");
  const unpacked = join(dir, "krew");
  spawnSync("mkdir", ["-p", unpacked]);
  spawnSync("tar", ["xzf", release.archive, "-C", unpacked]);

  progress("starting control plane and registry");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const ns = await createNamespace(info, "bench-plugin");
  await apiRequest(info, "POST", `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`, {
    ...cocoonSet(ns, "demo", {}),
  });
  // Node 24 first on PATH, nothing of the checkout: the launcher picks it.
  const env = {
    PATH: [dirname(process.execPath), "/usr/bin", "/bin"].join(delimiter),
    KUBECONFIG: info.kubeconfigPath,
  };
  const launchers = [
    ["bundle (krew archive)", join(unpacked, "bin/kubectl-cocoon")],
    ["sources (checkout)", join(repoRoot, "bin/kubectl-cocoon")],
  ] as const;
  const commands = [
    ["--help", ["--help"]],
    ["status", ["-n", ns, "status", "demo"]],
  ] as const;
  const rows: string[][] = [];
  const summary: Record<string, number> = {};
  for (const [command, argv] of commands) {
    for (const [label, launcher] of launchers) {
      const times: number[] = [];
      for (let r = 0; r <= runs; r++) {
        const started = performance.now();
        const run = spawnSync(launcher, argv, { env, encoding: "utf8" });
        const ms = performance.now() - started;
        if (run.status !== 0) throw new Error(`${label} ${command}: exit ${run.status}: ${run.stderr}`);
        if (r > 0) times.push(ms); // the first run warms the file cache
      }
      progress(`${command}, ${label}: ${fmt(spread(times), 0)} ms`);
      rows.push([`\`${command}\``, label, fmt(spread(times), 0)]);
      summary[`${command}:${label}`] = +spread(times).median.toFixed(0);
    }
  }
  writeSection(
    "8-pluginstart:ts",
    "8. kubectl cocoon start time: the bundle against the sources",
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:pluginstart")}\`

Wall time of one \`kubectl-cocoon\` process, launcher included (it asks \`node --version\` first), in
ms, median (min–max) of ${runs} runs after one warm-up. \`status\` reads a set of one main from the
test control plane on loopback, without a registry. Taken under load: other engineers' test suites
ran on the same 2 CPUs at the time, so the absolute figures are high and noisy; the two ways ran
in turns on the same machine.

${table(["command", "plugin", "ms"], rows)}`,
  );
  printSummary(summary);
}

runBenchmark(main);
