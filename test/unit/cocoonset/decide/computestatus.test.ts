import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetStatus, Condition } from "../../../../src/apis/v1/types.ts";
import { computeStatus, statusEqual } from "../../../../src/cocoonset/decide/computestatus.ts";
import {
  ANN_CONN_TYPE,
  ANN_IP,
  ANN_OS,
  ANN_VM_ID,
  ANN_VM_NAME,
  ANN_VNC_PORT,
  LABEL_ROLE,
  LABEL_SLOT,
} from "../../../../src/contract/keys.ts";
import { type Classification, classifyPods } from "../../../../src/pass/classify.ts";

const NOW = "2026-05-14T01:00:00Z";
const LATER = "2026-05-14T02:00:00Z";

function set(replicas: number, toolboxes: string[] = [], generation = 2): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns", uid: "test-uid", generation },
    spec: {
      agent: { image: "ubuntu", replicas },
      toolboxes: toolboxes.map((name) => ({ name, image: "tb" })),
    },
  };
}

function pod(
  name: string,
  role: string,
  slot: string,
  ready: boolean,
  annotations: Record<string, string> = {},
): Pod {
  return {
    metadata: {
      name,
      namespace: "ns",
      labels: { [LABEL_ROLE]: role, [LABEL_SLOT]: slot },
      annotations: { [ANN_VM_NAME]: `vk-ns-${name}`, ...annotations },
      ownerReferences: [
        {
          apiVersion: "cocoonset.cocoonstack.io/v1",
          kind: "CocoonSet",
          name: "demo",
          uid: "test-uid",
          controller: true,
        },
      ],
    },
    spec: { containers: [{ name: "agent" }] },
    status: {
      phase: ready ? "Running" : "Pending",
      conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    },
  };
}

const main = (ready = true, annotations: Record<string, string> = {}) =>
  pod("demo-0", "main", "0", ready, annotations);
const sub = (slot: number, ready = true) => pod(`demo-${slot}`, "sub-agent", String(slot), ready);
const toolbox = (name: string, ready = true, annotations: Record<string, string> = {}) =>
  pod(`demo-${name}`, "toolbox", name, ready, annotations);

function classify(...pods: Pod[]): Classification {
  return classifyPods(pods, { name: "demo", uid: "test-uid" });
}

function condition(status: CocoonSetStatus, type: string): Condition | undefined {
  return status.conditions?.find((c) => c.type === type);
}

describe("computeStatus phase", () => {
  it("is Pending without a main", () => {
    assert.equal(computeStatus(set(1), classify(), { now: NOW }).phase, "Pending");
  });

  it("is Pending while the main is not Ready", () => {
    assert.equal(computeStatus(set(0), classify(main(false)), { now: NOW }).phase, "Pending");
  });

  it("is Scaling with a Ready main and a missing sub-agent (replicas 1)", () => {
    assert.equal(computeStatus(set(1), classify(main()), { now: NOW }).phase, "Scaling");
  });

  it("is Running when everything is Ready", () => {
    assert.equal(
      computeStatus(set(1, ["tb"]), classify(main(), sub(1), toolbox("tb")), { now: NOW }).phase,
      "Running",
    );
  });

  it("is Scaling with a Pending toolbox, toolboxes 0/1", () => {
    const status = computeStatus(set(0, ["tb"]), classify(main(), toolbox("tb", false)), { now: NOW });
    assert.equal(status.phase, "Scaling");
    assert.equal(status.readyToolboxes, 0);
    assert.equal(status.desiredToolboxes, 1);
  });

  it("takes a phase a step forces", () => {
    for (const phase of ["Suspending", "Suspended", "Waking", "Migrating", "Failed"] as const) {
      const status = computeStatus(set(0), classify(main()), { phase, now: NOW });
      assert.equal(status.phase, phase);
      assert.deepEqual(condition(status, "Progressing"), {
        type: "Progressing",
        status: "False",
        reason: "Stable",
        message: phase,
        observedGeneration: 2,
        lastTransitionTime: NOW,
      });
    }
  });
});

