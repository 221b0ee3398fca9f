// The CocoonSet queue's rank: a pass that moves a set on ranks by the set's creation time, one that
// only observes by the time it is queued.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod } from "../../../src/cocoonset/decide/pods.ts";
import {
  COMING_UP_PASS_DELAY_MS,
  OBSERVING_PASS_DELAY_MS,
  passMovesSetOn,
  queueRank,
} from "../../../src/cocoonset/decide/queuerank.ts";
import { ANN_VM_ID } from "../../../src/contract/keys.ts";
import { cocoonSet } from "../../support/cocoonset.ts";
import { ready } from "../../support/scaling.ts";

const CREATED = "2026-12-01T10:00:00Z";
const NOW = Date.parse("2026-12-01T11:00:00Z");

/** The set with `replicas` sub-agents, its status in `phase` at generation 1 with `ready` agents ready. */
function set(replicas: number, phase: CocoonSetPhase = "Pending", ready = 0): CocoonSet {
  const cs = cocoonSet({ agent: { image: "img", replicas } }, { creationTimestamp: CREATED, generation: 1 });
  cs.status = {
    phase,
    observedGeneration: 1,
    readyAgents: ready,
    desiredAgents: replicas + 1,
    readyToolboxes: 0,
    desiredToolboxes: 0,
  };
  return cs;
}

const subs = (cs: CocoonSet, n: number, isReady: boolean): Pod[] =>
  Array.from({ length: n }, (_, i) => {
    const pod = buildSubAgentPod(cs, i + 1, "node-1");
    return isReady ? ready(pod) : pod;
  });

