// Benchmark 6: warm pools. One control plane + registry, three simulated nodes with the suspend
// benchmark's vk-cocoon timings, this operator as a separate process. Three scenarios in one run, one
// namespace each, each torn down before the next:
//   - Running pool: a pool of --claims main-only members, Running; once all are ready, --singles claims
//     one after another (each alone, the pool refilled before the next), then --claims claims created
//     at once; claim → claim Ready per claim.
//   - Suspended pool: the same pool with warmth Suspended (members hibernated, seats released); claim →
//     claim Ready (the bind wakes the member).
//   - no pool: --claims CocoonSets of the same spec created at once, cold; create → Running; then the
//     same sets suspended with their seats released and woken at once, the wake a Suspended pool's
//     claim costs without the pool; spec.suspend=false → Running.
// Times are from just before each create request to the first poll (every POLL_MS, one list of the
// namespace) that sees the claim Ready or the set Running. Memory per idle member: the operator's RSS
// with the Running pool filled and quiet, less its RSS before the pool existed, over the members.
//
// --timeline <file> (a diagnostic) appends, for the Suspended pool's burst, where each claim's time
// went: milestones over the claims (ms from the claim's create) from the operator's requests as a
// counting proxy saw them and the simulator's journal, then the requests of the burst by kind.
//
//   npm run bench:pool [-- --claims 50 --operator-command "<cmd>" --label <name> --timeline <file>]

import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CocoonSet } from "../src/apis/v1/types.ts";
import type { CocoonClaim, CocoonPoolSpec, PoolWarmth } from "../src/apis/v1alpha1/types.ts";
import { COCOONSET_CONTROLLER } from "../src/cocoonset/setup.ts";
import { CLAIM_CONTROLLER, POOL_CONTROLLER } from "../src/pool/setup.ts";
import type { VmEvent } from "../test/env/simulator/record.ts";
import { claimReady, claimsPath, poolsPath } from "../test/support/poolapi.ts";
import { patchSetSpec } from "../test/support/setapi.ts";
import {
  apiRequest,
  cocoonSet,
  createNamespace,
  createObject,
  firstSeen as firstSeenOf,
  IMAGE,
  isRunning,
  listItems,
  mapLimit,
  setsPath,
  sleep,
  startCluster,
  startPool,
  waitNoSets,
  waitPoolFilled as waitPoolFilledOf,
} from "./lib/cluster.ts";
import { type Exchange, resourceSegments, startCountingProxy } from "./lib/countingproxy.ts";
import { parseArgs, runBenchmark } from "./lib/lifecycle.ts";
import {
  diffQueueTotals,
  operatorCommand,
  parseQueueTotals,
  type QueueTotals,
  readProc,
  startOperatorProcess,
} from "./lib/operator.ts";
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

