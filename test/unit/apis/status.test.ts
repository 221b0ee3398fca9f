import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setStatusCondition, setStatusConditions, statusMergePatch } from "../../../src/apis/status.ts";
import type { Condition } from "../../../src/apis/v1/types.ts";

const NOW = Date.parse("2026-03-01T10:00:00Z");
const T0 = "2026-03-01T09:00:00Z";

function ready(status: "True" | "False", fields: Partial<Condition> = {}): Condition {
  return { type: "Ready", status, reason: "R", message: "m", lastTransitionTime: T0, ...fields };
}

describe("setStatusCondition", () => {
  it("stamps now on a new type and keeps conditions of other types in their order", () => {
    const other: Condition = {
      type: "Custom",
      status: "True",
      reason: "X",
      message: "",
      lastTransitionTime: T0,
    };
    const out = setStatusConditions(
      [other],
      [{ type: "Ready", status: "True", reason: "A", message: "m" }],
      NOW,
    );
    assert.deepEqual(
      out.map((c) => [c.type, c.lastTransitionTime]),
      [
        ["Custom", T0],
        ["Ready", "2026-03-01T10:00:00Z"],
      ],
    );
  });

  it("keeps the time of an unchanged status while reason, message and observedGeneration follow", () => {
    const [out] = setStatusCondition(
      [ready("True", { observedGeneration: 3 })],
      { type: "Ready", status: "True", reason: "B", message: "n" },
      NOW,
    );
    assert.deepEqual(out, {
      type: "Ready",
      status: "True",
      reason: "B",
      message: "n",
      lastTransitionTime: T0,
    });
  });

  it("stamps now on a status change, and a given time instead of now", () => {
    const changed = setStatusCondition(
      [ready("True")],
      { type: "Ready", status: "False", reason: "R", message: "m" },
      NOW,
    );
    assert.equal(changed[0]?.lastTransitionTime, "2026-03-01T10:00:00Z");
    const given = setStatusCondition(
      [ready("True")],
      {
        type: "Ready",
        status: "False",
        reason: "R",
        message: "m",
        lastTransitionTime: "2026-03-01T09:30:00Z",
      },
      NOW,
    );
    assert.equal(given[0]?.lastTransitionTime, "2026-03-01T09:30:00Z");
  });

  it("restartClock stamps a new time on an unchanged status", () => {
    const out = setStatusCondition(
      [ready("False")],
      { type: "Ready", status: "False", reason: "R", message: "m" },
      NOW,
      {
        restartClock: true,
      },
    );
    assert.equal(out[0]?.lastTransitionTime, "2026-03-01T10:00:00Z");
  });

  it("distinctSeconds puts a transition at least one second after the previous one", () => {
    const previous = ready("True", { lastTransitionTime: "2026-03-01T10:00:00Z" });
    const next = { type: "Ready", status: "False", reason: "R", message: "m" } as const;
    assert.equal(setStatusCondition([previous], next, NOW)[0]?.lastTransitionTime, "2026-03-01T10:00:00Z");
    assert.equal(
      setStatusCondition([previous], next, NOW, { distinctSeconds: true })[0]?.lastTransitionTime,
      "2026-03-01T10:00:01Z",
    );
  });

  it("returns a new list and leaves the input alone", () => {
    const input = [ready("True")];
    const out = setStatusCondition(input, { type: "Ready", status: "False", reason: "R", message: "m" }, NOW);
    assert.notEqual(out, input);
    assert.equal(input[0]?.status, "True");
  });
});

describe("statusMergePatch", () => {
  it("sets null for each top-level field the new status no longer has", () => {
    assert.deepEqual(statusMergePatch({ phase: "A", vmName: "x" }, { phase: "B" }), {
      phase: "B",
      vmName: null,
    });
    assert.deepEqual(statusMergePatch(undefined, { phase: "B" }), { phase: "B" });
  });
});
