// Benchmark 10: guest hooks. One control plane + registry, three simulated nodes, this operator as a
// separate process; every hook goes through the API server's pod exec to the simulated guest.
//   - Branches: --branches CocoonSets created at once from one checkpoint (a main-only set, suspended
//     and checkpointed first), with and without a policy asking for the refresh after a clone, in
//     alternating rounds; create → Running (for the refresh, with the GuestHooks condition True). With
//     the refresh, each round's branches must end as distinct machines: machine-ids, SSH host keys and
//     kernel random pools all different (and the run fails otherwise).
//   - Claims on a Running pool of --claims members: without a policy, with the refresh (run when the
//     members were made, not at the claim), and with the refresh plus a PostClaim hook (`true`); first
//     --singles claims one at a time, then --claims at once; claim → claim Ready.
// Times run from just before the create request to the first list (every POLL_MS) that shows it done.
//
//   npm run bench:guest [-- --branches 16 --rounds 3 --claims 50 --singles 10]

import type { CocoonSet } from "../src/apis/v1/types.ts";
import type { CocoonClaim, CocoonGuestPolicySpec } from "../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT } from "../src/checkpoint/keys.ts";
import { ANN_GUEST_POLICY, CONDITION_GUEST_HOOKS } from "../src/guest/keys.ts";
import { checkpointsPath } from "../test/support/checkpointapi.ts";
import { putGuestPolicy } from "../test/support/guestapi.ts";
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
  waitPoolFilled,
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
const REFRESH: CocoonGuestPolicySpec = { refresh: { afterClone: true, afterWake: true } };
const REFRESH_AND_CLAIM_HOOK: CocoonGuestPolicySpec = {
  ...REFRESH,
  hooks: [{ name: "welcome", on: ["PostClaim"], exec: { command: ["true"] } }],
};

interface Row {
  name: string;
  latencies: number[];
  single?: number[];
}

