// Benchmark 6: warm pools. One control plane + registry, three simulated nodes with the suspend
// benchmark's vk-cocoon timings, this operator as a separate process. Three scenarios in one run, one
// namespace each, each torn down before the next:
//   - Running pool: a pool of --claims main-only members, Running; once all are ready, --singles claims
//     one after another (each alone, the pool refilled before the next), then --claims claims created
//     at once; claim → claim Ready per claim.
//   - Suspended pool: the same pool with warmth Suspended (members hibernated, seats released); claim →
//     claim Ready (the bind wakes the member).
//   - no pool: --claims CocoonSets of the same spec created at once, cold; create → Running.
// Times are from just before each create request to the first poll (every POLL_MS, one list of the
// namespace) that sees the claim Ready or the set Running. Memory per idle member: the operator's RSS
// with the Running pool filled and quiet, less its RSS before the pool existed, over the members.
//
//   npm run bench:pool [-- --claims 50 --operator-command "<cmd>" --label <name>]

import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CocoonSet } from "../src/apis/v1/types.ts";
import type { CocoonClaim, CocoonPoolSpec, PoolWarmth } from "../src/apis/v1alpha1/types.ts";
import { claimReady, claimsPath, poolsPath } from "../test/support/poolapi.ts";
import {
  apiRequest,
  cocoonSet,
  createNamespace,
  IMAGE,
  isRunning,
  mapLimit,
  setsPath,
  sleep,
  startCluster,
  startPool,
} from "./lib/cluster.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import { operatorCommand, startOperatorProcess } from "./lib/operator.ts";
import {
  commandLine,
  machine,
  machineLine,
  percentile,
  printSummary,
  progress,
  table,
  writeSection,
} from "./lib/report.ts";

const TIMINGS = { bootMs: 200, readyMs: 200, hibernateMs: 500, wakeMs: 300, deleteMs: 100 };
const POLL_MS = 50;
const QUIET_MS = 5_000;

interface Scenario {
  name: string;
  /** Latency of each claim (or cold set) of the burst, ms. */
  latencies: number[];
}

interface PoolScenario extends Scenario {
  /** Latency of each claim made alone, ms. */
  single: number[];
  memoryPerMemberKiB?: number;
}

