// The pure status rules: Ready per phase, the deadline helper, setPhase / markFailed / markPending,
// a newer generation rewriting an unchanged phase or message, and lastTransitionTime, which strictly
// increases.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { HIBERNATION_PHASES } from "../../../src/apis/v1/types.ts";
import {
  failedStatus,
  HIBERNATE_TIMEOUT_MS,
  pendingStatus,
  phaseDeadlineExceeded,
  phaseStatus,
  readyConditionFor,
  WAKE_TIMEOUT_MS,
} from "../../../src/hibernation/status.ts";
import { formatRFC3339 } from "../../../src/rfc3339.ts";
import { hibernationFixture, MINUTE, VM } from "./support.ts";

const NOW = Date.parse("2026-03-01T12:00:00Z");

describe("Ready condition", () => {
  test("Hibernated and Active are True Done; Failed is False Failed; the rest False Pending; obsGen copied", () => {
    const expected: Record<string, [string, string]> = {
      Pending: ["False", "Pending"],
      Hibernating: ["False", "Pending"],
      Hibernated: ["True", "Done"],
      Waking: ["False", "Pending"],
      Active: ["True", "Done"],
      Failed: ["False", "Failed"],
    };
    for (const phase of HIBERNATION_PHASES) {
      const condition = readyConditionFor(phase, 1);
      assert.deepEqual([condition.status, condition.reason], expected[phase], phase);
      assert.equal(condition.observedGeneration, 1);
      assert.equal(condition.message, phase);
      assert.equal(condition.type, "Ready");
    }
  });
});

describe("phaseDeadlineExceeded", () => {
  for (const [phase, timeout] of [
    ["Hibernating", HIBERNATE_TIMEOUT_MS],
    ["Waking", WAKE_TIMEOUT_MS],
  ] as const) {
    test(`${phase}: wrong phase, fresh, at the limit, and at twice the limit`, () => {
      assert.equal(phaseDeadlineExceeded(hibernationFixture(), phase, timeout, NOW), false, "no status");
      const other = hibernationFixture({ phase: "Pending", readySince: NOW - 2 * timeout });
      assert.equal(phaseDeadlineExceeded(other, phase, timeout, NOW), false, "wrong phase");
      const fresh = hibernationFixture({ phase, readySince: NOW });
      assert.equal(phaseDeadlineExceeded(fresh, phase, timeout, NOW), false, "fresh");
      const atLimit = hibernationFixture({ phase, readySince: NOW - timeout });
      assert.equal(phaseDeadlineExceeded(atLimit, phase, timeout, NOW), false, "at the limit");
      const stale = hibernationFixture({ phase, readySince: NOW - 2 * timeout });
      assert.equal(phaseDeadlineExceeded(stale, phase, timeout, NOW), true, "twice the limit");
    });
  }

  test("a phase without a Ready condition never times out", () => {
    assert.equal(
      phaseDeadlineExceeded(hibernationFixture({ phase: "Waking" }), "Waking", WAKE_TIMEOUT_MS, NOW),
      false,
    );
  });
});

describe("phaseStatus (setPhase)", () => {
  test("the first phase adds Ready with the time now", () => {
    const status = phaseStatus(hibernationFixture({ generation: 2 }), "Hibernating", VM, NOW);
    assert.deepEqual(status, {
      observedGeneration: 2,
      phase: "Hibernating",
      vmName: VM,
      conditions: [
        {
          type: "Ready",
          status: "False",
          observedGeneration: 2,
          reason: "Pending",
          message: "Hibernating",
          lastTransitionTime: formatRFC3339(NOW),
        },
      ],
    });
  });

  test("no patch when phase, vmName and observedGeneration are current", () => {
    const ch = hibernationFixture({ phase: "Hibernating", vmName: VM, generation: 3, observedGeneration: 3 });
    assert.equal(phaseStatus(ch, "Hibernating", VM, NOW), undefined);
  });

  test("the same phase at generation 7 against obsGen 6 is written with obsGen 7", () => {
    const ch = hibernationFixture({
      phase: "Hibernated",
      vmName: VM,
      generation: 7,
      observedGeneration: 6,
      readySince: NOW - MINUTE,
    });
    const status = phaseStatus(ch, "Hibernated", VM, NOW);
    assert.equal(status?.observedGeneration, 7);
    assert.equal(status?.conditions?.[0]?.observedGeneration, 7);
    assert.equal(status?.conditions?.[0]?.lastTransitionTime, formatRFC3339(NOW - MINUTE), "no transition");
  });

  test("a changed vmName is written", () => {
    const ch = hibernationFixture({
      phase: "Active",
      vmName: "vk-old",
      generation: 1,
      observedGeneration: 1,
    });
    assert.equal(phaseStatus(ch, "Active", VM, NOW)?.vmName, VM);
  });

  test("Pending → Hibernating (False → False) restarts the clock: entering a deadline phase", () => {
    const ch = hibernationFixture({ phase: "Pending", readySince: NOW - 10 * MINUTE });
    assert.equal(
      phaseStatus(ch, "Hibernating", VM, NOW)?.conditions?.[0]?.lastTransitionTime,
      formatRFC3339(NOW),
    );
  });

  test("Failed → Waking restarts the clock so a retry gets a fresh deadline", () => {
    const ch = hibernationFixture({ phase: "Failed", readySince: NOW - 10 * MINUTE });
    assert.equal(phaseStatus(ch, "Waking", VM, NOW)?.conditions?.[0]?.lastTransitionTime, formatRFC3339(NOW));
  });

  test("staying in Waking at a new generation keeps the clock", () => {
    const ch = hibernationFixture({
      phase: "Waking",
      vmName: VM,
      generation: 2,
      observedGeneration: 1,
      readySince: NOW - MINUTE,
    });
    assert.equal(
      phaseStatus(ch, "Waking", VM, NOW)?.conditions?.[0]?.lastTransitionTime,
      formatRFC3339(NOW - MINUTE),
    );
  });

  test("Hibernating → Hibernated (False → True) takes the time now; other conditions are kept", () => {
    const ch = hibernationFixture({ phase: "Hibernating", vmName: VM, readySince: NOW - MINUTE });
    const other = {
      type: "Other",
      status: "True" as const,
      reason: "X",
      message: "",
      lastTransitionTime: "2020-01-01T00:00:00Z",
    };
    ch.status?.conditions?.unshift(other);
    const conditions = phaseStatus(ch, "Hibernated", VM, NOW)?.conditions;
    assert.deepEqual(conditions?.[0], other);
    assert.equal(conditions?.[1]?.lastTransitionTime, formatRFC3339(NOW));
    assert.equal(conditions?.[1]?.status, "True");
  });
});

