import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../../src/apis/v1/types.ts";
import {
  deadLetterValue,
  desiredPodNames,
  encodeRebuildHistory,
  forgetRebuild,
  isDeadLettered,
  MAX_REBUILD_ATTEMPTS,
  missingPodParked,
  type RebuildHistory,
  readRebuildHistory,
  rebuildBackoffMs,
  rebuildDecision,
  recordDeadLetter,
  recordRebuild,
  smallestWait,
} from "../../../../src/cocoonset/decide/rebuildrules.ts";

const T0 = Date.parse("2026-05-14T01:00:00Z");

function set(replicas: number, toolboxes: string[] = []): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name: "demo", namespace: "ns", generation: 3 },
    spec: {
      agent: { image: "ubuntu", replicas },
      toolboxes: toolboxes.map((name) => ({ name, image: "tb" })),
    },
  };
}

function history(
  entries: Record<string, { count: number; lastDeleted?: string; deadLetter?: number }>,
): RebuildHistory {
  return new Map(Object.entries(entries).map(([pod, entry]) => [pod, { lastDeleted: "", ...entry }]));
}

describe("rebuild history codec", () => {
  it("round-trips counts 2 and 1 (replicas 3)", () => {
    const input = history({
      "demo-1": { count: 2, lastDeleted: "2026-05-14T01:00:00Z" },
      "demo-2": { count: 1, lastDeleted: "2026-05-14T01:00:30Z" },
    });
    const encoded = encodeRebuildHistory(input, desiredPodNames(set(3)));
    assert.equal(
      encoded,
      '{"demo-1":{"count":2,"lastDeleted":"2026-05-14T01:00:00Z"},"demo-2":{"count":1,"lastDeleted":"2026-05-14T01:00:30Z"}}',
    );
    const decoded = readRebuildHistory(encoded, "demo");
    assert.equal(decoded.warning, undefined);
    assert.deepEqual(decoded.value, input);
  });

  it("prunes demo-7 with replicas 2, leaving 2 entries", () => {
    const input = history({ "demo-1": { count: 1 }, "demo-2": { count: 2 }, "demo-7": { count: 3 } });
    const decoded = readRebuildHistory(encodeRebuildHistory(input, desiredPodNames(set(2))), "demo");
    assert.equal(decoded.value.has("demo-7"), false);
    assert.equal(decoded.value.size, 2);
  });

  it("keeps entries of the main and of toolboxes still in the spec", () => {
    const input = history({ "demo-0": { count: 1 }, "demo-tb": { count: 1 }, "demo-old": { count: 1 } });
    const decoded = readRebuildHistory(encodeRebuildHistory(input, desiredPodNames(set(0, ["tb"]))), "demo");
    assert.deepEqual([...decoded.value.keys()], ["demo-0", "demo-tb"]);
  });

  it("reads not-json as empty, with a warning", () => {
    const decoded = readRebuildHistory("not-json", "demo");
    assert.equal(decoded.value.size, 0);
    assert.match(decoded.warning ?? "", /not JSON/);
  });

  it("reads null as an empty map that can be written to", () => {
    const decoded = readRebuildHistory("null", "demo");
    assert.equal(decoded.warning, undefined);
    decoded.value.set("demo-1", { count: 1, lastDeleted: "" });
    assert.equal(
      encodeRebuildHistory(decoded.value, desiredPodNames(set(2))),
      '{"demo-1":{"count":1,"lastDeleted":"0001-01-01T00:00:00Z"}}',
    );
  });

  it("reads the older slot-number keys as agent pod names", () => {
    const decoded = readRebuildHistory('{"1":{"count":4,"lastDeleted":"2026-05-14T01:00:00Z"}}', "demo");
    assert.deepEqual(decoded.value, history({ "demo-1": { count: 4, lastDeleted: "2026-05-14T01:00:00Z" } }));
  });

  it("reads a malformed entry or a non-object as empty, with a warning", () => {
    for (const raw of ['{"demo-1":{"count":"two"}}', "[1]", '"text"']) {
      const decoded = readRebuildHistory(raw, "demo");
      assert.equal(decoded.value.size, 0, raw);
      assert.notEqual(decoded.warning, undefined, raw);
    }
  });

  it("reads a missing or empty annotation as empty without a warning", () => {
    assert.deepEqual(readRebuildHistory(undefined, "demo"), { value: new Map() });
    assert.deepEqual(readRebuildHistory("", "demo"), { value: new Map() });
  });

  it("round-trips the dead-letter generation", () => {
    const input = recordDeadLetter(
      history({ "demo-1": { count: 4, lastDeleted: "2026-05-14T01:00:00Z" } }),
      "demo-1",
      3,
    );
    const encoded = encodeRebuildHistory(input, desiredPodNames(set(1)));
    assert.equal(encoded, '{"demo-1":{"count":4,"lastDeleted":"2026-05-14T01:00:00Z","deadLetter":3}}');
    assert.deepEqual(readRebuildHistory(encoded, "demo").value, input);
  });
});

