// The random-kill chaos run shared by test/reliability/kills.test.ts (50 kills) and bench/chaos.ts
// (200 kills): the operator runs as a child process behind an API proxy (scoped to one namespace) and
// a registry proxy; six drivers cycle retained suspend/unsuspend of a main, a sub-agent and a toolbox,
// release + wake, migration between two nodes, create/teardown, CocoonHibernation hibernate/wake of a
// set's main (every third round flips the desire while the hibernate is held mid-transition), and an
// image change while suspended (the image rule drops the old snapshot; the set is then torn down),
// and a Suspended warm pool whose members are claimed (a claim wakes one) and released (the claim's
// deletion tears its set down), never one set bound to two claims; and checkpoints: a set checkpointed
// while suspended, resumed, then both branched from (a new set) and restored to that checkpoint in
// place, the checkpoint deleted at a random moment (often while the branch and the restore still use
// it), the branch torn down; and guest hooks: the retained set names a policy that refreshes its VMs
// after every clone and wake and quiesces them before every hibernate, and another set, whose post
// hooks always fail, is suspended and woken over and over and must never be reported Ready (j).
// Each waits for the target phase or (at random) flips early, while the operator is SIGKILLed at
// random moments and restarted at once; the kills go on past the requested number until every driver
// has finished its minimum of cycles (bounded). The invariant checker watches the simulator's VM
// record and the operator's registry deletes throughout. Once the kills are done the operator is left
// running and every set must converge to its spec (invariant d).

import { randomBytes } from "node:crypto";
import type { Pod } from "../../src/apis/core.ts";
import {
  API_VERSION,
  type CocoonHibernation,
  type CocoonSet,
  type CocoonSetSpec,
  type HibernationDesire,
  KIND_COCOONHIBERNATION,
} from "../../src/apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonClaim, CocoonRestore } from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT } from "../../src/checkpoint/keys.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ANN_IMAGE,
  ANN_VM_ID,
  LABEL_COCOONSET,
  TAG_HIBERNATE,
} from "../../src/contract/keys.ts";
import { ANN_GUEST_POLICY, CONDITION_GUEST_HOOKS, REASON_HOOK_FAILED } from "../../src/guest/keys.ts";
import { readGuestHooksRecord } from "../../src/guest/record.ts";
import { LABEL_CLAIM } from "../../src/pool/keys.ts";
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
import { putGuestPolicy } from "../support/guestapi.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { OperatorProcess } from "./operatorprocess.ts";

const IMAGE = "ubuntu-dev-base";
const OTHER_IMAGE = "ubuntu-dev-base:v2";
const TOOLBOX = { name: "tb", image: IMAGE, mode: "run" as const };
const FRESH_POLICY = "fresh";
const BROKEN_POLICY = "broken";

/** The drivers, each counting its completed cycles. */
export const CHAOS_DRIVERS = [
  "retain",
  "release",
  "migrate",
  "teardown",
  "hibernation",
  "image",
  "pool",
  "checkpoint",
  "guest",
] as const;
export type ChaosDriver = (typeof CHAOS_DRIVERS)[number];

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
  /** Cycles each driver must finish: the kills continue past `kills` until they have (bounded). */
  minCycles?: Partial<Record<ChaosDriver, number>>;
  /** How long the kills may go on past `kills` waiting for `minCycles`; default 90 s. */
  maxExtraMs?: number;
  log?: (line: string) => void;
}

