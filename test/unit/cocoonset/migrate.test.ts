// Step 8 (cross-node migration of the main; docs/cocoonset.md, "8. Cross-node migration"), run
// against the in-memory API and registry, plus the write orders that keep live state.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import { computeStatus } from "../../../src/cocoonset/decide/computestatus.ts";
import { buildMainPod } from "../../../src/cocoonset/decide/pods.ts";
import { reconcileMigration } from "../../../src/cocoonset/steps/migrate.ts";
import {
  ANN_HIBERNATE,
  ANN_KEEP_SNAPSHOT_ON_DELETE,
  ANN_RESTORE_FROM_HIBERNATE,
  ANN_VM_ID,
} from "../../../src/contract/keys.ts";
import type { Client } from "../../../src/controller/client.ts";
import type { EventRecorder } from "../../../src/controller/events.ts";
import {
  COCOONHIBERNATIONS,
  COCOONSETS,
  PODS,
  type ResourceType,
} from "../../../src/controller/resources.ts";
import { migrateUnschedulableTotal } from "../../../src/metrics/cocoon.ts";
import { classifyPods } from "../../../src/pass/classify.ts";
import { Pass, type StepOutcome } from "../../../src/pass/pass.ts";
import type { SnapshotRegistry } from "../../../src/registry/index.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { FakeClient, FakeView } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";

const NS = "ns";
const IMAGE = "ghcr.io/cocoonstack/cocoon/ubuntu:24.04";
const VM = "vk-ns-demo-0";
const TAG = `${VM}:hibernate`;
const POLL = { done: true, result: { requeueAfterMs: 5_000 } };
const HANDED_BACK = { done: false };
const OWNER = { name: "demo", uid: "test-uid" };
const START = "2026-01-01T00:00:00Z";

interface SetOptions {
  nodeName?: string;
  phase?: CocoonSetPhase;
  image?: string;
}

function cocoonSet(opts: SetOptions = {}): CocoonSet {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: NS, uid: "test-uid", generation: 1 },
    spec: { agent: { image: opts.image ?? IMAGE, replicas: 0 } },
  };
  if (opts.nodeName) cs.spec.nodeName = opts.nodeName;
  if (opts.phase)
    cs.status = {
      phase: opts.phase,
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    };
  return cs;
}

interface MainOptions {
  /** The node it runs on; absent = not scheduled yet. */
  node?: string;
  /** The pin it was built under (its required hostname affinity); defaults to none. */
  builtFor?: string;
  live?: boolean;
  hibernate?: boolean;
  restore?: boolean;
  unschedulable?: string;
}

function mainPod(opts: MainOptions = {}): Pod {
  const pod = buildMainPod(cocoonSet({ nodeName: opts.builtFor }), { restore: opts.restore });
  const annotations = pod.metadata.annotations ?? {};
  pod.metadata.annotations = annotations;
  if (opts.node) pod.spec.nodeName = opts.node;
  if (opts.hibernate) annotations[ANN_HIBERNATE] = "true";
  pod.status = { phase: opts.node ? "Running" : "Pending", conditions: [] };
  if (opts.live) {
    annotations[ANN_VM_ID] = "vm-id-1";
    pod.status.containerStatuses = [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }];
    pod.status.conditions = [{ type: "Ready", status: "True" }];
  }
  if (opts.unschedulable !== undefined) {
    pod.status.conditions = [
      { type: "PodScheduled", status: "False", reason: "Unschedulable", message: opts.unschedulable },
    ];
  }
  return pod;
}

function hibernation(podName: string, desire: "Hibernate" | "Wake", phase?: string): CocoonHibernation {
  const ch = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName, namespace: NS },
    spec: { podRef: { name: podName }, desire },
  } as CocoonHibernation;
  if (phase) ch.status = { phase: phase as NonNullable<CocoonHibernation["status"]>["phase"] };
  return ch;
}

/** One API and registry, a journal of their calls in order, and passes built from the cache view. */
class Harness {
  readonly client = new FakeClient();
  readonly registry = new FakeSnapshotRegistry();
  readonly events: string[] = [];
  /** API and registry calls interleaved, in the order they were made. */
  readonly journal: string[] = [];
  withRegistry = true;