describe("rebuild history as Go writes and reads it", () => {
  it("reads an entry Go wrote as null, or without fields, as a zero entry", () => {
    const decoded = readRebuildHistory('{"demo-1":null,"demo-2":{}}', "demo");
    assert.equal(decoded.warning, undefined);
    assert.deepEqual(decoded.value, history({ "demo-1": { count: 0 }, "demo-2": { count: 0 } }));
  });

  it("converts every older slot-number key, of any width, and only those", () => {
    const decoded = readRebuildHistory('{"12":{"count":1},"1st-1":{"count":2}}', "1st");
    assert.deepEqual([...decoded.value.keys()], ["1st-12", "1st-1"]);
  });

  it("reads a history that is no JSON object as empty, with a warning", () => {
    for (const raw of ["5", "[]", "true"]) {
      const decoded = readRebuildHistory(raw, "demo");
      assert.equal(decoded.value.size, 0, raw);
      assert.notEqual(decoded.warning, undefined, raw);
    }
  });

  it("reads a history with an entry of the wrong shape as empty, with a warning", () => {
    for (const entry of [
      "5",
      '"x"',
      "[1]",
      '{"count":1.5}',
      '{"lastDeleted":5}',
      '{"count":4,"deadLetter":"3"}',
    ]) {
      const decoded = readRebuildHistory(`{"demo-0":{"count":1},"demo-1":${entry}}`, "demo");
      assert.equal(decoded.value.size, 0, entry);
      assert.notEqual(decoded.warning, undefined, entry);
    }
  });

  it("writes the pods in name order, as Go's encoding/json writes a map", () => {
    const input = history({ "demo-2": { count: 1 }, "demo-1": { count: 2 } });
    assert.equal(
      encodeRebuildHistory(input, desiredPodNames(set(2))),
      '{"demo-1":{"count":2,"lastDeleted":"0001-01-01T00:00:00Z"},"demo-2":{"count":1,"lastDeleted":"0001-01-01T00:00:00Z"}}',
    );
  });
});

describe("rebuildBackoffMs", () => {
  it("gives 0, 1 s, 5 s, 30 s, 30 s for counts 0, 1, 2, 3, 10", () => {
    assert.deepEqual([0, 1, 2, 3, 10].map(rebuildBackoffMs), [0, 1_000, 5_000, 30_000, 30_000]);
  });
});

describe("isDeadLettered", () => {
  it("holds at the generation it was written at and lifts on a new one", () => {
    assert.equal(isDeadLettered(deadLetterValue(3), 3, false), true);
    assert.equal(isDeadLettered(deadLetterValue(3), 3, true), true);
    assert.equal(isDeadLettered("3", 4, false), false);
  });

  it("reads the older value true as held until the pod drifts", () => {
    assert.equal(isDeadLettered("true", 4, false), true);
    assert.equal(isDeadLettered("true", 4, true), false);
  });

  it("is not held without a value", () => {
    assert.equal(isDeadLettered(undefined, 3, false), false);
    assert.equal(isDeadLettered("", 3, false), false);
  });
});