export interface ChaosResult {
  seed: number;
  kills: number;
  cycles: Record<ChaosDriver, number>;
  /** CocoonHibernation rounds whose desire was flipped while the hibernate was held mid-transition. */
  hibernationFlips: number;
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
    const createSet = async (
      name: string,
      spec: Partial<CocoonSetSpec>,
      annotations?: Record<string, string>,
    ) => {
      checker.note(
        `create ${name} ${JSON.stringify(spec)}${annotations ? ` ${JSON.stringify(annotations)}` : ""}`,
      );
      await api200("POST", setsPath, {
        apiVersion: "cocoonset.cocoonstack.io/v1",
        kind: "CocoonSet",
        metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
        spec: { nodePool: pool, agent: { image: IMAGE, replicas: 0, mode: "clone" }, ...spec },
      });
    };
    const setPods = async (name: string): Promise<Pod[]> => {
      const sel = encodeURIComponent(`${LABEL_COCOONSET}=${name}`);
      const res = await api200("GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${sel}`);
      return (res.body.items as Pod[]).filter((p) => !p.metadata.deletionTimestamp);
    };
    const isRunning = async (
      name: string,
      agents: number,
      want: { node?: string; toolboxes?: number; image?: string } = {},
    ): Promise<boolean> => {
      const cs = await getSet(name);
      const s = cs?.status;
      if (!cs || s?.phase !== "Running" || s.readyAgents !== agents) return false;
      if ((s.readyToolboxes ?? 0) !== (want.toolboxes ?? 0)) return false;
      if (s.observedGeneration !== cs.metadata.generation) return false;
      if (want.node === undefined && want.image === undefined) return true;
      const main = (await setPods(name)).find((p) => p.metadata.name === `${name}-0`);
      if (want.node !== undefined && main?.spec.nodeName !== want.node) return false;
      return want.image === undefined || main?.metadata.annotations?.[ANN_IMAGE] === want.image;
    };
    const hibernationsPath = `/apis/cocoonset.cocoonstack.io/v1/namespaces/${ns}/cocoonhibernations`;
    const getHibernation = async (name: string): Promise<CocoonHibernation | undefined> => {
      const res = await api200("GET", `${hibernationsPath}/${name}`);
      return res.status === 404 ? undefined : (res.body as CocoonHibernation);
    };
    const setDesire = async (name: string, desire: HibernationDesire) => {
      checker.note(`hibernation ${name} desire ← ${desire}`);
      if ((await getHibernation(name)) === undefined) {
        await api200("POST", hibernationsPath, {
          apiVersion: API_VERSION,
          kind: KIND_COCOONHIBERNATION,
          metadata: { name, namespace: ns },
          spec: { podRef: { name }, desire },
        });
        return;
      }
      await api200(
        "PATCH",
        `${hibernationsPath}/${name}`,
        { spec: { desire } },
        "application/merge-patch+json",
      );
    };
    const hibernationPhase = async (name: string) => (await getHibernation(name))?.status?.phase;
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

    const cycles: Record<ChaosDriver, number> = {
      retain: 0,
      release: 0,
      migrate: 0,
      teardown: 0,
      hibernation: 0,
      image: 0,
      pool: 0,
      checkpoint: 0,
      guest: 0,
    };
    let hibernationFlips = 0;

    // Guest hooks: ret's VMs are refreshed after each clone and wake and quiesced before each hibernate;
    // gst's post hooks always fail, so gst must never be reported Ready, whatever the kills.
    await putGuestPolicy(env, ns, FRESH_POLICY, {
      refresh: { afterClone: true, afterWake: true },
      hooks: [
        {
          name: "flush",
          on: ["PreHibernate"],
          exec: { command: ["sh", "-c", "sync && echo flushed > /var/flushed"] },
        },
        { name: "resync", on: ["PostClone", "PostWake"], exec: { command: ["true"] } },
      ],
    });
    await putGuestPolicy(env, ns, BROKEN_POLICY, {
      hooks: [{ name: "seed", on: ["PostClone", "PostWake"], exec: { command: ["sh", "-c", "exit 7"] } }],
    });
    const guestHooks = async (name: string) =>
      (await getSet(name))?.status?.conditions?.find((c) => c.type === CONDITION_GUEST_HOOKS);
    /** Every member of the set runs on a VM whose post hooks are recorded as succeeded. */
    const hooksRecorded = async (name: string): Promise<boolean> => {
      const pods = await setPods(name);
      return (
        pods.length > 0 &&
        pods.every((pod) => {
          const record = readGuestHooksRecord(pod);
          return record.vmID === pod.metadata.annotations?.[ANN_VM_ID] && record.post?.result === "Succeeded";
        })
      );
    };

    const retainDriver = async () => {
      await createSet(
        "ret",
        { agent: { image: IMAGE, replicas: 1, mode: "clone" }, toolboxes: [TOOLBOX] },
        { [ANN_GUEST_POLICY]: FRESH_POLICY },
      );
      await until(() => isRunning("ret", 2, { toolboxes: 1 }), 60_000);
      while (!stopping) {
        await patchSpec("ret", { suspend: true });
        await settleOrFlip(() => isPhase("ret", "Suspended"));
        await patchSpec("ret", { suspend: false });
        await settleOrFlip(() => isRunning("ret", 2, { toolboxes: 1 }));
        cycles.retain++;
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
        cycles.release++;
      }
    };
    let migTarget = nodes[0]!;
    const migrateDriver = async () => {
      await createSet("mig", { nodeName: migTarget });
      await until(() => isRunning("mig", 1, { node: migTarget }), 60_000);
      while (!stopping) {
        migTarget = migTarget === nodes[0] ? nodes[1]! : nodes[0]!;
        await patchSpec("mig", { nodeName: migTarget });
        await settleOrFlip(() => isRunning("mig", 1, { node: migTarget }));
        cycles.migrate++;
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
        cycles.teardown++;
      }
    };
    // A CocoonHibernation on a set's main. Every third round (from the first) holds the hibernate in
    // vk-cocoon, flips the desire to Wake while the CocoonHibernation is Hibernating, then lets the
    // hibernate finish.
    const hibernationDriver = async () => {
      await createSet("hib", {});
      await until(() => isRunning("hib", 1), 60_000);
      for (let round = 0; !stopping; round++) {
        if (round % 3 === 0) {
          sim!.faults.stallHibernate(vm("hib"), true);
          await setDesire("hib-0", "Hibernate");
          const mid = await until(async () => (await hibernationPhase("hib-0")) === "Hibernating", 30_000);
          await setDesire("hib-0", "Wake");
          sim!.faults.stallHibernate(vm("hib"), false);
          if (mid) hibernationFlips++;
        } else {
          await setDesire("hib-0", "Hibernate");
          await settleOrFlip(async () => (await hibernationPhase("hib-0")) === "Hibernated");
          await setDesire("hib-0", "Wake");
        }
        await settleOrFlip(async () => (await hibernationPhase("hib-0")) === "Active");
        cycles.hibernation++;
      }
    };
    // An image change while suspended: the old snapshot can never be restored, so the image rule may
    // drop it and the old VM may go; then the set is deleted.
    let imageSet: { name: string; image: string } | undefined;
    const imageDriver = async () => {
      for (let i = 0; !stopping; i++) {
        const name = `img${i}`;
        imageSet = { name, image: IMAGE };
        await createSet(name, {});
        await until(() => isRunning(name, 1), 60_000);
        if (stopping) break;
        await patchSpec(name, { suspend: true });
        await until(() => isPhase(name, "Suspended"), 45_000);
        if (stopping) break;
        checker.allowImageDrop(vm(name));
        imageSet.image = OTHER_IMAGE;
        await patchSpec(name, { agent: { image: OTHER_IMAGE, replicas: 0, mode: "clone" } });
        await patchSpec(name, { suspend: false });
        await settleOrFlip(() => isRunning(name, 1, { image: OTHER_IMAGE }));
        checker.teardown(`${vm(name, "")}`);
        checker.note(`delete ${name}`);
        await api200("DELETE", `${setsPath}/${name}`);
        tornDown.push(name);
        imageSet = undefined;
        await until(async () => (await getSet(name)) === undefined, 45_000);
        cycles.image++;
      }
    };

    // A Suspended pool of two main-only members (booted, then hibernated with their seats released).
    // Each round claims one, waits for the claim to bind (and, unless it flips early, for Ready),
    // checks that no set carries two claims and no claim two sets, then deletes the claim, which
    // tears its set down.
    const poolsPath = `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocoonpools`;
    const claimsPath = `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocoonclaims`;
    const getClaim = async (name: string): Promise<CocoonClaim | undefined> => {
      const res = await api200("GET", `${claimsPath}/${name}`);
      return res.status === 404 ? undefined : (res.body as CocoonClaim);
    };
    const boundTo = new Map<string, string>();
    const checkBindings = async (): Promise<void> => {
      const sets = (await api200("GET", setsPath)).body.items as CocoonSet[];
      const claims = (await api200("GET", claimsPath)).body.items as CocoonClaim[];
      const setsOf = new Map<string, string[]>();
      for (const cs of sets) {
        const claim = cs.metadata.labels?.[LABEL_CLAIM];
        if (claim !== undefined) setsOf.set(claim, [...(setsOf.get(claim) ?? []), cs.metadata.name ?? ""]);
      }
      for (const [claim, names] of setsOf) {
        if (names.length > 1)
          checker.violations.push(`claim ${claim} holds ${names.join(", ")}\n${checker.history()}`);
      }
      for (const claim of claims) {
        const set = claim.status?.cocoonSetRef?.name;
        if (!set) continue;
        const earlier = boundTo.get(set);
        if (earlier !== undefined && earlier !== claim.metadata.name) {
          checker.violations.push(
            `set ${set} bound to ${earlier} and then to ${claim.metadata.name}\n${checker.history()}`,
          );
        }
        boundTo.set(set, claim.metadata.name ?? "");
      }
    };
    const poolDriver = async () => {
      checker.note("create pool warm (Suspended, 2 members)");
      await api200("POST", poolsPath, {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonPool",
        metadata: { name: "warm", namespace: ns },
        spec: {
          replicas: 2,
          warmth: "Suspended",
          template: { spec: { nodePool: pool, agent: { image: IMAGE, replicas: 0, mode: "clone" } } },
        },
      });
      for (let i = 0; !stopping; i++) {
        const name = `claim${i}`;
        checker.note(`create claim ${name}`);
        await api200("POST", claimsPath, {
          apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
          kind: "CocoonClaim",
          metadata: { name, namespace: ns },
          spec: { poolRef: { name: "warm" } },
        });
        const bound = await until(async () => (await getClaim(name))?.status?.phase === "Bound", 90_000);
        if (!bound) break;
        await settleOrFlip(
          async () =>
            (await getClaim(name))?.status?.conditions?.some(
              (c) => c.type === "Ready" && c.status === "True",
            ) === true,
        );
        await checkBindings();
        const set = (await getClaim(name))?.status?.cocoonSetRef?.name ?? "";
        checker.teardown(vm(set, ""));
        checker.note(`delete claim ${name} (set ${set})`);
        await api200("DELETE", `${claimsPath}/${name}`);
        tornDown.push(set);
        await until(
          async () => (await getSet(set)) === undefined && (await getClaim(name)) === undefined,
          45_000,
        );
        cycles.pool++;
      }
    };

    // A set of a main and a sub-agent, checkpointed while suspended and resumed; then a branch from
    // the checkpoint and a restore of the set to it, the checkpoint deleted at a random moment (half
    // the time while both may still use it: its tags must wait for them); then the branch goes. A
    // restore may only be refused because its checkpoint was deleted first.
    const checkpointsPath = `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocooncheckpoints`;
    const restoresPath = `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocoonrestores`;
    const getCheckpoint = async (name: string): Promise<CocoonCheckpoint | undefined> => {
      const res = await api200("GET", `${checkpointsPath}/${name}`);
      return res.status === 404 ? undefined : (res.body as CocoonCheckpoint);
    };
    const getRestore = async (name: string): Promise<CocoonRestore | undefined> => {
      const res = await api200("GET", `${restoresPath}/${name}`);
      return res.status === 404 ? undefined : (res.body as CocoonRestore);
    };
    const deletedCheckpoints: string[] = [];
    const deleteCheckpoint = async (name: string) => {
      checker.checkpointDeleted(name);
      await api200("DELETE", `${checkpointsPath}/${name}`);
      deletedCheckpoints.push(name);
    };
    const CHECKPOINTED: Partial<CocoonSetSpec> = { agent: { image: IMAGE, replicas: 1, mode: "clone" } };
    const checkpointDriver = async () => {
      await createSet("ck", CHECKPOINTED);
      await until(() => isRunning("ck", 2), 60_000);
      for (let i = 0; !stopping; i++) {
        const checkpoint = `c${i}`;
        await patchSpec("ck", { suspend: true });
        if (!(await until(() => isPhase("ck", "Suspended"), 45_000))) break;
        checker.note(`create checkpoint ${checkpoint} of ck`);
        await api200("POST", checkpointsPath, {
          apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
          kind: "CocoonCheckpoint",
          metadata: { name: checkpoint, namespace: ns },
          spec: { cocoonSetRef: { name: "ck" } },
        });
        const ready = await until(
          async () => (await getCheckpoint(checkpoint))?.status?.phase === "Ready",
          45_000,
        );
        await patchSpec("ck", { suspend: false });
        await patchSpec("gst", { suspend: false });
        if (!ready) break;
        await settleOrFlip(() => isRunning("ck", 2));
        const branch = `ckb${i}`;
        const restore = `cr${i}`;
        checker.note(`create ${branch} from checkpoint ${checkpoint}; restore ${restore} of ck to it`);
        await api200("POST", setsPath, {
          apiVersion: "cocoonset.cocoonstack.io/v1",
          kind: "CocoonSet",
          metadata: { name: branch, namespace: ns, annotations: { [ANN_FROM_CHECKPOINT]: checkpoint } },
          spec: { nodePool: pool, ...CHECKPOINTED },
        });
        await api200("POST", restoresPath, {
          apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
          kind: "CocoonRestore",
          metadata: { name: restore, namespace: ns },
          spec: { cocoonSetRef: { name: "ck" }, checkpointRef: { name: checkpoint } },
        });
        const early = random() < 0.5;
        if (early) {
          await new Promise((r) => setTimeout(r, between(0, 1500)));
          await deleteCheckpoint(checkpoint);
        }
        const finished = await until(async () => {
          const phase = (await getRestore(restore))?.status?.phase;
          return phase === "Restored" || phase === "Failed";
        }, 90_000);
        if (!finished) break;
        const outcome = (await getRestore(restore))?.status;
        const refusedForDelete =
          outcome?.reason === "CheckpointDeleting" || outcome?.reason === "CheckpointNotFound";
        if (outcome?.phase === "Failed" && !(early && refusedForDelete)) {
          checker.violations.push(
            `restore ${restore} Failed (${outcome.reason}): ${outcome.message}\n${checker.history()}`,
          );
          throw new Aborted();
        }
        checker.note(`restore ${restore} ${outcome?.phase} (${outcome?.reason})`);
        await settleOrFlip(() => isRunning(branch, 2));
        if (!early) await deleteCheckpoint(checkpoint);
        checker.teardown(vm(branch, ""));
        checker.note(`delete ${branch}`);
        await api200("DELETE", `${setsPath}/${branch}`);
        tornDown.push(branch);
        await until(async () => (await getSet(branch)) === undefined, 45_000);
        await until(async () => (await getCheckpoint(checkpoint)) === undefined, 45_000);
        cycles.checkpoint++;
      }
    };

    const guestDriver = async () => {
      await createSet("gst", {}, { [ANN_GUEST_POLICY]: BROKEN_POLICY });
      while (!stopping) {
        // Held: its failed hook is recorded and reported; then suspended and woken, which fails again.
        await settleOrFlip(async () => (await guestHooks("gst"))?.reason === REASON_HOOK_FAILED);
        await patchSpec("gst", { suspend: true });
        await settleOrFlip(() => isPhase("gst", "Suspended"));
        await patchSpec("gst", { suspend: false });
        cycles.guest++;
      }
    };
    /** (j): a member whose Fail hook has not succeeded is never reported Ready. */
    const watchHeld = async () => {
      while (!stopping) {
        const cs = await getSet("gst");
        const ready = cs?.status?.conditions?.find((c) => c.type === "Ready");
        if (
          cs &&
          ((cs.status?.readyAgents ?? 0) > 0 || cs.status?.phase === "Running" || ready?.status === "True")
        ) {
          checker.flag(
            "j",
            vm("gst"),
            `gst, whose post hooks always fail, was reported ready: phase ${cs.status?.phase}, readyAgents ${cs.status?.readyAgents}, Ready ${ready?.status} (${ready?.reason})`,
          );
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    log(`chaos: seed=${seed} namespace=${ns} kills=${opts.kills}`);
    op.start();
    const drivers = Promise.all([
      retainDriver(),
      releaseDriver(),
      migrateDriver(),
      teardownDriver(),
      hibernationDriver(),
      imageDriver(),
      poolDriver(),
      checkpointDriver(),
      guestDriver(),
      watchHeld(),
    ]);
    drivers.catch(() => {});

    // The killer: uptime at random, SIGKILL, restart at once.
    const minUp = opts.minUpMs ?? 300;
    const maxUp = opts.maxUpMs ?? 3000;
    let killerError: unknown;
    try {
      if (opts.kills === 0) {
        await Promise.race([new Promise((r) => setTimeout(r, opts.durationMs ?? 30_000)), checker.failed]);
      }
      // Past the requested kills, a driver still short of its minimum keeps the kills going, with
      // uptimes doubling (up to 8×) so that an operator slowed by a loaded machine gets work done.
      const extraUntil = () => (extraDeadline ??= Date.now() + (opts.maxExtraMs ?? 90_000));
      let extraDeadline: number | undefined;
      const cyclesShort = () =>
        CHAOS_DRIVERS.some((driver) => cycles[driver] < (opts.minCycles?.[driver] ?? 0));
      while (op.kills < opts.kills || (opts.kills > 0 && cyclesShort() && Date.now() < extraUntil())) {
        const stretch = 2 ** Math.min(3, Math.max(0, op.kills - opts.kills + 1));
        const upMs = between(minUp, maxUp) * (op.kills < opts.kills ? 1 : stretch);
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
    await patchSpec("ck", { suspend: false });
    await patchSpec("gst", { suspend: false });
    await setDesire("hib-0", "Wake").catch(() => undefined);
    // A set the image driver left mid-cycle converges to its spec too.
    const leftImage = imageSet;
    if (leftImage) await patchSpec(leftImage.name, { suspend: false });
    const convergeMs = opts.convergeMs ?? 90_000;
    /** What a convergence probe last found not yet converged, for the violation's message. */
    let left: string | undefined;
    const convergence: [string, () => Promise<boolean>][] = [
      [
        "ret Running with 2 agents and its toolbox Ready, each on a VM whose post hooks succeeded",
        async () =>
          (await isRunning("ret", 2, { toolboxes: 1 })) &&
          (await guestHooks("ret"))?.status === "True" &&
          (await hooksRecorded("ret")),
      ],
      [
        "gst held by its failed hook, the failure recorded for the VM it runs",
        async () => {
          const cs = await getSet("gst");
          const [pod] = await setPods("gst");
          const record = pod ? readGuestHooksRecord(pod) : undefined;
          return (
            cs?.status?.readyAgents === 0 &&
            (await guestHooks("gst"))?.reason === REASON_HOOK_FAILED &&
            record?.vmID === pod?.metadata.annotations?.[ANN_VM_ID] &&
            record?.post?.result === "Failed"
          );
        },
      ],
      ["rel Running with its main Ready", () => isRunning("rel", 1)],
      [`mig Running on ${migTarget}`, () => isRunning("mig", 1, { node: migTarget })],
      [
        "hib Running, its CocoonHibernation Active",
        async () => (await isRunning("hib", 1)) && (await hibernationPhase("hib-0")) === "Active",
      ],
      ...(leftImage
        ? [
            [
              `${leftImage.name} Running on ${leftImage.image}`,
              () => isRunning(leftImage.name, 1, { image: leftImage.image }),
            ] as [string, () => Promise<boolean>],
          ]
        : []),
      [
        "the pool's two members ready to claim again, no set ever bound twice",
        async () => {
          await checkBindings();
          const res = await api200("GET", `${poolsPath}/warm`);
          return res.body?.status?.ready === 2 && res.body.status.replicas === 2;
        },
      ],
      ["ck Running with 2 agents Ready", () => isRunning("ck", 2)],
      [
        "every restore Restored or Failed, every deleted checkpoint gone with its tags",
        async () => {
          const restores = (await api200("GET", restoresPath)).body.items as CocoonRestore[];
          if (restores.some((r) => r.status?.phase !== "Restored" && r.status?.phase !== "Failed"))
            return false;
          for (const name of deletedCheckpoints) if ((await getCheckpoint(name)) !== undefined) return false;
          return true;
        },
      ],
      ...tornDown.map((name): [string, () => Promise<boolean>] => [
        `${name} deleted`,
        async () => (await getSet(name)) === undefined,
      ]),
      [
        "every reclaim record and :hibernate tag dropped",
        async () => {
          for (const name of ["ret", "rel", "mig", "ck"]) {
            const cs = await getSet(name);
            const record = cs?.metadata.annotations?.[ANN_HIBERNATE_RECLAIM];
            if (record !== undefined) {
              left = `${name}'s reclaim record ${record}`;
              return false;
            }
          }
          const vms = [
            vm("ret", 0),
            vm("ret", 1),
            vm("ret", "tb"),
            vm("rel"),
            vm("mig"),
            vm("hib"),
            vm("ck", 0),
            vm("ck", 1),
          ];
          if (leftImage) vms.push(vm(leftImage.name));
          for (const v of [...vms, ...tornDown.map((n) => vm(n))]) {
            if ((await oci.getManifest(oci.repository(v), TAG_HIBERNATE)) !== null) {
              left = `${v}:${TAG_HIBERNATE}`;
              return false;
            }
          }
          return true;
        },
      ],
    ];
    const deadline = Date.now() + convergeMs;
    for (const [what, probe] of convergence) {
      left = undefined;
      const reached = await until(probe, Math.max(1000, deadline - Date.now()), true).catch(() => false);
      if (!reached) {
        checker.violations.push(
          `invariant (d) violated: ${what} not reached within ${convergeMs} ms after the chaos${left ? ` (still there: ${left})` : ""}\n${checker.history()}`,
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
        hibernationFlips,
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