  constructor(cs: CocoonSet, pods: Pod[] = [], hibernations: CocoonHibernation[] = []) {
    // A phase as the last status patch wrote it, so an unchanged status is not written again.
    const phase = cs.status?.phase;
    if (phase) cs.status = computeStatus(cs, classifyPods(pods, OWNER), { phase, now: START });
    this.client.seed(COCOONSETS, cs);
    for (const pod of pods) this.client.seed(PODS, pod);
    for (const ch of hibernations) this.client.seed(COCOONHIBERNATIONS, ch);
  }

  pushTag(baseImage = IMAGE): void {
    this.registry.put(VM, "hibernate", baseImage);
  }

  async run(): Promise<StepOutcome> {
    const view = new FakeView(this.client);
    const cs = view.getCocoonSet(NS, "demo");
    assert.ok(cs);
    const pods = classifyPods(view.listSetPods(NS, "demo"), OWNER);
    const events: EventRecorder = {
      event: (_obj, type, reason, message) => this.events.push(`${type} ${reason} ${message}`),
    };
    const pass = new Pass(
      cs,
      pods,
      {
        client: this.journaled(this.client, "api"),
        view,
        registry: this.withRegistry ? this.journaled<SnapshotRegistry>(this.registry, "registry") : undefined,
        events,
        clock: new FakeClock(Date.parse(START)),
        log: silentLogger(),
      },
      new AbortController().signal,
    );
    return reconcileMigration(pass);
  }

  /** A write or registry call journaled as `<verb> <resource>[/status] <name>` or `<op> <repo>:<ref>`. */
  private journaled<T extends Client | SnapshotRegistry>(target: T, kind: "api" | "registry"): T {
    const journal = this.journal;
    return new Proxy(target, {
      get(object, property, receiver) {
        const value = Reflect.get(object, property, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          journal.push(describeCall(kind, String(property), args));
          return value.apply(object, args);
        };
      },
    });
  }

  /** The API writes, as the journal names them. */
  apiWrites(): string[] {
    return this.journal.filter((entry) => /^(create|patch|delete|update) /.test(entry));
  }

  registryCalls(): string[] {
    return this.journal.filter((entry) =>
      /^(hasManifest|getSnapshot|deleteManifest|deleteIfPresent) /.test(entry),
    );
  }

  /** Tag deletes of either kind: by reference, or probe-first. */
  tagDeletes(): string[] {
    return this.registryCalls().filter((entry) => /^delete/.test(entry));
  }

  pod(): Pod | undefined {
    return this.client.peek<Pod>(PODS, NS, "demo-0");
  }

  phase(): string | undefined {
    return this.client.peek<CocoonSet>(COCOONSETS, NS, "demo")?.status?.phase;
  }

  /** The body of the first recorded API call matching verb and resource. */
  body(verb: string, resource: string): unknown {
    return this.client.calls.find(
      (c) => c.verb === verb && `${c.resource}${c.subresource ? `/${c.subresource}` : ""}` === resource,
    )?.body;
  }

  /** Runs `change` right after the step's next uncached read of a pod (a change racing the check). */
  afterServerRead(change: () => void): void {
    const get = this.client.get.bind(this.client);
    let done = false;
    this.client.get = async <T>(rt: ResourceType, namespace: string, name: string): Promise<T> => {
      const read = await get<T>(rt, namespace, name);
      if (rt === PODS && !done) {
        done = true;
        change();
      }
      return read;
    };
  }

  /** Plays vk-cocoon and the kubelet on the stored main. */
  updatePod(change: (pod: Pod) => void): void {
    const pod = this.pod();
    assert.ok(pod);
    change(pod);
    this.client.seed(PODS, pod);
  }
}

function describeCall(kind: "api" | "registry", method: string, args: unknown[]): string {
  if (kind === "registry") return `${method} ${String(args[0])}:${String(args[1])}`;
  const resource = (args[0] as { plural: string }).plural;
  if (method === "create") return `create ${resource} ${(args[2] as Pod).metadata.name}`;
  if (method === "update") return `update ${resource} ${(args[1] as Pod).metadata.name}`;
  const sub = (args[4] as { subresource?: string } | undefined)?.subresource;
  return `${method} ${resource}${sub ? `/${sub}` : ""} ${String(args[2])}`;
}

async function unschedulableCount(): Promise<number> {
  const metric = await migrateUnschedulableTotal.get();
  return metric.values.find((v) => v.labels.namespace === NS && v.labels.cocoonset === "demo")?.value ?? 0;
}