describe("computeStatus entries", () => {
  it("replicas 2 with 2 ready pods: desired 3, ready 2, sub forked from the main VM", () => {
    const status = computeStatus(set(2), classify(sub(1), main()), { now: NOW });
    assert.equal(status.desiredAgents, 3);
    assert.equal(status.readyAgents, 2);
    assert.equal(status.observedGeneration, 2);
    assert.deepEqual(status.agents, [
      { slot: 0, role: "main", podName: "demo-0", vmName: "vk-ns-demo-0", phase: "Running" },
      {
        slot: 1,
        role: "sub-agent",
        podName: "demo-1",
        vmName: "vk-ns-demo-1",
        phase: "Running",
        forkedFrom: "vk-ns-demo-0",
      },
    ]);
  });

  it("carries vmID qemu-1 and ip 10.0.0.1 into the entry", () => {
    const status = computeStatus(
      set(0),
      classify(main(true, { [ANN_VM_ID]: "qemu-1", [ANN_IP]: "10.0.0.1" })),
      {
        now: NOW,
      },
    );
    assert.equal(status.agents?.[0]?.vmID, "qemu-1");
    assert.equal(status.agents?.[0]?.ip, "10.0.0.1");
  });

  it("sorts sub-agents by slot number", () => {
    const status = computeStatus(set(10), classify(main(), sub(10), sub(2)), { now: NOW });
    assert.deepEqual(
      status.agents?.map((a) => a.slot),
      [0, 2, 10],
    );
  });

  it("lists toolboxes by name with the connection type and VNC port", () => {
    const status = computeStatus(
      set(0, ["win", "droid", "vnc", "plain", "forced"]),
      classify(
        main(),
        toolbox("win", true, { [ANN_OS]: "windows" }),
        toolbox("droid", true, { [ANN_OS]: "android" }),
        toolbox("vnc", true, {
          [ANN_OS]: "windows",
          [ANN_VNC_PORT]: "5901",
          [ANN_VM_ID]: "qemu-1",
          [ANN_IP]: "10.0.0.1",
        }),
        toolbox("plain", true, { [ANN_VNC_PORT]: "not-a-port" }),
        toolbox("forced", true, { [ANN_VNC_PORT]: "5901", [ANN_CONN_TYPE]: "ssh" }),
      ),
      { now: NOW },
    );
    assert.deepEqual(status.toolboxes, [
      { name: "droid", podName: "demo-droid", vmName: "vk-ns-demo-droid", phase: "Running", connType: "adb" },
      {
        name: "forced",
        podName: "demo-forced",
        vmName: "vk-ns-demo-forced",
        phase: "Running",
        connType: "ssh",
        vncPort: 5901,
      },
      { name: "plain", podName: "demo-plain", vmName: "vk-ns-demo-plain", phase: "Running", connType: "ssh" },
      {
        name: "vnc",
        podName: "demo-vnc",
        vmName: "vk-ns-demo-vnc",
        vmID: "qemu-1",
        ip: "10.0.0.1",
        phase: "Running",
        connType: "vnc",
        vncPort: 5901,
      },
      { name: "win", podName: "demo-win", vmName: "vk-ns-demo-win", phase: "Running", connType: "rdp" },
    ]);
    assert.equal(status.readyToolboxes, 5);
  });

  it("omits empty lists and a zero generation, as Go's omitempty does", () => {
    const status = computeStatus(set(0, [], 0), classify(), { now: NOW });
    assert.equal("agents" in status, false);
    assert.equal("toolboxes" in status, false);
    assert.equal("observedGeneration" in status, false);
    assert.equal(status.readyAgents, 0);
    for (const c of status.conditions ?? []) assert.equal("observedGeneration" in c, false);
  });
});

