// The VM names a set answers for, and which of two sets sharing one was created first.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { ANN_DELETE_VM_NAMES, ANN_HIBERNATE_RECLAIM } from "../../../src/contract/keys.ts";
import { collisionsWithKeepers, keepsSharedNames, setVMNames } from "../../../src/pass/setvms.ts";

function set(
  namespace: string,
  name: string,
  opts: {
    replicas?: number;
    toolboxes?: string[];
    created?: string;
    uid?: string;
    annotations?: Record<string, string>;
    status?: CocoonSet["status"];
  } = {},
): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: {
      namespace,
      name,
      uid: opts.uid ?? `${namespace}-${name}`,
      creationTimestamp: opts.created ?? "2026-01-01T00:00:00Z",
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: {
      agent: { image: "ubuntu", replicas: opts.replicas ?? 0 },
      toolboxes: (opts.toolboxes ?? []).map((tb) => ({ name: tb })),
    },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

describe("setVMNames", () => {
  it("names agents by slot, toolboxes by name, and the own names its status and bookkeeping list", () => {
    const cs = set("ns", "web", {
      replicas: 1,
      toolboxes: ["db"],
      annotations: {
        [ANN_DELETE_VM_NAMES]: "vk-ns-web-7,vk-other-prod-0,vk-ns-web-../x",
        [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: ["vk-ns-web-5", "vk-b-prod-0"] }),
      },
      status: {
        readyAgents: 0,
        desiredAgents: 2,
        readyToolboxes: 0,
        desiredToolboxes: 1,
        agents: [{ slot: 3, role: "sub-agent", vmName: "vk-ns-web-3" }],
      },
    });
    assert.deepEqual(setVMNames(cs), [
      "vk-ns-web-0",
      "vk-ns-web-1",
      "vk-ns-web-3",
      "vk-ns-web-5",
      "vk-ns-web-7",
      "vk-ns-web-db",
    ]);
  });
});

describe("keepsSharedNames", () => {
  it("orders sets without VMs by creationTimestamp, then by uid", () => {
    const early = set("a", "x", { created: "2026-01-01T00:00:00Z", uid: "b" });
    const late = set("a", "y", { created: "2026-01-01T00:00:01Z", uid: "a" });
    assert.equal(keepsSharedNames(early, late), true);
    assert.equal(keepsSharedNames(late, early), false);
    const sameTimeSmallUid = set("a", "z", { created: "2026-01-01T00:00:00Z", uid: "a" });
    assert.equal(keepsSharedNames(sameTimeSmallUid, early), true);
    assert.equal(keepsSharedNames(early, sameTimeSmallUid), false);
  });
});

describe("keepsSharedNames: a set with VMs", () => {
  it("keeps its names over one that has none, even one created in the same second with a smaller uid", () => {
    const status = {
      readyAgents: 1,
      desiredAgents: 1,
      readyToolboxes: 1,
      desiredToolboxes: 1,
      toolboxes: [{ name: "2-0", vmName: "vk-ns-web-2-0" }],
    };
    const running = set("ns", "web", { toolboxes: ["2-0"], uid: "z", status });
    const fresh = set("ns", "web-2", { uid: "a" });
    assert.equal(keepsSharedNames(running, fresh), true);
    assert.equal(keepsSharedNames(fresh, running), false);
    const lookup = (vm: string) => [running, fresh].filter((cs) => setVMNames(cs).includes(vm));
    assert.deepEqual(
      collisionsWithKeepers(fresh, setVMNames(fresh), lookup).map((c) => c.vm),
      ["vk-ns-web-2-0"],
    );
    assert.deepEqual(collisionsWithKeepers(running, setVMNames(running), lookup), []);
  });

  it("a reclaim record's VMs count as VMs: a suspended set with no pods keeps its names", () => {
    const parked = set("ns", "web", {
      uid: "z",
      annotations: { [ANN_HIBERNATE_RECLAIM]: JSON.stringify({ generation: 1, vms: ["vk-ns-web-0"] }) },
    });
    assert.equal(keepsSharedNames(parked, set("ns", "web-x", { uid: "a" })), true);
  });
});

/** An index over `sets` as the informer keeps it. */
function naming(sets: CocoonSet[]) {
  return (vm: string) => sets.filter((cs) => setVMNames(cs).includes(vm));
}

