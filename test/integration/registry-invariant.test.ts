// The registry invariant, property-based, on the real docker-registry (distribution 2.8, which
// deletes only by digest): random sequences of what the operator does to snapshot tags — suspends
// (vk-cocoon's pushes), checkpoint copies, restore and branch copies, wakes (each of the three ways
// a `:hibernate` is dropped), set teardowns, checkpoint deletes and keep-checkpoints prunes — run
// through the operator's own registry-level functions. A model keeps which tag each live object
// needs. After every step: every needed tag names the manifest it was given, no other tag exists,
// and no two tags share a digest unless a write of an operator before write stamps made them so
// (a registry upgraded in place holds such pairs; the delete rule must keep both).
//
// A failing run prints the REGISTRY_INVARIANT_SEED=… line that replays its sequences.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { it } from "node:test";
import fc from "fast-check";
import type { CocoonCheckpoint } from "../../src/apis/v1alpha1/types.ts";
import { copyToHibernate, writeCheckpointTag } from "../../src/checkpoint/copy.ts";
import { checkpointTag } from "../../src/checkpoint/keys.ts";
import { checkpointsToPrune } from "../../src/checkpoint/prune.ts";
import { TAG_HIBERNATE, TAG_LATEST } from "../../src/contract/keys.ts";
import { createRegistryClient, type RegistryClient } from "../../src/registry/index.ts";
import { OciClient, pushSnapshot } from "../env/simulator/index.ts";
import { testEnv } from "../env/testenv.ts";

const env = testEnv();
const oci = new OciClient(env.registry);
const signal = new AbortController().signal;

const SETS = ["a", "b"] as const;
type SetName = (typeof SETS)[number];
const NUM_RUNS = 50;
const MAX_COMMANDS = 40;
const KEEP_CHECKPOINTS = 1;
const SHRINK_LIMIT_MS = 90_000;

interface SetModel {
  /** The digest `:hibernate` must name while the VM has not woken; undefined once dropped. */
  hibernate?: string;
  /** Written as an operator before write stamps wrote it: the checkpoint tag's own bytes. */
  legacyHibernate: boolean;
  suspended: boolean;
}

interface CheckpointModel {
  name: string;
  uid: string;
  vm: string;
  set: SetName;
  digest: string;
  /** Creation order, as keep-checkpoints reads creation times. */
  created: number;
}

interface Model {
  ns: string;
  /** What each step of this run did, in order (the report of a failure). */
  done: string[];
  sets: Map<SetName, SetModel>;
  checkpoints: Map<string, CheckpointModel>;
  /** Names, uids and creation times of this run. */
  seq: number;
}

interface Real {
  registry: RegistryClient;
}

const vmOf = (m: Readonly<Model>, set: SetName) => `vk-${m.ns}-${set}-0`;

/** After every step: each repository holds exactly the tags the model needs, at their digests. */
async function checkInvariant(m: Readonly<Model>, r: Real, step: string): Promise<void> {
  const expected = new Map<string, Map<string, string>>();
  const need = (vm: string, tag: string, digest: string) => {
    const tags = expected.get(vm) ?? new Map<string, string>();
    tags.set(tag, digest);
    expected.set(vm, tags);
  };
  for (const set of SETS) {
    const vm = vmOf(m, set);
    expected.set(vm, expected.get(vm) ?? new Map());
    const hibernate = m.sets.get(set)?.hibernate;
    if (hibernate !== undefined) need(vm, TAG_HIBERNATE, hibernate);
  }
  for (const ck of m.checkpoints.values()) need(ck.vm, checkpointTag(ck.name), ck.digest);
  for (const [vm, tags] of expected) {
    const present = (await r.registry.listTags(vm)).sort();
    assert.deepEqual(present, [...tags.keys()].sort(), `after ${step}: the tags of ${vm}`);
    const byDigest = new Map<string, string[]>();
    for (const [tag, digest] of tags) {
      const head = await r.registry.headManifest(vm, tag);
      assert.equal(head?.digest, digest, `after ${step}: ${vm}:${tag} names its manifest`);
      byDigest.set(digest, [...(byDigest.get(digest) ?? []), tag]);
    }
    const set = SETS.find((s) => vmOf(m, s) === vm);
    const legacy = set !== undefined && m.sets.get(set)?.legacyHibernate === true;
    for (const [digest, sharing] of byDigest) {
      if (sharing.length < 2) continue;
      assert.ok(
        legacy && sharing.length === 2 && sharing.includes(TAG_HIBERNATE),
        `after ${step}: ${vm} tags ${sharing.join(", ")} share ${digest}; each write must have its own`,
      );
    }
  }
}