describe("conditions", () => {
  it("Ready is True for 1/1 agents and 0/0 toolboxes", () => {
    const status = computeStatus(set(0), classify(main()), { now: NOW });
    assert.deepEqual(condition(status, "Ready"), {
      type: "Ready",
      status: "True",
      reason: "AllAgentsReady",
      message: "1/1 agents ready, 0/0 toolboxes ready",
      observedGeneration: 2,
      lastTransitionTime: NOW,
    });
  });

  it("Ready is False for 1/1 agents and 0/1 toolboxes", () => {
    const status = computeStatus(set(0, ["tb"]), classify(main()), { now: NOW });
    assert.deepEqual(condition(status, "Ready"), {
      type: "Ready",
      status: "False",
      reason: "AgentsNotReady",
      message: "1/1 agents ready, 0/1 toolboxes ready",
      observedGeneration: 2,
      lastTransitionTime: NOW,
    });
  });

  it("Progressing is True Reconciling while Pending or Scaling", () => {
    const status = computeStatus(set(1), classify(main()), { now: NOW });
    assert.deepEqual(condition(status, "Progressing"), {
      type: "Progressing",
      status: "True",
      reason: "Reconciling",
      message: "Scaling",
      observedGeneration: 2,
      lastTransitionTime: NOW,
    });
  });

  it("Ready is False in a forced phase even when every pod is Ready: the generation has not converged", () => {
    for (const phase of ["Suspending", "Migrating", "Waking", "Failed"] as const) {
      const status = computeStatus(set(0), classify(main()), { phase, now: NOW });
      assert.deepEqual(condition(status, "Ready"), {
        type: "Ready",
        status: "False",
        reason: phase,
        message: "1/1 agents ready, 0/0 toolboxes ready",
        observedGeneration: 2,
        lastTransitionTime: NOW,
      });
    }
  });

  it("Ready flips to False in the first status computed for a suspend of a Ready set", () => {
    const cs = set(0, [], 3);
    cs.status = computeStatus(set(0, [], 2), classify(main()), { now: NOW });
    assert.equal(condition(cs.status, "Ready")?.status, "True");
    cs.spec.suspend = true;
    const next = computeStatus(cs, classify(main()), { phase: "Suspending", now: LATER });
    assert.deepEqual(
      [condition(next, "Ready")?.status, condition(next, "Ready")?.observedGeneration],
      ["False", 3],
    );
    assert.equal(condition(next, "Ready")?.lastTransitionTime, LATER);
  });

  it("Suspended is True exactly in phase Suspended, at the generation it judged", () => {
    const cs = set(0, [], 4);
    cs.spec.suspend = true;
    const status = computeStatus(cs, classify(main(false)), { phase: "Suspended", now: NOW });
    assert.deepEqual(condition(status, "Suspended"), {
      type: "Suspended",
      status: "True",
      reason: "Suspended",
      message: "every VM is hibernated",
      observedGeneration: 4,
      lastTransitionTime: NOW,
    });
  });

  it("Suspended is False SuspendInProgress while a requested suspend has not landed", () => {
    const cs = set(0);
    cs.spec.suspend = true;
    for (const phase of ["Suspending", "Failed"] as const) {
      const status = computeStatus(cs, classify(main()), { phase, now: NOW });
      assert.deepEqual(
        [condition(status, "Suspended")?.status, condition(status, "Suspended")?.reason],
        ["False", "SuspendInProgress"],
      );
      assert.equal(condition(status, "Suspended")?.message, phase);
    }
  });

  it("Suspended is False NotSuspended on a running set, and flips back after a resume", () => {
    const cs = set(0);
    cs.spec.suspend = true;
    cs.status = computeStatus(cs, classify(main(false)), { phase: "Suspended", now: NOW });
    cs.spec.suspend = false;
    const resumed = computeStatus(cs, classify(main()), { now: LATER });
    assert.deepEqual(condition(resumed, "Suspended"), {
      type: "Suspended",
      status: "False",
      reason: "NotSuspended",
      message: "spec.suspend is false",
      observedGeneration: 2,
      lastTransitionTime: LATER,
    });
  });

  it("keeps lastTransitionTime while a condition's status holds, and stamps a flip", () => {
    const cs = set(1);
    cs.status = computeStatus(cs, classify(main()), { now: NOW });
    const same = computeStatus(cs, classify(main(), sub(1, false)), { now: LATER });
    assert.equal(condition(same, "Ready")?.lastTransitionTime, NOW);
    assert.equal(condition(same, "Ready")?.message, "1/2 agents ready, 0/0 toolboxes ready");
    const flipped = computeStatus(cs, classify(main(), sub(1)), { now: LATER });
    assert.equal(condition(flipped, "Ready")?.lastTransitionTime, LATER);
    assert.equal(condition(flipped, "Progressing")?.lastTransitionTime, LATER);
  });
});

