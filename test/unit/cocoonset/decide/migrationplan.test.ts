// The pure decisions of step 8, each safety predicate on its own.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { NodeSelectorRequirement, NodeSelectorTerm, Pod } from "../../../../src/apis/core.ts";
import type { CocoonHibernation, CocoonSet } from "../../../../src/apis/v1/types.ts";
import {
  awaitsNodeNoLongerPinned,
  decideMigration,
  hibernationClaimsPod,
  hibernationOwnsPod,
  isMigrating,
  leftoverTagUnread,
  type MigrationState,
  mainOffTarget,
  migrationEngaged,
  migrationPending,
  migrationTarget,
  newVMRuns,
  settledWithoutProbe,
  snapshotExistsAndWeQuiesced,
} from "../../../../src/cocoonset/decide/migrationplan.ts";
import {
  preferredHostnameAffinity,
  requiredHostnameAffinity,
} from "../../../../src/cocoonset/decide/pods.ts";
import { ANN_HIBERNATE, ANN_VM_ID, LABEL_HOSTNAME } from "../../../../src/contract/keys.ts";

interface PodOptions {
  node?: string;
  live?: boolean;
  hibernate?: boolean;
  requiredNode?: string;
}

function pod(opts: PodOptions = {}): Pod {
  const annotations: Record<string, string> = {};
  if (opts.hibernate) annotations[ANN_HIBERNATE] = "true";
  if (opts.live) annotations[ANN_VM_ID] = "vm-1";
  const p: Pod = {
    metadata: { name: "demo-0", namespace: "ns", annotations },
    spec: { containers: [{ name: "agent" }] },
  };
  if (opts.live) {
    p.status = {
      phase: "Running",
      containerStatuses: [{ name: "agent", ready: true, restartCount: 0, state: { running: {} } }],
    };
  }
  if (opts.node) p.spec.nodeName = opts.node;
  if (opts.requiredNode) p.spec.affinity = requiredHostnameAffinity(opts.requiredNode);
  return p;
}

function set(nodeName?: string, phase?: "Migrating" | "Running"): CocoonSet {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns" },
    spec: { agent: { image: "img" } },
  };
  if (nodeName) cs.spec.nodeName = nodeName;
  if (phase) cs.status = { phase, readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 };
  return cs;
}

function ch(podName: string, desire: "Hibernate" | "Wake", phase?: string): CocoonHibernation {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonHibernation",
    metadata: { name: podName, namespace: "ns" },
    spec: { podRef: { name: podName }, desire },
    ...(phase ? { status: { phase } } : {}),
  } as CocoonHibernation;
}

describe("migration: reading the set", () => {
  it("target is spec.nodeName or empty; Migrating is the status phase", () => {
    assert.equal(migrationTarget(set("node-b")), "node-b");
    assert.equal(migrationTarget(set()), "");
    assert.equal(isMigrating(set(undefined, "Migrating")), true);
    assert.equal(isMigrating(set(undefined, "Running")), false);
    assert.equal(isMigrating(set()), false);
  });

  it("engaged by a pin, or by Migrating with the pin removed", () => {
    assert.equal(migrationEngaged("node-b", false), true);
    assert.equal(migrationEngaged("", true), true);
    assert.equal(migrationEngaged("", false), false);
  });
});

