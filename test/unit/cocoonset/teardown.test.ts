// Step 2, teardown of a set being deleted (docs/cocoonset.md, "2. Teardown").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { AgentStatus, CocoonSet, ToolboxStatus } from "../../../src/apis/v1/types.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { tagsToCollect } from "../../../src/cocoonset/steps/teardown.ts";
import {
  ANN_DELETE_VM_NAMES,
  ANN_HIBERNATE_RECLAIM,
  FINALIZER_COCOONSET,
  TAG_HIBERNATE,
  TAG_LATEST,
} from "../../../src/contract/keys.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { ANN_RESTORE_HOLD, encodeRestoreHold, REASON_SET_HELD } from "../../../src/holds.ts";
import { FakeSnapshotRegistry } from "../../env/registry-fake.ts";
import {
  cocoonSet,
  type Harness,
  harness,
  NS,
  SET,
  seedSet,
  setPod,
  storedSet,
} from "../../support/cocoonset.ts";

const DELETED_AT = "2026-01-01T00:00:00Z";

function deletingSet(spec: Partial<CocoonSet["spec"]> = {}, extra: Partial<CocoonSet> = {}): CocoonSet {
  return { ...cocoonSet(spec, { deletionTimestamp: DELETED_AT, uid: "set-uid" }), ...extra };
}

function agents(...slots: number[]): AgentStatus[] {
  return slots.map((slot) => ({
    slot,
    role: slot === 0 ? "main" : "sub-agent",
    vmName: `vk-${NS}-${SET}-${slot}`,
  }));
}

function statusWith(agentList: AgentStatus[], toolboxes: ToolboxStatus[] = []): CocoonSet["status"] {
  return {
    readyAgents: 0,
    desiredAgents: 1,
    readyToolboxes: 0,
    desiredToolboxes: 0,
    agents: agentList,
    toolboxes,
  };
}

/** Puts :hibernate and :latest for every VM, so every probe finds its tag. */
function putAllTags(registry: FakeSnapshotRegistry, vms: string[]): void {
  for (const vm of vms) {
    registry.put(vm, TAG_HIBERNATE);
    registry.put(vm, TAG_LATEST);
  }
}

function reconcile(h: Harness) {
  return new CocoonSetReconciler(h.deps).reconcile(
    { namespace: NS, name: SET },
    new AbortController().signal,
  );
}

const vm = (suffix: string) => `vk-${NS}-${SET}-${suffix}`;

