import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonHibernation, CocoonHibernationPhase } from "../../../src/apis/v1/types.ts";
import {
  type CreateSnapshotRequest,
  prepareSnapshotForCreate,
  restoredByHibernation,
  snapshotVerdict,
} from "../../../src/cocoonset/imagerule.ts";
import {
  ANN_HIBERNATE_RECLAIM,
  ROLE_MAIN,
  ROLE_SUB_AGENT,
  ROLE_TOOLBOX,
} from "../../../src/contract/keys.ts";
import { COCOONHIBERNATIONS } from "../../../src/controller/resources.ts";
import { readReclaim } from "../../../src/pass/reclaimrecord.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import { IMAGE, MAIN_VM, OTHER_IMAGE, scalingHarness, scalingSet } from "../../support/scaling.ts";

const SUB_VM = "vk-ns-demo-1";

function hibernation(podName: string, phase: CocoonHibernationPhase): CocoonHibernation {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName, namespace: "ns" },
    spec: { podRef: { name: podName }, desire: "Hibernate" },
    status: { phase },
  };
}

function withRecord(record: object) {
  return scalingSet({}, 1).metadata.annotations === undefined
    ? {
        ...scalingSet(),
        metadata: {
          ...scalingSet().metadata,
          annotations: { [ANN_HIBERNATE_RECLAIM]: JSON.stringify(record) },
        },
      }
    : scalingSet();
}

function recordOf(h: ReturnType<typeof scalingHarness>) {
  return readReclaim(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM]).value;
}

const mainRequest: CreateSnapshotRequest = {
  podName: "demo-0",
  vmName: MAIN_VM,
  image: IMAGE,
  role: ROLE_MAIN,
  wantRestore: false,
};
const subRequest: CreateSnapshotRequest = {
  podName: "demo-1",
  vmName: SUB_VM,
  image: IMAGE,
  role: ROLE_SUB_AGENT,
  wantRestore: false,
};

describe("snapshotVerdict", () => {
  it("boots fresh without a tag, whatever the intent", () => {
    assert.deepEqual(snapshotVerdict(undefined, IMAGE, ROLE_SUB_AGENT, true), { action: "fresh" });
    assert.deepEqual(snapshotVerdict(undefined, IMAGE, ROLE_MAIN, false), { action: "fresh" });
  });

  it("drops a tag recorded from another image, even when a restore is intended", () => {
    for (const role of [ROLE_MAIN, ROLE_SUB_AGENT, ROLE_TOOLBOX] as const) {
      assert.deepEqual(snapshotVerdict(OTHER_IMAGE, IMAGE, role, true), {
        action: "drop",
        reason: "image-mismatch",
      });
    }
  });

  it("applies no image guard to a tag without a recorded image", () => {
    assert.deepEqual(snapshotVerdict("", IMAGE, ROLE_MAIN, true), { action: "restore" });
  });

  it("drops a sub-agent's tag nobody restores (vk refuses fork-from over it), but not a main's or toolbox's", () => {
    assert.deepEqual(snapshotVerdict(IMAGE, IMAGE, ROLE_SUB_AGENT, false), {
      action: "drop",
      reason: "fork-from",
    });
    assert.deepEqual(snapshotVerdict(IMAGE, IMAGE, ROLE_MAIN, false), { action: "fresh" });
    assert.deepEqual(snapshotVerdict(IMAGE, IMAGE, ROLE_TOOLBOX, false), { action: "fresh" });
  });
});

describe("restoredByHibernation", () => {
  it("counts CocoonHibernations in phase Hibernated or Waking for the pod, not Active or Hibernating", () => {
    assert.equal(restoredByHibernation([hibernation("demo-0", "Hibernated")], "demo-0"), true);
    assert.equal(restoredByHibernation([hibernation("demo-0", "Waking")], "demo-0"), true);
    assert.equal(restoredByHibernation([hibernation("demo-0", "Active")], "demo-0"), false);
    assert.equal(restoredByHibernation([hibernation("demo-0", "Hibernating")], "demo-0"), false);
    assert.equal(restoredByHibernation([hibernation("demo-1", "Hibernated")], "demo-0"), false);
  });
});