function failingRegistry(h: Harness): void {
  h.registry.failOn = () => FakeSnapshotRegistry.error(503);
}

describe("step 8: off and fast paths", () => {
  it("no nodeName and not Migrating → hands back with no registry call", async () => {
    const h = new Harness(cocoonSet(), [mainPod({ node: "node-a", live: true })]);
    h.pushTag();
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
  });

  it("main live on its target → hands back with no registry call", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-b", live: true, builtFor: "node-b" }),
    ]);
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
  });

  it("a settled pinned set with a failing registry → hands back, no error", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-b", live: true, builtFor: "node-b" }),
    ]);
    failingRegistry(h);
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
  });

  it("no registry → off even when the main runs off its pin", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a", live: true })]);
    h.withRegistry = false;
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
  });

  it("main on its target not live, no annotation, tag present, phase unset → hands back, nothing deleted", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-b", builtFor: "node-b" }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.apiWrites(), []);
    assert.deepEqual(h.tagDeletes(), []);
    assert.ok(h.registry.has(VM, "hibernate"));
  });

  it("a pinned main still unscheduled under its current pin is the normal flow's: no registry call", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ builtFor: "node-b" })]);
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
  });
});

describe("step 8: CocoonHibernation hand-back", () => {
  it("quiesced on its target and owned by a desire=Hibernate CR → hands back before any probe, annotation kept", async () => {
    const h = new Harness(
      cocoonSet({ nodeName: "node-b" }),
      [mainPod({ node: "node-b", hibernate: true, builtFor: "node-b" })],
      [hibernation("demo-0", "Hibernate", "Hibernated")],
    );
    failingRegistry(h);
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });

  it("a CR with desire Wake still Hibernating owns the pod", async () => {
    const h = new Harness(
      cocoonSet({ nodeName: "node-b", phase: "Migrating" }),
      [mainPod({ node: "node-b", hibernate: true, builtFor: "node-b" })],
      [hibernation("demo-0", "Wake", "Hibernating")],
    );
    h.pushTag();
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, []);
  });

  for (const phase of ["Waking", "Failed", "Hibernated"]) {
    it(`a desire=Wake CR in phase ${phase} (not settled Active) → hands back, the migration waits`, async () => {
      const h = new Harness(
        cocoonSet({ nodeName: "node-b" }),
        [mainPod({ node: "node-a", live: true })],
        [hibernation("demo-0", "Wake", phase)],
      );
      assert.deepEqual(await h.run(), HANDED_BACK);
      assert.deepEqual(h.journal, []);
    });
  }

  it("a desire=Wake CR settled Active does not hold the migration back", async () => {
    const h = new Harness(
      cocoonSet({ nodeName: "node-b" }),
      [mainPod({ node: "node-a", live: true })],
      [hibernation("demo-0", "Wake", "Active")],
    );
    assert.deepEqual(await h.run(), POLL);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });

  it("a CR naming another pod does not hold the migration back", async () => {
    const h = new Harness(
      cocoonSet({ nodeName: "node-b" }),
      [mainPod({ node: "node-a", live: true })],
      [hibernation("demo-1", "Hibernate")],
    );
    assert.deepEqual(await h.run(), POLL);
  });
});

describe("step 8: probe", () => {
  it("wrong node and the probe fails → the step owns the pass and returns the error", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a", live: true })]);
    failingRegistry(h);
    await assert.rejects(h.run(), /injected failure/);
    assert.deepEqual(h.journal, [`hasManifest ${TAG}`]);
    assert.deepEqual(h.apiWrites(), []);
  });
});

describe("step 8: starting a migration", () => {
  it("main live on node-a, target node-b, no tag → Migrating persisted, THEN hibernate=true; requeue 5 s", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a", live: true })]);
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.journal, [`hasManifest ${TAG}`, "patch cocoonsets/status demo", "patch pods demo-0"]);
    assert.equal(h.phase(), "Migrating");
    assert.deepEqual(h.body("patch", "pods"), { metadata: { annotations: { [ANN_HIBERNATE]: "true" } } });
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
  });

  it("a failed Migrating write leaves the main unquiesced", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a", live: true })]);
    h.client.failNext("patch", "cocoonsets/status", new Error("apiserver down"));
    await assert.rejects(h.run(), /apiserver down/);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
  });

  it("no tag and no main → hands back (the normal flow creates it)", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }));
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, [`getSnapshot ${TAG}`], "the read step 11 reuses");
  });

  it("no tag while Migrating and the main is on its target → hands back (migration done)", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ node: "node-b", live: true, builtFor: "node-b", restore: true }),
    ]);
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.apiWrites(), []);
  });

  it("no tag while the quiesced old main is still hibernating → stays put, nothing deleted", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.apiWrites(), []);
    assert.ok(h.pod());
  });
});