describe("migration: awaitsNodeNoLongerPinned", () => {
  it("unscheduled under a required term for a node the pin no longer names → true", () => {
    assert.equal(awaitsNodeNoLongerPinned(pod({ requiredNode: "node-b" }), "node-c"), true);
  });
  it("unscheduled under a required term and the pin removed → true", () => {
    assert.equal(awaitsNodeNoLongerPinned(pod({ requiredNode: "node-b" }), ""), true);
  });
  it("unscheduled under a required term for the current pin → false", () => {
    assert.equal(awaitsNodeNoLongerPinned(pod({ requiredNode: "node-b" }), "node-b"), false);
  });
  it("a scheduled pod is never a candidate (it may run a VM)", () => {
    assert.equal(awaitsNodeNoLongerPinned(pod({ requiredNode: "node-b", node: "node-b" }), "node-c"), false);
  });
  it("a preferred hostname term (the release wake's hint) or no affinity → false", () => {
    const hinted = pod();
    hinted.spec.affinity = preferredHostnameAffinity("node-a");
    assert.equal(awaitsNodeNoLongerPinned(hinted, "node-c"), false);
    assert.equal(awaitsNodeNoLongerPinned(pod(), "node-c"), false);
  });
  it("a required term on another key is not a pin", () => {
    const p = pod();
    p.spec.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] }],
        },
      },
    };
    assert.equal(awaitsNodeNoLongerPinned(p, "node-c"), false);
  });

  const requiring = (...terms: NodeSelectorTerm[]): Pod => {
    const p = pod();
    p.spec.affinity = {
      nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
    };
    return p;
  };
  const hostname = (
    operator: NodeSelectorRequirement["operator"],
    values?: string[],
  ): NodeSelectorRequirement => ({ key: LABEL_HOSTNAME, operator, values });

  it("an affinity without a nodeAffinity is no pin", () => {
    const p = pod();
    // As a pod with only a pod (anti-)affinity reads here.
    p.spec.affinity = {};
    assert.equal(awaitsNodeNoLongerPinned(p, "node-c"), false);
  });
  it("a hostname requirement beside other requirements of its term still pins", () => {
    const term: NodeSelectorTerm = {
      matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }, hostname("In", ["node-b"])],
    };
    assert.equal(awaitsNodeNoLongerPinned(requiring(term), "node-c"), true);
  });
  it("a term with no match expressions (matchFields only) is no hostname pin", () => {
    const term: NodeSelectorTerm = {
      matchFields: [{ key: "metadata.name", operator: "In", values: ["node-b"] }],
    };
    assert.equal(awaitsNodeNoLongerPinned(requiring(term), "node-c"), false);
  });
  it("a hostname requirement that is not exactly the pin (more nodes, or no values) awaits a node no longer pinned", () => {
    assert.equal(
      awaitsNodeNoLongerPinned(
        requiring({ matchExpressions: [hostname("In", ["node-c", "node-d"])] }),
        "node-c",
      ),
      true,
    );
    assert.equal(
      awaitsNodeNoLongerPinned(requiring({ matchExpressions: [hostname("Exists")] }), "node-c"),
      true,
    );
  });
});

describe("migration: settledWithoutProbe", () => {
  it("not Migrating, unquiesced main on its target, live or not → settled", () => {
    assert.equal(settledWithoutProbe(pod({ node: "node-b", live: true }), "node-b", false), true);
    assert.equal(settledWithoutProbe(pod({ node: "node-b" }), "node-b", false), true);
  });
  it("not Migrating, unquiesced main still unscheduled → settled", () => {
    assert.equal(settledWithoutProbe(pod(), "node-b", false), true);
  });
  it("Migrating, a quiesced main, a main elsewhere, or no main → probe", () => {
    assert.equal(settledWithoutProbe(pod({ node: "node-b", live: true }), "node-b", true), false);
    assert.equal(settledWithoutProbe(pod({ node: "node-b", hibernate: true }), "node-b", false), false);
    assert.equal(settledWithoutProbe(pod({ node: "node-a", live: true }), "node-b", false), false);
    assert.equal(settledWithoutProbe(undefined, "node-b", false), false);
  });
});