/**
 * One step of a sequence: a kind and picks, resolved against the model when it runs (the `pick`th of
 * the sets or checkpoints it can apply to), so most generated steps apply. `act` says what it did.
 */
interface StepSpec {
  kind: string;
  picks: readonly number[];
  applies(m: Readonly<Model>): boolean;
  act(m: Model, r: Real): Promise<string>;
}

class Step implements fc.AsyncCommand<Model, Real> {
  readonly spec: StepSpec;
  constructor(spec: StepSpec) {
    this.spec = spec;
  }
  check(m: Readonly<Model>): boolean {
    return this.spec.applies(m);
  }
  async run(m: Model, r: Real): Promise<void> {
    stepsRun.set(this.spec.kind, (stepsRun.get(this.spec.kind) ?? 0) + 1);
    m.seq++;
    m.done.push(await this.spec.act(m, r));
    await checkInvariant(m, r, m.done.join(" → "));
  }
  toString(): string {
    return `${this.spec.kind}(${this.spec.picks.join(", ")})`;
  }
}

function nth<T>(items: readonly T[], pick: number): T | undefined {
  return items.length === 0 ? undefined : items[pick % items.length];
}

const liveSets = (m: Readonly<Model>) => SETS.filter((s) => m.sets.has(s));
const goneSets = (m: Readonly<Model>) => SETS.filter((s) => !m.sets.has(s));
const runningSets = (m: Readonly<Model>) => SETS.filter((s) => m.sets.get(s)?.suspended === false);
const suspendedSets = (m: Readonly<Model>) => SETS.filter((s) => m.sets.get(s)?.suspended === true);
const hibernatedSets = (m: Readonly<Model>) => SETS.filter((s) => m.sets.get(s)?.hibernate !== undefined);
const checkpoints = (m: Readonly<Model>, vm?: string) =>
  [...m.checkpoints.values()].filter((ck) => vm === undefined || ck.vm === vm);
/** Suspended sets with a checkpoint in their own repository. */
const suspendedWithOwnCheckpoint = (m: Readonly<Model>) =>
  suspendedSets(m).filter((s) => checkpoints(m, vmOf(m, s)).length > 0);
const setsWithCheckpoints = (m: Readonly<Model>) =>
  SETS.filter((s) => checkpoints(m).some((ck) => ck.set === s));

function picked<T>(items: readonly T[], pick: number): T {
  const item = nth(items, pick);
  assert.ok(item !== undefined, "a step runs only where it applies");
  return item;
}

/** A new set with no state of its own: its VM runs. */
const create = (pick: number) =>
  new Step({
    kind: "create",
    picks: [pick],
    applies: (m) => goneSets(m).length > 0,
    act: async (m) => {
      const set = picked(goneSets(m), pick);
      m.sets.set(set, { suspended: false, legacyHibernate: false });
      return `create ${set}`;
    },
  });