describe("step 8: a leftover tag", () => {
  it("main live on node-a, not quiesced, tag present → tag deleted, pod survives, Migrating", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a", live: true })]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.registryCalls(), [`hasManifest ${TAG}`, `deleteIfPresent ${TAG}`]);
    assert.deepEqual(h.apiWrites(), ["patch cocoonsets/status demo"]);
    assert.ok(h.pod());
    assert.equal(h.phase(), "Migrating");
  });

  it("main off target, not quiesced and not live → hands back; the tag stays for a wake or restore", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a" })]);
    h.pushTag();
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.registryCalls(), [`hasManifest ${TAG}`]);
    assert.ok(h.registry.has(VM, "hibernate"));
    assert.deepEqual(h.apiWrites(), []);
  });
});

describe("step 8: retiring the old main", () => {
  it("quiesced main on node-a, tag present → Migrating persisted, then keep-snapshot flag, THEN delete; no tag deletes", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    h.pushTag();
    const asRead = h.pod()?.metadata.resourceVersion;
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.journal, [
      `hasManifest ${TAG}`,
      "get pods demo-0",
      "patch cocoonsets/status demo",
      "patch pods demo-0",
      "delete pods demo-0",
    ]);
    // The flag goes to the pod as the server showed it quiesced (its resourceVersion in the patch).
    assert.deepEqual(h.body("patch", "pods"), {
      metadata: { resourceVersion: asRead, annotations: { [ANN_KEEP_SNAPSHOT_ON_DELETE]: "true" } },
    });
    assert.ok(h.registry.has(VM, "hibernate"));
    assert.deepEqual(h.tagDeletes(), []);
    assert.equal(h.phase(), "Migrating");
  });

  it("a main woken between the server read and the flag is not deleted", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    h.pushTag();
    h.afterServerRead(() => h.updatePod((pod) => delete pod.metadata.annotations?.[ANN_HIBERNATE]));
    assert.deepEqual(await h.run(), POLL);
    assert.ok(h.pod(), "the woken main is still there");
    assert.equal(h.apiWrites().filter((w) => w.startsWith("delete")).length, 0);
  });

  it("a Migrating write that fails leaves the old main undeleted", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    h.pushTag();
    h.client.failNext("patch", "cocoonsets/status", new Error("conflict"));
    await assert.rejects(h.run(), /conflict/);
    assert.deepEqual(h.apiWrites(), ["patch cocoonsets/status demo"], "the failed write, nothing after it");
    assert.ok(h.pod(), "the old main is still there");
  });

  it("the keep-snapshot flag is best-effort — a failed patch still deletes the old main", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    h.pushTag();
    h.client.failNext("patch", "pods", new Error("conflict"));
    assert.deepEqual(await h.run(), POLL);
    assert.ok(h.apiWrites().includes("delete pods demo-0"));
  });
});

describe("step 8: recreating on the target", () => {
  it("no main, tag present → Migrating persisted, then a restore-flagged main with one required hostname term for node-b", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }));
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.journal, [`getSnapshot ${TAG}`, "patch cocoonsets/status demo", "create pods demo-0"]);
    const pod = h.pod();
    assert.equal(pod?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.equal(pod?.spec.nodeName, undefined);
    assert.deepEqual(pod?.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-b"] }] },
      ],
    });
    assert.equal(h.phase(), "Migrating");
  });

  it("nodeName unset while Migrating, no main, tag present → restore pod with no affinity", async () => {
    const h = new Harness(cocoonSet({ phase: "Migrating" }));
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    const pod = h.pod();
    assert.equal(pod?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.equal(pod?.spec.affinity, undefined);
  });

  it("the old main still terminating (AlreadyExists) → requeue in 5 s, no status write", async () => {
    const old = mainPod({ node: "node-a", hibernate: true });
    old.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [old]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.apiWrites(), ["create pods demo-0"]);
    assert.equal(h.pod()?.spec.nodeName, "node-a");
  });

  it("the image rule drops a snapshot from another image → no pod created; left to step 11", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }));
    h.pushTag("ghcr.io/cocoonstack/cocoon/ubuntu:22.04");
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.equal(h.pod(), undefined);
    assert.equal(h.registry.has(VM, "hibernate"), false);
    assert.ok(!h.apiWrites().includes("create pods demo-0"));
  });

  it("Migrating, restore main not yet scheduled → the pod survives; Migrating; poll", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ builtFor: "node-b", restore: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.ok(h.pod());
    assert.deepEqual(h.apiWrites(), []);
    assert.deepEqual(h.tagDeletes(), []);
  });
});