describe("migration: CocoonHibernation claims", () => {
  it("desire=Hibernate (any phase) or phase Hibernating owns the pod", () => {
    assert.equal(hibernationOwnsPod([ch("demo-0", "Hibernate")], "demo-0"), true);
    assert.equal(hibernationOwnsPod([ch("demo-0", "Wake", "Hibernating")], "demo-0"), true);
    assert.equal(hibernationOwnsPod([ch("demo-0", "Wake", "Waking")], "demo-0"), false);
    assert.equal(hibernationOwnsPod([ch("demo-1", "Hibernate")], "demo-0"), false);
  });
  it("a CR not settled Active tracks the pod; Active releases it", () => {
    for (const phase of ["Pending", "Hibernated", "Waking", "Failed", undefined]) {
      assert.equal(hibernationClaimsPod([ch("demo-0", "Wake", phase)], "demo-0"), true, String(phase));
    }
    assert.equal(hibernationClaimsPod([ch("demo-0", "Wake", "Active")], "demo-0"), false);
    assert.equal(hibernationClaimsPod([ch("demo-0", "Hibernate", "Active")], "demo-0"), true);
    assert.equal(hibernationClaimsPod([], "demo-0"), false);
  });
});

describe("migration: where the main is", () => {
  it("off target: scheduled on a node other than a set pin", () => {
    assert.equal(mainOffTarget(pod({ node: "node-a" }), "node-b"), true);
    assert.equal(mainOffTarget(pod({ node: "node-b" }), "node-b"), false);
    assert.equal(mainOffTarget(pod(), "node-b"), false, "an unscheduled pod is never off target");
    assert.equal(mainOffTarget(pod({ node: "node-a" }), ""), false);
    assert.equal(mainOffTarget(undefined, "node-b"), false);
  });
  it("step 7's exception: a migration is pending while the pinned main runs elsewhere", () => {
    assert.equal(migrationPending(set("node-b"), pod({ node: "node-a" })), true);
    assert.equal(migrationPending(set("node-b"), pod({ node: "node-b" })), false);
    assert.equal(migrationPending(set(), pod({ node: "node-a" })), false);
    assert.equal(migrationPending(set("node-b"), undefined), false);
  });
});

describe("migration: safety predicates", () => {
  it("the old main may die only when the snapshot exists AND we quiesced it", () => {
    const quiescedOld = pod({ node: "node-a", live: true, hibernate: true });
    assert.equal(snapshotExistsAndWeQuiesced(quiescedOld, "node-b", true), true);
    assert.equal(snapshotExistsAndWeQuiesced(quiescedOld, "node-b", false), false, "no snapshot");
    assert.equal(
      snapshotExistsAndWeQuiesced(pod({ node: "node-a", live: true }), "node-b", true),
      false,
      "not quiesced",
    );
    assert.equal(
      snapshotExistsAndWeQuiesced(pod({ node: "node-b", hibernate: true }), "node-b", true),
      false,
      "on target",
    );
    assert.equal(snapshotExistsAndWeQuiesced(pod({ hibernate: true }), "node-b", true), false, "unscheduled");
    assert.equal(snapshotExistsAndWeQuiesced(undefined, "node-b", true), false);
  });

  it("the snapshot may drop only once the new VM runs where the set wants it", () => {
    assert.equal(newVMRuns(pod({ node: "node-b", live: true }), "node-b"), true);
    assert.equal(newVMRuns(pod({ node: "node-a", live: true }), ""), true, "unpinned: anywhere");
    assert.equal(newVMRuns(pod({ node: "node-b" }), "node-b"), false, "no VM yet");
    assert.equal(newVMRuns(pod({ node: "node-a", live: true }), "node-b"), false, "the old VM");
    assert.equal(
      newVMRuns(pod({ node: "node-b", live: true, hibernate: true }), "node-b"),
      false,
      "quiesced",
    );
    assert.equal(newVMRuns(undefined, "node-b"), false);
  });

  it("a tag is a droppable leftover only while an unquiesced main off target runs a live VM", () => {
    assert.equal(leftoverTagUnread(pod({ node: "node-a", live: true }), "node-b"), true);
    assert.equal(leftoverTagUnread(pod({ node: "node-a" }), "node-b"), false, "a restore may still read it");
    assert.equal(
      leftoverTagUnread(pod({ node: "node-a", live: true, hibernate: true }), "node-b"),
      false,
      "our quiesce",
    );
    assert.equal(leftoverTagUnread(pod({ node: "node-b", live: true }), "node-b"), false, "on target");
  });
});

