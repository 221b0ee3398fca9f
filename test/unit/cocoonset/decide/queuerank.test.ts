// Each cause that makes a CocoonSet pass move the set on, on its own: from a settled Running set (an
// observing pass) one cause at a time, so the rank goes first for exactly that cause.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Pod } from "../../../../src/apis/core.ts";
import type { CocoonSet, CocoonSetPhase } from "../../../../src/apis/v1/types.ts";
import { buildMainPod, buildSubAgentPod, buildToolboxPod } from "../../../../src/cocoonset/decide/pods.ts";
import {
  COMING_UP_PASS_DELAY_MS,
  passMovesSetOn,
  queueRank,
} from "../../../../src/cocoonset/decide/queuerank.ts";
import { cocoonSet } from "../../../support/cocoonset.ts";
import { phaseFailed, ready } from "../../../support/scaling.ts";

const CREATED = "2026-12-01T10:00:00Z";
const NOW = Date.parse("2026-12-01T11:00:00Z");
const TOOLBOX = { name: "tb", image: "tb" };

/** A set at generation 1 whose status, observed at 1, is `phase` with `readyAgents` agents ready. */
function set(
  replicas: number,
  phase: CocoonSetPhase,
  readyAgents: number,
  toolboxes: (typeof TOOLBOX)[] = [],
): CocoonSet {
  const cs = cocoonSet(
    { agent: { image: "img", replicas }, toolboxes },
    { creationTimestamp: CREATED, generation: 1 },
  );
  cs.status = {
    phase,
    observedGeneration: 1,
    readyAgents,
    desiredAgents: replicas + 1,
    readyToolboxes: 0,
    desiredToolboxes: toolboxes.length,
  };
  return cs;
}

/** A settled set: Running, main and one sub-agent Ready, the status saying so. */
function settled(): { cs: CocoonSet; pods: Pod[] } {
  const cs = set(1, "Running", 2);
  return { cs, pods: [ready(buildMainPod(cs)), ready(buildSubAgentPod(cs, 1, "node-1"))] };
}

describe("what moves a settled set on", () => {
  it("nothing: a settled set's pass only observes", () => {
    const { cs, pods } = settled();
    assert.equal(passMovesSetOn(cs, pods, NOW), false);
  });

  it("a delete", () => {
    const { cs, pods } = settled();
    cs.metadata.deletionTimestamp = CREATED;
    assert.equal(passMovesSetOn(cs, pods, NOW), true);
  });

  it("a missing finalizer", () => {
    const { cs, pods } = settled();
    cs.metadata.finalizers = [];
    assert.equal(passMovesSetOn(cs, pods, NOW), true);
  });

  it("a spec edit the status has not observed", () => {
    const { cs, pods } = settled();
    cs.metadata.generation = 2;
    assert.equal(passMovesSetOn(cs, pods, NOW), true);
  });

  it("an extra sub-agent above replicas, for the pass to delete", () => {
    const { cs, pods } = settled();
    assert.equal(passMovesSetOn(cs, [...pods, ready(buildSubAgentPod(cs, 2, "node-1"))], NOW), true);
  });

  it("not a terminating pod, failed or not: it is already on its way out", () => {
    const { cs, pods } = settled();
    const leaving = phaseFailed(buildSubAgentPod(cs, 2, "node-1"));
    leaving.metadata.deletionTimestamp = CREATED;
    assert.equal(passMovesSetOn(cs, [...pods, leaving], NOW), false);
  });
});

describe("what moves a set coming up on", () => {
  it("a missing sub-agent to create, while another is still on its way up", () => {
    const cs = set(2, "Scaling", 1);
    const pods = [ready(buildMainPod(cs)), buildSubAgentPod(cs, 1, "node-1")];
    assert.equal(passMovesSetOn(cs, pods, NOW), true);
  });

  it("a missing toolbox to create, while a sub-agent is still on its way up", () => {
    const cs = set(1, "Scaling", 1, [TOOLBOX]);
    const pods = [ready(buildMainPod(cs)), buildSubAgentPod(cs, 1, "node-1")];
    assert.equal(passMovesSetOn(cs, pods, NOW), true);
  });

  it("every member Ready, though the status already counted every agent: the pass reports Running", () => {
    const cs = set(1, "Scaling", 2, [TOOLBOX]);
    const pods = [
      ready(buildMainPod(cs)),
      ready(buildSubAgentPod(cs, 1, "node-1")),
      ready(buildToolboxPod(cs, TOOLBOX)),
    ];
    assert.equal(passMovesSetOn(cs, pods, NOW), true);
  });

  it("a new set without a status, its main on the way up, waits the coming-up delay", () => {
    const cs = set(0, "Pending", 0);
    cs.status = undefined;
    assert.equal(queueRank(cs, [buildMainPod(cs)], NOW), NOW + COMING_UP_PASS_DELAY_MS);
  });
});

describe("the rank within a second", () => {
  it("sets of one name in two namespaces, created in the same second, rank apart", () => {
    const rank = (namespace: string) => {
      const cs = set(0, "Pending", 0);
      cs.metadata.namespace = namespace;
      return queueRank(cs, [], NOW);
    };
    assert.notEqual(rank("team-a"), rank("team-b"));
  });
});