/** The controllers whose queues the timeline reports. */
const QUEUED_CONTROLLERS = [COCOONSET_CONTROLLER, CLAIM_CONTROLLER, POOL_CONTROLLER];
const emptyQueue = parseQueueTotals("", "");
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
  const timelineFile = args.string("timeline", "");

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const nodes = await startPool(info, 3, { pods: 110, timings: TIMINGS });
  const logFile = join(tmpdir(), `bench-pool-${process.pid}.log`);
  const exchanges: Exchange[] = [];
  let recording = false;
  const proxy = timelineFile
    ? await startCountingProxy(info, `${logFile}.kubeconfig`, (e) => {
        if (recording) exchanges.push(e);
      })
    : undefined;
  const proc = await startOperatorProcess({
    command: operator.command,
    kubeconfigPath: proxy?.kubeconfigPath ?? info.kubeconfigPath,
    registry: info.registry,
    logFile,
  });
  await proc.waitReady();

  const list = <T>(path: string): Promise<T[]> => listItems<T>(info, path);

  const post = (path: string, body: unknown): Promise<void> => createObject(info, path, body);

  const firstSeen = <T extends { metadata: { name?: string } }>(
    what: string,
    path: string,
    names: readonly string[],
    done: (obj: T) => boolean,
    timeoutMs = 300_000,
  ): Promise<Map<string, number>> =>
    firstSeenOf<T>(info, what, path, names, done, { pollMs: POLL_MS, timeoutMs, hint: `see ${logFile}` });
  const waitPoolFilled = (ns: string, name: string): Promise<void> =>
    waitPoolFilledOf(info, ns, name, claims, `see ${logFile}`);
  const poolSpec = (warmth: PoolWarmth): CocoonPoolSpec => ({
    replicas: claims,
    warmth,
    template: { spec: { nodePool: nodes.pool, agent: { image: IMAGE, replicas: 0, mode: "clone" } } },
  });
  /** apiserver_request_total by verb and resource, every client's requests. */
  const apiserverRequests = async (): Promise<Record<string, number>> => {
    const res = await apiRequest(info, "GET", "/metrics");
    const out: Record<string, number> = {};
    for (const line of String(res.body).split("\n")) {
      if (!line.startsWith("apiserver_request_total{")) continue;
      const label = (key: string) => new RegExp(`[{,]${key}="([^"]*)"`).exec(line)?.[1] ?? "";
      const key = `${label("verb")} ${label("resource")}${label("subresource") ? `/${label("subresource")}` : ""}`;
      out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return out;
  };
  const queueTotals = () => Promise.all(QUEUED_CONTROLLERS.map((name) => proc.queue(name)));
  const claimNames = Array.from({ length: claims }, (_, i) => `claim-${i}`);

  /** Creates the claims at once; the time of each from its create to its Ready, ms. */
  const claimAtOnce = async (
    ns: string,
    names: readonly string[],
  ): Promise<{ latencies: number[]; sent: Map<string, number>; ready: Map<string, number> }> => {
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
    return { latencies: names.map((name) => (ready.get(name) ?? 0) - (sent.get(name) ?? 0)), sent, ready };
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
      single.push(...(await claimAtOnce(ns, [`single-${i}`])).latencies);
      await waitPoolFilled(ns, "warm");
      await sleep(1_000);
    }
    const burstFrom = Date.now();
    recording = warmth === "Suspended" && timelineFile !== "";
    const queuesBefore = recording ? await queueTotals() : undefined;
    const cpuBefore = recording ? cpuByProcess(proc.pid) : undefined;
    const apiBefore = recording ? await apiserverRequests() : undefined;
    const { latencies, sent, ready } = await claimAtOnce(ns, claimNames);
    recording = false;
    const queuesAfter = queuesBefore ? await queueTotals() : undefined;
    const cpuAfter = cpuBefore ? cpuByProcess(proc.pid) : undefined;
    const apiAfter = apiBefore ? await apiserverRequests() : undefined;
    if (warmth === "Suspended" && timelineFile) {
      const bound = new Map<string, string>();
      for (const claim of await list<CocoonClaim>(claimsPath(ns)))
        bound.set(claim.metadata.name ?? "", claim.status?.cocoonSetRef?.name ?? "");
      const vmEvents = nodes.sim.record.events().filter((e) => e.namespace === ns && e.time >= burstFrom);
      appendFileSync(
        timelineFile,
        burstTimeline(`${operator.label}, Suspended pool, ${claims} claims at once`, {
          sent,
          ready,
          bound,
          exchanges: exchanges.splice(0),
          vmEvents,
          cpuSeconds: Object.fromEntries(
            Object.entries(cpuAfter ?? {}).map(([name, after]) => [name, after - (cpuBefore?.[name] ?? 0)]),
          ),
          wallSeconds: (Date.now() - burstFrom) / 1000,
          apiserver: Object.fromEntries(
            Object.entries(apiAfter ?? {}).map(([key, after]) => [key, after - (apiBefore?.[key] ?? 0)]),
          ),
          queues: (queuesAfter ?? []).map((after, i) =>
            diffQueueTotals(after, queuesBefore?.[i] ?? emptyQueue),
          ),
        }),
      );
    }
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
  const waitEmpty = (ns: string): Promise<void> => waitNoSets(info, ns, `see ${logFile}`);

  /** The cold sets, then the same sets suspended with their seats released and woken at once. */
  const coldScenarios = async (): Promise<[Scenario, Scenario]> => {
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
    progress(`no pool: the ${claims} sets suspended (seats released), then woken at once`);
    await mapLimit(claimNames, 16, (name) =>
      patchSetSpec(info, ns, name, { hibernatePolicy: "release", suspend: true }),
    );
    await firstSeen<CocoonSet>(
      "sets Suspended",
      setsPath(ns),
      claimNames,
      (cs) => cs.status?.phase === "Suspended" && cs.status.observedGeneration === cs.metadata.generation,
    );
    await sleep(QUIET_MS);
    const wokenAt = new Map<string, number>();
    await mapLimit(claimNames, claims, async (name) => {
      wokenAt.set(name, Date.now());
      await patchSetSpec(info, ns, name, { suspend: false });
    });
    const woken = await firstSeen<CocoonSet>("sets Running again", setsPath(ns), claimNames, (cs) =>
      isRunning(cs, 1),
    );
    await mapLimit(claimNames, 16, (name) => apiRequest(info, "DELETE", `${setsPath(ns)}/${name}`));
    await waitEmpty(ns);
    return [
      {
        name: "no pool (cold set)",
        latencies: claimNames.map((name) => (running.get(name) ?? 0) - (sent.get(name) ?? 0)),
      },
      {
        name: "no pool (suspended set woken)",
        latencies: claimNames.map((name) => (woken.get(name) ?? 0) - (wokenAt.get(name) ?? 0)),
      },
    ];
  };

  const running = await poolScenario("Running");
  const suspended = await poolScenario("Suspended");
  const [cold, wake] = await coldScenarios();
  await proc.stop();

  const scenarios = [running, suspended, cold, wake];
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
same spec created cold at once, and then the same sets suspended with their seats released
(\`hibernatePolicy: release\`, as a Suspended pool keeps its members) and woken at once. Three simulated
nodes, simulator timings ${JSON.stringify(TIMINGS)}. Latency = from just before the create request (for a
wake, the \`spec.suspend: false\` patch) to the first list (every ${POLL_MS} ms) that shows the claim's Ready
condition True, or the set Running; so it includes up to ${POLL_MS} ms of polling.

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

interface BurstRecord {
  /** Per claim: when its create was sent and when a poll first saw it Ready (epoch ms). */
  sent: Map<string, number>;
  ready: Map<string, number>;
  /** Claim → the set bound to it. */
  bound: Map<string, string>;
  /** The operator's requests during the burst, as the counting proxy answered them. */
  exchanges: Exchange[];
  vmEvents: VmEvent[];
  /** QUEUED_CONTROLLERS' queues over the burst. */
  queues: QueueTotals[];
  /** CPU seconds each process took over the burst, and the burst's wall time. */
  cpuSeconds: Record<string, number>;
  wallSeconds: number;
  /** Every client's requests to the API server over the burst, by verb and resource. */
  apiserver: Record<string, number>;
}

/**
 * CPU seconds so far of every process on the machine, by command name; this benchmark's own process
 * (the simulator and the polls) and the operator's apart from other node processes.
 */
function cpuByProcess(operatorPid: number | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/comm`, "utf8").trim();
    } catch {
      continue;
    }
    const cpu = readProc(pid)?.cpuSeconds ?? 0;
    const name = pid === process.pid ? "benchmark + simulator" : pid === operatorPid ? "operator" : comm;
    out[name] = (out[name] ?? 0) + cpu;
  }
  return out;
}