/** vk-cocoon hibernates a running VM: a snapshot of its own under `:hibernate`. */
const suspend = (pick: number) =>
  new Step({
    kind: "suspend",
    picks: [pick],
    applies: (m) => runningSets(m).length > 0,
    act: async (m) => {
      const set = picked(runningSets(m), pick);
      const pushed = await pushSnapshot(oci, {
        vmName: vmOf(m, set),
        vmID: `vm-${m.seq}`,
        tag: TAG_HIBERNATE,
        baseImage: "img",
        fromNode: "node",
      });
      m.sets.set(set, { suspended: true, hibernate: pushed.digest, legacyHibernate: false });
      return `suspend ${set}`;
    },
  });

/** A CocoonCheckpoint of a suspended set: its `:hibernate` copied to `ckpt-<name>`. */
const checkpoint = (pick: number) =>
  new Step({
    kind: "checkpoint",
    picks: [pick],
    applies: (m) => hibernatedSets(m).length > 0,
    act: async (m, r) => {
      const set = picked(hibernatedSets(m), pick);
      const vm = vmOf(m, set);
      const name = `ck${m.seq}`;
      const uid = `uid-ck-${m.seq}`;
      const source = await r.registry.getManifest(vm, TAG_HIBERNATE, signal);
      const digest = await writeCheckpointTag(r.registry, vm, source, { namespace: m.ns, name, uid }, signal);
      m.checkpoints.set(name, { name, uid, vm, set, digest, created: m.seq });
      return `checkpoint ${set} as ${name}`;
    },
  });

/** The copy of a checkpoint's member into `set`'s `:hibernate` that restores and branches make. */
async function copyInto(m: Model, r: Real, set: SetName, ck: CheckpointModel, writeUid: string) {
  const vm = vmOf(m, set);
  const copy = { member: { role: "main" as const, slot: 0, vmName: ck.vm, digest: ck.digest }, targetVM: vm };
  await copyToHibernate(r.registry, copy, { namespace: m.ns, name: set, uid: writeUid }, signal);
  const head = await r.registry.headManifest(vm, TAG_HIBERNATE, signal);
  assert.ok(head);
  m.sets.set(set, { suspended: true, hibernate: head.digest, legacyHibernate: false });
}

/** A CocoonRestore of a suspended set from one of its own checkpoints: a copy within the repository. */
const restore = (setPick: number, ckPick: number) =>
  new Step({
    kind: "restore",
    picks: [setPick, ckPick],
    applies: (m) => suspendedWithOwnCheckpoint(m).length > 0,
    act: async (m, r) => {
      const set = picked(suspendedWithOwnCheckpoint(m), setPick);
      const ck = picked(checkpoints(m, vmOf(m, set)), ckPick);
      await copyInto(m, r, set, ck, `uid-r-${m.seq}`);
      return `restore ${set} from ${ck.name}`;
    },
  });

/** A CocoonRestore of a suspended set from another set's checkpoint (a branched set's): across repositories. */
const restoreAcross = (setPick: number, ckPick: number) =>
  new Step({
    kind: "restore-across",
    picks: [setPick, ckPick],
    applies: (m) => suspendedSets(m).some((s) => checkpoints(m).some((ck) => ck.vm !== vmOf(m, s))),
    act: async (m, r) => {
      const candidates = suspendedSets(m).filter((s) => checkpoints(m).some((ck) => ck.vm !== vmOf(m, s)));
      const set = picked(candidates, setPick);
      const ck = picked(
        checkpoints(m).filter((c) => c.vm !== vmOf(m, set)),
        ckPick,
      );
      await copyInto(m, r, set, ck, `uid-r-${m.seq}`);
      return `restore ${set} from ${ck.name} across repositories`;
    },
  });

/**
 * A restore as an operator before write stamps wrote it into the checkpoint's own repository: the
 * checkpoint tag's bytes under `:hibernate`, one digest for two tags.
 */
