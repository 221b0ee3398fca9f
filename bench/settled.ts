// Benchmark 1: the settled pass, on the real environment. The operator runs in-process (createOperator:
// real KubeClient, informers and controllers; a real registry client whose every HTTP exchange is
// counted), N sets (main + 2 sub-agents + 1 toolbox each) come up and settle with the simulator, the
// last --suspended of them are then suspended (retain) and settle in Phase=Suspended, then
// each run reconciles every set once through the CocoonSet reconciler over the operator's own cached
// view, counting API requests by verb (KubeClient.onRequest), registry HTTP requests and
// CocoonHibernation lists of the view; then every pod once through the guest hooks reconciler (every
// other set names a guest policy), counting execs. Target: 0 writes, 0 registry calls, 0
// CocoonHibernation lists, 0 execs.
//
//   npm run bench:settled [-- --sets 20 --suspended 2 --runs 5]

import "./lib/quiet.ts";
import type { CocoonSet } from "../src/apis/v1/types.ts";
import { kubeConfigFromFile } from "../src/controller/client.ts";
import { ANN_GUEST_POLICY, CONDITION_GUEST_HOOKS } from "../src/guest/keys.ts";
import { createOperator } from "../src/operator.ts";
import { EVERY_POINT_POLICY, putGuestPolicy } from "../test/support/guestapi.ts";
import {
  guestReconcilerOf,
  SettledPassProbe,
  type SettledRun,
  suspendSets,
  WRITE_VERBS,
} from "../test/support/settledpass.ts";
import {
  cocoonSet,
  createNamespace,
  createSets,
  IMAGE,
  isRunning,
  pollSets,
  startCluster,
  startPool,
} from "./lib/cluster.ts";
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

const QUIET_MS = 3_000;