async function main(): Promise<void> {
  const args = parseArgs();
  const branches = args.int("branches", 16);
  const rounds = args.int("rounds", 3);
  const claims = args.int("claims", 50);
  const singles = args.int("singles", 10);
  const operator = operatorCommand(args);

  progress("starting control plane, registry and simulator");
  const cluster = await startCluster();
  const { info } = cluster.env;
  const nodes = await startPool(info, 3, { pods: 110, timings: TIMINGS });
  const logFile = `/tmp/bench-guest-${process.pid}.log`;
  const proc = await startOperatorProcess({
    command: operator.command,
    kubeconfigPath: info.kubeconfigPath,
    registry: info.registry,
    logFile,
  });
  await proc.waitReady();

  const post = (path: string, body: unknown): Promise<void> => createObject(info, path, body);

  const list = <T>(path: string): Promise<T[]> => listItems<T>(info, path);

  const firstSeen = <T extends { metadata: { name?: string } }>(
    what: string,
    path: string,
    names: readonly string[],
    done: (obj: T) => boolean,
  ): Promise<Map<string, number>> =>
    firstSeenOf<T>(info, what, path, names, done, { pollMs: POLL_MS, hint: `see ${logFile}` });
  const waitEmpty = (ns: string): Promise<void> => waitNoSets(info, ns, `see ${logFile}`);

  const policy = (ns: string, name: string, spec: CocoonGuestPolicySpec) =>
    putGuestPolicy(info, ns, name, spec);
  const hooksSettled = (cs: CocoonSet) =>
    cs.metadata.annotations?.[ANN_GUEST_POLICY] === undefined ||
    cs.status?.conditions?.some((c) => c.type === CONDITION_GUEST_HOOKS && c.status === "True") === true;

  // ---- branches ----
  const ns = await createNamespace(info, "bench-guest");
  await policy(ns, "refresh", REFRESH);
  progress("source set: Running, suspended, checkpointed");
  await post(setsPath(ns), cocoonSet(ns, "source", { nodePool: nodes.pool }));
  await firstSeen<CocoonSet>("source Running", setsPath(ns), ["source"], (cs) => isRunning(cs, 1));
  await patchSetSpec(info, ns, "source", { suspend: true });
  await firstSeen<CocoonSet>(
    "source Suspended",
    setsPath(ns),
    ["source"],
    (cs) => cs.status?.phase === "Suspended",
  );
  await post(checkpointsPath(ns), {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name: "base", namespace: ns },
    spec: { cocoonSetRef: { name: "source" } },
  });
  await firstSeen<{ metadata: { name?: string }; status?: { phase?: string } }>(
    "checkpoint Ready",
    checkpointsPath(ns),
    ["base"],
    (ck) => ck.status?.phase === "Ready",
  );

  const branchRows: Row[] = [
    { name: "branch, no policy", latencies: [] },
    { name: "branch, refresh after clone", latencies: [] },
  ];
  const identities: { refresh: boolean; machineIds: number; hostKeys: number; randoms: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    // Both ways round: the variant that goes first alternates.
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const variant of order) {
      const refresh = variant === 1;
      const names = Array.from({ length: branches }, (_, i) => `b${round}-${variant}-${i}`);
      progress(`round ${round + 1}: ${branches} branches at once, ${refresh ? "refresh" : "no policy"}`);
      const sent = new Map<string, number>();
      await mapLimit(names, names.length, async (name) => {
        const cs = cocoonSet(ns, name, { nodePool: nodes.pool });
        cs.metadata.annotations = {
          [ANN_FROM_CHECKPOINT]: "base",
          ...(refresh ? { [ANN_GUEST_POLICY]: "refresh" } : {}),
        };
        sent.set(name, Date.now());
        await post(setsPath(ns), cs);
      });
      const running = await firstSeen<CocoonSet>(
        "branches Running",
        setsPath(ns),
        names,
        (cs) => isRunning(cs, 1) && hooksSettled(cs),
      );
      branchRows[variant]?.latencies.push(...names.map((n) => (running.get(n) ?? 0) - (sent.get(n) ?? 0)));
      const guests = names.map((n) => nodes.sim.guestOf(ns, `${n}-0`));
      if (guests.some((g) => g === undefined)) throw new Error("a branch has no live guest");
      const distinct = (f: (g: NonNullable<(typeof guests)[number]>) => string) =>
        new Set(guests.map((g) => (g ? f(g) : ""))).size;
      const id = {
        refresh,
        machineIds: distinct((g) => g.machineId()),
        hostKeys: distinct((g) => g.hostKeyFingerprint()),
        randoms: distinct((g) => g.capture(Date.now()).random),
      };
      identities.push(id);
      if (refresh && (id.machineIds !== branches || id.hostKeys !== branches || id.randoms !== branches))
        throw new Error(`refreshed branches share an identity: ${JSON.stringify(id)} of ${branches}`);
      await mapLimit(names, 16, (name) => apiRequest(info, "DELETE", `${setsPath(ns)}/${name}`));
      const deadline = Date.now() + 300_000;
      while ((await list<CocoonSet>(setsPath(ns))).some((cs) => names.includes(cs.metadata.name ?? ""))) {
        if (Date.now() > deadline) throw new Error(`branches not gone; see ${logFile}`);
        await sleep(250);
      }
    }
  }

  // ---- claims on a Running pool ----
  const claimRows: Row[] = [];
  for (const [label, spec] of [
    ["claim, no policy", undefined],
    ["claim, refresh after clone", REFRESH],
    ["claim, refresh + a PostClaim hook", REFRESH_AND_CLAIM_HOOK],
  ] as const) {
    const pns = await createNamespace(info, "bench-guest-pool");
    if (spec) await policy(pns, "p", spec);
    progress(`${label}: filling a Running pool of ${claims}`);
    await post(poolsPath(pns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonPool",
      metadata: { name: "warm", namespace: pns },
      spec: {
        replicas: claims,
        template: {
          ...(spec ? { metadata: { annotations: { [ANN_GUEST_POLICY]: "p" } } } : {}),
          spec: { nodePool: nodes.pool, agent: { image: IMAGE, replicas: 0, mode: "clone" } },
        },
      },
    });
    const filled = () => waitPoolFilled(info, pns, "warm", claims, `see ${logFile}`);
    await filled();
    const claimAll = async (names: readonly string[]): Promise<number[]> => {
      const sent = new Map<string, number>();
      await mapLimit(names, names.length, async (name) => {
        sent.set(name, Date.now());
        await post(claimsPath(pns), {
          apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
          kind: "CocoonClaim",
          metadata: { name, namespace: pns },
          spec: { poolRef: { name: "warm" }, parameters: { user: name } },
        });
      });
      const ready = await firstSeen<CocoonClaim>("claims Ready", claimsPath(pns), names, claimReady);
      return names.map((n) => (ready.get(n) ?? 0) - (sent.get(n) ?? 0));
    };
    const single: number[] = [];
    for (let i = 0; i < singles; i++) {
      single.push(...(await claimAll([`single-${i}`])));
      await filled();
      await sleep(500);
    }
    const latencies = await claimAll(Array.from({ length: claims }, (_, i) => `claim-${i}`));
    claimRows.push({ name: label, latencies, single });
    await apiRequest(info, "DELETE", `${poolsPath(pns)}/warm`);
    const claimNames = [
      ...Array.from({ length: claims }, (_, i) => `claim-${i}`),
      ...Array.from({ length: singles }, (_, i) => `single-${i}`),
    ];
    await mapLimit(claimNames, 16, (name) => apiRequest(info, "DELETE", `${claimsPath(pns)}/${name}`));
    await waitEmpty(pns);
  }
  await proc.stop();

  const p = (values: readonly number[], q: number) => percentile(values, q).toFixed(0);
  const [none, refresh] = branchRows;
  const summary = {
    branches,
    rounds,
    branchP50: {
      none: percentile(none?.latencies ?? [], 50),
      refresh: percentile(refresh?.latencies ?? [], 50),
    },
    branchP99: {
      none: percentile(none?.latencies ?? [], 99),
      refresh: percentile(refresh?.latencies ?? [], 99),
    },
    claims: Object.fromEntries(
      claimRows.map((r) => [
        r.name,
        {
          singleP50: percentile(r.single ?? [], 50),
          burstP50: percentile(r.latencies, 50),
          burstP99: percentile(r.latencies, 99),
        },
      ]),
    ),
    identities,
  };
  printSummary(summary);
  writeSection(
    `10-guest:${operator.label}`,
    `10. Guest hooks: what the refresh adds to a branch and a claim — operator \`${operator.label}\``,
    `Machine: ${machineLine(machine())}
Command: \`${commandLine("bench:guest")}\`

Branches: ${branches} CocoonSets created at once from one checkpoint of a main-only set, ${rounds} rounds,
each round once without a policy and once naming a CocoonGuestPolicy with \`refresh.afterClone\`, the
order alternating; create → Running with every member Ready (with the policy, Ready includes the
refresh: the owner-mark read, the refresh line and the owner-mark write, three execs through the API
server, and the record's patch). Claims: a Running pool of ${claims} main-only members, ${singles} claims one
at a time (the pool refilled between), then ${claims} at once; claim → claim Ready. Three simulated nodes,
timings ${JSON.stringify(TIMINGS)}; polls every ${POLL_MS} ms.

${table(
  ["scenario", "alone p50 (ms)", "p50 (ms)", "p99 (ms)", "max (ms)"],
  [
    ...branchRows.map((r) => [
      `${r.name} (${branches} at once)`,
      "",
      p(r.latencies, 50),
      p(r.latencies, 99),
      p(r.latencies, 100),
    ]),
    ...claimRows.map((r) => [
      `${r.name} (${claims} at once)`,
      p(r.single ?? [], 50),
      p(r.latencies, 50),
      p(r.latencies, 99),
      p(r.latencies, 100),
    ]),
  ],
)}

Distinct identities among the ${branches} branches of one checkpoint, per round and variant: ${identities
      .map(
        (id) =>
          `${id.refresh ? "refresh" : "no policy"}: ${id.machineIds} machine-ids, ${id.hostKeys} host keys, ${id.randoms} random pools`,
      )
      .join("; ")}.`,
  );
}

runBenchmark(main);