/** What one operator request touched: a claim, a set, a set's pod, or something else. */
function touched(e: Exchange): { kind: string; name: string; what: string } {
  const verb = { POST: "create", PUT: "update", PATCH: "patch", DELETE: "delete" }[e.method] ?? "get";
  const [resource = "", name, sub] = resourceSegments(e.path.split("?")[0] ?? "");
  const podName = resource === "pods" && !name ? (/"name":"([^"]+)"/.exec(e.body)?.[1] ?? "") : (name ?? "");
  const phase = /"phase":"([A-Za-z]+)"/.exec(e.body)?.[1];
  const what = `${verb} ${resource}${name ? "" : "*"}${sub ? `/${sub}` : ""}${phase ? ` ${phase}` : ""}`;
  return { kind: resource, name: podName, what };
}

/**
 * The burst as the operator and the simulator lived it: per milestone, p50 / p90 / max over the claims
 * (ms from each claim's create), then the burst's requests by kind, the bound sets' apart from the rest.
 */
function burstTimeline(title: string, r: BurstRecord): string {
  const setOfPod = (pod: string): string | undefined => {
    const cut = pod.lastIndexOf("-");
    return cut > 0 ? pod.slice(0, cut) : undefined;
  };
  const claimOfSet = new Map([...r.bound].map(([claim, set]) => [set, claim]));
  const perClaim = new Map<string, { at: number; what: string; body?: string }[]>();
  const byKind = new Map<string, number>();
  for (const e of r.exchanges) {
    const t = touched(e);
    const claim =
      t.kind === "cocoonclaims"
        ? t.name
        : t.kind === "cocoonsets"
          ? claimOfSet.get(t.name)
          : t.kind === "pods"
            ? claimOfSet.get(setOfPod(t.name) ?? "")
            : undefined;
    const group = claim ? "bound" : t.kind === "cocoonsets" || t.kind === "pods" ? "other members" : "rest";
    const key = `${group}: ${t.what}`;
    byKind.set(key, (byKind.get(key) ?? 0) + 1);
    if (!claim) continue;
    const list = perClaim.get(claim) ?? [];
    list.push({
      at: e.end,
      what: `${t.kind === "pods" ? "pod " : ""}${t.what}`,
      body: e.method === "PATCH" ? e.body.slice(0, 600) : "",
    });
    perClaim.set(claim, list);
  }
  for (const ev of r.vmEvents) {
    const claim = claimOfSet.get(setOfPod(ev.podName) ?? "");
    if (!claim) continue;
    const list = perClaim.get(claim) ?? [];
    list.push({ at: ev.time, what: `vm ${ev.kind}` });
    perClaim.set(claim, list);
  }
  const milestones: [string, (events: { at: number; what: string }[]) => number | undefined][] = [
    ["claim status (first)", (ev) => ev.find((e) => e.what.startsWith("patch cocoonclaims/status"))?.at],
    ["set bound (first set write)", (ev) => ev.find((e) => /^(patch|update) cocoonsets$/.test(e.what))?.at],
    ["set status Waking", (ev) => ev.find((e) => e.what.includes("cocoonsets/status Waking"))?.at],
    ["main pod created", (ev) => ev.find((e) => e.what.startsWith("pod create"))?.at],
    ["vm woken (simulator)", (ev) => ev.find((e) => e.what === "vm wake" || e.what === "vm restore")?.at],
    ["pod read from the server", (ev) => ev.find((e) => e.what === "pod get pods")?.at],
    ["set status Running", (ev) => ev.find((e) => e.what.includes("cocoonsets/status Running"))?.at],
    [
      "claim status (last)",
      (ev) => ev.filter((e) => e.what.startsWith("patch cocoonclaims/status")).at(-1)?.at,
    ],
  ];
  const claims = [...r.sent.keys()];
  const rows = milestones.map(([name, pick]) => {
    const values = claims.flatMap((claim) => {
      const at = pick(perClaim.get(claim) ?? []);
      return at === undefined ? [] : [at - (r.sent.get(claim) ?? 0)];
    });
    return [name, String(values.length), ...[50, 90, 100].map((q) => percentile(values, q).toFixed(0))];
  });
  const readyValues = claims.map((claim) => (r.ready.get(claim) ?? 0) - (r.sent.get(claim) ?? 0));
  rows.push([
    "claim seen Ready (poll)",
    String(readyValues.length),
    ...[50, 90, 100].map((q) => percentile(readyValues, q).toFixed(0)),
  ]);
  const median = claims
    .map((claim) => ({ claim, ms: (r.ready.get(claim) ?? 0) - (r.sent.get(claim) ?? 0) }))
    .sort((a, b) => a.ms - b.ms)[Math.floor(claims.length / 2)];
  const medianEvents = (perClaim.get(median?.claim ?? "") ?? [])
    .sort((a, b) => a.at - b.at)
    .map(
      (e) =>
        `  ${String(e.at - (r.sent.get(median?.claim ?? "") ?? 0)).padStart(6)} ms  ${e.what}${e.body ? `  ${e.body}` : ""}`,
    );
  const kinds = [...byKind]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([k, n]) => `  ${String(n).padStart(5)}  ${k}`);
  const queueRows = r.queues.map((q, i) => [
    QUEUED_CONTROLLERS[i] ?? "",
    String(q.adds),
    String(q.works),
    (q.waits ? (q.waitSeconds / q.waits) * 1000 : 0).toFixed(0),
    (q.works ? (q.workSeconds / q.works) * 1000 : 0).toFixed(0),
    JSON.stringify(q.reconcilesByResult),
  ]);
  const queues = table(
    ["controller", "adds", "reconciles", "mean wait (ms)", "mean reconcile (ms)", "by result"],
    queueRows,
  );
  const cpu = Object.entries(r.cpuSeconds)
    .filter(([, seconds]) => seconds >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, seconds]) => `${name} ${seconds.toFixed(2)} s`)
    .join(", ");
  const apiTotal = Object.values(r.apiserver).reduce((a, b) => a + b, 0);
  const api = Object.entries(r.apiserver)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([key, n]) => `${key} ${n}`)
    .join(", ");
  return `\n## ${title}\n\nAPI server requests over the burst, every client (${apiTotal}): ${api}\n\nCPU over the burst (${r.wallSeconds.toFixed(1)} s wall, 2 cores): ${cpu}\n\n${queues}\n\n${table(["milestone", "claims", "p50 (ms)", "p90 (ms)", "max (ms)"], rows)}\n\nThe median claim (${median?.claim}, ${median?.ms} ms):\n${medianEvents.join("\n")}\n\nThe operator's ${r.exchanges.length} requests during the burst:\n${kinds.join("\n")}\n`;
}

runBenchmark(main);
