// --wait judges completion at the generation the command's write produced: a condition or a phase
// left from an earlier generation never ends the wait.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet, Condition } from "../../../src/apis/v1/types.ts";
import { judgeHibernation } from "../../../src/plugin/hibernation.ts";
import { judgeSet, membersOf } from "../../../src/plugin/setstate.ts";

function condition(type: string, status: "True" | "False", observedGeneration: number): Condition {
  return { type, status, observedGeneration, reason: "R", message: "m", lastTransitionTime: "" };
}

/** A set whose spec is as the command wrote it (spec.suspend and spec.nodeName as given). */
function set(
  generation: number,
  status: CocoonSet["status"],
  spec: { suspend?: boolean; nodeName?: string } = {},
): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns", generation },
    spec: { agent: { image: "img", replicas: 1 }, toolboxes: [{ name: "tb" }], ...spec },
    ...(status ? { status } : {}),
  };
}

const suspended = { suspend: true };

const counts = { readyAgents: 2, desiredAgents: 2, readyToolboxes: 1, desiredToolboxes: 1 };

function pod(name: string, nodeName: string, lifecycle: string, ready = true): Pod {
  return {
    metadata: { name, annotations: { "vm.cocoonstack.io/lifecycle-state": lifecycle } },
    spec: { containers: [], nodeName },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

describe("judgeSet", () => {
  it("waits while the operator has not observed the new generation, whatever the old conditions say", () => {
    const cs = set(
      5,
      {
        ...counts,
        observedGeneration: 4,
        phase: "Suspended",
        conditions: [condition("Suspended", "True", 4)],
      },
      suspended,
    );
    const verdict = judgeSet({ cs, pods: [] }, 5, { kind: "suspended" });
    assert.deepEqual(verdict, {
      kind: "waiting",
      progress: "waiting for the operator to observe generation 5 (observed 4)",
    });
  });

  it("does not take a Suspended condition judged at an older generation", () => {
    const cs = set(
      5,
      {
        ...counts,
        observedGeneration: 5,
        phase: "Suspending",
        conditions: [condition("Suspended", "True", 4)],
      },
      suspended,
    );
    const pods = [pod("demo-0", "node-a", "hibernated"), pod("demo-1", "node-a", "hibernating")];
    assert.deepEqual(judgeSet({ cs, pods }, 5, { kind: "suspended" }), {
      kind: "waiting",
      progress: "phase Suspending; waiting on pod demo-1 on node-a: ready (lifecycle hibernating)",
    });
  });

  it("is done once Suspended is True at the generation", () => {
    const cs = set(
      5,
      {
        ...counts,
        observedGeneration: 5,
        phase: "Suspended",
        conditions: [condition("Suspended", "True", 5)],
      },
      suspended,
    );
    assert.equal(judgeSet({ cs, pods: [] }, 5, { kind: "suspended" }).kind, "done");
  });

  it("reports Failed only at the generation; an older Failed keeps waiting", () => {
    const failedNow = set(3, {
      ...counts,
      observedGeneration: 3,
      phase: "Failed",
      conditions: [condition("Ready", "False", 3)],
    });
    assert.deepEqual(judgeSet({ cs: failedNow, pods: [] }, 3, { kind: "ready" }), {
      kind: "failed",
      reason: "Failed",
      message: "m",
    });
    const failedBefore = set(3, { ...counts, observedGeneration: 2, phase: "Failed" });
    assert.equal(judgeSet({ cs: failedBefore, pods: [] }, 3, { kind: "ready" }).kind, "waiting");
  });

  it("needs Ready at the generation and, for a migration, the main on the target node", () => {
    const ready = set(7, {
      ...counts,
      observedGeneration: 7,
      phase: "Running",
      conditions: [condition("Ready", "True", 7)],
    });
    const onA = [pod("demo-0", "node-a", "ready")];
    assert.equal(judgeSet({ cs: ready, pods: onA }, 7, { kind: "ready" }).kind, "done");
    const pinned = { ...ready, spec: { ...ready.spec, nodeName: "node-b" } };
    assert.deepEqual(judgeSet({ cs: pinned, pods: onA }, 7, { kind: "migrated", node: "node-b" }), {
      kind: "waiting",
      progress: "phase Running; waiting on pod demo-0 on node-a: ready (lifecycle ready)",
    });
    assert.equal(
      judgeSet({ cs: pinned, pods: [pod("demo-0", "node-b", "ready")] }, 7, {
        kind: "migrated",
        node: "node-b",
      }).kind,
      "done",
    );
    const stale = set(7, {
      ...counts,
      observedGeneration: 7,
      phase: "Running",
      conditions: [condition("Ready", "True", 6)],
    });
    assert.equal(judgeSet({ cs: stale, pods: onA }, 7, { kind: "ready" }).kind, "waiting");
  });
});

describe("judgeSet: a change put back by someone else", () => {
  const managed = (cs: CocoonSet, managers: [string, string, string][]): CocoonSet => ({
    ...cs,
    metadata: {
      ...cs.metadata,
      managedFields: managers.map(([manager, time, field]) => ({
        manager,
        operation: "Update",
        time,
        fieldsV1: { "f:spec": { [`f:${field}`]: {} } },
      })),
    } as CocoonSet["metadata"],
  });

  it("fails at once, naming the field's manager, when spec.suspend is set back while it waits", () => {
    const cs = managed(
      set(6, { ...counts, observedGeneration: 5, phase: "Suspending" }, { suspend: false }),
      [
        ["kubectl-cocoon", "2026-05-14T12:00:00Z", "suspend"],
        ["argocd-controller", "2026-05-14T12:00:03Z", "suspend"],
      ],
    );
    assert.deepEqual(judgeSet({ cs, pods: [] }, 5, { kind: "suspended" }), {
      kind: "failed",
      reason: "Reverted",
      message:
        "spec.suspend was set back to false by argocd-controller: a GitOps controller (Argo CD, Flux) puts the set back as its source has it; make the change in the source (docs/idle.md, GitOps)",
    });
  });

  it("a resume put back to suspend, and a migration whose nodeName is put back, end the same way", () => {
    const resumed = managed(
      set(8, { ...counts, observedGeneration: 7, phase: "Waking" }, { suspend: true }),
      [["kustomize-controller", "2026-05-14T12:00:03Z", "suspend"]],
    );
    assert.match(
      (judgeSet({ cs: resumed, pods: [] }, 7, { kind: "ready" }) as { message: string }).message,
      /^spec.suspend was set back to true by kustomize-controller: /,
    );
    const moved = set(8, { ...counts, observedGeneration: 7, phase: "Migrating" }, { nodeName: "node-a" });
    assert.match(
      (judgeSet({ cs: moved, pods: [] }, 7, { kind: "migrated", node: "node-b" }) as { message: string })
        .message,
      /^spec.nodeName was set back to "node-a": /,
    );
  });
});

describe("membersOf", () => {
  it("lists every slot and toolbox of the spec, with or without a pod, then leftover pods", () => {
    const cs = set(1, undefined);
    const stray: Pod = {
      metadata: {
        name: "demo-7",
        labels: { "cocoonset.cocoonstack.io/slot": "7", "cocoonset.cocoonstack.io/role": "sub-agent" },
        annotations: { "vm.cocoonstack.io/name": "vk-ns-demo-7" },
      },
      spec: { containers: [] },
    };
    const members = membersOf(cs, [pod("demo-0", "a", "ready"), stray]);
    assert.deepEqual(
      members.map((m) => [m.slot, m.role, m.podName, m.vmName, m.pod !== undefined]),
      [
        ["0", "main", "demo-0", "vk-ns-demo-0", true],
        ["1", "sub-agent", "demo-1", "vk-ns-demo-1", false],
        ["tb", "toolbox", "demo-tb", "vk-ns-demo-tb", false],
        ["7", "sub-agent", "demo-7", "vk-ns-demo-7", true],
      ],
    );
  });
});

describe("judgeHibernation", () => {
  const ch = (generation: number, observedGeneration: number, phase: string): CocoonHibernation => ({
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: "demo-1", generation },
    spec: { podRef: { name: "demo-1" }, desire: "Wake" },
    status: {
      observedGeneration,
      phase: phase as "Active",
      conditions: [condition("Ready", "False", observedGeneration)],
    },
  });

  it("does not take Hibernated from before a flip to Wake as done, nor as the wake's goal", () => {
    assert.equal(judgeHibernation(ch(2, 1, "Hibernated"), undefined, 2, "Wake").kind, "waiting");
    assert.equal(judgeHibernation(ch(2, 2, "Hibernated"), undefined, 2, "Wake").kind, "waiting");
    assert.equal(judgeHibernation(ch(2, 2, "Active"), undefined, 2, "Wake").kind, "done");
  });

  it("reports Failed at the generation with the CR's message", () => {
    assert.deepEqual(judgeHibernation(ch(2, 2, "Failed"), undefined, 2, "Hibernate"), {
      kind: "failed",
      reason: "Failed",
      message: "m",
    });
  });
});
