import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyLifecycle,
  isTerminalLifecycle,
  lifecycleAnnotations,
  readCocoonSetGeneration,
  readLifecycle,
} from "../../../src/contract/lifecycle.ts";

const podWith = (annotations: Record<string, string>) => ({ metadata: { annotations } });

test("readLifecycle reads the triple, empty when absent", () => {
  assert.deepEqual(readLifecycle(podWith({})), { state: "", observedGeneration: 0, message: "" });
  assert.deepEqual(
    readLifecycle(
      podWith({
        "vm.cocoonstack.io/lifecycle-state": "hibernated",
        "vm.cocoonstack.io/lifecycle-observed-generation": "7",
        "vm.cocoonstack.io/lifecycle-state-message": "done",
      }),
    ),
    { state: "hibernated", observedGeneration: 7, message: "done" },
  );
});

test("generations parse as Go's ParseInt: corrupt or out-of-range reads as 0", () => {
  const cases: [string, number][] = [
    ["42", 42],
    ["+5", 5],
    ["007", 7],
    ["-3", -3],
    ["abc", 0],
    ["1.5", 0],
    ["", 0],
    ["99999999999999999999", 0],
  ];
  for (const [raw, want] of cases) {
    assert.equal(readCocoonSetGeneration(podWith({ "cocoonset.cocoonstack.io/generation": raw })), want, raw);
    assert.equal(
      readLifecycle(podWith({ "vm.cocoonstack.io/lifecycle-observed-generation": raw })).observedGeneration,
      want,
      raw,
    );
  }
});

test("terminal states are ready, hibernated and failed", () => {
  assert.deepEqual(
    ["creating", "ready", "hibernating", "hibernated", "failed", ""].filter(isTerminalLifecycle),
    ["ready", "hibernated", "failed"],
  );
});

test("lifecycleAnnotations sets the message to null when empty", () => {
  assert.deepEqual(lifecycleAnnotations({ state: "ready", observedGeneration: 3, message: "" }), {
    "vm.cocoonstack.io/lifecycle-state": "ready",
    "vm.cocoonstack.io/lifecycle-observed-generation": "3",
    "vm.cocoonstack.io/lifecycle-state-message": null,
  });
  assert.equal(
    lifecycleAnnotations({ state: "failed", observedGeneration: 1, message: "boom" })[
      "vm.cocoonstack.io/lifecycle-state-message"
    ],
    "boom",
  );
});

test("applyLifecycle removes an empty message", () => {
  const annotations: Record<string, string> = { "vm.cocoonstack.io/lifecycle-state-message": "old" };
  applyLifecycle(annotations, { state: "ready", observedGeneration: 2, message: "" });
  assert.deepEqual(annotations, {
    "vm.cocoonstack.io/lifecycle-state": "ready",
    "vm.cocoonstack.io/lifecycle-observed-generation": "2",
  });
});
