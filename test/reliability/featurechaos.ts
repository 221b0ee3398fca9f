// The chaos run across features, for test/reliability/features-chaos.test.ts: the operator runs as a
// child process behind an API proxy (scoped to one namespace) and a registry proxy, as in chaos.ts,
// while one seeded schedule acts on the same few sets with every feature at once: a Suspended warm
// pool whose members are claimed, released (a claim re-created under a released claim's name now and
// then), scaled and rolled (a template edit, or a new fromCheckpoint); a few plain sets suspended and
// resumed, checkpointed, restored to their checkpoints and branched from; checkpoints of pool
// members and claimed sets too, restored in place while claims race for them; keep-checkpoints
// prunes; checkpoint and set deletes; and a set created from another's `kubectl get -o yaml` (its
// bookkeeping annotations, plus a hibernated VM of another namespace) and deleted again. Meanwhile
// the operator is SIGKILLed and restarted at random, the API proxy injects conflicts, throttles,
// dropped watches, 410 resumes and lost answers to applied set writes, and the registry proxy
// answers 5xx, 401 or refuses connections for short windows. Guest hooks act throughout: the pool's
// members and some plain sets (and the branches of their checkpoints) name a CocoonGuestPolicy that
// refreshes every clone and wake, quiesces every hibernate and writes each claim's context into the
// guest, so branches, restores, checkpoints, claims and rolls all meet hooks.
// Watched throughout: InvariantChecker's (a)–(c), (e) on the VM record and the operator's registry
// calls; (g) every manifest DELETE the operator sends; (h) every set and claim watch event; (f) the
// tags of each Ready checkpoint while it stays live; (k) the pods of each claim's set, read as the
// claim turns Ready. Once the schedule ends, the faults stop, the operator is left running, and every
// object gets a bounded time to converge; then (i) each one that did not says why, (f) every tag a
// live checkpoint or an unwoken VM needs is in the registry, and (k, l) each Ready claim's and each
// Running policy set's pods show their hooks done for the VMs they run.
// Violations do not stop the run: it reports every one it saw.