describe("step 8: waiting for the restore", () => {
  it("Migrating, main on node-b without a VM id → handled, nothing deleted", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ node: "node-b", builtFor: "node-b", restore: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.apiWrites(), []);
    assert.deepEqual(h.registryCalls(), [`hasManifest ${TAG}`]);
    assert.deepEqual(h.events, []);
  });

  it("the restored main is Unschedulable → Warning MigrateNoCapacity with the scheduler's message; metric; still Migrating", async () => {
    const message = "0/3 nodes are available: 1 Insufficient memory.";
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ builtFor: "node-b", restore: true, unschedulable: message }),
    ]);
    h.pushTag();
    const before = await unschedulableCount();
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.events, [`Warning MigrateNoCapacity main pod demo-0 unschedulable: ${message}`]);
    assert.equal(await unschedulableCount(), before + 1);
    assert.equal(h.phase(), "Migrating");
    assert.ok(h.pod());
  });

  it("a not-live main with a tag outside Migrating is not this step's → hands back after the probe, no writes", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Running" }), [
      mainPod({ builtFor: "node-b", restore: true, hibernate: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.journal, [`hasManifest ${TAG}`]);
  });

  it("main quiesced on node-b without a VM id, tag present, phase unset → hands back to step 10; no deletes", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [
      mainPod({ node: "node-b", builtFor: "node-b", hibernate: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.apiWrites(), []);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.ok(h.registry.has(VM, "hibernate"));
  });

  it("quiesced on its target while Migrating (a re-target back) → wakes in place; Migrating", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-a", phase: "Migrating" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    // Already Migrating: the unchanged status is not written again.
    assert.deepEqual(h.apiWrites(), ["patch pods demo-0"]);
    assert.deepEqual(h.body("patch", "pods"), { metadata: { annotations: { [ANN_HIBERNATE]: null } } });
    assert.ok(h.registry.has(VM, "hibernate"));
  });

  it("pin removed mid-migration while the old main is quiesced → wakes it in place, never deletes it", async () => {
    const h = new Harness(cocoonSet({ phase: "Migrating" }), [
      mainPod({ node: "node-a", live: true, hibernate: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_HIBERNATE], undefined);
    assert.ok(!h.apiWrites().includes("delete pods demo-0"));
  });
});

describe("step 8: finishing", () => {
  it("Migrating, main live on node-b → tag deleted; Migrating; poll (the next pass settles)", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ node: "node-b", live: true, builtFor: "node-b", restore: true }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.registryCalls(), [`hasManifest ${TAG}`, `deleteIfPresent ${TAG}`]);
    assert.equal(h.registry.has(VM, "hibernate"), false);
    assert.ok(h.pod());
    assert.equal(h.phase(), "Migrating");
  });

  it("a tag delete the registry refuses fails the pass", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ node: "node-b", live: true, builtFor: "node-b", restore: true }),
    ]);
    h.pushTag();
    h.registry.failOn = (call) =>
      call.op === "deleteIfPresent" ? FakeSnapshotRegistry.error(500) : undefined;
    await assert.rejects(h.run(), /injected failure/);
    assert.ok(h.registry.has(VM, "hibernate"));
  });
});

