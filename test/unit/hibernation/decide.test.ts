// The pure decisions: which transition a pass drives, vk's completion signals, the hibernate and
// wake outcomes, and who still holds a VM's tag.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  decideHibernate,
  decideWake,
  hibernateReported,
  settledWake,
  transitionFor,
  vmHeldByAnother,
  wakeReported,
} from "../../../src/hibernation/decide.ts";
import { hibernationFixture, MINUTE, podFixture, VM } from "./support.ts";

const NOW = Date.parse("2026-03-01T12:00:00Z");

describe("settledWake", () => {
  test("only a Wake CR in Active at its current generation is settled", () => {
    const at = (opts: Parameters<typeof hibernationFixture>[0]) =>
      settledWake(hibernationFixture({ desire: "Wake", phase: "Active", generation: 2, ...opts }));
    assert.equal(at({ observedGeneration: 2 }), true);
    assert.equal(at({ observedGeneration: 1 }), false, "a new generation acts");
    assert.equal(at({}), false, "never observed");
    assert.equal(at({ observedGeneration: 2, phase: "Waking" }), false);
    assert.equal(at({ observedGeneration: 2, desire: "Hibernate" }), false);
  });
});

describe("transitionFor", () => {
  const cases: [string, string | undefined, string | undefined][] = [
    ["Hibernate", undefined, "Hibernate"],
    ["Hibernate", "Active", "Hibernate"],
    ["Hibernate", "Waking", "Wake"],
    ["Wake", "Hibernated", "Wake"],
    ["Wake", "Hibernating", "Hibernate"],
    ["Wake", "Failed", "Wake"],
    ["Sleep", "Hibernating", undefined],
    ["", undefined, undefined],
  ];
  for (const [desire, phase, expected] of cases) {
    test(`desire ${desire || '""'} in phase ${phase ?? "none"} → ${expected ?? "unknown"}`, () => {
      const ch = hibernationFixture({ desire, ...(phase ? { phase: phase as "Active" } : {}) });
      assert.equal(transitionFor(ch), expected);
    });
  }
});

describe("vk's completion signals", () => {
  test("hibernateReported needs hibernated at an observed generation ≥ the stamp", () => {
    assert.equal(hibernateReported(podFixture()), false);
    assert.equal(hibernateReported(podFixture({ lifecycle: { state: "hibernating" } })), false);
    assert.equal(hibernateReported(podFixture({ lifecycle: { state: "hibernated" } })), true);
    assert.equal(
      hibernateReported(podFixture({ stamp: 3, lifecycle: { state: "hibernated", observedGeneration: 2 } })),
      false,
    );
    assert.equal(
      hibernateReported(podFixture({ stamp: 3, lifecycle: { state: "hibernated", observedGeneration: 4 } })),
      true,
    );
  });

  test("wakeReported needs a running container, a VM ID and ready at the stamp", () => {
    const live = { running: true, vmID: "vmid-1", lifecycle: { state: "ready" } };
    assert.equal(wakeReported(podFixture(live)), true);
    assert.equal(wakeReported(podFixture({ ...live, running: false })), false);
    assert.equal(wakeReported(podFixture({ ...live, vmID: "" })), false);
    assert.equal(wakeReported(podFixture({ ...live, lifecycle: { state: "creating" } })), false);
    assert.equal(
      wakeReported(podFixture({ ...live, stamp: 2, lifecycle: { state: "ready", observedGeneration: 1 } })),
      false,
    );
  });
});

describe("decideHibernate", () => {
  const hibernating = (since: number) => hibernationFixture({ phase: "Hibernating", readySince: since });

  test("present tag → hibernated, even past the deadline", () => {
    assert.deepEqual(decideHibernate(hibernating(NOW - 10 * MINUTE), { present: true }, NOW), {
      kind: "hibernated",
    });
  });

  test("probe error → returned before the deadline, timed out after it", () => {
    const error = new Error("boom");
    assert.deepEqual(decideHibernate(hibernating(NOW - MINUTE), { error }, NOW), {
      kind: "probe-error",
      error,
    });
    assert.deepEqual(decideHibernate(hibernating(NOW - 4 * MINUTE), { error }, NOW), { kind: "timed-out" });
  });

  test("absent or unprobed → waiting until the deadline", () => {
    assert.deepEqual(decideHibernate(hibernating(NOW - MINUTE), { present: false }, NOW), {
      kind: "waiting",
    });
    assert.deepEqual(decideHibernate(hibernating(NOW - MINUTE), undefined, NOW), { kind: "waiting" });
    assert.deepEqual(decideHibernate(hibernating(NOW - 4 * MINUTE), undefined, NOW), { kind: "timed-out" });
  });

  test("the deadline counts only in Hibernating", () => {
    const failed = hibernationFixture({ phase: "Failed", readySince: NOW - 10 * MINUTE });
    assert.deepEqual(decideHibernate(failed, undefined, NOW), { kind: "waiting" });
  });
});

describe("decideWake", () => {
  const waking = (since: number) => hibernationFixture({ phase: "Waking", readySince: since });
  const live = podFixture({ running: true, vmID: "vmid-1", lifecycle: { state: "ready" } });

  test("a woken VM → active, even past the deadline", () => {
    assert.deepEqual(decideWake(waking(NOW - 10 * MINUTE), live, NOW), { kind: "active" });
  });

  test("not yet woken → waiting for 5 min, then timed out", () => {
    const asleep = podFixture({ lifecycle: { state: "hibernated" } });
    assert.deepEqual(decideWake(waking(NOW - 5 * MINUTE), asleep, NOW), { kind: "waiting" });
    assert.deepEqual(decideWake(waking(NOW - 5 * MINUTE - 1_000), asleep, NOW), { kind: "timed-out" });
  });
});

describe("vmHeldByAnother", () => {
  const deleting = hibernationFixture({ name: "a", uid: "uid-a", deleting: true, vmName: VM });

  test("a live CR with the same status.vmName or the same podRef holds the VM", () => {
    const sameVM = hibernationFixture({ name: "b", uid: "uid-b", podRef: "other", vmName: VM });
    const samePod = hibernationFixture({ name: "c", uid: "uid-c" });
    assert.equal(vmHeldByAnother(deleting, [deleting, sameVM]), true);
    assert.equal(vmHeldByAnother(deleting, [deleting, samePod]), true);
  });

  test("itself, deleting CRs and unrelated CRs do not", () => {
    const alsoDeleting = hibernationFixture({ name: "b", uid: "uid-b", deleting: true, vmName: VM });
    const unrelated = hibernationFixture({
      name: "d",
      uid: "uid-d",
      podRef: "demo-9",
      vmName: "vk-ns-demo-9",
    });
    assert.equal(vmHeldByAnother(deleting, [deleting, alsoDeleting, unrelated]), false);
  });
});