describe("CocoonSet queue rank", () => {
  it("a set with no main yet moves on: ranked by its creation time", () => {
    const cs = set(2);
    assert.equal(passMovesSetOn(cs, [], NOW), true);
    const rank = queueRank(cs, [], NOW);
    assert.ok(rank >= Date.parse(CREATED) && rank < Date.parse(CREATED) + 1, `rank ${rank}`);
  });

  it("sets created in the same second keep one fixed order", () => {
    const named = (name: string) => {
      const cs = set(0);
      cs.metadata.name = name;
      return queueRank(cs, [], NOW);
    };
    const ranks = ["a", "b", "c", "d"].map(named);
    assert.equal(new Set(ranks).size, 4, "distinct within the second");
    assert.deepEqual(["a", "b", "c", "d"].map(named), ranks, "the same on every pass");
  });

  it("a main on its way up only observes: a set coming up is due at the spec's poll, not sooner", () => {
    const cs = set(2);
    assert.equal(queueRank(cs, [buildMainPod(cs)], NOW), NOW + COMING_UP_PASS_DELAY_MS);
    assert.equal(COMING_UP_PASS_DELAY_MS, 5_000);
  });

  it("a Running set that lost a ready pod observes at the shorter delay: its status is no progress report", () => {
    const cs = set(1, "Running", 2);
    const pods = [ready(buildMainPod(cs)), ...subs(cs, 1, false)];
    assert.equal(queueRank(cs, pods, NOW), NOW + OBSERVING_PASS_DELAY_MS);
  });

  it("pods created and not yet in the cache: the pass waits for their add events instead of moving", () => {
    const cs = set(2);
    const main = ready(buildMainPod(cs));
    assert.equal(passMovesSetOn(cs, [main], NOW), true, "missing sub-agents, nothing created yet");
    assert.equal(passMovesSetOn(cs, [main], NOW, true), false, "their creates are awaited");
    assert.equal(queueRank(cs, [main], NOW, true), NOW + COMING_UP_PASS_DELAY_MS);
    assert.equal(passMovesSetOn(cs, [], NOW, true), false, "the main's create is awaited");
  });

  it("a failed member moves the set on at once, unless the set already reports Failed", () => {
    const cs = set(1);
    const main = ready(buildMainPod(cs));
    const [sub] = subs(cs, 1, false);
    assert.equal(passMovesSetOn(cs, [main, sub!], NOW), false, "on its way up");
    sub!.status = { phase: "Failed" };
    assert.equal(passMovesSetOn(cs, [main, sub!], NOW), true, "failed");
    const reported = set(1, "Failed", 1);
    assert.equal(passMovesSetOn(reported, [main, sub!], NOW), false, "Failed already reported");
  });

  it("a Ready main without its sub-agents moves on", () => {
    const cs = set(2);
    assert.equal(passMovesSetOn(cs, [ready(buildMainPod(cs))], NOW), true);
  });

  it("sub-agents turning ready one by one only observe; the last one makes the pass that completes the set", () => {
    const cs = set(2);
    const main = ready(buildMainPod(cs));
    const [first, second] = subs(cs, 2, false);
    assert.equal(passMovesSetOn(cs, [main, ready(first!), second!], NOW), false);
    assert.equal(passMovesSetOn(cs, [main, ready(first!), ready(second!)], NOW), true);
  });

  it("a Running set with every pod ready is settled: an observing pass", () => {
    const cs = set(1, "Running", 2);
    const pods = [ready(buildMainPod(cs)), ...subs(cs, 1, true)];
    assert.equal(passMovesSetOn(cs, pods, NOW), false);
    assert.equal(queueRank(cs, pods, NOW), NOW + OBSERVING_PASS_DELAY_MS);
  });

  it("a spec edit, a delete, a missing finalizer or a suspend not yet Suspended moves on", () => {
    const pods = (cs: CocoonSet) => [ready(buildMainPod(cs))];
    const edited = set(0);
    edited.metadata.generation = 2;
    assert.equal(passMovesSetOn(edited, pods(edited), NOW), true);
    const deleting = set(0);
    deleting.metadata.deletionTimestamp = CREATED;
    assert.equal(passMovesSetOn(deleting, pods(deleting), NOW), true);
    const bare = set(0);
    bare.metadata.finalizers = [];
    assert.equal(passMovesSetOn(bare, pods(bare), NOW), true);
    const suspending = set(0, "Suspending", 1);
    suspending.spec.suspend = true;
    assert.equal(passMovesSetOn(suspending, pods(suspending), NOW), true);
    suspending.status = { ...suspending.status!, phase: "Suspended" };
    assert.equal(passMovesSetOn(suspending, [], NOW), false);
  });

  it("a wake moves on once the restored main runs a VM", () => {
    const cs = set(0, "Waking", 0);
    const main = buildMainPod(cs);
    assert.equal(passMovesSetOn(cs, [main], NOW), false);
    main.metadata.annotations = { ...main.metadata.annotations, [ANN_VM_ID]: "vm-1" };
    main.status = {
      phase: "Running",
      containerStatuses: [{ name: "agent", ready: false, restartCount: 0, state: { running: {} } }],
    };
    assert.equal(passMovesSetOn(cs, [main], NOW), true);
  });

  it("a pass that moves a set on is due at once", () => {
    assert.ok(queueRank(set(2), [], NOW) <= NOW);
  });

  it("a creation time ahead of this clock ranks no later than now", () => {
    const cs = set(0);
    assert.equal(queueRank(cs, [], Date.parse(CREATED) - 5_000), Date.parse(CREATED) - 5_000);
  });

  it("a new set's main on its way up only observes, though the set has no status yet", () => {
    const cs = set(2);
    cs.status = undefined;
    assert.equal(passMovesSetOn(cs, [buildMainPod(cs)], NOW), false);
    assert.equal(passMovesSetOn(cs, [], NOW), true);
  });

  it("an idle deadline the status announced moves the set on once it has come", () => {
    const cs = set(0, "Running", 1);
    const pods = [ready(buildMainPod(cs))];
    cs.status = { ...cs.status!, idleSuspendAt: new Date(NOW + 1_000).toISOString() };
    assert.equal(passMovesSetOn(cs, pods, NOW), false);
    assert.equal(passMovesSetOn(cs, pods, NOW + 1_000), true);
  });

  it("a set the cache does not have ranks by now", () => {
    assert.equal(queueRank(undefined, [], NOW), NOW);
  });
});