describe("Ready.lastTransitionTime strictly increases", () => {
  test("a transition within the second of the previous one is stamped one second later", () => {
    const ch = hibernationFixture({ phase: "Hibernating", vmName: VM, readySince: NOW });
    const hibernated = phaseStatus(ch, "Hibernated", VM, NOW + 300);
    assert.equal(hibernated?.conditions?.[0]?.lastTransitionTime, formatRFC3339(NOW + 1_000));
    const waking = phaseStatus({ ...ch, status: hibernated }, "Waking", VM, NOW + 600);
    assert.equal(waking?.conditions?.[0]?.lastTransitionTime, formatRFC3339(NOW + 2_000));
  });
});

describe("failedStatus (markFailed)", () => {
  test("Hibernating → Failed keeps the Ready clock (False → False) and the vmName", () => {
    const ch = hibernationFixture({
      phase: "Hibernating",
      vmName: VM,
      generation: 1,
      readySince: NOW - 4 * MINUTE,
    });
    const status = failedStatus(ch, "hibernate not confirmed within 3m0s", NOW);
    assert.equal(status?.phase, "Failed");
    assert.equal(status?.vmName, VM);
    assert.deepEqual(status?.conditions?.[0], {
      type: "Ready",
      status: "False",
      observedGeneration: 1,
      reason: "Failed",
      message: "hibernate not confirmed within 3m0s",
      lastTransitionTime: formatRFC3339(NOW - 4 * MINUTE),
    });
  });

  test("the same failure again is not rewritten", () => {
    const ch = hibernationFixture({ generation: 1 });
    const first = failedStatus(ch, "spec.podRef.name is required", NOW);
    assert.ok(first);
    assert.equal(
      failedStatus({ ...ch, status: first }, "spec.podRef.name is required", NOW + MINUTE),
      undefined,
    );
  });
});

describe("pendingStatus (markPending)", () => {
  test("Hibernated and Waking are never demoted", () => {
    for (const phase of ["Hibernated", "Waking"] as const) {
      assert.equal(
        pendingStatus(hibernationFixture({ phase, readySince: NOW }), "pod ns/demo-0 not yet present", NOW),
        undefined,
      );
    }
  });

  test("Active, Hibernating and Failed fall back to Pending", () => {
    for (const phase of ["Active", "Hibernating", "Failed"] as const) {
      assert.equal(
        pendingStatus(hibernationFixture({ phase, readySince: NOW }), "m", NOW)?.phase,
        "Pending",
        phase,
      );
    }
  });

  test("an unchanged Pending (phase, generation, message) is not rewritten; a new message is", () => {
    const ch = hibernationFixture({
      phase: "Pending",
      generation: 3,
      observedGeneration: 3,
      readySince: NOW - MINUTE,
      readyMessage: "pod ns/demo-0 not yet present",
    });
    assert.equal(pendingStatus(ch, "pod ns/demo-0 not yet present", NOW), undefined);
    const changed = pendingStatus(ch, "pod ns/demo-0 has no vm.cocoonstack.io/name annotation yet", NOW);
    assert.equal(
      changed?.conditions?.[0]?.message,
      "pod ns/demo-0 has no vm.cocoonstack.io/name annotation yet",
    );
  });

  test("the same message at generation 4 against obsGen 3 is written", () => {
    const ch = hibernationFixture({
      phase: "Pending",
      generation: 4,
      observedGeneration: 3,
      readySince: NOW - MINUTE,
      readyMessage: "m",
    });
    assert.equal(pendingStatus(ch, "m", NOW)?.observedGeneration, 4);
  });
});