async function main(): Promise<void> {
  const args = parseArgs();
  const claims = args.int("claims", 50);
  const singles = args.int("singles", 3);
  const operator = operatorCommand(args);

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const nodes = await startPool(info, 3, { pods: 110, timings: TIMINGS });
  const logFile = join(tmpdir(), `bench-pool-${process.pid}.log`);
  const proc = await startOperatorProcess({
    command: operator.command,
    kubeconfigPath: info.kubeconfigPath,
    registry: info.registry,
    logFile,
  });
  await proc.waitReady();

  const list = async <T>(path: string): Promise<T[]> => {
    const res = await apiRequest(info, "GET", path);
    if (res.status !== 200) throw new Error(`list ${path}: ${res.status}`);
    return res.body.items as T[];
  };
  const post = async (path: string, body: unknown): Promise<void> => {
    const res = await apiRequest(info, "POST", path, body);
    if (res.status !== 201) throw new Error(`create ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  /** Polls `path` until `done` holds for every name; the time each first held. */
  const firstSeen = async <T extends { metadata: { name?: string } }>(
    what: string,
    path: string,
    names: readonly string[],
    done: (obj: T) => boolean,
    timeoutMs = 300_000,
  ): Promise<Map<string, number>> => {
    const seen = new Map<string, number>();
    const deadline = Date.now() + timeoutMs;
    while (seen.size < names.length) {
      const now = Date.now();
      for (const obj of await list<T>(path)) {
        const name = obj.metadata.name ?? "";
        if (!seen.has(name) && names.includes(name) && done(obj)) seen.set(name, now);
      }
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}: ${seen.size}/${names.length}; see ${logFile}`);
      await sleep(POLL_MS);
    }
    return seen;
  };
  const waitPoolFilled = async (ns: string, name: string): Promise<void> => {
    const deadline = Date.now() + 300_000;
    for (;;) {
      const res = await apiRequest(info, "GET", `${poolsPath(ns)}/${name}`);
      const s = res.body?.status;
      if (
        s?.ready === claims &&
        s?.replicas === claims &&
        s.observedGeneration === res.body.metadata.generation
      )
        return;
      if (Date.now() > deadline)
        throw new Error(`pool ${name} not filled: ${JSON.stringify(s)}; see ${logFile}`);
      await sleep(250);
    }
  };
  const poolSpec = (warmth: PoolWarmth): CocoonPoolSpec => ({
    replicas: claims,
    warmth,
    template: { spec: { nodePool: nodes.pool, agent: { image: IMAGE, replicas: 0, mode: "clone" } } },
  });
  const claimNames = Array.from({ length: claims }, (_, i) => `claim-${i}`);

  /** Creates the claims at once; the time of each from its create to its Ready, ms. */
  const claimAtOnce = async (ns: string, names: readonly string[]): Promise<number[]> => {
    const sent = new Map<string, number>();
    await mapLimit(names, names.length, async (name) => {
      sent.set(name, Date.now());
      await post(claimsPath(ns), {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonClaim",
        metadata: { name, namespace: ns },
        spec: { poolRef: { name: "warm" } },
      });
    });
    const ready = await firstSeen<CocoonClaim>("claims Ready", claimsPath(ns), names, claimReady);
    return names.map((name) => (ready.get(name) ?? 0) - (sent.get(name) ?? 0));
  };

  /** Single claims, then the burst, each timed to Ready; then deletes the pool and claims. */
  const poolScenario = async (warmth: PoolWarmth): Promise<PoolScenario> => {
    const ns = await createNamespace(info, `bench-pool-${warmth.toLowerCase()}`);
    await sleep(QUIET_MS);
    const rssBefore = proc.proc()?.rssKiB ?? 0;
    progress(`${warmth} pool: filling ${claims} members`);
    await post(poolsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonPool",
      metadata: { name: "warm", namespace: ns },
      spec: poolSpec(warmth),
    });
    await waitPoolFilled(ns, "warm");
    await sleep(QUIET_MS);
    const rssFilled = proc.proc()?.rssKiB ?? 0;
    progress(
      `${warmth} pool: ${claims} claims at once (RSS ${rssBefore} → ${rssFilled} KiB with the pool filled)`,
    );
    const single: number[] = [];
    for (let i = 0; i < singles; i++) {
      single.push(...(await claimAtOnce(ns, [`single-${i}`])));
      await waitPoolFilled(ns, "warm");
      await sleep(1_000);
    }
    const latencies = await claimAtOnce(ns, claimNames);
    await apiRequest(info, "DELETE", `${poolsPath(ns)}/warm`);
    const singleNames = Array.from({ length: singles }, (_, i) => `single-${i}`);
    await mapLimit([...claimNames, ...singleNames], 16, (name) =>
      apiRequest(info, "DELETE", `${claimsPath(ns)}/${name}`),
    );
    await waitEmpty(ns);
    return {
      name: `${warmth} pool`,
      latencies,
      single,
      ...(warmth === "Running" ? { memoryPerMemberKiB: (rssFilled - rssBefore) / claims } : {}),
    };
  };
  const waitEmpty = async (ns: string): Promise<void> => {
    const deadline = Date.now() + 300_000;
    while ((await list<CocoonSet>(setsPath(ns))).length > 0) {
      if (Date.now() > deadline) throw new Error(`sets of ${ns} not gone; see ${logFile}`);
      await sleep(500);
    }
  };
  const coldScenario = async (): Promise<Scenario> => {
    const ns = await createNamespace(info, "bench-pool-cold");
    progress(`no pool: ${claims} sets created cold at once`);
    const sent = new Map<string, number>();
    await mapLimit(claimNames, claims, async (name) => {
      sent.set(name, Date.now());
      await post(setsPath(ns), cocoonSet(ns, name, { nodePool: nodes.pool }));
    });
    const running = await firstSeen<CocoonSet>("sets Running", setsPath(ns), claimNames, (cs) =>
      isRunning(cs, 1),
    );
    await mapLimit(claimNames, 16, (name) => apiRequest(info, "DELETE", `${setsPath(ns)}/${name}`));
    await waitEmpty(ns);
    return {
      name: "no pool (cold set)",
      latencies: claimNames.map((name) => (running.get(name) ?? 0) - (sent.get(name) ?? 0)),
    };
  };

  const running = await poolScenario("Running");
  const suspended = await poolScenario("Suspended");
  const cold = await coldScenario();
  await proc.stop();

  const scenarios = [running, suspended, cold];
  const p = (s: Scenario, q: number) => percentile(s.latencies, q).toFixed(0);
  writeSection(
    `9-pool:${operator.label}`,
    `9. Warm pools: claim → Ready — operator \`${operator.label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:pool")}\`
Operator command: \`${operator.command}\` (plus \`--leader-elect=false --metrics-bind-address=127.0.0.1:<port> --health-probe-bind-address=127.0.0.1:<port>\`)

Against a filled pool of ${claims} main-only members, Running or Suspended (hibernated, seats released):
first ${singles} claims one at a time (each alone, the pool refilled before the next), then ${claims} claims
created at once (one request each, all in flight together); for comparison, ${claims} CocoonSets of the
same spec created cold at once. Three simulated nodes, simulator timings ${JSON.stringify(TIMINGS)}. Latency =
from just before the create request to the first list (every ${POLL_MS} ms) that shows the claim's Ready
condition True, or the cold set Running; so it includes up to ${POLL_MS} ms of polling.

${table(
  ["scenario", "p50 (ms)", "p99 (ms)", "max (ms)"],
  [
    ...[running, suspended].map((s) => [
      `${s.name}, one claim alone (${singles} claims)`,
      percentile(s.single, 50).toFixed(0),
      "",
      percentile(s.single, 100).toFixed(0),
    ]),
    ...scenarios.map((s) => [`${s.name}, ${claims} at once`, p(s, 50), p(s, 99), p(s, 100)]),
  ],
)}

Operator memory per idle Running member: ${running.memoryPerMemberKiB?.toFixed(1)} KiB (resident set with the pool filled and quiet
for ${QUIET_MS / 1000} s, less before the pool existed, over ${claims} members; each member is a CocoonSet and its pod in the caches).`,
  );
  printSummary({
    bench: "pool",
    claims,
    results: Object.fromEntries(
      scenarios.map((s) => [s.name, { p50: Number(p(s, 50)), p99: Number(p(s, 99)) }]),
    ),
    memoryPerIdleMemberKiB: running.memoryPerMemberKiB,
  });
}

runBenchmark(main);
