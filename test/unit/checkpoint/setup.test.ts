// The checkpoint controller's wiring (src/checkpoint/setup.ts) over real informers: which checkpoints
// a set's change wakes (a delete or a prune waits for a set's branch or restore, a copy for its
// suspend), which sets a checkpoint's change wakes (a branch waits for its checkpoint), the cached
// reads its reconciler gets, and the registry it needs to copy manifests.
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint } from "../../../src/apis/v1alpha1/types.ts";
import { CheckpointCatalog } from "../../../src/checkpoint/catalog.ts";
import {
  ANN_FROM_CHECKPOINT,
  ANN_KEEP_CHECKPOINTS,
  ANN_RESTORE_HOLD,
  FINALIZER_COCOONCHECKPOINT,
} from "../../../src/checkpoint/keys.ts";
import {
  asCheckpointRegistry,
  setsBranchingFrom,
  setupCheckpointController,
} from "../../../src/checkpoint/setup.ts";
import { FakeClock } from "../../../src/clock.ts";
import { LABEL_COCOONSET } from "../../../src/contract/keys.ts";
import { COCOONCHECKPOINTS, COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { encodeRestoreHold } from "../../../src/holds.ts";
import { createOperatorInformers } from "../../../src/informers/informers.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, NS, SET } from "../../support/cocoonset.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";
import { drain, ListWatch, RecordingManager, settle } from "../../support/wiring.ts";

const IMAGE = "ubuntu";

function checkpoint(
  name: string,
  setName = SET,
  extra: Partial<CocoonCheckpoint["metadata"]> = {},
): CocoonCheckpoint {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name, namespace: NS, finalizers: [FINALIZER_COCOONCHECKPOINT], ...extra },
    spec: { cocoonSetRef: { name: setName } },
  };
}

const running: ListWatch[] = [];
afterEach(() => {
  for (const lw of running.splice(0)) lw.close();
});

/** The controller set up over informers that have listed what `seed` put in the store. */
async function wired(seed: (client: FakeClient) => void) {
  const client = new FakeClient();
  seed(client);
  const lw = new ListWatch(client);
  running.push(lw);
  const catalog = new CheckpointCatalog(lw);
  const informers = createOperatorInformers(lw);
  for (const informer of [catalog.informer, informers.cocoonSets, informers.pods]) informer.start(lw.signal);
  await Promise.all([catalog.informer, informers.cocoonSets, informers.pods].map((i) => i.waitForSync()));
  catalog.markAvailable();
  const registry = new FakeCheckpointRegistry();
  const events = new RecordingEvents();
  const manager = new RecordingManager();
  const controller = setupCheckpointController(manager, {
    client,
    catalog,
    informers,
    registry,
    events,
    clock: new FakeClock(),
    log: silentLogger(),
  });
  return { client, lw, catalog, informers, registry, events, manager, controller };
}

const holdFor = (checkpointName: string) =>
  encodeRestoreHold({ restore: "r", uid: "u", checkpoint: checkpointName, suspend: true });

describe("setupCheckpointController: which checkpoints a set's change wakes", () => {
  it("the checkpoints naming the set, the one it branches from and the one a restore holds it for; no other", async () => {
    const w = await wired((client) => {
      client.seed(COCOONCHECKPOINTS, checkpoint("mine-a"));
      client.seed(COCOONCHECKPOINTS, checkpoint("mine-b"));
      client.seed(COCOONCHECKPOINTS, checkpoint("of-another", "another"));
      client.seed(COCOONCHECKPOINTS, {
        ...checkpoint("elsewhere"),
        metadata: { name: "elsewhere", namespace: "other" },
      });
      client.seed(
        COCOONSETS,
        cocoonSet(
          {},
          { annotations: { [ANN_FROM_CHECKPOINT]: "golden", [ANN_RESTORE_HOLD]: holdFor("undo-to") } },
        ),
      );
      client.seed(COCOONSETS, cocoonSet({}, { name: "plain" }));
      client.seed(COCOONSETS, cocoonSet({}, { name: "bare" }));
      client.seed(COCOONCHECKPOINTS, checkpoint("of-bare", "bare"));
      client.seed(
        COCOONSETS,
        cocoonSet({}, { name: "unreadable", annotations: { [ANN_RESTORE_HOLD]: "{" } }),
      );
    });
    await drain(w.controller);

    await w.lw.modified(COCOONSETS, NS, SET);
    assert.deepEqual(await drain(w.controller), [
      `${NS}/golden`,
      `${NS}/mine-a`,
      `${NS}/mine-b`,
      `${NS}/undo-to`,
    ]);
    await w.lw.modified(COCOONSETS, NS, "bare");
    assert.deepEqual(await drain(w.controller), [`${NS}/of-bare`], "a set without annotations");
    await w.lw.modified(COCOONSETS, NS, "plain");
    assert.deepEqual(await drain(w.controller), [], "a set no checkpoint names wakes none");
    await w.lw.modified(COCOONSETS, NS, "unreadable");
    assert.deepEqual(await drain(w.controller), [], "a hold that names no checkpoint wakes none by name");
  });

  it("a checkpoint's change wakes the sets of its namespace annotated to branch from it", async () => {
    const w = await wired((client) => {
      client.seed(COCOONSETS, cocoonSet({}, { name: "a", annotations: { [ANN_FROM_CHECKPOINT]: "ck" } }));
      client.seed(COCOONSETS, cocoonSet({}, { name: "b", annotations: { [ANN_FROM_CHECKPOINT]: "other" } }));
      client.seed(COCOONSETS, cocoonSet({}, { name: "c" }));
      client.seed(COCOONSETS, {
        ...cocoonSet({}, { name: "d", annotations: { [ANN_FROM_CHECKPOINT]: "ck" } }),
        metadata: { name: "d", namespace: "other", annotations: { [ANN_FROM_CHECKPOINT]: "ck" } },
      });
    });
    assert.deepEqual(setsBranchingFrom(w.informers, checkpoint("ck")), [{ namespace: NS, name: "a" }]);
  });
});