describe("rebuildDecision", () => {
  const at = (offsetMs: number) => new Date(T0 + offsetMs).toISOString();

  it("rebuilds a pod with no history at once, as attempt 1", () => {
    assert.deepEqual(rebuildDecision(new Map(), "demo-1", T0, 3, undefined, false), {
      action: "rebuild-now",
      attempt: 1,
    });
  });

  it("waits out the backoff of the prior count from lastDeleted", () => {
    const h = history({ "demo-1": { count: 2, lastDeleted: at(0) } });
    assert.deepEqual(rebuildDecision(h, "demo-1", T0 + 2_000, 3, undefined, false), {
      action: "wait",
      waitMs: 3_000,
    });
    assert.deepEqual(rebuildDecision(h, "demo-1", T0 + 5_000, 3, undefined, false), {
      action: "rebuild-now",
      attempt: 3,
    });
  });

  it("rebuilds the fourth time, then dead-letters", () => {
    const fourth = history({ "demo-1": { count: 3, lastDeleted: at(0) } });
    assert.deepEqual(rebuildDecision(fourth, "demo-1", T0 + 30_000, 3, undefined, false), {
      action: "rebuild-now",
      attempt: MAX_REBUILD_ATTEMPTS,
    });
    const spent = history({ "demo-1": { count: 4, lastDeleted: at(0) } });
    assert.deepEqual(rebuildDecision(spent, "demo-1", T0 + 3_600_000, 3, undefined, false), {
      action: "dead-letter",
    });
  });

  it("leaves a pod dead-lettered at this generation parked", () => {
    const spent = history({ "demo-1": { count: 4, lastDeleted: at(0) } });
    assert.deepEqual(rebuildDecision(spent, "demo-1", T0, 3, "3", true), { action: "parked" });
    assert.deepEqual(rebuildDecision(spent, "demo-1", T0, 3, "true", false), { action: "parked" });
  });

  it("gives a lifted dead-letter a fresh budget", () => {
    const spent = history({ "demo-1": { count: 4, lastDeleted: at(0) } });
    assert.deepEqual(rebuildDecision(spent, "demo-1", T0, 4, "3", false), {
      action: "rebuild-now",
      attempt: 1,
    });
    assert.deepEqual(rebuildDecision(spent, "demo-1", T0, 4, "true", true), {
      action: "rebuild-now",
      attempt: 1,
    });
  });

  it("an empty dead-letter annotation lifts nothing: the spent budget still dead-letters", () => {
    const spent = history({ "demo-1": { count: 4, lastDeleted: at(0) } });
    assert.deepEqual(rebuildDecision(spent, "demo-1", T0 + 3_600_000, 3, "", false), {
      action: "dead-letter",
    });
  });

  it("treats an unreadable lastDeleted as long ago", () => {
    const h = history({ "demo-1": { count: 3, lastDeleted: "garbage" } });
    assert.deepEqual(rebuildDecision(h, "demo-1", T0, 3, undefined, false), {
      action: "rebuild-now",
      attempt: 4,
    });
  });
});

describe("history updates", () => {
  it("records a rebuild as {count: attempt, lastDeleted: now} without touching the input", () => {
    const before = history({ "demo-2": { count: 1, lastDeleted: "2026-05-14T01:00:00Z" } });
    const after = recordRebuild(before, "demo-1", 2, T0);
    assert.deepEqual(after.get("demo-1"), { count: 2, lastDeleted: "2026-05-14T01:00:00Z" });
    assert.equal(after.get("demo-2")?.count, 1);
    assert.equal(before.has("demo-1"), false);
  });

  it("parks a missing pod only when dead-lettered at this generation", () => {
    const parked = recordDeadLetter(history({ "demo-0": { count: 4 } }), "demo-0", 3);
    assert.equal(missingPodParked(parked, "demo-0", 3), true);
    assert.equal(missingPodParked(parked, "demo-0", 4), false);
    assert.equal(missingPodParked(history({ "demo-0": { count: 4 } }), "demo-0", 3), false);
  });

  it("a rebuild after a lifted dead-letter clears the parked generation", () => {
    const parked = recordDeadLetter(new Map(), "demo-1", 3);
    assert.equal(recordRebuild(parked, "demo-1", 1, T0).get("demo-1")?.deadLetter, undefined);
  });

  it("forgets an entry", () => {
    assert.equal(forgetRebuild(history({ "demo-1": { count: 1 } }), "demo-1").size, 0);
  });

  it("takes the smallest pending wait for the requeue", () => {
    assert.equal(smallestWait([{ action: "rebuild-now", attempt: 1 }, { action: "parked" }]), 0);
    assert.equal(
      smallestWait([
        { action: "wait", waitMs: 5_000 },
        { action: "dead-letter" },
        { action: "wait", waitMs: 900 },
      ]),
      900,
    );
    assert.equal(
      smallestWait([
        { action: "wait", waitMs: 900 },
        { action: "wait", waitMs: 5_000 },
      ]),
      900,
    );
  });
});