describe("collisionsWithKeepers", () => {
  it("refuses the later of namespace a-b set c and namespace a set b-c, not the earlier", () => {
    const first = set("a-b", "c", { created: "2026-01-01T00:00:00Z" });
    const second = set("a", "b-c", { created: "2026-01-01T00:00:05Z" });
    const lookup = naming([first, second]);
    assert.deepEqual(collisionsWithKeepers(first, setVMNames(first), lookup), []);
    const refused = collisionsWithKeepers(second, setVMNames(second), lookup);
    assert.deepEqual(
      refused.map((c) => [c.vm, c.holder.metadata.namespace, c.holder.metadata.name]),
      [["vk-a-b-c-0", "a-b", "c"]],
    );
  });

  it("does not refuse web-2 beside web while their actual VM names differ", () => {
    const web = set("ns", "web", { replicas: 3, toolboxes: ["db"] });
    const web2 = set("ns", "web-2", { replicas: 1, created: "2026-01-01T00:01:00Z" });
    const lookup = naming([web, web2]);
    assert.deepEqual(collisionsWithKeepers(web2, setVMNames(web2), lookup), []);
    assert.deepEqual(collisionsWithKeepers(web, setVMNames(web), lookup), []);
  });

  it("refuses web-2 once web's toolbox 2-0 names web-2's main VM", () => {
    const web = set("ns", "web", { toolboxes: ["2-0"] });
    const web2 = set("ns", "web-2", { created: "2026-01-01T00:01:00Z" });
    const lookup = naming([web, web2]);
    assert.deepEqual(
      collisionsWithKeepers(web2, setVMNames(web2), lookup).map((c) => c.vm),
      ["vk-ns-web-2-0"],
    );
    assert.deepEqual(collisionsWithKeepers(web, setVMNames(web), lookup), []);
  });
});

describe("setVMNames: what the spec and status name", () => {
  it("a spec without toolboxes names the agents' VMs only", () => {
    const cs = set("ns", "web", { replicas: 1 });
    delete cs.spec.toolboxes;
    assert.deepEqual(setVMNames(cs), ["vk-ns-web-0", "vk-ns-web-1"]);
  });

  it("a toolbox gone from the spec still names its VM while the status lists it", () => {
    const cs = set("ns", "web", {
      status: {
        readyAgents: 0,
        desiredAgents: 1,
        readyToolboxes: 0,
        desiredToolboxes: 0,
        toolboxes: [{ name: "db", vmName: "vk-ns-web-db" }],
      },
    });
    assert.deepEqual(setVMNames(cs), ["vk-ns-web-0", "vk-ns-web-db"]);
  });
});

describe("keepsSharedNames: agents' VMs", () => {
  it("a set whose status lists agent VMs keeps its names over a later-uid set created before it", () => {
    const running = set("ns", "web", {
      uid: "z",
      created: "2026-01-01T00:00:09Z",
      status: {
        readyAgents: 1,
        desiredAgents: 1,
        readyToolboxes: 0,
        desiredToolboxes: 0,
        agents: [{ slot: 0, role: "main", vmName: "vk-ns-web-0" }],
      },
    });
    const fresh = set("ns", "web-x", { uid: "a" });
    assert.equal(keepsSharedNames(running, fresh), true);
    assert.equal(keepsSharedNames(fresh, running), false);
  });
});

describe("collisionsWithKeepers: the holder", () => {
  it("names the set that keeps the name over every other, whatever order the index lists them in", () => {
    const first = set("ns", "web", { toolboxes: ["2-0"], created: "2026-01-01T00:00:00Z" });
    const second = set("ns", "web-2", { created: "2026-01-01T00:00:05Z" });
    const third = set("ns", "web-2-x", { created: "2026-01-01T00:00:09Z" });
    const vm = "vk-ns-web-2-0";
    for (const order of [
      [second, first, third],
      [third, second, first],
      [first, third, second],
    ]) {
      const refused = collisionsWithKeepers(third, [vm], () => order);
      assert.deepEqual(
        refused.map((c) => [c.vm, c.holder.metadata.name]),
        [[vm, "web"]],
      );
    }
  });
});

describe("collisionsWithKeepers: sets of one name in two namespaces", () => {
  it("refuses set web of namespace x-web-0 once web of namespace x names its main VM", () => {
    const first = set("x", "web", { toolboxes: ["0-web-0"], created: "2026-01-01T00:00:00Z" });
    const second = set("x-web-0", "web", { created: "2026-01-01T00:00:05Z" });
    const lookup = naming([first, second]);
    const refused = collisionsWithKeepers(second, setVMNames(second), lookup);
    assert.deepEqual(
      refused.map((c) => [c.vm, c.holder.metadata.namespace]),
      [["vk-x-web-0-web-0", "x"]],
    );
    assert.deepEqual(collisionsWithKeepers(first, setVMNames(first), lookup), []);
  });
});