const legacyRestore = (setPick: number, ckPick: number) =>
  new Step({
    kind: "legacy-restore",
    picks: [setPick, ckPick],
    applies: (m) => suspendedWithOwnCheckpoint(m).length > 0,
    act: async (m, r) => {
      const set = picked(suspendedWithOwnCheckpoint(m), setPick);
      const vm = vmOf(m, set);
      const ck = picked(checkpoints(m, vm), ckPick);
      const source = await r.registry.getManifest(vm, ck.digest, signal);
      await r.registry.putManifest(vm, TAG_HIBERNATE, source.raw, source.mediaType, signal);
      m.sets.set(set, { suspended: true, hibernate: ck.digest, legacyHibernate: true });
      return `legacy-restore ${set} from ${ck.name}`;
    },
  });

/** A new set branched from a checkpoint before its first pod (under a torn-down set's name: its repository). */
const branch = (setPick: number, ckPick: number) =>
  new Step({
    kind: "branch",
    picks: [setPick, ckPick],
    applies: (m) => goneSets(m).length > 0 && checkpoints(m).length > 0,
    act: async (m, r) => {
      const set = picked(goneSets(m), setPick);
      const ck = picked(checkpoints(m), ckPick);
      await copyInto(m, r, set, ck, `uid-set-${m.seq}`);
      return `branch ${set} from ${ck.name}`;
    },
  });

const DROPS = ["unsuspend", "imagerule", "hibernation"] as const;

/**
 * A suspended VM wakes and its `:hibernate` is dropped, as one of the three drops does it: the
 * un-suspend's (HEAD, then the tag at that digest), the image rule's (GET, then the tag at that
 * digest), or the wake step's and CocoonHibernation's (probe, then delete what it saw).
 */
const wake = (pick: number, dropPick: number) =>
  new Step({
    kind: "wake",
    picks: [pick, dropPick],
    applies: (m) => suspendedSets(m).length > 0,
    act: async (m, r) => {
      const set = picked(suspendedSets(m), pick);
      const drop = picked(DROPS, dropPick);
      const vm = vmOf(m, set);
      if (drop === "unsuspend") {
        const seen = await r.registry.headManifest(vm, TAG_HIBERNATE, signal);
        if (seen !== null) await r.registry.deleteTagAt(vm, TAG_HIBERNATE, seen.digest, signal);
      } else if (drop === "imagerule") {
        const read = await r.registry.getSnapshot(vm, TAG_HIBERNATE, signal);
        if (read !== null) await r.registry.deleteTagAt(vm, TAG_HIBERNATE, read.digest, signal);
      } else {
        await r.registry.deleteIfPresent(vm, TAG_HIBERNATE, signal);
      }
      m.sets.set(set, { suspended: false, legacyHibernate: false });
      return `wake ${set} (${drop} drop)`;
    },
  });

/** A set deleted: teardown drops its VM's `:hibernate` and `:latest`, probe first. */
const teardown = (pick: number) =>
  new Step({
    kind: "teardown",
    picks: [pick],
    applies: (m) => liveSets(m).length > 0,
    act: async (m, r) => {
      const set = picked(liveSets(m), pick);
      const vm = vmOf(m, set);
      for (const tag of [TAG_HIBERNATE, TAG_LATEST]) await r.registry.deleteIfPresent(vm, tag, signal);
      m.sets.delete(set);
      return `teardown ${set}`;
    },
  });

/** A checkpoint's finalizer: its tag dropped, probe first. */
async function dropCheckpoint(m: Model, r: Real, ck: CheckpointModel) {
  await r.registry.deleteIfPresent(ck.vm, checkpointTag(ck.name), signal);
  m.checkpoints.delete(ck.name);
}

const deleteCheckpoint = (pick: number) =>
  new Step({
    kind: "delete",
    picks: [pick],
    applies: (m) => checkpoints(m).length > 0,
    act: async (m, r) => {
      const ck = picked(checkpoints(m), pick);
      await dropCheckpoint(m, r, ck);
      return `delete ${ck.name}`;
    },
  });