describe("statusEqual", () => {
  it("identical builds compare equal, and a recomputed settled status equals the stored one", () => {
    const cs = set(1);
    const a = computeStatus(cs, classify(main(), sub(1)), { now: NOW });
    assert.equal(statusEqual(a, computeStatus(cs, classify(main(), sub(1)), { now: NOW })), true);
    cs.status = a;
    assert.equal(statusEqual(cs.status, computeStatus(cs, classify(main(), sub(1)), { now: LATER })), true);
  });

  it("a phase change compares unequal", () => {
    const cs = set(0);
    const a = computeStatus(cs, classify(), { phase: "Pending", now: NOW });
    const b = computeStatus(cs, classify(), { phase: "Running", now: NOW });
    assert.equal(statusEqual(a, b), false);
  });

  it("treats fields Go omits when empty as absent", () => {
    const wire: CocoonSetStatus = {
      readyAgents: 0,
      desiredAgents: 1,
      readyToolboxes: 0,
      desiredToolboxes: 0,
      phase: "Pending",
    };
    const local: CocoonSetStatus = { ...wire, agents: [], toolboxes: [], observedGeneration: 0 };
    assert.equal(statusEqual(wire, local), true);
    assert.equal(statusEqual({ ...wire, readyAgents: 1 }, local), false);
  });

  it("sees a changed lastTransitionTime and a changed entry", () => {
    const cs = set(0);
    const a = computeStatus(cs, classify(main()), { now: NOW });
    assert.equal(statusEqual(a, computeStatus(cs, classify(main()), { now: LATER })), false);
    const withIP = computeStatus(cs, classify(main(true, { [ANN_IP]: "10.0.0.2" })), { now: NOW });
    assert.equal(statusEqual(a, withIP), false);
  });
});

describe("status rules", () => {
  it("Ready's reason is the forced phase only when every pod is Ready, else AgentsNotReady", () => {
    const reason = (cs: CocoonSet, ...pods: Pod[]) =>
      condition(computeStatus(cs, classify(...pods), { phase: "Suspending", now: NOW }), "Ready")?.reason;
    assert.equal(reason(set(0), main()), "Suspending");
    assert.equal(reason(set(0), main(false)), "AgentsNotReady");
    assert.equal(reason(set(1), main(), sub(1, false)), "AgentsNotReady");
    assert.equal(reason(set(0, ["tb"]), main(), toolbox("tb", false)), "AgentsNotReady");
  });

  it("Progressing is True Reconciling while Pending", () => {
    const status = computeStatus(set(0), classify(), { now: NOW });
    assert.equal(status.phase, "Pending");
    assert.deepEqual(
      [condition(status, "Progressing")?.status, condition(status, "Progressing")?.reason],
      ["True", "Reconciling"],
    );
  });

  it("a set without a status gets exactly the Ready, Progressing and Suspended conditions", () => {
    const status = computeStatus(set(0), classify(main()), { now: NOW });
    assert.deepEqual(
      status.conditions?.map((c) => c.type),
      ["Ready", "Progressing", "Suspended"],
    );
  });

  it("a sub-agent reports no forkedFrom while the main it forks from is missing", () => {
    const status = computeStatus(set(1), classify(sub(1)), { now: NOW });
    assert.deepEqual(status.agents, [
      { slot: 1, role: "sub-agent", podName: "demo-1", vmName: "vk-ns-demo-1", phase: "Running" },
    ]);
  });
});

describe("statusEqual on a status read off the wire", () => {
  const local: CocoonSetStatus = {
    readyAgents: 1,
    desiredAgents: 1,
    readyToolboxes: 0,
    desiredToolboxes: 0,
    phase: "Running",
    agents: [{ slot: 0, role: "main", podName: "demo-0", vmName: "vk-ns-demo-0" }],
  };

  it("a null field equals its absence, so an unchanged status is not written again", () => {
    const wire = { ...local, expireAt: null, toolboxes: null } as unknown as CocoonSetStatus;
    assert.equal(statusEqual(wire, local), true);
  });

  it("an empty string in an entry equals its absence", () => {
    const wire: CocoonSetStatus = {
      ...local,
      agents: [{ slot: 0, role: "main", podName: "demo-0", vmName: "vk-ns-demo-0", ip: "", vmID: "" }],
    };
    assert.equal(statusEqual(wire, local), true);
  });
});