import { randomBytes } from "node:crypto";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet, CocoonSetSpec } from "../../src/apis/v1/types.ts";
import type {
  CocoonCheckpoint,
  CocoonClaim,
  CocoonGuestPolicySpec,
  CocoonPool,
  CocoonRestore,
} from "../../src/apis/v1alpha1/types.ts";
import { ANN_FROM_CHECKPOINT, ANN_KEEP_CHECKPOINTS, checkpointTag } from "../../src/checkpoint/keys.ts";
import { ANN_DELETE_VM_NAMES, LABEL_COCOONSET, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import {
  COCOONCHECKPOINTS,
  COCOONCLAIMS,
  COCOONRESTORES,
  COCOONSETS,
  type ResourceType,
} from "../../src/controller/resources.ts";
import { ANN_GUEST_POLICY, GUEST_OWNER_FILE } from "../../src/guest/keys.ts";
import { LABEL_POOL } from "../../src/pool/keys.ts";
import { OciClient, pushSnapshot, type Simulator, startSimulator } from "../env/simulator/index.ts";
import { apiRequest, createNamespace, type TestEnvInfo } from "../env/testenv.ts";
import { checkpointsPath } from "../support/checkpointapi.ts";
import {
  type ApiProxy,
  type RegistryFault,
  type RegistryProxy,
  seededRandom,
  startApiProxy,
  startRegistryProxy,
} from "../support/faultproxy.ts";
import {
  FeatureInvariants,
  guestFindings,
  hooksHold,
  neededTags,
  type Objects,
  setConverged,
  unconverged,
} from "../support/featureinvariants.ts";
import { InvariantChecker } from "../support/invariants.ts";
import { claimsPath, poolsPath } from "../support/poolapi.ts";
import { restoresPath } from "../support/restoreapi.ts";
import { setsPath } from "../support/setapi.ts";
import { OperatorProcess } from "./operatorprocess.ts";

const IMAGE = "ubuntu-dev-base";
const POOL = "warm";
/** The CocoonGuestPolicy the pool's members and some plain sets name. */
const POLICY = "fresh";
/**
 * Each hook is retried, as on a cluster whose exec path drops now and then (a pod exec here once
 * ended without a status during the setup, before any kill): a Fail hook that failed once holds its
 * member, or refuses its hibernate, for FAILED_HOOK_RETRY_MS, longer than the whole run.
 */
const HOOK_RETRIES = { retries: 2, backoffSeconds: 1 };
const GUEST_POLICY: CocoonGuestPolicySpec = {
  refresh: { afterClone: true, afterWake: true },
  hooks: [
    { name: "quiesce", on: ["PreHibernate"], exec: { command: ["sh", "-c", "sync"] }, ...HOOK_RETRIES },
    // The claim's context (its name and parameters) is the hook's stdin: the guest keeps it.
    {
      name: "claim-context",
      on: ["PostClaim"],
      exec: { command: ["sh", "-c", "cat > /etc/claim.json"] },
      ...HOOK_RETRIES,
    },
  ],
};

export interface FeatureChaosOptions {
  env: TestEnvInfo;
  seed: number;
  /** How long the schedule acts, ms. */
  chaosMs: number;
  /** How long the objects get to converge once it stops, ms. */
  convergeMs: number;
  log?: (line: string) => void;
}

export interface FeatureChaosResult {
  seed: number;
  namespace: string;
  checker: InvariantChecker;
  features: FeatureInvariants;
  /** Actions taken, by kind. */
  actions: Record<string, number>;
  /** Milestones objects reached (a checkpoint Ready, a restore Restored or Failed with its reason, ...). */
  outcomes: Record<string, number>;
  /** The guest commands the simulated VMs ran, by what they were and how they ended. */
  guestExecs: Record<string, number>;
  kills: number;
  unexpectedExits: number;
  registryFaults: number;
  apiCounts: ApiProxy["counts"];
  /** Objects that had not converged when the checks ran (explained or not). */
  leftUnconverged: string[];
  convergedAfterMs: number | undefined;
}

/**
 * Whether a write's answer is one the schedule expects: refusals of a racing action (404, 409), of
 * the CRD's validation (422) and of an admission policy (403: a set copied with the operator's
 * bookkeeping annotations).
 */
const accepted = (status: number) => status < 300 || [403, 404, 409, 422].includes(status);

export async function runFeatureChaos(opts: FeatureChaosOptions): Promise<FeatureChaosResult> {
  const { env, seed } = opts;
  const log = opts.log ?? (() => {});
  const random = seededRandom(seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
  const pick = <T>(items: readonly T[]): T | undefined =>
    items.length === 0 ? undefined : items[Math.floor(random() * items.length)];
  const suffix = randomBytes(3).toString("hex");
  const nodePool = `fchaos-${suffix}`;
  const ns = await createNamespace(env, "fchaos");
  // A namespace the operator never sees, whose tenant has a hibernated VM in the shared registry.
  const neighbour = `fchaos-other-${suffix}`;
  const neighbourVm = `vk-${neighbour}-prod-0`;
  const oci = new OciClient(env.registry);
  const watcher = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
  const watchAbort = new AbortController();
  let sim: Simulator | undefined;
  let registry: RegistryProxy | undefined;
  let api: ApiProxy | undefined;
  let operator: OperatorProcess | undefined;
  let watching: Promise<unknown> | undefined;
  try {
    sim = await startSimulator({
      ...env,
      nodes: [0, 1, 2].map((i) => ({ name: `fchaos-${i}-${suffix}`, pool: nodePool })),
    });
    registry = await startRegistryProxy(env.registry);
    api = await startApiProxy(env, {
      namespace: ns,
      seed: seed ^ 0x5eed,
      faults: { conflict: 0.05, throttle: 0.01, dropWatch: 0.3, goneOnResume: 0.2, lostReply: 0.1 },
    });
    // The pool deletes members on its own (roll, scale-down): the run learns of it from its watch.
    const checker = new InvariantChecker({ record: sim.record, registry, teardownGraceMs: 3000 });
    const features = new FeatureInvariants(checker, ns);
    registry.onRequest((r) => features.observeRegistry(r));
    const op = new OperatorProcess({ kubeconfigPath: api.kubeconfigPath, registry: registry.host });
    operator = op;
    const reg = registry;
    const apiProxy = api;

    const note = (text: string) => checker.note(text);
    const write = async (what: string, method: string, path: string, body?: unknown, type?: string) => {
      const res = await apiRequest(env, method, path, body, type);
      note(`${what} → ${res.status}`);
      if (!accepted(res.status)) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res;
    };
    const list = async <T>(path: string): Promise<T[]> => {
      const res = await apiRequest(env, "GET", path);
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.items as T[];
    };
    const readAll = async (): Promise<Objects> => ({
      sets: await list<CocoonSet>(setsPath(ns)),
      pools: await list<CocoonPool>(poolsPath(ns)),
      claims: await list<CocoonClaim>(claimsPath(ns)),
      restores: await list<CocoonRestore>(restoresPath(ns)),
      checkpoints: await list<CocoonCheckpoint>(checkpointsPath(ns)),
    });

    // Every version of every set and claim, from watches straight to the API server (no faults). A
    // set seen being deleted is in teardown: its VMs may go.
    const tornDown = new Set<string>();
    const declareTeardown = (name: string) => {
      if (tornDown.has(name)) return;
      tornDown.add(name);
      checker.teardown(`vk-${ns}-${name}-`);
    };
    const onSet = (cs: CocoonSet) => {
      features.observeSet(cs);
      if (cs.metadata.deletionTimestamp) declareTeardown(cs.metadata.name ?? "");
    };
    /** `on` learns whether the object came from a list (a change it shows may be older than the list). */
    const follow = async <T>(rt: ResourceType, on: (obj: T, listed: boolean) => void) => {
      while (!watchAbort.signal.aborted) {
        try {
          const listed = await watcher.list<T>(rt, ns);
          for (const obj of listed.items) on(obj, true);
          for await (const ev of watcher.watch<T>(rt, ns, {
            resourceVersion: listed.resourceVersion,
            timeoutSeconds: 240,
            signal: watchAbort.signal,
          })) {
            if (ev.type === "ADDED" || ev.type === "MODIFIED" || ev.type === "DELETED") on(ev.object, false);
          }
        } catch {
          if (!watchAbort.signal.aborted) await sleep(200);
        }
      }
    };
    // The operator sends a DELETE only after it saw the set or checkpoint being deleted; the watches
    // above may not have shown that yet. Each DELETE waits until the API server has been asked: a
    // set of the repository being deleted (or gone) is in teardown, and every checkpoint being
    // deleted may lose its tags.
    reg.gateDeletes(async (path) => {
      const repo = /^\/v2\/(.+)\/manifests\//.exec(path)?.[1] ?? "";
      const set = features.ownerOf(repo);
      if (set !== undefined) {
        const res = await apiRequest(env, "GET", `${setsPath(ns)}/${set}`);
        if (res.status === 404) declareTeardown(set);
        else if (res.status === 200) onSet(res.body as CocoonSet);
      }
      for (const ck of await list<CocoonCheckpoint>(checkpointsPath(ns))) onCheckpoint(ck);
    });
    // Milestones each object reached, once: what the run exercised.
    const outcomes: Record<string, number> = {};
    const reached = new Set<string>();
    const milestone = (uid: string | undefined, what: string, name?: string) => {
      if (reached.has(`${uid}/${what}`)) return;
      reached.add(`${uid}/${what}`);
      outcomes[what] = (outcomes[what] ?? 0) + 1;
      if (name !== undefined) note(`${what}: ${name}`);
    };
    const deletedCheckpoints = new Set<string>();
    /** Checkpoints last seen Ready and not being deleted: what a user would branch or roll a pool to. */
    const readyCheckpoints = new Set<string>();
    // A checkpoint being deleted, by the schedule or by a keep-checkpoints prune, may lose its tags.
    const onCheckpoint = (ck: CocoonCheckpoint) => {
      const name = ck.metadata.name ?? "";
      if (ck.status?.phase === "Ready") {
        milestone(ck.metadata.uid, "checkpoint Ready", `${name} of ${ck.spec.cocoonSetRef.name}`);
        if (!ck.metadata.deletionTimestamp) readyCheckpoints.add(name);
      }
      if (ck.metadata.deletionTimestamp) readyCheckpoints.delete(name);
      if (!ck.metadata.deletionTimestamp || deletedCheckpoints.has(name)) return;
      deletedCheckpoints.add(name);
      checker.checkpointDeleted(name);
    };
    /** A set's pods as the API server has them now ([] when it cannot say). */
    const podsOfSet = async (set: string): Promise<Pod[]> => {
      const selector = encodeURIComponent(`${LABEL_COCOONSET}=${set}`);
      const res = await apiRequest(env, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${selector}`);
      return res.status === 200 ? (res.body.items as Pod[]) : [];
    };
    /** Claim uids last seen Ready, to see each turn Ready in a watch event. */
    const claimsReady = new Set<string>();
    /** (k) checks under way, awaited before the run returns. */
    const claimChecks: Promise<void>[] = [];
    const onClaim = (claim: CocoonClaim, listed: boolean) => {
      features.observeClaim(claim);
      const uid = claim.metadata.uid ?? "";
      const ready = claim.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
      if (!ready) {
        claimsReady.delete(uid);
        return;
      }
      milestone(claim.metadata.uid, "claim Ready");
      if (claimsReady.has(uid)) return;
      claimsReady.add(uid);
      // The write that turned it Ready is this version only when a watch event shows it: a list may
      // show a later one.
      const set = claim.status?.cocoonSetRef?.name;
      if (listed || set === undefined || claim.metadata.deletionTimestamp) return;
      claimChecks.push(
        podsOfSet(set).then(
          (pods) => features.checkClaimTurnedReady(claim, pods),
          () => undefined,
        ),
      );
    };
    const onRestore = (restore: CocoonRestore) => {
      const phase = restore.status?.phase;
      const name = `${restore.metadata.name} of ${restore.spec.cocoonSetRef.name} to ${restore.spec.checkpointRef.name}`;
      if (phase === "Restored") milestone(restore.metadata.uid, "restore Restored", name);
      if (phase === "Failed")
        milestone(
          restore.metadata.uid,
          `restore Failed ${restore.status?.reason}`,
          `${name}: ${restore.status?.message}`,
        );
    };
    watching = Promise.all([
      follow<CocoonSet>(COCOONSETS, (cs) => {
        onSet(cs);
        if (cs.status?.conditions?.some((c) => c.type === "Branched" && c.status === "True"))
          milestone(cs.metadata.uid, "set Branched");
        if (cs.metadata.ownerReferences?.some((o) => o.kind === "CocoonClaim"))
          milestone(cs.metadata.uid, "set bound");
      }),
      follow<CocoonClaim>(COCOONCLAIMS, onClaim),
      follow<CocoonCheckpoint>(COCOONCHECKPOINTS, onCheckpoint),
      follow<CocoonRestore>(COCOONRESTORES, onRestore),
    ]);

    // The neighbour's hibernated VM: a snapshot under its name that no operator here may ever touch.
    const neighbourDigest = (
      await pushSnapshot(oci, {
        vmName: neighbourVm,
        vmID: `neighbour-${suffix}`,
        tag: TAG_HIBERNATE,
        baseImage: IMAGE,
        fromNode: "elsewhere",
      })
    ).digest;
    note(`planted ${neighbourVm}:${TAG_HIBERNATE} (${neighbourDigest}) of namespace ${neighbour}`);

    // What the schedule acts on. Names are never reused except claims' (on purpose), so a teardown
    // declared for a set never covers a later one.
    const specs = new Map<string, Partial<CocoonSetSpec>>();
    const plain: string[] = [];
    const branches: string[] = [];
    const claims: string[] = [];
    const released: string[] = [];
    const checkpoints: { name: string; set: string }[] = [];
    const branchOf = new Map<string, string>();
    const namedWhileDeleting = new Set<string>();
    /** Sets a checkpoint flow suspended and will resume: the schedule leaves their suspend alone. */
    const busy = new Set<string>();
    const flows: Promise<void>[] = [];
    let flowError: Error | undefined;
    let stopping = false;
    const actions: Record<string, number> = {};
    let counter = 0;
    const next = (prefix: string) => `${prefix}${counter++}`;
    const MAIN_ONLY: Partial<CocoonSetSpec> = { agent: { image: IMAGE, replicas: 0, mode: "clone" } };
    const WITH_SUB: Partial<CocoonSetSpec> = { agent: { image: IMAGE, replicas: 1, mode: "clone" } };
    const POOL_SPEC: Partial<CocoonSetSpec> = { nodePool, ...MAIN_ONLY };
    /** Plain sets and branches that name the guest policy (the pool's members all do). */
    const hooked = new Set<string>();
    const namesPolicy = (set: string) => hooked.has(set) || set.startsWith(`${POOL}-`);
    const policyOf = (set: string): Record<string, string> =>
      hooked.has(set) ? { [ANN_GUEST_POLICY]: POLICY } : {};
    const createSet = async (
      name: string,
      spec: Partial<CocoonSetSpec>,
      annotations?: Record<string, string>,
    ) => {
      specs.set(name, spec);
      await write(
        `create set ${name}${annotations ? ` ${JSON.stringify(annotations)}` : ""}`,
        "POST",
        setsPath(ns),
        {
          apiVersion: "cocoonset.cocoonstack.io/v1",
          kind: "CocoonSet",
          metadata: { name, namespace: ns, ...(annotations ? { annotations } : {}) },
          spec: { nodePool, ...spec },
        },
      );
    };
    const poolMembers = async () =>
      (await list<CocoonSet>(`${setsPath(ns)}?labelSelector=${encodeURIComponent(`${LABEL_POOL}=${POOL}`)}`))
        .filter((cs) => !cs.metadata.deletionTimestamp)
        .map((cs) => cs.metadata.name ?? "");
    const claimedSets = async () =>
      (await list<CocoonClaim>(claimsPath(ns)))
        .map((c) => c.status?.cocoonSetRef?.name)
        .filter((n): n is string => n !== undefined);
    /** Mostly a Ready checkpoint, as a user would pick; now and then any, racing its copy or delete. */
    const pickCheckpoint = () => {
      const ready = checkpoints.filter((ck) => readyCheckpoints.has(ck.name));
      return random() < 0.85 && ready.length > 0 ? pick(ready) : pick(checkpoints);
    };
    const specOf = (set: string) => specs.get(set) ?? (set.startsWith(`${POOL}-`) ? MAIN_ONLY : undefined);

    /** The phase of a set settled at its generation (Running with all ready, or Suspended as asked). */
    const setPhase = async (name: string) => {
      const res = await apiRequest(env, "GET", `${setsPath(ns)}/${name}`);
      return res.status === 200 && setConverged(res.body as CocoonSet)
        ? (res.body as CocoonSet).status?.phase
        : undefined;
    };
    const restoreDone = async (name: string) => {
      const res = await apiRequest(env, "GET", `${restoresPath(ns)}/${name}`);
      const phase = res.status === 200 ? (res.body as CocoonRestore).status?.phase : "gone";
      return phase === "Restored" || phase === "Failed" || phase === "gone";
    };
    const suspendSet = (set: string, suspend: boolean) =>
      write(`set ${set} suspend=${suspend}`, "PATCH", `${setsPath(ns)}/${set}`, { spec: { suspend } }, MERGE);
    const createCheckpoint = (name: string, set: string) => {
      checkpoints.push({ name, set });
      return write(`checkpoint ${name} of ${set}`, "POST", checkpointsPath(ns), {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonCheckpoint",
        metadata: { name, namespace: ns },
        spec: { cocoonSetRef: { name: set } },
      });
    };
    const createRestore = (name: string, set: string, checkpoint: string) =>
      write(`restore ${name} of ${set} to ${checkpoint}`, "POST", restoresPath(ns), {
        apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
        kind: "CocoonRestore",
        metadata: { name, namespace: ns },
        spec: { cocoonSetRef: { name: set }, checkpointRef: { name: checkpoint } },
      });
    /** Runs beside the schedule, holding the set's suspend for itself, as a user's script would. */
    const flow = (set: string, steps: () => Promise<void>) => {
      busy.add(set);
      flows.push(
        steps()
          .catch((err: Error) => {
            flowError ??= err;
          })
          .finally(() => busy.delete(set)),
      );
    };

    const schedule: [string, number, () => Promise<boolean | undefined>][] = [
      [
        "suspend-or-resume",
        5,
        async () => {
          const name = pick([...plain, ...branches].filter((set) => !busy.has(set)));
          if (!name) return false;
          const res = await apiRequest(env, "GET", `${setsPath(ns)}/${name}`);
          const suspend = res.status === 200 ? res.body.spec.suspend !== true : true;
          await write(
            `set ${name} suspend=${suspend}`,
            "PATCH",
            `${setsPath(ns)}/${name}`,
            { spec: { suspend } },
            MERGE,
          );
        },
      ],
      [
        "checkpoint",
        4,
        async () => {
          const set = pick([
            ...plain,
            ...plain,
            ...branches,
            ...(await poolMembers()),
            ...(await claimedSets()),
          ]);
          if (!set) return false;
          const name = next("k");
          await createCheckpoint(name, set);
          // A plain set or branch is usually suspended for it, and resumed once the checkpoint is
          // Ready, as `kubectl cocoon checkpoint --wait` does, while the schedule goes on (a pool
          // member already is suspended).
          if ((plain.includes(set) || branches.includes(set)) && !busy.has(set) && random() < 0.7) {
            flow(set, async () => {
              await suspendSet(set, true);
              await until(async () => readyCheckpoints.has(name) || stopping, 20_000);
              await suspendSet(set, false);
            });
          }
        },
      ],
      [
        "restore",
        4,
        async () => {
          // Mostly a Ready checkpoint of a set that is still there, as a user would restore.
          const live = new Set([...plain, ...branches, ...(await claimedSets()), ...(await poolMembers())]);
          const usable = checkpoints.filter((c) => readyCheckpoints.has(c.name) && live.has(c.set));
          const ck = random() < 0.85 ? pick(usable) : pick(checkpoints);
          if (!ck) return false;
          const ownBranches = branches.filter((b) => branchOf.get(b) === ck.name);
          const target = pick([ck.set, ...ownBranches]) ?? ck.set;
          await createRestore(next("r"), target, ck.name);
        },
      ],
      [
        "branch",
        3,
        async () => {
          const ck = pickCheckpoint();
          const spec = ck && specOf(ck.set);
          if (!ck || !spec || branches.length >= 3) return false;
          const name = next("br");
          branches.push(name);
          branchOf.set(name, ck.name);
          // A branch of a set that names the policy names it too: its clones are refreshed.
          if (namesPolicy(ck.set)) hooked.add(name);
          await createSet(name, spec, { [ANN_FROM_CHECKPOINT]: ck.name, ...policyOf(name) });
        },
      ],
      [
        "claim",
        4,
        async () => {
          if (claims.length >= 3) return false;
          // Now and then a claim comes back under a released claim's name.
          const again = random() < 0.3 ? released.pop() : undefined;
          const name = again ?? next("cl");
          claims.push(name);
          await write(`claim ${name}${again ? " (re-created)" : ""}`, "POST", claimsPath(ns), {
            apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
            kind: "CocoonClaim",
            metadata: { name, namespace: ns },
            // Its PostClaim hook gets them on stdin.
            spec: { poolRef: { name: POOL }, parameters: { user: name } },
          });
        },
      ],
      [
        "release",
        3,
        async () => {
          const name = pick(claims);
          if (!name) return false;
          claims.splice(claims.indexOf(name), 1);
          released.push(name);
          const claim = await apiRequest(env, "GET", `${claimsPath(ns)}/${name}`);
          const bound =
            claim.status === 200 ? (claim.body as CocoonClaim).status?.cocoonSetRef?.name : undefined;
          if (bound !== undefined) declareTeardown(bound);
          await write(`release claim ${name}`, "DELETE", `${claimsPath(ns)}/${name}`);
        },
      ],
      [
        "scale",
        2,
        async () => {
          const replicas = between(1, 4);
          await write(
            `scale pool to ${replicas}`,
            "PATCH",
            `${poolsPath(ns)}/${POOL}/scale`,
            { spec: { replicas } },
            MERGE,
          );
        },
      ],
      [
        "roll",
        2,
        async () => {
          const rev = next("rev");
          const ready = checkpoints.filter((c) => readyCheckpoints.has(c.name));
          const ck = random() < 0.4 ? pick(ready) : undefined;
          const fromCheckpoint = ck === undefined ? null : ck.name;
          await write(
            `roll pool: template rev ${rev}, fromCheckpoint ${fromCheckpoint}`,
            "PATCH",
            `${poolsPath(ns)}/${POOL}`,
            { spec: { fromCheckpoint, template: { metadata: { labels: { rev } } } } },
            MERGE,
          );
          // Named after its delete began (a prune the watch had not shown yet): not the pool's to keep.
          if (ck !== undefined) {
            const res = await apiRequest(env, "GET", `${checkpointsPath(ns)}/${ck.name}`);
            if (res.status !== 200 || res.body.metadata.deletionTimestamp) namedWhileDeleting.add(ck.name);
          }
        },
      ],
      [
        "delete-set",
        2,
        async () => {
          const name = pick(
            [...(plain.length > 1 ? plain : []), ...branches].filter((set) => !busy.has(set)),
          );
          if (!name) return false;
          for (const from of [plain, branches]) if (from.includes(name)) from.splice(from.indexOf(name), 1);
          declareTeardown(name);
          await write(`delete set ${name}`, "DELETE", `${setsPath(ns)}/${name}`);
        },
      ],
      [
        "create-set",
        2,
        async () => {
          if (plain.length >= 3) return false;
          const name = next("p");
          plain.push(name);
          const spec = random() < 0.5 ? MAIN_ONLY : WITH_SUB;
          if (random() < 0.5) hooked.add(name);
          await createSet(name, spec, hooked.has(name) ? policyOf(name) : undefined);
        },
      ],
      [
        "prune",
        1,
        async () => {
          const set = pick([...plain, ...branches, ...(await claimedSets())]);
          if (!set) return false;
          const keep = random() < 0.7 ? "1" : null;
          await write(
            `set ${set} keep-checkpoints=${keep}`,
            "PATCH",
            `${setsPath(ns)}/${set}`,
            { metadata: { annotations: { [ANN_KEEP_CHECKPOINTS]: keep } } },
            MERGE,
          );
        },
      ],
      [
        "delete-checkpoint",
        1,
        async () => {
          const ck = pick(checkpoints);
          if (!ck) return false;
          checkpoints.splice(checkpoints.indexOf(ck), 1);
          deletedCheckpoints.add(ck.name);
          checker.checkpointDeleted(ck.name);
          await write(`delete checkpoint ${ck.name}`, "DELETE", `${checkpointsPath(ns)}/${ck.name}`);
        },
      ],
      [
        // Restore a suspended set, checkpoint it, restore it to that new checkpoint, resume it: the
        // second restore's copy may share the new checkpoint's manifest.
        "restore-chain",
        2,
        async () => {
          const first = pick(
            checkpoints.filter(
              (c) => plain.includes(c.set) && !busy.has(c.set) && readyCheckpoints.has(c.name),
            ),
          );
          if (!first) return false;
          const set = first.set;
          const [r1, k, r2] = [next("r"), next("k"), next("r")];
          flow(set, async () => {
            await suspendSet(set, true);
            await until(async () => (await setPhase(set)) === "Suspended" || stopping, 15_000);
            await createRestore(r1, set, first.name);
            await until(async () => (await restoreDone(r1)) || stopping, 15_000);
            await createCheckpoint(k, set);
            await until(async () => readyCheckpoints.has(k) || stopping, 15_000);
            await createRestore(r2, set, k);
            await until(async () => (await restoreDone(r2)) || stopping, 15_000);
            await suspendSet(set, false);
          });
        },
      ],
      [
        "copy-set",
        1,
        async () => {
          // `kubectl get -o yaml | sed s/name/new/ | kubectl create`: the source's annotations come along.
          const source = pick([...plain, ...(await claimedSets())]);
          if (!source) return false;
          const res = await apiRequest(env, "GET", `${setsPath(ns)}/${source}`);
          if (res.status !== 200) return false;
          const copied = res.body as CocoonSet;
          const annotations = { ...(copied.metadata.annotations ?? {}) };
          const names = annotations[ANN_DELETE_VM_NAMES];
          annotations[ANN_DELETE_VM_NAMES] = names ? `${names},${neighbourVm}` : neighbourVm;
          const name = next("cp");
          await createSet(name, { ...copied.spec, suspend: true }, annotations);
          await sleep(between(300, 2500));
          declareTeardown(name);
          await write(`delete set ${name}`, "DELETE", `${setsPath(ns)}/${name}`);
        },
      ],
    ];
    const totalWeight = schedule.reduce((sum, [, w]) => sum + w, 0);
    // Every kind once first (a checkpoint and a claim leading, so that the rest have something to
    // act on), in a seeded order; then by weight.
    const leading = (kind: string) => kind === "checkpoint" || kind === "claim";
    const opening = [
      ...schedule.filter(([kind]) => leading(kind)),
      ...schedule.filter(([kind]) => !leading(kind)).sort(() => random() - 0.5),
    ];
    const chooseAction = (step: number) => {
      const opened = opening[step];
      if (opened !== undefined) return opened;
      let r = random() * totalWeight;
      for (const entry of schedule) {
        r -= entry[1];
        if (r < 0) return entry;
      }
      return schedule[0] as (typeof schedule)[number];
    };

    log(`features-chaos: seed=${seed} namespace=${ns}`);
    op.start();
    // The starting objects: the guest policy, a Suspended pool of two whose members name it, and two
    // plain sets Running that name it too.
    await write(`create guest policy ${POLICY}`, "POST", guestPoliciesPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonGuestPolicy",
      metadata: { name: POLICY, namespace: ns },
      spec: GUEST_POLICY,
    });
    note(`create pool ${POOL} (Suspended, 2 members)`);
    await write(`create pool ${POOL}`, "POST", poolsPath(ns), {
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonPool",
      metadata: { name: POOL, namespace: ns },
      spec: {
        replicas: 2,
        warmth: "Suspended",
        template: { metadata: { annotations: { [ANN_GUEST_POLICY]: POLICY } }, spec: POOL_SPEC },
      },
    });
    for (const spec of [MAIN_ONLY, WITH_SUB]) {
      const name = next("p");
      plain.push(name);
      hooked.add(name);
      await createSet(name, spec, policyOf(name));
    }
    // Before the faults (bounded): the pool filled, both sets Running, and a first checkpoint Ready,
    // so that the schedule's restores, branches and rolls have something to act on from the start.
    const poolReady = async () => {
      const res = await apiRequest(env, "GET", `${poolsPath(ns)}/${POOL}`);
      return res.status === 200 && res.body.status?.ready === 2;
    };
    const [mainOnly = "", withSub = ""] = plain;
    const ready = await until(
      async () =>
        (await poolReady()) &&
        (await setPhase(mainOnly)) === "Running" &&
        (await setPhase(withSub)) === "Running",
      SETUP_MS,
    );
    const k = next("k");
    await suspendSet(mainOnly, true);
    await until(async () => (await setPhase(mainOnly)) === "Suspended", SETUP_MS);
    await createCheckpoint(k, mainOnly);
    const first = await until(async () => readyCheckpoints.has(k), SETUP_MS);
    await suspendSet(mainOnly, false);
    log(
      `features-chaos: set up (pool and sets ${ready ? "ready" : "NOT ready"}, ${k} ${first ? "Ready" : "NOT Ready"})`,
    );

    // The faults, each on its own seeded stream so the schedule's choices do not depend on them.
    const faultRandom = seededRandom(seed ^ 0xfa17);
    const faultBetween = (lo: number, hi: number) => lo + Math.floor(faultRandom() * (hi - lo));
    const killer = (async () => {
      while (!stopping) {
        await sleep(faultBetween(4000, 10_000));
        if (stopping) break;
        await op.kill();
        note(`SIGKILL operator (kill ${op.kills})`);
        op.start();
      }
    })();
    let registryFaults = 0;
    const REGISTRY_FAULTS: RegistryFault[] = ["5xx", "401", "refused"];
    const registryFaulter = (async () => {
      while (!stopping) {
        await sleep(faultBetween(4000, 9000));
        if (stopping) break;
        const kind = REGISTRY_FAULTS[Math.floor(faultRandom() * REGISTRY_FAULTS.length)] ?? "5xx";
        note(`registry fault ${kind}`);
        registryFaults++;
        await reg.setFault(kind);
        await sleep(faultBetween(400, 2000));
        await reg.setFault("none");
        note("registry back");
      }
    })();
    // (f) while the run goes on: a Ready checkpoint's tags exist as long as it is not being deleted.
    // Read before and after the probes: a checkpoint live (same uid, no deletion) at both was live
    // in between, so a tag missing then was removed from a live checkpoint.
    /** Each live checkpoint's tag found missing, once. */
    const lostTags = new Set<string>();
    const tagWatch = (async () => {
      while (!stopping) {
        await sleep(2000);
        const before = await list<CocoonCheckpoint>(checkpointsPath(ns)).catch(() => []);
        const missing: { ck: CocoonCheckpoint; vm: string; digest: string | undefined }[] = [];
        for (const ck of before) {
          if (ck.status?.phase !== "Ready" || ck.metadata.deletionTimestamp) continue;
          for (const m of ck.status.members ?? []) {
            if (!m.digest) continue;
            const found = await oci.getManifest(
              oci.repository(m.vmName),
              checkpointTag(ck.metadata.name ?? ""),
            );
            if (found?.digest !== m.digest) missing.push({ ck, vm: m.vmName, digest: found?.digest });
          }
        }
        if (missing.length === 0) continue;
        const after = await list<CocoonCheckpoint>(checkpointsPath(ns)).catch(() => undefined);
        for (const { ck, vm, digest } of missing) {
          const still = after?.find((c) => c.metadata.uid === ck.metadata.uid);
          if (still === undefined || still.metadata.deletionTimestamp) continue;
          if (lostTags.has(`${ck.metadata.uid}/${vm}`)) continue;
          lostTags.add(`${ck.metadata.uid}/${vm}`);
          checker.flag(
            "f",
            vm,
            `${vm}:${checkpointTag(ck.metadata.name ?? "")} ${digest ? `names ${digest}` : "is gone"} while CocoonCheckpoint ${ck.metadata.name} is Ready and not being deleted (it recorded ${ck.status?.members?.find((m) => m.vmName === vm)?.digest})`,
          );
        }
      }
    })();

    const end = Date.now() + opts.chaosMs;
    let step = 0;
    while (Date.now() < end) {
      const [kind, , act] = chooseAction(step);
      note(`step ${step++}: ${kind}`);
      try {
        if ((await act()) !== false) actions[kind] = (actions[kind] ?? 0) + 1;
      } catch (err) {
        note(`step ${kind} failed: ${(err as Error).message}`);
        throw err;
      }
      await sleep(between(300, 1800));
    }
    stopping = true;
    await Promise.all([killer, registryFaulter, tagWatch, ...flows]);
    if (flowError !== undefined) throw flowError;
    apiProxy.faults = { conflict: 0, throttle: 0, dropWatch: 0, goneOnResume: 0, lostReply: 0 };
    await reg.setFault("none");
    if (!op.running) op.start();
    note("chaos over: converging");
    log(`features-chaos: schedule done (${JSON.stringify(actions)}), ${op.kills} kills; converging`);

    // Converged, or every object still moving says why, three polls in a row.
    const started = Date.now();
    let convergedAfterMs: number | undefined;
    let calm = 0;
    let objects = await readAll();
    while (Date.now() - started < opts.convergeMs) {
      objects = await readAll();
      const left = unconverged(objects);
      if (left.length === 0) {
        convergedAfterMs = Date.now() - started;
        break;
      }
      calm = left.every((u) => u.reasons.length > 0) ? calm + 1 : 0;
      if (calm >= 3) break;
      await sleep(1000);
    }
    // (k, l): the hooks of what converged are done for the VMs it runs. A finding is kept only when a
    // second read a little later shows the same VM still lacking: a status read just before a wake or
    // a restore may still say Running for the VM it replaced.
    /** The uids of the pods judged (a Ready claim's, a Running policy set's, whose hooks hold them). */
    const judged = new Set<string>();
    const findGuest = async (from: Objects) => {
      const pods = new Map<string, Pod[]>();
      for (const set of from.sets)
        pods.set(set.metadata.name ?? "", await podsOfSet(set.metadata.name ?? ""));
      return guestFindings(from, (set) => {
        const read = pods.get(set) ?? [];
        for (const pod of read) if (hooksHold(pod)) judged.add(pod.metadata.uid ?? "");
        return read;
      });
    };
    const firstFindings = await findGuest(objects);
    features.counts.guestPodsAtConvergence = judged.size;
    if (firstFindings.length > 0) {
      await sleep(2000);
      const seen = new Set(firstFindings.map((f) => f.key));
      features.flagGuest((await findGuest(await readAll())).filter((f) => seen.has(f.key)));
    }
    await Promise.all(claimChecks);
    await checker.settled();
    const left = unconverged(objects);
    note(`after ${Date.now() - started} ms: ${left.length} not converged`);
    features.checkReasons(left);
    const needed = neededTags(objects, namedWhileDeleting);
    needed.push({
      vmName: neighbourVm,
      tag: TAG_HIBERNATE,
      digest: neighbourDigest,
      neededBy: `a hibernated VM of namespace ${neighbour}`,
    });
    await features.checkTags(
      needed,
      async (vm, tag) => (await oci.getManifest(oci.repository(vm), tag))?.digest,
    );

    return {
      seed,
      namespace: ns,
      checker,
      features,
      actions,
      outcomes,
      guestExecs: guestExecs(sim.record.events({ kind: "exec" }).map((e) => e.detail ?? "")),
      kills: op.kills,
      unexpectedExits: op.unexpectedExits.length,
      registryFaults,
      apiCounts: { ...apiProxy.counts },
      leftUnconverged: left.map(
        (u) =>
          `${u.kind} ${u.name}: wanted ${u.wanted}, shows ${u.shows}; ${u.reasons.join("; ") || "no reason"}`,
      ),
      convergedAfterMs,
    };
  } finally {
    watchAbort.abort();
    await watching?.catch(() => undefined);
    watcher.close();
    await operator?.stop();
    await api?.stop();
    await registry?.stop();
    await sim?.stop({ removeNodes: true });
  }
}

const MERGE = "application/merge-patch+json";
const guestPoliciesPath = (ns: string) =>
  `/apis/cocoonset.cocoonstack.io/v1alpha1/namespaces/${ns}/cocoonguestpolicies`;
/** Each wait of the setup, before any fault. */
const SETUP_MS = 20_000;

/** Guest commands by kind (the refresh, the owner mark, each hook) and ending ("exit 0", "exit 7", ...). */
function guestExecs(details: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const detail of details) {
    const at = detail.lastIndexOf(": ");
    const [command, ending] = [detail.slice(0, at), detail.slice(at + 2)];
    if (ending === "started") continue;
    const kind = command.includes("date -s")
      ? "refresh"
      : command.includes(GUEST_OWNER_FILE)
        ? "owner"
        : command.includes("claim.json")
          ? "claim"
          : command.includes("sync")
            ? "quiesce"
            : "other";
    out[`${kind} ${ending}`] = (out[`${kind} ${ending}`] ?? 0) + 1;
  }
  return out;
}

/** Polls `probe` every 200 ms until it holds or `timeoutMs` passes; whether it held. */
async function until(probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await sleep(200);
  }
  return false;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
