// Step 2, teardown of a set being deleted (docs/cocoonset.md, "2. Teardown").
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { AgentStatus, CocoonSet, ToolboxStatus } from "../../../src/apis/v1/types.ts";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { REASON_VM_NAME_COLLISION } from "../../../src/cocoonset/steps/collision.ts";
import { tagsToCollect } from "../../../src/cocoonset/steps/teardown.ts";
import {
  ANN_DELETE_VM_NAMES,
  ANN_HIBERNATE_RECLAIM,
  FINALIZER_COCOONSET,
  TAG_HIBERNATE,
  TAG_LATEST,
} from "../../../src/contract/keys.ts";
import { REASON_FOREIGN_VM_NAME_IGNORED } from "../../../src/contract/vmname.ts";
import { COCOONSETS, PODS } from "../../../src/controller/resources.ts";
import { ANN_RESTORE_HOLD, encodeRestoreHold, REASON_SET_HELD } from "../../../src/holds.ts";
import { REQUEUE_POLL_MS } from "../../../src/pass/pass.ts";
import { LABEL_CLAIMED_FROM, LABEL_POOL } from "../../../src/pool/keys.ts";
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

    const readAt = storedSet(h.client)?.metadata.resourceVersion;
    const result = await reconcile(h);

    assert.deepEqual(result, {});
    assert.deepEqual(
      h.client.writes().map((c) => `${c.verb} ${c.resource} ${c.name}`),
      ["patch cocoonsets demo", "delete pods demo-0", "update cocoonsets demo"],
    );
    // The whole list is rewritten, so the write is guarded by the version it was read at.
    assert.deepEqual(h.client.writes()[0]?.body, {
      metadata: { annotations: { [ANN_DELETE_VM_NAMES]: vm("0") }, resourceVersion: readAt },
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

    const readAt = storedSet(h.client)?.metadata.resourceVersion;
    await reconcile(h);

    const stash = h.client.writes()[0];
    assert.deepEqual(stash?.body, {
      metadata: {
        annotations: { [ANN_DELETE_VM_NAMES]: [vm("0"), vm("3"), vm("7"), vm("tb")].join(",") },
        resourceVersion: readAt,
      },
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

  for (const [label, owner] of [
    [LABEL_POOL, "a pool's member"],
    [LABEL_CLAIMED_FROM, "a member a claim took from its pool"],
  ] as const) {
    it(`${owner}: deletes every VM's :latest too, under the default policy`, async () => {
      const h = harness();
      seedSet(
        h.client,
        deletingSet(
          {},
          {
            metadata: { ...deletingSet().metadata, labels: { [label]: "warm" } },
            status: statusWith(agents(0, 1)),
          },
        ),
      );
      putAllTags(h.registry, [vm("0"), vm("1")]);

      await reconcile(h);

      assert.deepEqual(
        h.registry.callsOf("deleteIfPresent").map((c) => c.slice(vm("").length)),
        ["0:hibernate", "0:latest", "1:hibernate", "1:latest"],
      );
      for (const slot of ["0", "1"]) assert.equal(h.registry.has(vm(slot), TAG_LATEST), false, slot);
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

    // Said on the set, and looked at again at the poll rather than with a growing backoff.
    assert.deepEqual(await reconcile(h), { requeueAfterMs: REQUEUE_POLL_MS });
    assert.deepEqual(
      h.events.events.filter((e) => e.reason === "SnapshotCleanupFailed").map((e) => e.type),
      ["Warning"],
    );
    assert.match(
      h.events.events.find((e) => e.reason === "SnapshotCleanupFailed")?.message ?? "",
      /vk-ns-demo-0:hibernate/,
    );
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

describe("teardown touches only the set's own VMs", () => {
  it("ignores stashed and recorded names of other sets, base images and paths, with a Warning naming them", async () => {
    const h = harness();
    const foreign = ["vk-b-prod-0", "ubuntu", `vk-${NS}-${SET}-../vk-b-prod-0`, `vk-${NS}-${SET}2-0`];
    seedSet(h.client, {
      ...deletingSet(),
      metadata: {
        ...deletingSet().metadata,
        annotations: {
          [ANN_DELETE_VM_NAMES]: [vm("0"), ...foreign.slice(0, 2)].join(","),
          [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: foreign.slice(2) }),
        },
      },
    });
    putAllTags(h.registry, [vm("0"), ...foreign]);

    assert.deepEqual(await reconcile(h), {});

    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [`${vm("0")}:hibernate`]);
    for (const name of foreign) assert.equal(h.registry.has(name, TAG_HIBERNATE), true, name);
    const warnings = h.events.events.filter((e) => e.reason === REASON_FOREIGN_VM_NAME_IGNORED);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.type, "Warning");
    for (const name of foreign) assert.ok(warnings[0]?.message.includes(name), name);
    assert.equal(storedSet(h.client), undefined, "the set still goes");
  });

  it("ignores a foreign name under snapshotPolicy never too: neither its :hibernate nor its :latest", async () => {
    const h = harness();
    seedSet(h.client, {
      ...deletingSet({ snapshotPolicy: "never" }),
      metadata: { ...deletingSet().metadata, annotations: { [ANN_DELETE_VM_NAMES]: "vk-b-prod-0" } },
    });
    putAllTags(h.registry, ["vk-b-prod-0"]);

    await reconcile(h);

    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), []);
    assert.equal(h.registry.has("vk-b-prod-0", TAG_LATEST), true);
  });

  it("leaves the tags of names an earlier-created live set answers for, and collects the rest", async () => {
    const h = harness();
    // Namespace `ns-demo` set `x` and namespace `ns` set `demo-x` share `vk-ns-demo-x-0`.
    h.client.seed(COCOONSETS, {
      ...cocoonSet(
        {},
        { namespace: `${NS}-${SET}`, name: "x", uid: "early", creationTimestamp: "2026-01-01T00:00:00Z" },
      ),
    });
    seedSet(h.client, {
      ...deletingSet(),
      metadata: {
        ...deletingSet().metadata,
        creationTimestamp: "2026-01-01T00:00:09Z",
        annotations: { [ANN_DELETE_VM_NAMES]: [vm("0"), vm("x-0")].join(",") },
      },
    });
    putAllTags(h.registry, [vm("0"), vm("x-0")]);

    await reconcile(h);

    assert.deepEqual(h.registry.callsOf("deleteIfPresent"), [`${vm("0")}:hibernate`]);
    assert.equal(h.registry.has(vm("x-0"), TAG_HIBERNATE), true);
    const warning = h.events.events.find((e) => e.reason === REASON_VM_NAME_COLLISION);
    assert.ok(warning?.message.includes(`${vm("x-0")} (CocoonSet ${NS}-${SET}/x)`), warning?.message);
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
