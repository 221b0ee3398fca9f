// Benchmark 11: the SDK as a user's program drives it. One control plane + registry, three simulated
// nodes, this operator as a separate process; the calls come from this process through the SDK
// (src/sdk, the code the package is compiled from).
//   - claim on a Running pool of --claims members: --singles claims one at a time (the pool refilled
//     between), then --claims at once; each from the call to its resolve (the claim Ready).
//   - branch: one checkpoint of a main-only set, then --branches sets from it in one call, from the
//     call to its resolve (every one Running).
//   - exec round trip: --execs `true` in a claimed group's main, one after another.
//   - import: the packed package's import time and the process's memory after it, in a fresh Node
//     (the system's Node 20 when it has one), --imports times.
//
//   npm run bench:sdk [-- --claims 50 --singles 10 --branches 8 --execs 100 --imports 10]

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeClient, kubeConfigFromFile } from "../src/controller/client.ts";
import { type AgentGroup, CocoonClient } from "../src/sdk/index.ts";
import { poolsPath } from "../test/support/poolapi.ts";
import {
  apiRequest,
  cocoonSet,
  createNamespace,
  createObject,
  IMAGE,
  isRunning,
  mapLimit,
  setsPath,
  sleep,
  startCluster,
  startPool,
  waitPoolFilled,
} from "./lib/cluster.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import { operatorCommand, startOperatorProcess } from "./lib/operator.ts";
import {
  commandLine,
  machine,
  machineLine,
  median,
  percentile,
  printSummary,
  progress,
  repoRoot,
  table,
  writeSection,
} from "./lib/report.ts";

const TIMINGS = { bootMs: 200, readyMs: 200, hibernateMs: 500, wakeMs: 300, deleteMs: 100 };