describe("prepareSnapshotForCreate", () => {
  it("without a registry reads nothing and boots fresh", async () => {
    const h = scalingHarness(scalingSet(), () => [], { withRegistry: false });
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    const result = await prepareSnapshotForCreate(h.pass(), { ...mainRequest, wantRestore: true });
    assert.deepEqual(result, { restore: false, dropped: false });
    assert.deepEqual(h.registry.calls, []);
  });

  it("intent and a present tag restore; intent and no tag boot fresh; one manifest read each", async () => {
    const h = scalingHarness(scalingSet());
    assert.deepEqual(await prepareSnapshotForCreate(h.pass(), { ...mainRequest, wantRestore: true }), {
      restore: false,
      dropped: false,
    });
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    assert.deepEqual(await prepareSnapshotForCreate(h.pass(), { ...mainRequest, wantRestore: true }), {
      restore: true,
      dropped: false,
    });
    assert.deepEqual(h.registry.callsOf("getSnapshot"), [`${MAIN_VM}:hibernate`, `${MAIN_VM}:hibernate`]);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
  });

  it("a registry error fails the create: thrown, nothing deleted or written", async () => {
    const h = scalingHarness(scalingSet());
    h.registry.put(MAIN_VM, "hibernate", OTHER_IMAGE);
    h.registry.failOn = () => FakeSnapshotRegistry.error(503);
    await assert.rejects(prepareSnapshotForCreate(h.pass(), mainRequest), /injected failure/);
    assert.deepEqual(h.registry.callsOf("deleteTagAt"), []);
    assert.deepEqual(h.client.writes(), []);
  });

  it("restores a VM the reclaim record owes a restore", async () => {
    const h = scalingHarness(withRecord({ generation: 1, vms: [MAIN_VM], restore: [MAIN_VM] }));
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    assert.deepEqual(await prepareSnapshotForCreate(h.pass(), mainRequest), {
      restore: true,
      dropped: false,
    });
  });

  it("restores a pod a CocoonHibernation holds Hibernated or Waking; a main without intent is left to vk", async () => {
    const h = scalingHarness(scalingSet());
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Active"));
    assert.deepEqual(await prepareSnapshotForCreate(h.pass(), mainRequest), {
      restore: false,
      dropped: false,
    });
    assert.equal(h.registry.has(MAIN_VM, "hibernate"), true);
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Waking"));
    assert.deepEqual(await prepareSnapshotForCreate(h.pass(), mainRequest), {
      restore: true,
      dropped: false,
    });
  });

  it("drops a tag from another image by digest, takes the VM off the reclaim record, and boots fresh", async () => {
    const h = scalingHarness(withRecord({ generation: 1, vms: [MAIN_VM, SUB_VM], restore: [MAIN_VM] }));
    const digest = h.registry.put(MAIN_VM, "hibernate", OTHER_IMAGE);
    const result = await prepareSnapshotForCreate(h.pass(), { ...mainRequest, wantRestore: true });
    assert.deepEqual(result, { restore: false, dropped: true });
    assert.deepEqual(
      h.registry.calls.map((c) => `${c.op} ${c.repo}:${c.ref}`),
      [`getSnapshot ${MAIN_VM}:hibernate`, `deleteTagAt ${MAIN_VM}:hibernate@${digest}`],
    );
    assert.equal(h.registry.has(MAIN_VM, "hibernate"), false);
    assert.deepEqual(recordOf(h), { generation: 1, vms: [SUB_VM], restore: [], suspended: [] });
  });

  it("keeps the VM recorded when the registry refuses the tag delete", async () => {
    const h = scalingHarness(withRecord({ generation: 1, vms: [MAIN_VM] }));
    h.registry.put(MAIN_VM, "hibernate", OTHER_IMAGE);
    h.registry.failOn = (call) => (call.op === "deleteTagAt" ? FakeSnapshotRegistry.error(500) : undefined);
    await assert.rejects(prepareSnapshotForCreate(h.pass(), mainRequest));
    assert.deepEqual(recordOf(h).vms, [MAIN_VM]);
    assert.deepEqual(h.client.writes(), []);
  });

  it("a sub-agent neither owed a restore nor restored by a CocoonHibernation drops its tag first", async () => {
    const h = scalingHarness(withRecord({ generation: 1, vms: [SUB_VM] }));
    h.registry.put(SUB_VM, "hibernate", IMAGE);
    assert.deepEqual(await prepareSnapshotForCreate(h.pass(), subRequest), { restore: false, dropped: true });
    assert.equal(h.registry.has(SUB_VM, "hibernate"), false);
    assert.equal(h.set().metadata.annotations?.[ANN_HIBERNATE_RECLAIM], undefined);
  });

  it("a sub-agent owed a restore, or restored by a CocoonHibernation, keeps its tag and restores", async () => {
    const owed = scalingHarness(withRecord({ generation: 1, vms: [SUB_VM], restore: [SUB_VM] }));
    owed.registry.put(SUB_VM, "hibernate", IMAGE);
    assert.deepEqual(await prepareSnapshotForCreate(owed.pass(), subRequest), {
      restore: true,
      dropped: false,
    });
    assert.deepEqual(owed.registry.callsOf("deleteTagAt"), []);

    const byCR = scalingHarness(scalingSet());
    byCR.registry.put(SUB_VM, "hibernate", IMAGE);
    byCR.client.seed(COCOONHIBERNATIONS, hibernation("demo-1", "Hibernated"));
    assert.deepEqual(await prepareSnapshotForCreate(byCR.pass(), subRequest), {
      restore: true,
      dropped: false,
    });
    assert.deepEqual(byCR.registry.callsOf("deleteTagAt"), []);
  });

  it("concurrent drops in one pass each leave the record (the writes are chained)", async () => {
    const vms = ["vk-ns-demo-1", "vk-ns-demo-2", "vk-ns-demo-3"];
    const h = scalingHarness(withRecord({ generation: 1, vms: [MAIN_VM, ...vms] }));
    for (const vm of vms) h.registry.put(vm, "hibernate", OTHER_IMAGE);
    const pass = h.pass();
    await Promise.all(
      vms.map((vm, i) =>
        prepareSnapshotForCreate(pass, { ...subRequest, podName: `demo-${i + 1}`, vmName: vm }),
      ),
    );
    assert.deepEqual(recordOf(h).vms, [MAIN_VM]);
  });

  it("lists CocoonHibernations at most once per pass", async () => {
    const h = scalingHarness(scalingSet());
    const pass = h.pass();
    await prepareSnapshotForCreate(pass, mainRequest);
    await prepareSnapshotForCreate(pass, subRequest);
    assert.equal(h.view.hibernationLists, 1);
  });

  it("reads the cached CocoonHibernations uncopied, and they refuse writes", async () => {
    const h = scalingHarness(scalingSet());
    h.client.seed(COCOONHIBERNATIONS, hibernation("demo-0", "Hibernated"));
    h.registry.put(MAIN_VM, "hibernate", IMAGE);
    const pass = h.pass();
    assert.deepEqual(await prepareSnapshotForCreate(pass, mainRequest), { restore: true, dropped: false });
    const [ch] = pass.hibernationsInNamespace();
    assert.ok(ch);
    assert.equal(h.view.listHibernations("ns")[0], ch, "the view hands out the stored object itself");
    assert.throws(() => {
      (ch.status as { phase?: string }).phase = "Active";
    }, TypeError);
  });
});