describe("teardown pod deletion", () => {
  it("deletes owned pods and leaves a pod that only carries the label", async () => {
    const h = harness();
    const cs = seedSet(h.client, deletingSet());
    h.client.seed(PODS, setPod(cs, "demo-0", "main", "0"));
    h.client.seed(PODS, setPod(cs, "demo-stale", "main", "0", { owned: false }));

    await reconcile(h);

    const left = h.client.all<Pod>(PODS, NS).map((p) => p.metadata.name);
    assert.deepEqual(left, ["demo-stale"]);
    assert.deepEqual(
      h.client.calls.filter((c) => c.verb === "delete").map((c) => c.name),
      ["demo-0"],
    );
  });

  it("stashes the VM names before the first pod delete, then GCs and drops the finalizer", async () => {
    const h = harness();
    const cs = seedSet(h.client, deletingSet());
    h.client.seed(PODS, setPod(cs, "demo-0", "main", "0"));
    h.registry.put(vm("0"), TAG_HIBERNATE);

    const result = await reconcile(h);

    assert.deepEqual(result, {});
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource} ${c.name}`),
      ["patch cocoonsets demo", "delete pods demo-0", "update cocoonsets demo"],
    );
    assert.deepEqual(h.client.writes()[0]?.body, {
      metadata: { annotations: { [ANN_DELETE_VM_NAMES]: vm("0") } },
    });
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [`${vm("0")}:hibernate`]);
    assert.equal(h.registry.has(vm("0"), TAG_HIBERNATE), false);
    assert.equal(storedSet(h.client), undefined, "the set is gone once its finalizer is removed");
  });

  it("waits 5 s without touching the registry while an owned pod is still terminating", async () => {
    const h = harness();
    const cs = seedSet(h.client, deletingSet());
    const bound = setPod(cs, "demo-0", "main", "0");
    bound.spec.nodeName = "node-a";
    h.client.seed(PODS, bound);
    h.registry.put(vm("0"), TAG_HIBERNATE);

    assert.deepEqual(await reconcile(h), { requeueAfterMs: 5_000 });
    assert.deepEqual(h.registry.calls, []);
    assert.deepEqual(storedSet(h.client)?.metadata.finalizers, [FINALIZER_COCOONSET]);

    h.client.clearCalls();
    assert.deepEqual(await reconcile(h), { requeueAfterMs: 5_000 });
    assert.deepEqual(h.client.writes(), [], "a terminating pod is not deleted again, the stash is current");

    h.client.finishPodDeletion(NS, "demo-0");
    assert.deepEqual(await reconcile(h), {});
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [`${vm("0")}:hibernate`]);
    assert.equal(storedSet(h.client), undefined);
  });

  it("stashes status VMs, stored names, pod VMs and the reclaim record's VMs together", async () => {
    const h = harness();
    const cs = seedSet(h.client, {
      ...deletingSet({}, { status: statusWith(agents(0)) }),
      metadata: {
        ...deletingSet().metadata,
        annotations: {
          [ANN_DELETE_VM_NAMES]: vm("7"),
          [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: [vm("3")] }),
        },
      },
    });
    h.client.seed(PODS, setPod(cs, "demo-tb", "toolbox", "tb"));

    await reconcile(h);

    const stash = h.client.writes()[0];
    assert.deepEqual(stash?.body, {
      metadata: { annotations: { [ANN_DELETE_VM_NAMES]: [vm("0"), vm("3"), vm("7"), vm("tb")].join(",") } },
    });
    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [
      `${vm("0")}:hibernate`,
      `${vm("3")}:hibernate`,
      `${vm("7")}:hibernate`,
      `${vm("tb")}:hibernate`,
    ]);
  });
});

describe("teardown registry GC per snapshot policy", () => {
  const cases: { name: string; policy: string; slots: string[]; expected: string[] }[] = [
    { name: "never", policy: "never", slots: ["0"], expected: ["0:hibernate", "0:latest"] },
    { name: "always", policy: "always", slots: ["0"], expected: ["0:hibernate"] },
    {
      name: "main-only with a sub-agent and a toolbox",
      policy: "main-only",
      slots: ["0", "1", "tb"],
      expected: ["0:hibernate", "1:hibernate", "1:latest", "tb:hibernate", "tb:latest"],
    },
    {
      name: "main-only with a toolbox named like a slot",
      policy: "main-only",
      slots: ["0", "db-0"],
      expected: ["0:hibernate", "db-0:hibernate", "db-0:latest"],
    },
    {
      name: "default policy (as always)",
      policy: "",
      slots: ["0", "1", "tb"],
      expected: ["0:hibernate", "1:hibernate", "tb:hibernate"],
    },
  ];
  for (const { name, policy, slots, expected } of cases) {
    it(`${name}: deletes exactly ${expected.join(", ")}`, async () => {
      const h = harness();
      const agentSlots = slots.filter((s) => /^\d+$/.test(s)).map(Number);
      const toolboxes = slots.filter((s) => !/^\d+$/.test(s)).map((s) => ({ name: s, vmName: vm(s) }));
      seedSet(
        h.client,
        deletingSet(policy ? { snapshotPolicy: policy } : {}, {
          status: statusWith(agents(...agentSlots), toolboxes),
        }),
      );
      putAllTags(
        h.registry,
        slots.map((s) => vm(s)),
      );

      await reconcile(h);

      const prefix = `${vm("")}`;
      assert.deepEqual(
        h.registry.callsOf("deleteIfPresent").map((c) => c.slice(prefix.length)),
        expected,
      );
      assert.deepEqual(h.registry.callsOf("deleteManifest"), [], "no DELETE without a probe");
      for (const slot of slots) {
        for (const tag of [TAG_HIBERNATE, TAG_LATEST]) {
          const collected = expected.includes(`${slot}:${tag}`);
          assert.equal(h.registry.has(vm(slot), tag), !collected, `${slot}:${tag}`);
        }
      }
      assert.equal(storedSet(h.client), undefined);
    });
  }

  it("plans the same order as a pure function", () => {
    assert.deepEqual(
      tagsToCollect(NS, SET, "main-only", [vm("tb"), vm("0")]).map((t) => `${t.vm}:${t.tag}:${t.required}`),
      [`${vm("0")}:hibernate:true`, `${vm("tb")}:hibernate:true`, `${vm("tb")}:latest:false`],
    );
  });
});

describe("teardown failures", () => {
  it("keeps the finalizer and the stashed names when a :hibernate probe fails, then finishes on retry", async () => {
    const h = harness();
    seedSet(h.client, deletingSet({}, { status: statusWith(agents(0, 1)) }));
    h.registry.put(vm("0"), TAG_HIBERNATE);
    h.registry.put(vm("1"), TAG_HIBERNATE);
    h.registry.failOn = (call) =>
      call.repo === vm("0") ? FakeSnapshotRegistry.error(503, "UNAVAILABLE") : undefined;

    await assert.rejects(reconcile(h), /vk-ns-demo-0:hibernate/);
    const kept = storedSet(h.client);
    assert.deepEqual(kept?.metadata.finalizers, [FINALIZER_COCOONSET]);
    assert.equal(kept?.metadata.annotations?.[ANN_DELETE_VM_NAMES], `${vm("0")},${vm("1")}`);
    assert.equal(h.registry.has(vm("0"), TAG_HIBERNATE), true);
    assert.equal(h.registry.has(vm("1"), TAG_HIBERNATE), false, "the other VMs are still collected");

    h.registry.failOn = undefined;
    h.client.clearCalls();
    assert.deepEqual(await reconcile(h), {});
    assert.equal(h.registry.has(vm("0"), TAG_HIBERNATE), false);
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}`),
      ["update cocoonsets"],
    );
    assert.equal(storedSet(h.client), undefined);
  });

  it("treats a :latest failure as best-effort and still drops the finalizer", async () => {
    const h = harness();
    seedSet(h.client, deletingSet({ snapshotPolicy: "never" }, { status: statusWith(agents(0)) }));
    putAllTags(h.registry, [vm("0")]);
    h.registry.failOn = (call) => (call.ref === TAG_LATEST ? FakeSnapshotRegistry.error(500) : undefined);

    assert.deepEqual(await reconcile(h), {});
    assert.equal(storedSet(h.client), undefined);
    assert.equal(h.registry.has(vm("0"), TAG_HIBERNATE), false);
  });

  it("without a registry skips the GC but still stashes and drops the finalizer", async () => {
    const h = harness({ withRegistry: false });
    const cs = seedSet(h.client, deletingSet());
    h.client.seed(PODS, setPod(cs, "demo-0", "main", "0"));

    assert.deepEqual(await reconcile(h), {});
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource}`),
      ["patch cocoonsets", "delete pods", "update cocoonsets"],
    );
    assert.deepEqual(h.registry.calls, []);
    assert.equal(storedSet(h.client), undefined);
  });
});

describe("teardown under a restore's hold", () => {
  it("keeps its finalizer and collects no tag while the API server's set has a restore hold, then collects the restore's copies", async () => {
    const h = harness();
    const cs = deletingSet();
    cs.metadata.annotations = {
      [ANN_RESTORE_HOLD]: encodeRestoreHold({
        restore: "undo",
        uid: "undo-uid",
        checkpoint: "ck",
        suspend: true,
      }),
      [ANN_DELETE_VM_NAMES]: vm("0"),
    };
    seedSet(h.client, cs);
    h.registry.put(vm("0"), TAG_HIBERNATE);

    assert.deepEqual(await reconcile(h), { requeueAfterMs: 5_000 });
    assert.deepEqual(h.registry.calls, [], "no tag probed or deleted while the restore may still copy");
    assert.deepEqual(storedSet(h.client)?.metadata.finalizers, [FINALIZER_COCOONSET]);
    assert.ok(h.events.reasons().includes(REASON_SET_HELD));

    // The restore saw the set being deleted, stopped, recorded its copy of VM 1, and let go.
    h.registry.put(vm("1"), TAG_HIBERNATE);
    await h.client.patch(COCOONSETS, NS, SET, {
      metadata: {
        annotations: {
          [ANN_RESTORE_HOLD]: null,
          [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ vms: [vm("1")], restore: [vm("1")] }),
        },
      },
    });
    assert.deepEqual(await reconcile(h), {});
    assert.equal(h.registry.has(vm("0"), TAG_HIBERNATE), false);
    assert.equal(h.registry.has(vm("1"), TAG_HIBERNATE), false, "the restore's copy is collected");
    assert.equal(storedSet(h.client), undefined);
  });
});