/** Import time (ms) and RSS after it (MiB) of the packed SDK in a fresh Node, `runs` times. */
function importCost(runs: number): { node: string; ms: number[]; rssMiB: number[] } {
  execFileSync("npm", ["run", "--silent", "sdk"], { cwd: repoRoot, stdio: "ignore" });
  const tarball = readdirSync(join(repoRoot, "dist/sdk")).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error("make sdk wrote no tarball into dist/sdk");
  const project = mkdtempSync(join(tmpdir(), "bench-sdk-"));
  try {
    execFileSync("npm", ["init", "-y"], { cwd: project, stdio: "ignore" });
    execFileSync("npm", ["install", "--no-audit", "--no-fund", join(repoRoot, "dist/sdk", tarball)], {
      cwd: project,
      stdio: "ignore",
    });
    const node = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;
    const script =
      "const t=performance.now();await import('@cocoonstack/sdk');" +
      "console.log(JSON.stringify({ms:performance.now()-t,rss:process.memoryUsage().rss}))";
    const ms: number[] = [];
    const rssMiB: number[] = [];
    for (let i = 0; i < runs; i++) {
      const out = execFileSync(node, ["--input-type=module", "-e", script], { cwd: project }).toString();
      const { ms: took, rss } = JSON.parse(out) as { ms: number; rss: number };
      ms.push(took);
      rssMiB.push(rss / 1024 / 1024);
    }
    const version = execFileSync(node, ["--version"]).toString().trim();
    return { node: `${node} ${version}`, ms, rssMiB };
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = parseArgs();
  const claims = args.int("claims", 50);
  const singles = args.int("singles", 10);
  const branches = args.int("branches", 8);
  const execs = args.int("execs", 100);
  const imports = args.int("imports", 10);
  const operator = operatorCommand(args);

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const nodes = await startPool(info, 3, { pods: 110, timings: TIMINGS });
  const proc = await startOperatorProcess({
    command: operator.command,
    kubeconfigPath: info.kubeconfigPath,
    registry: info.registry,
    logFile: `/tmp/bench-sdk-${process.pid}.log`,
  });
  await proc.waitReady();
  const ns = await createNamespace(info, "bench-sdk");
  const kube = new KubeClient(kubeConfigFromFile(info.kubeconfigPath));
  const client = CocoonClient.fromClient(kube, ns);

  const poolFilled = () => waitPoolFilled(info, ns, "warm", claims);
  progress(`a Running pool of ${claims}`);
  await createObject(info, poolsPath(ns), {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonPool",
    metadata: { name: "warm", namespace: ns },
    spec: {
      replicas: claims,
      template: { spec: { nodePool: nodes.pool, agent: { image: IMAGE, replicas: 0, mode: "clone" } } },
    },
  });
  await poolFilled();

  const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
    const started = performance.now();
    const value = await fn();
    return [value, performance.now() - started];
  };
  progress(`${singles} claims one at a time`);
  const single: number[] = [];
  const claimed: AgentGroup[] = [];
  for (let i = 0; i < singles; i++) {
    const [group, ms] = await timed(() => client.claim("warm", { name: `single-${i}` }));
    single.push(ms);
    claimed.push(group);
    await poolFilled();
    await sleep(500);
  }
  progress(`${claims} claims at once`);
  const burst = await mapLimit(
    Array.from({ length: claims }, (_, i) => i),
    claims,
    async (i) => (await timed(() => client.claim("warm", { name: `claim-${i}` })))[1],
  );

  progress(`${execs} execs in one group's main`);
  const [first] = claimed;
  if (!first) throw new Error("no group claimed");
  const execMs: number[] = [];
  for (let i = 0; i < execs; i++) execMs.push((await timed(() => first.exec("main", ["true"])))[1]);

  progress(`a checkpoint, then ${branches} branches in one call`);
  await createObject(info, setsPath(ns), cocoonSet(ns, "source", { nodePool: nodes.pool }));
  const source = await client.group("source");
  const deadline = Date.now() + 120_000;
  while (!isRunning(await getSet(ns, "source"), 1)) {
    if (Date.now() > deadline) throw new Error("source not Running");
    await sleep(250);
  }
  await source.checkpoint("base");
  const [forks, branchMs] = await timed(() => client.branch("base", { count: branches }));

  progress(`import of the packed SDK, ${imports} times`);
  const importing = importCost(imports);
  await Promise.all([...claimed, ...forks].map((g) => g.release().catch(() => undefined)));
  kube.close();
  await proc.stop();

  const p = (values: readonly number[], q: number) => percentile(values, q).toFixed(0);
  printSummary({
    bench: "sdk",
    claimSingleP50: percentile(single, 50),
    claimBurstP50: percentile(burst, 50),
    claimBurstP99: percentile(burst, 99),
    branchMs,
    execP50: percentile(execMs, 50),
    importMsMedian: median(importing.ms),
    rssMiBMedian: median(importing.rssMiB),
  });
  writeSection(
    `11-sdk:${operator.label}`,
    `11. The SDK: claim, branch, exec, import — operator \`${operator.label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:sdk")}\`

The calls come from the benchmark's process through the SDK (\`CocoonClient.fromClient\` over the
project's KubeClient); the operator runs as its own process. Three simulated nodes, timings
${JSON.stringify(TIMINGS)}. Every call's time runs from the call to its resolve; the SDK's waits are
watches, so no polling interval is in these figures.

${table(
  ["call", "n", "p50 (ms)", "p99 (ms)", "max (ms)", "target"],
  [
    [
      "claim on a Running pool, one at a time",
      String(single.length),
      p(single, 50),
      p(single, 99),
      p(single, 100),
      "p50 ≤ 35",
    ],
    [
      `claim on a Running pool, ${claims} at once`,
      String(burst.length),
      p(burst, 50),
      p(burst, 99),
      p(burst, 100),
      "p99 ≤ 1000",
    ],
    [`branch of ${branches} from one checkpoint, to all Running`, "1", branchMs.toFixed(0), "", "", "—"],
    [
      "exec round trip (`true` in the main)",
      String(execMs.length),
      p(execMs, 50),
      p(execMs, 99),
      p(execMs, 100),
      "—",
    ],
    [
      `import of the packed SDK (${importing.node})`,
      String(importing.ms.length),
      p(importing.ms, 50),
      p(importing.ms, 99),
      p(importing.ms, 100),
      "—",
    ],
  ],
)}

Resident memory of a fresh Node right after importing the SDK: ${median(importing.rssMiB).toFixed(1)} MiB (median of ${importing.rssMiB.length}).`,
  );

  async function getSet(namespace: string, name: string) {
    const res = await apiRequest(info, "GET", `${setsPath(namespace)}/${name}`);
    return res.body;
  }
}

runBenchmark(main);
