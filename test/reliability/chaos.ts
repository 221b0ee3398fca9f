// The random-kill chaos run shared by test/reliability/kills.test.ts (50 kills) and bench/chaos.ts
// (200 kills): the operator runs as a child process behind an API proxy (scoped to one namespace) and
// a registry proxy; four drivers cycle retained suspend/unsuspend, release + wake, migration between
// two nodes and create/teardown, each waiting for the target phase or (at random) flipping early,
// while the operator is SIGKILLed at random moments and restarted at once. The invariant checker
// watches the simulator's VM record and the operator's registry deletes throughout. Once the kills are
// done the operator is left running and every set must converge to its spec (invariant d).

import { randomBytes } from "node:crypto";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import { ANN_HIBERNATE_RECLAIM, LABEL_COCOONSET, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { OciClient, type Simulator, startSimulator } from "../env/simulator/index.ts";
import { apiRequest, createNamespace, type TestEnvInfo } from "../env/testenv.ts";
import {
  type ApiFaults,
  type ApiProxy,
  type RegistryProxy,
  seededRandom,
  startApiProxy,
  startRegistryProxy,
} from "../support/faultproxy.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { OperatorProcess } from "./operatorprocess.ts";

const IMAGE = "ubuntu-dev-base";

export interface ChaosOptions {
  env: TestEnvInfo;
  kills: number;
  /** With kills 0: how long the drivers run before convergence is checked. */
  durationMs?: number;
  seed: number;
  /** Operator uptime before each kill, ms. */
  minUpMs?: number;
  maxUpMs?: number;
  /** API faults injected during the chaos (none by default). */
  apiFaults?: Partial<ApiFaults>;
  /** Time allowed for convergence after the last kill. */
  convergeMs?: number;
  log?: (line: string) => void;
}

export interface ChaosResult {
  seed: number;
  kills: number;
  cycles: Record<string, number>;
  checker: InvariantChecker;
  unexpectedExits: number;
  apiCounts: ApiProxy["counts"];
  warnings: string[];
}

class Aborted extends Error {}

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const { env, seed } = opts;
  const log = opts.log ?? (() => {});
  const random = seededRandom(seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
  const suffix = randomBytes(3).toString("hex");
  const pool = `chaos-${suffix}`;
  const nodes = [`chaos-a-${suffix}`, `chaos-b-${suffix}`, `chaos-c-${suffix}`];
  const ns = await createNamespace(env, "chaos");
  const oci = new OciClient(env.registry);
  const warnings: string[] = [];
  let sim: Simulator | undefined;
  let registry: RegistryProxy | undefined;
  let api: ApiProxy | undefined;
  let operator: OperatorProcess | undefined;
  try {
    sim = await startSimulator({ ...env, nodes: nodes.map((name) => ({ name, pool })) });
    registry = await startRegistryProxy(env.registry);
    api = await startApiProxy(env, { namespace: ns, seed: seed ^ 0x5eed, faults: opts.apiFaults ?? {} });
    const checker = new InvariantChecker({ record: sim.record, registry });
    operator = new OperatorProcess({
      kubeconfigPath: api.kubeconfigPath,
      registry: registry.host,
      onLine: (incarnation, line) => {
        if (/"level":"(warn|error|fatal)"/.test(line) && /annotation|crash|fatal|panic/i.test(line)) {
          warnings.push(`#${incarnation} ${line.slice(0, 300)}`);
        }
      },
    });
    const op = operator;
    const setsPath = `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonsets`;
    const vm = (set: string, slot: number | string = 0) => `vk-${ns}-${set}-${slot}`;
    let stopping = false;

    const api200 = async (method: string, path: string, body?: unknown, type?: string) => {
      const res = await apiRequest(env, method, path, body, type);
      if (res.status >= 300 && res.status !== 404)
        throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res;
    };
    const getSet = async (name: string): Promise<CocoonSet | undefined> => {
      const res = await api200("GET", `${setsPath}/${name}`);
      return res.status === 404 ? undefined : (res.body as CocoonSet);
    };
    const patchSpec = async (name: string, spec: Partial<CocoonSetSpec>) => {
      checker.note(`spec ${name} ← ${JSON.stringify(spec)}`);
      await api200("PATCH", `${setsPath}/${name}`, { spec }, "application/merge-patch+json");
    };
    const createSet = async (name: string, spec: Partial<CocoonSetSpec>) => {
      checker.note(`create ${name} ${JSON.stringify(spec)}`);
      await api200("POST", setsPath, {
        apiVersion: "cocoonset.cocoonstack.io/v1",
        kind: "CocoonSet",
        metadata: { name, namespace: ns },
        spec: { nodePool: pool, agent: { image: IMAGE, replicas: 0, mode: "clone" }, ...spec },
      });
    };
    const setPods = async (name: string): Promise<Pod[]> => {
      const sel = encodeURIComponent(`${LABEL_COCOONSET}=${name}`);
      const res = await api200("GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${sel}`);
      return (res.body.items as Pod[]).filter((p) => !p.metadata.deletionTimestamp);
    };
    const isRunning = async (name: string, agents: number, node?: string): Promise<boolean> => {
      const cs = await getSet(name);
      const s = cs?.status;
      if (!cs || s?.phase !== "Running" || s.readyAgents !== agents) return false;
      if (s.observedGeneration !== cs.metadata.generation) return false;
      if (node === undefined) return true;
      const main = (await setPods(name)).find((p) => p.metadata.name === `${name}-0`);
      return main?.spec.nodeName === node;
    };
    const isPhase = async (name: string, phase: string) => (await getSet(name))?.status?.phase === phase;
    /** Polls until probe is true; false on timeout or when the chaos stops; throws on a violation. */
    const until = async (probe: () => Promise<boolean>, timeoutMs: number, always = false) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline && (always || !stopping)) {
        if (checker.violations.length > 0) throw new Aborted();
        if (await probe()) return true;
        await new Promise((r) => setTimeout(r, 150));
      }
      return false;
    };
    /** Wait for the target, or with probability 0.3 flip early after a random moment. */
    const settleOrFlip = async (probe: () => Promise<boolean>) => {
      if (random() < 0.3) {
        await new Promise((r) => setTimeout(r, between(200, 2500)));
        return;
      }
      await until(probe, 45_000);
    };

    const cycles: Record<string, number> = { retain: 0, release: 0, migrate: 0, teardown: 0 };

    const retainDriver = async () => {
      await createSet("ret", { agent: { image: IMAGE, replicas: 1, mode: "clone" } });
      await until(() => isRunning("ret", 2), 60_000);
      while (!stopping) {
        await patchSpec("ret", { suspend: true });
        await settleOrFlip(() => isPhase("ret", "Suspended"));
        await patchSpec("ret", { suspend: false });
        await settleOrFlip(() => isRunning("ret", 2));
        cycles.retain!++;
      }
    };
    const releaseDriver = async () => {
      await createSet("rel", { hibernatePolicy: "release" });
      await until(() => isRunning("rel", 1), 60_000);
      while (!stopping) {
        await patchSpec("rel", { suspend: true });
        await settleOrFlip(
          async () => (await isPhase("rel", "Suspended")) && (await setPods("rel")).length === 0,
        );
        await patchSpec("rel", { suspend: false });
        await settleOrFlip(() => isRunning("rel", 1));
        cycles.release!++;
      }
    };
    let migTarget = nodes[0]!;
    const migrateDriver = async () => {
      await createSet("mig", { nodeName: migTarget });
      await until(() => isRunning("mig", 1, migTarget), 60_000);
      while (!stopping) {
        migTarget = migTarget === nodes[0] ? nodes[1]! : nodes[0]!;
        await patchSpec("mig", { nodeName: migTarget });
        await settleOrFlip(() => isRunning("mig", 1, migTarget));
        cycles.migrate!++;
      }
    };
    const tornDown: string[] = [];
    const teardownDriver = async () => {
      for (let i = 0; !stopping; i++) {
        const name = `td${i}`;
        await createSet(name, {});
        await settleOrFlip(() => isRunning(name, 1));
        checker.teardown(`${vm(name, "")}`);
        checker.note(`delete ${name}`);
        await api200("DELETE", `${setsPath}/${name}`);
        tornDown.push(name);
        await until(async () => (await getSet(name)) === undefined, 45_000);
        cycles.teardown!++;
      }
    };

    log(`chaos: seed=${seed} namespace=${ns} kills=${opts.kills}`);
    op.start();
    const drivers = Promise.all([retainDriver(), releaseDriver(), migrateDriver(), teardownDriver()]);
    drivers.catch(() => {});

    // The killer: uptime at random, SIGKILL, restart at once.
    const minUp = opts.minUpMs ?? 300;
    const maxUp = opts.maxUpMs ?? 3000;
    let killerError: unknown;
    try {
      if (opts.kills === 0) {
        await Promise.race([new Promise((r) => setTimeout(r, opts.durationMs ?? 30_000)), checker.failed]);
      }
      while (op.kills < opts.kills) {
        const upMs = between(minUp, maxUp);
        await Promise.race([new Promise((r) => setTimeout(r, upMs)), checker.failed]);
        await op.kill();
        checker.note(`SIGKILL operator #${op.incarnation} after ${upMs} ms (kill ${op.kills})`);
        if (op.kills % 10 === 0) log(`chaos: ${op.kills} kills, cycles ${JSON.stringify(cycles)}`);
        op.start();
      }
    } catch (err) {
      killerError = err;
    }
    stopping = true;
    try {
      await drivers;
    } catch (err) {
      if (!(err instanceof Aborted)) killerError ??= err;
    }
    if (killerError !== undefined || checker.violations.length > 0) {
      return finish();
    }

    // (d): the operator stays up; every set converges to its spec.
    checker.note("chaos over: converging");
    if (api) api.faults = { conflict: 0, throttle: 0, dropWatch: 0, goneOnResume: 0 };
    await patchSpec("ret", { suspend: false });
    await patchSpec("rel", { suspend: false });
    const convergeMs = opts.convergeMs ?? 90_000;
    const convergence: [string, () => Promise<boolean>][] = [
      ["ret Running with 2 agents Ready", () => isRunning("ret", 2)],
      ["rel Running with its main Ready", () => isRunning("rel", 1)],
      [`mig Running on ${migTarget}`, () => isRunning("mig", 1, migTarget)],
      ...tornDown.map((name): [string, () => Promise<boolean>] => [
        `${name} deleted`,
        async () => (await getSet(name)) === undefined,
      ]),
      [
        "every reclaim record and :hibernate tag dropped",
        async () => {
          for (const name of ["ret", "rel", "mig"]) {
            const cs = await getSet(name);
            if (cs?.metadata.annotations?.[ANN_HIBERNATE_RECLAIM] !== undefined) return false;
          }
          for (const v of [vm("ret", 0), vm("ret", 1), vm("rel"), vm("mig"), ...tornDown.map((n) => vm(n))]) {
            if ((await oci.getManifest(oci.repository(v), TAG_HIBERNATE)) !== null) return false;
          }
          return true;
        },
      ],
    ];
    const deadline = Date.now() + convergeMs;
    for (const [what, probe] of convergence) {
      const reached = await until(probe, Math.max(1000, deadline - Date.now()), true).catch(() => false);
      if (!reached) {
        checker.violations.push(
          `invariant (d) violated: ${what} not reached within ${convergeMs} ms after the chaos\n${checker.history()}`,
        );
        break;
      }
    }
    return finish();

    async function finish(): Promise<ChaosResult> {
      if (killerError !== undefined && checker.violations.length === 0) throw killerError;
      return {
        seed,
        kills: op.kills,
        cycles,
        checker,
        unexpectedExits: op.unexpectedExits.length,
        apiCounts: { ...(api as ApiProxy).counts },
        warnings,
      };
    }
  } finally {
    await operator?.stop();
    await api?.stop();
    await registry?.stop();
    await sim?.stop({ removeNodes: true });
  }
}