describe("step 8: a main waiting for a node it is no longer pinned to", () => {
  it("re-pinned from node-b to node-c → deleted, requeued; no registry call", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-c", phase: "Migrating" }), [
      mainPod({ builtFor: "node-b", restore: true, unschedulable: "0/3 nodes are available" }),
    ]);
    h.pushTag();
    assert.deepEqual(await h.run(), { done: true, result: { requeue: true } });
    assert.deepEqual(h.journal, ["get pods demo-0", "delete pods demo-0"]);
    assert.equal(h.pod(), undefined);
  });

  it("then the next pass recreates it from the snapshot under the current pin", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-c", phase: "Migrating" }), [
      mainPod({ builtFor: "node-b", restore: true }),
    ]);
    h.pushTag();
    await h.run();
    assert.deepEqual(await h.run(), POLL);
    const pod = h.pod();
    assert.equal(pod?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");
    assert.deepEqual(
      pod?.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms[0]
        ?.matchExpressions?.[0]?.values,
      ["node-c"],
    );
  });

  it("a pod bound after the server read is not deleted: its VM may be starting", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-c", phase: "Migrating" }), [
      mainPod({ builtFor: "node-b", restore: true, unschedulable: "0/3 nodes are available" }),
    ]);
    h.pushTag();
    h.afterServerRead(() =>
      h.updatePod((pod) => {
        pod.spec.nodeName = "node-b";
      }),
    );
    assert.deepEqual(await h.run(), POLL);
    assert.ok(h.pod(), "the bound pod is still there");
  });

  it("pin removed → deleted, even without a registry and outside Migrating", async () => {
    const h = new Harness(cocoonSet({ phase: "Pending" }), [mainPod({ builtFor: "node-b" })]);
    h.withRegistry = false;
    assert.deepEqual(await h.run(), { done: true, result: { requeue: true } });
    assert.deepEqual(h.journal, ["get pods demo-0", "delete pods demo-0"]);
  });

  it("a pod pending under the current pin is left alone", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b", phase: "Migrating" }), [
      mainPod({ builtFor: "node-b", restore: true }),
    ]);
    h.pushTag();
    await h.run();
    assert.ok(h.pod());
  });

  it("a scheduled pod is never deleted by this rule", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-c" }), [
      mainPod({ node: "node-b", builtFor: "node-b" }),
    ]);
    h.withRegistry = false;
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.ok(h.pod());
  });
});

describe("step 8: live state is never lost across a whole migration", () => {
  it("quiesce → snapshot → delete old → restore on target → live → drop tag → settled, each write in order", async () => {
    const h = new Harness(cocoonSet({ nodeName: "node-b" }), [mainPod({ node: "node-a", live: true })]);

    // Pass 1: the quiesce, after the durable phase.
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.apiWrites(), ["patch cocoonsets/status demo", "patch pods demo-0"]);

    // Pass 2: vk-cocoon is still hibernating (no tag yet): the old main must survive.
    h.journal.length = 0;
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.apiWrites(), []);
    assert.ok(h.pod());

    // Pass 3: the snapshot landed: the old main goes only now.
    h.pushTag();
    h.journal.length = 0;
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.journal, [
      `hasManifest ${TAG}`,
      "get pods demo-0",
      "patch pods demo-0",
      "delete pods demo-0",
    ]);

    // Pass 4: the kubelet finished the delete: the main comes back restore-flagged on node-b.
    h.client.finishPodDeletion(NS, "demo-0");
    h.journal.length = 0;
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.apiWrites(), ["patch cocoonsets/status demo", "create pods demo-0"]);
    assert.equal(h.pod()?.metadata.annotations?.[ANN_RESTORE_FROM_HIBERNATE], "true");

    // Pass 5: scheduled on node-b, vk-cocoon restoring: the tag must stay.
    h.updatePod((pod) => {
      pod.spec.nodeName = "node-b";
      pod.status = { phase: "Pending" };
    });
    h.journal.length = 0;
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.registryCalls(), [`hasManifest ${TAG}`]);
    assert.ok(h.registry.has(VM, "hibernate"));

    // Pass 6: the new VM runs: only now the tag drops.
    h.updatePod((pod) => {
      pod.metadata.annotations = { ...pod.metadata.annotations, [ANN_VM_ID]: "vm-id-2" };
      pod.status = {
        phase: "Running",
        containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
      };
    });
    h.journal.length = 0;
    assert.deepEqual(await h.run(), POLL);
    assert.deepEqual(h.registryCalls(), [`hasManifest ${TAG}`, `deleteIfPresent ${TAG}`]);

    // Pass 7: nothing left to do; the normal flow takes over.
    h.journal.length = 0;
    assert.deepEqual(await h.run(), HANDED_BACK);
    assert.deepEqual(h.apiWrites(), []);
    assert.equal(h.phase(), "Migrating", "step 14 of the next full pass derives the settled phase");
  });
});
