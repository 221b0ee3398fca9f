// A checkpoint's conditions and deadline (src/checkpoint/status.ts) and who still needs its tags
// (src/checkpoint/usage.ts), as docs/checkpoints.md lists them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonRestore } from "../../../src/apis/v1alpha1/types.ts";
import { ANN_RESTORE_HOLD } from "../../../src/checkpoint/keys.ts";
import { deletingCondition, failureDeadlineMs, phaseConditions } from "../../../src/checkpoint/status.ts";
import { checkpointNeeders } from "../../../src/checkpoint/usage.ts";
import { cocoonSet, NS } from "../../support/cocoonset.ts";

describe("checkpoint conditions", () => {
  const of = (phase: "Pending" | "Copying" | "Ready" | "Failed", retrying = false) =>
    phaseConditions([], phase, "m", 3, 0, retrying).map((c) => [
      c.type,
      c.status,
      c.reason,
      c.observedGeneration,
    ]);

  it("Ready and Progressing for each phase, as the docs' table gives them", () => {
    assert.deepEqual(of("Pending"), [
      ["Ready", "False", "Pending", 3],
      ["Progressing", "False", "Pending", 3],
    ]);
    assert.deepEqual(of("Copying"), [
      ["Ready", "False", "Copying", 3],
      ["Progressing", "True", "Copying", 3],
    ]);
    assert.deepEqual(of("Copying", true), [
      ["Ready", "False", "CopyFailed", 3],
      ["Progressing", "True", "CopyFailed", 3],
    ]);
    assert.deepEqual(of("Ready"), [
      ["Ready", "True", "Ready", 3],
      ["Progressing", "False", "Ready", 3],
    ]);
    assert.deepEqual(of("Failed"), [
      ["Ready", "False", "Failed", 3],
      ["Progressing", "False", "Failed", 3],
    ]);
  });

  it("Deleting is True with its reason, at the checkpoint's generation", () => {
    assert.deepEqual(
      deletingCondition([], "InUse", "m", 2, 0).map((c) => [
        c.type,
        c.status,
        c.reason,
        c.observedGeneration,
      ]),
      [["Deleting", "True", "InUse", 2]],
    );
  });

  it("a failureDeadline that is not a positive duration keeps no deadline", () => {
    const ck = (failureDeadline: string): CocoonCheckpoint => ({
      apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
      kind: "CocoonCheckpoint",
      metadata: { name: "ck", namespace: NS, creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { cocoonSetRef: { name: "demo" }, failureDeadline },
    });
    assert.equal(failureDeadlineMs(ck("90s")), Date.parse("2026-01-01T00:01:30Z"));
    for (const bad of ["0s", "-1m", "soon"]) assert.equal(failureDeadlineMs(ck(bad)), undefined, bad);
  });
});

describe("checkpointNeeders", () => {
  const restore = (
    name: string,
    checkpoint: string,
    phase?: "Pending" | "Restored" | "Failed",
  ): CocoonRestore => ({
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonRestore",
    metadata: { name, namespace: NS },
    spec: { cocoonSetRef: { name: "demo" }, checkpointRef: { name: checkpoint } },
    ...(phase ? { status: { phase } } : {}),
  });
  const none = { sets: [] as CocoonSet[], pools: [], restores: [] as CocoonRestore[] };

  it("a restore neither Restored nor Failed needs it, one without a status yet too", () => {
    const restores = [
      restore("new", "ck"),
      restore("pending", "ck", "Pending"),
      restore("done", "ck", "Restored"),
      restore("failed", "ck", "Failed"),
      restore("other", "other"),
    ];
    assert.deepEqual(checkpointNeeders({ ...none, restores }, "ck"), [
      "CocoonRestore new",
      "CocoonRestore pending",
    ]);
  });

  it("a set with an unreadable restore hold needs every checkpoint; a set without annotations none", () => {
    const sets = [
      cocoonSet({}, { name: "unreadable", annotations: { [ANN_RESTORE_HOLD]: "not json" } }),
      cocoonSet({}, { name: "bare" }),
    ];
    assert.deepEqual(checkpointNeeders({ ...none, sets }, "ck"), ["CocoonSet unreadable"]);
  });
});