describe("setupCheckpointController: what the manager starts", () => {
  it("the cocooncheckpoint controller, with the checkpoint and set informers it reads", async () => {
    const w = await wired(() => {});
    assert.equal(w.controller.name, "cocooncheckpoint");
    assert.deepEqual(w.manager.controllersToStart, [w.controller]);
    assert.deepEqual(w.manager.informersToStart, [w.catalog.informer, w.informers.cocoonSets]);
  });
});

describe("setupCheckpointController: the reconciler's cached reads", () => {
  it("copies the slots whose pods the cache shows snapshotted, skips a Failed pod's, and prunes the set's older checkpoint", async () => {
    const vm = (slot: number) => `vk-${NS}-${SET}-${slot}`;
    const pod = (slot: number, phase: "Pending" | "Failed"): Pod => ({
      metadata: {
        name: `${SET}-${slot}`,
        namespace: NS,
        labels: { [LABEL_COCOONSET]: SET },
        annotations: { "vm.cocoonstack.io/name": vm(slot) },
      },
      spec: { containers: [{ name: "agent" }] },
      status: { phase },
    });
    const w = await wired((client) => {
      const cs: CocoonSet = {
        ...cocoonSet(
          { agent: { image: IMAGE, replicas: 1 }, hibernatePolicy: "retain" },
          { annotations: { [ANN_KEEP_CHECKPOINTS]: "1" } },
        ),
        status: {
          phase: "Suspended",
          observedGeneration: 1,
          readyAgents: 0,
          desiredAgents: 2,
          readyToolboxes: 0,
          desiredToolboxes: 0,
        },
      };
      client.seed(COCOONSETS, cs);
      client.seed(PODS, pod(0, "Pending"));
      client.seed(PODS, pod(1, "Failed"));
      client.seed(COCOONCHECKPOINTS, {
        ...checkpoint("older", SET, { creationTimestamp: "2025-12-31T00:00:00Z" }),
        status: { phase: "Ready" },
      });
      client.seed(COCOONCHECKPOINTS, checkpoint("newer", SET, { creationTimestamp: "2026-01-01T00:00:00Z" }));
    });
    for (const slot of [0, 1]) w.registry.push(vm(slot), "hibernate", IMAGE);
    await drain(w.controller);
    w.controller.queue.add(`${NS}/newer`);
    w.controller.start();
    const phase = () => w.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "newer")?.status?.phase;
    for (let i = 0; i < 100 && phase() !== "Ready"; i++) await settle();
    w.controller.stopNow(new Error("test over"));

    const status = w.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "newer")?.status;
    assert.equal(status?.phase, "Ready");
    assert.deepEqual(
      status?.members?.map((m) => [m.vmName, m.digest !== undefined, m.skipped]),
      [
        [vm(0), true, undefined],
        [vm(1), false, `pod ${SET}-1 is Failed, so the suspend took no snapshot of it`],
      ],
    );
    assert.ok(
      w.client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, NS, "older")?.metadata.deletionTimestamp,
      "keep-checkpoints 1 deletes the older Ready checkpoint",
    );
  });
});

describe("asCheckpointRegistry", () => {
  it("is the registry only when it can head, get, put and copy manifests", () => {
    const full = new FakeCheckpointRegistry();
    assert.equal(asCheckpointRegistry(full), full);
    assert.equal(asCheckpointRegistry(undefined), undefined);
    for (const missing of ["headManifest", "getManifest", "putManifest", "copyManifest"]) {
      const partial = Object.assign(Object.create(null), {
        headManifest: () => null,
        getManifest: () => null,
        putManifest: () => null,
        copyManifest: () => null,
        [missing]: "not a function",
      });
      assert.equal(asCheckpointRegistry(partial), undefined, `without ${missing}`);
    }
  });
});