describe("migration: decideMigration", () => {
  const cases: [string, MigrationState, string][] = [
    [
      "no tag, main off target → quiesce",
      {
        target: "node-b",
        migrating: false,
        main: pod({ node: "node-a", live: true }),
        snapshotExists: false,
      },
      "quiesce-old-main",
    ],
    [
      "no tag, main on target → hand back",
      { target: "node-b", migrating: true, main: pod({ node: "node-b", live: true }), snapshotExists: false },
      "hand-back",
    ],
    [
      "no tag, main unscheduled → hand back",
      { target: "node-b", migrating: true, main: pod(), snapshotExists: false },
      "hand-back",
    ],
    [
      "no tag, no main → hand back",
      { target: "node-b", migrating: false, main: undefined, snapshotExists: false },
      "hand-back",
    ],
    [
      "no tag, no target → hand back",
      { target: "", migrating: true, main: pod({ node: "node-a", live: true }), snapshotExists: false },
      "hand-back",
    ],
    [
      "tag, quiesced off target → delete old main",
      {
        target: "node-b",
        migrating: true,
        main: pod({ node: "node-a", hibernate: true }),
        snapshotExists: true,
      },
      "delete-old-main",
    ],
    [
      "tag, live unquiesced off target → drop leftover",
      { target: "node-b", migrating: false, main: pod({ node: "node-a", live: true }), snapshotExists: true },
      "drop-leftover-tag",
    ],
    [
      "tag, not-live unquiesced off target → hand back",
      { target: "node-b", migrating: false, main: pod({ node: "node-a" }), snapshotExists: true },
      "hand-back",
    ],
    [
      "tag, no main → recreate",
      { target: "node-b", migrating: false, main: undefined, snapshotExists: true },
      "recreate-from-snapshot",
    ],
    [
      "tag, quiesced on target while Migrating → wake in place",
      {
        target: "node-b",
        migrating: true,
        main: pod({ node: "node-b", hibernate: true }),
        snapshotExists: true,
      },
      "wake-in-place",
    ],
    [
      "tag, quiesced on target, not Migrating → hand back (step 10)",
      {
        target: "node-b",
        migrating: false,
        main: pod({ node: "node-b", hibernate: true }),
        snapshotExists: true,
      },
      "hand-back",
    ],
    [
      "tag, quiesced, unpinned, Migrating → wake in place",
      { target: "", migrating: true, main: pod({ node: "node-a", hibernate: true }), snapshotExists: true },
      "wake-in-place",
    ],
    [
      "tag, not live on target, Migrating → await restore",
      { target: "node-b", migrating: true, main: pod({ node: "node-b" }), snapshotExists: true },
      "await-restore",
    ],
    [
      "tag, unscheduled, Migrating → await restore",
      { target: "node-b", migrating: true, main: pod(), snapshotExists: true },
      "await-restore",
    ],
    [
      "tag, quiesced but unscheduled, Migrating → await restore: it is not on its target to wake in place",
      { target: "node-b", migrating: true, main: pod({ hibernate: true }), snapshotExists: true },
      "await-restore",
    ],
    [
      "tag, not live, not Migrating → hand back",
      { target: "node-b", migrating: false, main: pod({ node: "node-b" }), snapshotExists: true },
      "hand-back",
    ],
    [
      "tag, live on target → drop snapshot",
      { target: "node-b", migrating: true, main: pod({ node: "node-b", live: true }), snapshotExists: true },
      "drop-snapshot",
    ],
  ];
  for (const [name, state, kind] of cases) {
    it(name, () => {
      const action = decideMigration(state);
      assert.equal(action.kind, kind);
      if ("main" in action) assert.equal(action.main, state.main);
    });
  }
});
