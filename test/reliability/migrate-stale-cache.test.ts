// Finding of the reliability suite (api-faults.test.ts, dropped watches and 410s making the informer
// lag): a migration pass probed the registry, found the snapshot its own quiesce had just produced, and
// judged it a leftover from a cached main that did not yet show that quiesce (unquiesced, VM live), so
// it deleted the only copy of the VM's state. The leftover drop now re-reads the main uncached after
// the probe (src/cocoonset/steps/migrate.ts). The same suite then found the twin: after a re-target
// back to the node the main runs on (its quiesce for the first target already pushed), a cached main
// from before that quiesce looked like "the new VM runs on its target", and the snapshot was dropped
// with the VM hibernated, so vk-cocoon's wake found no tag (CHAOS_SEED=2050015511). Every drop of a
// snapshot tag now re-checks its predicate on the pod as the API server holds it. A third: step 8's
// "a main still unscheduled under a pin spec.nodeName no longer names has no VM, delete it" read a
// cache that had not seen the binding, and a running VM was deleted without a hibernate (api-faults,
// a CI run); the delete now re-checks on the server too, as does the delete of the quiesced old main
// (a cached quiesce that a wake in place has since cleared must not delete the woken VM).

import assert from "node:assert/strict";
import { it } from "node:test";
import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { FakeClock } from "../../src/clock.ts";
import { buildMainPod } from "../../src/cocoonset/decide/pods.ts";
import { reconcileMigration } from "../../src/cocoonset/steps/migrate.ts";
import { ANN_HIBERNATE, ANN_VM_ID } from "../../src/contract/keys.ts";
import { COCOONSETS, PODS } from "../../src/controller/resources.ts";
import { classifyPods } from "../../src/pass/classify.ts";
import { Pass } from "../../src/pass/pass.ts";
import { FakeSnapshotRegistry } from "../env/registry-fake.ts";
import { FakeClient } from "../support/fakeclient.ts";
import { silentLogger } from "../support/log.ts";

const NS = "ns";
const IMAGE = "ubuntu-dev-base";
const VM = "vk-ns-demo-0";
const RUNNING: Pod["status"] = {
  phase: "Running",
  conditions: [{ type: "Ready", status: "True" }],
  containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
};

/** A set pinned to node-b, mid-migration. */
function migratingSet(generation: number): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: NS, uid: "test-uid", generation },
    spec: { nodePool: "p", nodeName: "node-b", agent: { image: IMAGE, replicas: 0 } },
    status: { phase: "Migrating", readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 },
  };
}

/** A pass whose cache serves `cached` while the API server (the fake client) holds newer state. */
function passOverStaleCache(
  client: FakeClient,
  cs: CocoonSet,
  cached: Pod,
  registry: FakeSnapshotRegistry,
): Pass {
  const view = {
    getCocoonSet: () => cs,
    listSetPods: (): Pod[] => [cached],
    listHibernations: () => [],
    listSetsNamingVM: () => [],
  };
  return new Pass(
    cs,
    classifyPods([cached], { name: "demo", uid: "test-uid" }),
    {
      client,
      view,
      registry,
      events: { event: () => {} },
      clock: new FakeClock(Date.parse("2026-01-01T00:00:00Z")),
      log: silentLogger(),
    },
    new AbortController().signal,
  );
}

function setup(quiescedInApi: boolean, mainNode = "node-a", quiescedInCache = false) {
  const cs = migratingSet(2);
  const client = new FakeClient();
  const storedSet = client.seed(COCOONSETS, cs);
  // The main live on mainNode; the API server holds it quiesced (this controller's patch)...
  const live = buildMainPod(cs);
  live.spec.nodeName = mainNode;
  live.metadata.annotations = { ...live.metadata.annotations, [ANN_VM_ID]: "vm-1" };
  live.status = RUNNING;
  const stored = client.seed(PODS, live);
  const cached = structuredClone(stored);
  if (quiescedInCache) {
    cached.metadata.annotations = { ...cached.metadata.annotations, [ANN_HIBERNATE]: "true" };
  }
  if (quiescedInApi) {
    stored.metadata.annotations = { ...stored.metadata.annotations, [ANN_HIBERNATE]: "true" };
    client.seed(PODS, stored);
  }
  // ...vk-cocoon pushed the snapshot; the informer still serves the main from before the quiesce.
  const registry = new FakeSnapshotRegistry();
  registry.put(VM, "hibernate", IMAGE);
  return { pass: passOverStaleCache(client, storedSet, cached, registry), registry, client };
}

it("keeps the snapshot of its own quiesce when the cache lags behind it", async () => {
  const { pass, registry } = setup(true);
  await reconcileMigration(pass);
  assert.equal(await registry.hasManifest(VM, "hibernate"), true, "the fresh snapshot survives");
});

it("still drops a real leftover (the main is unquiesced and live in the API too)", async () => {
  const { pass, registry } = setup(false);
  await reconcileMigration(pass);
  assert.equal(await registry.hasManifest(VM, "hibernate"), false, "the leftover is dropped");
});

it("keeps the snapshot of a re-target's quiesce when the cached main on the target predates it", async () => {
  const { pass, registry } = setup(true, "node-b");
  await reconcileMigration(pass);
  assert.equal(await registry.hasManifest(VM, "hibernate"), true, "the only copy of the VM's state survives");
});

it("drops the snapshot once the main runs on its target in the API too", async () => {
  const { pass, registry } = setup(false, "node-b");
  await reconcileMigration(pass);
  assert.equal(await registry.hasManifest(VM, "hibernate"), false, "the restored VM runs: the tag goes");
});

it("never deletes a main under an old pin that the cache shows unscheduled but the API server has running", async () => {
  const { pass, registry, client } = setupRepin();
  await reconcileMigration(pass);
  assert.deepEqual(
    client.writes().filter((c) => c.verb === "delete"),
    [],
    "the running main is not deleted",
  );
  assert.equal(client.peek<Pod>(PODS, NS, "demo-0")?.metadata.deletionTimestamp, undefined);
  assert.equal(await registry.hasManifest(VM, "hibernate"), false, "nothing pushed or dropped");
});

/** Pin moved to node-c; the main was built for node-b, is bound and live there, but cached unbound. */
function setupRepin() {
  const cs = migratingSet(3);
  const client = new FakeClient();
  const builtForB = buildMainPod(cs, { restore: true });
  const storedSet = client.seed(COCOONSETS, { ...cs, spec: { ...cs.spec, nodeName: "node-c" } });
  const cached = client.seed(PODS, builtForB);
  const running = structuredClone(cached);
  running.spec.nodeName = "node-b";
  running.metadata.annotations = { ...running.metadata.annotations, [ANN_VM_ID]: "vm-1" };
  running.status = RUNNING;
  client.seed(PODS, running);
  const registry = new FakeSnapshotRegistry();
  return { pass: passOverStaleCache(client, storedSet, cached, registry), registry, client };
}

it("never deletes the old main whose cached quiesce a wake in place has cleared on the server", async () => {
  const { pass, client } = setup(false, "node-a", true);
  await reconcileMigration(pass);
  assert.deepEqual(
    client.writes().filter((c) => c.verb === "delete"),
    [],
    "the woken main is not deleted",
  );
});