/** keep-checkpoints on a set: its checkpoints beyond the newest go, each as a delete does. */
const prune = (pick: number) =>
  new Step({
    kind: "prune",
    picks: [pick],
    applies: (m) => setsWithCheckpoints(m).length > 0,
    act: async (m, r) => {
      const set = picked(setsWithCheckpoints(m), pick);
      const objects: CocoonCheckpoint[] = checkpoints(m)
        .filter((ck) => ck.set === set)
        .map((ck) => ({
          apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
          kind: "CocoonCheckpoint",
          metadata: {
            name: ck.name,
            uid: ck.uid,
            creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, ck.created)).toISOString(),
          },
          spec: { cocoonSetRef: { name: set } },
          status: { phase: "Ready" },
        }));
      const pruned: string[] = [];
      for (const old of checkpointsToPrune(objects, KEEP_CHECKPOINTS)) {
        const ck = m.checkpoints.get(old.metadata.name ?? "");
        assert.ok(ck);
        await dropCheckpoint(m, r, ck);
        pruned.push(ck.name);
      }
      return `prune ${set} (${pruned.join(", ") || "none"})`;
    },
  });

const pick = fc.nat({ max: 11 });
// Weighted towards the steps that build up shared state; teardowns are rarer, or few sequences
// would get past them.
const step = fc.oneof(
  { weight: 1, arbitrary: pick.map(create) },
  { weight: 4, arbitrary: pick.map(suspend) },
  { weight: 4, arbitrary: pick.map(checkpoint) },
  { weight: 5, arbitrary: fc.tuple(pick, pick).map(([s, c]) => restore(s, c)) },
  { weight: 1, arbitrary: fc.tuple(pick, pick).map(([s, c]) => restoreAcross(s, c)) },
  { weight: 2, arbitrary: fc.tuple(pick, pick).map(([s, c]) => legacyRestore(s, c)) },
  { weight: 2, arbitrary: fc.tuple(pick, pick).map(([s, c]) => branch(s, c)) },
  { weight: 4, arbitrary: fc.tuple(pick, pick).map(([s, d]) => wake(s, d)) },
  { weight: 1, arbitrary: pick.map(teardown) },
  { weight: 2, arbitrary: pick.map(deleteCheckpoint) },
  { weight: 1, arbitrary: pick.map(prune) },
);
const commands = fc.commands([step], { maxCommands: MAX_COMMANDS, size: "max" });

/** Steps run, by kind, over the whole property: the report shows the sequences reached each. */
const stepsRun = new Map<string, number>();

// Each run gets repositories of its own: `vk-<run namespace>-<set>-0`.
const processTag = randomBytes(3).toString("hex");
let runs = 0;

it("no sequence of checkpoints, restores, branches, wakes, teardowns, deletes and prunes removes a tag a live object needs", {
  timeout: 180_000,
}, async (t) => {
  const seed = Number(process.env.REGISTRY_INVARIANT_SEED ?? randomBytes(4).readUInt32BE(0) >>> 1);
  t.diagnostic(
    `REGISTRY_INVARIANT_SEED=${seed} npx node test/run.ts test/integration/registry-invariant.test.ts`,
  );
  const registry = createRegistryClient(env.registry);
  await fc.assert(
    fc.asyncProperty(commands, async (cmds) => {
      runs++;
      const setup = () => ({
        model: {
          ns: `ri${processTag}r${runs}`,
          sets: new Map(
            SETS.map((name): [SetName, SetModel] => [name, { suspended: false, legacyHibernate: false }]),
          ),
          checkpoints: new Map(),
          seq: 0,
          done: [],
        },
        real: { registry },
      });
      await fc.asyncModelRun(setup, cmds);
    }),
    // Shrinking a failure re-runs sequences against the registry: the whole property stops at the
    // time limit (a pass takes a fraction of it), reporting the smallest failing sequence found.
    { seed, numRuns: NUM_RUNS, interruptAfterTimeLimit: SHRINK_LIMIT_MS, markInterruptAsFailure: true },
  );
  t.diagnostic(`steps run: ${[...stepsRun].map(([kind, n]) => `${kind} ${n}`).join(", ")}`);
});
