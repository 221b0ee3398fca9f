import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cocoonSetChange } from "../../../src/cocoonset/setup.ts";
import { generationChangedOrStatusChanged, podRelevantChange } from "../../../src/controller/predicates.ts";

describe("generationChangedOrStatusChanged", () => {
  const base = {
    metadata: {
      generation: 3,
      annotations: { a: "1" } as Record<string, string>,
      labels: { l: "1" } as Record<string, string>,
    },
    status: { phase: "Running", observedGeneration: 3 },
  };
  const cases: [string, typeof base, boolean][] = [
    ["new generation", { ...base, metadata: { ...base.metadata, generation: 4 } }, true],
    ["status change", { ...base, status: { ...base.status, phase: "Suspended" } }, true],
    ["annotation-only patch", { ...base, metadata: { ...base.metadata, annotations: { a: "2" } } }, false],
    ["label-only patch", { ...base, metadata: { ...base.metadata, labels: {} } }, false],
    ["no change (resync)", structuredClone(base), false],
  ];
  for (const [name, updated, passes] of cases) {
    it(`${name} → ${passes ? "passes" : "dropped"}`, () => {
      assert.equal(generationChangedOrStatusChanged.update?.(base, updated), passes);
    });
  }

  it("passes creates and deletes", () => {
    assert.equal(generationChangedOrStatusChanged.create?.(base) ?? true, true);
    assert.equal(generationChangedOrStatusChanged.delete?.(base) ?? true, true);
  });
});

describe("podRelevantChange", () => {
  const pod = {
    metadata: { labels: { app: "x" }, annotations: { note: "a" } } as {
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      deletionTimestamp?: string;
    },
    status: {
      phase: "Running",
      podIP: "10.0.0.1",
      conditions: [
        { type: "Ready", status: "True", lastProbeTime: "t1" },
        { type: "PodScheduled", status: "True" },
      ],
      containerStatuses: [{ name: "c", ready: true, restartCount: 0 }],
    },
  };
  const edit = (change: (p: typeof pod) => void): typeof pod => {
    const copy = structuredClone(pod);
    change(copy);
    return copy;
  };
  const cases: [string, typeof pod, boolean][] = [
    ["deletion starts", edit((p) => (p.metadata.deletionTimestamp = "2026-01-01T00:00:00Z")), true],
    ["phase changes", edit((p) => (p.status.phase = "Failed")), true],
    ["readiness flips off", edit((p) => (p.status.conditions[0]!.status = "False")), true],
    ["Ready condition disappears", edit((p) => p.status.conditions.splice(0, 1)), true],
    ["label added", edit((p) => (p.metadata.labels = { app: "x", extra: "1" })), true],
    ["labels removed", edit((p) => delete p.metadata.labels), true],
    ["annotation changed", edit((p) => (p.metadata.annotations = { note: "b" })), true],
    ["probe time churn", edit((p) => (p.status.conditions[0]!.lastProbeTime = "t2")), false],
    ["container restart count", edit((p) => (p.status.containerStatuses[0]!.restartCount = 1)), false],
    ["pod IP change", edit((p) => (p.status.podIP = "10.0.0.2")), false],
    ["other condition flips", edit((p) => (p.status.conditions[1]!.status = "False")), false],
    ["no change (resync)", structuredClone(pod), false],
  ];
  for (const [name, updated, passes] of cases) {
    it(`${name} → ${passes ? "passes" : "dropped"}`, () => {
      assert.equal(podRelevantChange.update?.(pod, updated), passes);
    });
  }

  it("does not pass a pod that was already terminating again for its deletion timestamp", () => {
    const terminating = edit((p) => (p.metadata.deletionTimestamp = "2026-01-01T00:00:00Z"));
    const stillTerminating = edit((p) => {
      p.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
      p.status.podIP = "";
    });
    assert.equal(podRelevantChange.update?.(terminating, stillTerminating), false);
  });

  it("passes creates and deletes", () => {
    assert.equal(podRelevantChange.create?.(pod) ?? true, true);
    assert.equal(podRelevantChange.delete?.(pod) ?? true, true);
  });
});

describe("cocoonSetChange", () => {
  const base = {
    metadata: { name: "demo", generation: 2, annotations: { "cocoonset.cocoonstack.io/last-activity": "a" } },
    status: { phase: "Running" },
  };
  const withAnnotation = (key: string, value: string) => ({
    ...base,
    metadata: { ...base.metadata, annotations: { ...base.metadata.annotations, [key]: value } },
  });
  for (const [what, updated, passes] of [
    ["suspend-after-idle added", withAnnotation("cocoonset.cocoonstack.io/suspend-after-idle", "30m"), true],
    ["expire-at added", withAnnotation("cocoonset.cocoonstack.io/expire-at", "2026-12-01T10:00:00Z"), true],
    ["expire-action changed", withAnnotation("cocoonset.cocoonstack.io/expire-action", "Delete"), true],
    ["a last-activity touch", withAnnotation("cocoonset.cocoonstack.io/last-activity", "b"), false],
    ["another annotation", withAnnotation("example.com/owner", "me"), false],
    ["new generation", { ...base, metadata: { ...base.metadata, generation: 3 } }, true],
  ] as const) {
    it(`${passes ? "passes" : "drops"} ${what}`, () => {
      assert.equal(cocoonSetChange.update?.(base as never, updated as never), passes);
    });
  }
});