async function main(): Promise<void> {
  const args = parseArgs();
  const setCount = args.int("sets", 20);
  const suspendedCount = Math.min(args.int("suspended", 2), setCount);
  const runs = args.int("runs", 5);

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const pool = await startPool(info, 2, { pods: 110 });
  const ns = await createNamespace(info, "bench-settled");

  const probe = new SettledPassProbe(info.registry);
  const operator = createOperator({
    kubeConfig: kubeConfigFromFile(info.kubeconfigPath),
    registryBase: info.registry,
    registry: probe.registry,
    metricsAddr: "0",
    probeAddr: "0",
    leaderElect: false,
    leaderElectionNamespace: "",
    cocoonSetConcurrency: 4,
    hibernationConcurrency: 4,
    watchNamespace: ns,
  });
  onTeardown(() => operator.stop(5_000));
  await operator.start();
  const { cocoonSets, pods, hibernations } = operator.informers;
  await Promise.all([cocoonSets.waitForSync(), pods.waitForSync(), hibernations.waitForSync()]);
  probe.attach(operator);

  // Every other set names a guest policy: its VMs were refreshed and hooked on the way up (and the
  // suspended ones quiesced), and a settled pass over it, or over its pods, must cost no exec.
  await putGuestPolicy(info, ns, "settled", EVERY_POINT_POLICY);
  progress(
    `creating ${setCount} sets (main + 2 sub-agents + 1 toolbox; every other one with a guest policy) in ${ns}`,
  );
  const t0 = performance.now();
  const names = Array.from({ length: setCount }, (_, i) => `settled-${i}`);
  const hooked = (i: number) => i % 2 === 1;
  await createSets(
    info,
    names.map((name, i) => {
      const cs = cocoonSet(ns, name, {
        nodePool: pool.pool,
        agent: { image: IMAGE, replicas: 2, mode: "clone" },
        toolboxes: [{ name: "tb", image: IMAGE, mode: "run" }],
      });
      if (hooked(i)) cs.metadata.annotations = { [ANN_GUEST_POLICY]: "settled" };
      return cs;
    }),
  );
  const hooksDone = (cs: CocoonSet) =>
    cs.metadata.annotations?.[ANN_GUEST_POLICY] === undefined ||
    cs.status?.conditions?.some((c) => c.type === CONDITION_GUEST_HOOKS && c.status === "True") === true;
  await pollSets(
    info,
    ns,
    (sets) => sets.length === setCount && sets.every((cs) => isRunning(cs, 3, 1) && hooksDone(cs)),
    { what: "every set Running, its hooks done" },
  );
  progress(`all Running after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  await suspendSets(info, ns, names.slice(setCount - suspendedCount));
  progress(`${suspendedCount} of them Suspended; waiting for quiet`);
  await probe.waitForQuiet(QUIET_MS);

  const podNames = names.flatMap((name) => [`${name}-0`, `${name}-1`, `${name}-2`, `${name}-tb`]);
  const executions = { count: 0 };
  const results: SettledRun[] = [];
  const guestRuns: SettledRun[] = [];
  for (let r = 0; r < runs; r++) {
    const run = await probe.run(ns, names);
    results.push(run);
    const guestRun = await probe.run(ns, podNames, (op, events) => guestReconcilerOf(op, events, executions));
    guestRuns.push(guestRun);
    progress(
      `run ${r + 1}: ${JSON.stringify(run.requests)} writes ${run.writes}, registry ${run.registry}, ` +
        `CH lists ${run.chLists}, events ${run.events}, results ${run.results.join(" ")}`,
    );
  }

  const passAll = results.flatMap((r) => r.passMs);
  const reads = (r: SettledRun) =>
    Object.entries(r.requests)
      .filter(([k]) => !WRITE_VERBS.has(k.split(" ")[0] ?? ""))
      .reduce((s, [, v]) => s + v, 0);
  const writes = spread(results.map((r) => r.writes));
  const registryCalls = spread(results.map((r) => r.registry));
  const ch = spread(results.map((r) => r.chLists));
  const readSpread = spread(results.map(reads));
  const guestWrites = spread(guestRuns.map((r) => r.writes));
  const guestReads = spread(guestRuns.map(reads));
  const pass =
    writes.max === 0 &&
    registryCalls.max === 0 &&
    ch.max === 0 &&
    executions.count === 0 &&
    guestWrites.max === 0;
  const byVerb = new Map<string, number[]>();
  for (const r of results) for (const k of Object.keys(r.requests)) byVerb.set(k, []);
  for (const r of results) for (const [k, v] of byVerb) v.push(r.requests[k] ?? 0);

  writeSection(
    "1-settled:ts",
    "1. Settled pass (real environment)",
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:settled")}\`

${setCount} sets (main + 2 sub-agents + 1 toolbox each, ${setCount * 4} pods; every other one naming a
CocoonGuestPolicy with the refresh, a PreHibernate and a PostClone/PostWake hook) brought up by the in-process
operator (createOperator: real KubeClient, informers, controllers, a real registry client with every HTTP
exchange counted) on the real control plane, registry and vk-cocoon simulator, ${suspendedCount} of them then
suspended (retain) until Phase=Suspended; then, after ${QUIET_MS / 1000} s
without a request, ${runs} runs each reconcile every set once through \`CocoonSetReconciler\` over the
operator's cached view. Counted per run (all ${setCount} passes, plus 1 s for anything they set off):
API requests by verb (\`KubeClient.onRequest\`), registry HTTP requests, CocoonHibernation lists of the view.
Each run then reconciles every pod once through the guest hooks reconciler over the same caches, its
executor counting pod execs.

${table(
  ["per run (all sets)", "median (min–max)", "target", "result"],
  [
    ["API writes (create/update/patch/delete)", fmt(writes, 0), "0", writes.max === 0 ? "pass" : "FAIL"],
    ["API reads (get/list)", fmt(readSpread, 0), "—", ""],
    ["registry HTTP requests", fmt(registryCalls, 0), "0", registryCalls.max === 0 ? "pass" : "FAIL"],
    ["CocoonHibernation lists", fmt(ch, 0), "0", ch.max === 0 ? "pass" : "FAIL"],
    [
      `guest passes (all ${podNames.length} pods): execs, all runs`,
      String(executions.count),
      "0",
      executions.count === 0 ? "pass" : "FAIL",
    ],
    ["guest passes: API writes", fmt(guestWrites, 0), "0", guestWrites.max === 0 ? "pass" : "FAIL"],
    ["guest passes: API reads", fmt(guestReads, 0), "—", ""],
    ...[...byVerb].map(([k, v]) => [`requests: ${k}`, fmt(spread(v), 0), "", ""]),
  ],
)}

Settled pass wall time per set (${passAll.length} passes): ${fmt(spread(passAll), 3)} ms.`,
  );
  printSummary({
    bench: "settled",
    sets: setCount,
    suspended: suspendedCount,
    runs,
    pass,
    writes: writes.max,
    registryCalls: registryCalls.max,
    chLists: ch.max,
    execs: executions.count,
    guestWrites: guestWrites.max,
    readsMedian: readSpread.median,
    passMsMedian: +spread(passAll).median.toFixed(3),
  });
}

runBenchmark(main);
