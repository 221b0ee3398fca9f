// A CocoonRestore's pure decisions: each refusal, in the order they are judged, and the waits.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import { ANN_FROM_CHECKPOINT, ANN_RESTORE_HOLD } from "../../../src/checkpoint/keys.ts";
import { encodeRestoreHold } from "../../../src/holds.ts";
import {
  checkpointRefusal,
  heldByOther,
  isFinal,
  notRestoredYet,
  notSuspendedForCopy,
  type RestoreStart,
  refuseStart,
  restoreConditions,
  restoreDeadlineMs,
} from "../../../src/restore/decide.ts";
import {
  CONDITION_PROGRESSING,
  CONDITION_RESTORED,
  REASON_CHECKPOINT_NOT_READY,
  REASON_RESTORED,
} from "../../../src/restore/keys.ts";
import { MAIN, readyCheckpoint, restoreOf, SUB, setIn } from "./fixture.ts";

const DIGESTS = { main: "sha256:m", sub: "sha256:s" };

function start(overrides: Partial<RestoreStart> = {}): RestoreStart {
  return {
    restore: restoreOf(),
    set: setIn("Running", false),
    checkpoint: readyCheckpoint(DIGESTS),
    branchedFrom: undefined,
    liveRestores: new Set(),
    ...overrides,
  };
}

function held(cs: CocoonSet, restore: string, suspend = false): CocoonSet {
  const hold = encodeRestoreHold({ restore, uid: `uid-${restore}`, checkpoint: "ck", suspend });
  return { ...cs, metadata: { ...cs.metadata, annotations: { [ANN_RESTORE_HOLD]: hold } } };
}

describe("refuseStart", () => {
  it("lets a restore of the set to its own Ready checkpoint begin", () => {
    assert.equal(refuseStart(start()), undefined);
  });

  it("refuses, each with its reason and words", () => {
    const cs = setIn("Running", false);
    const ck = readyCheckpoint(DIGESTS);
    const cases: [string, Partial<RestoreStart>, string, RegExp][] = [
      ["no set", { set: undefined }, "SetNotFound", /CocoonSet demo not found/],
      [
        "a set being deleted",
        { set: { ...cs, metadata: { ...cs.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } } },
        "SetDeleting",
        /is being deleted/,
      ],
      [
        "a set another live restore holds",
        { set: held(cs, "r0"), liveRestores: new Set(["uid-r0"]) },
        "RestoreInProgress",
        /CocoonRestore r0 is restoring CocoonSet demo; one restore at a time/,
      ],
      [
        "an unreadable hold",
        { set: { ...cs, metadata: { ...cs.metadata, annotations: { [ANN_RESTORE_HOLD]: "{" } } } },
        "RestoreInProgress",
        /unreadable/,
      ],
      ["no checkpoint API", { checkpoint: "unavailable" }, "CheckpointsUnavailable", /not served/],
      ["no checkpoint", { checkpoint: undefined }, "CheckpointNotFound", /CocoonCheckpoint ck not found/],
      [
        "a checkpoint being deleted",
        { checkpoint: { ...ck, metadata: { ...ck.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } } },
        "CheckpointDeleting",
        /being deleted/,
      ],
      [
        "an unready checkpoint",
        { checkpoint: { ...ck, status: { phase: "Copying" } } },
        "CheckpointNotReady",
        /not Ready \(phase Copying\)/,
      ],
      [
        "another set's checkpoint",
        { checkpoint: readyCheckpoint(DIGESTS, "elsewhere") },
        "CheckpointOfAnotherSet",
        /is of CocoonSet elsewhere, which is neither demo nor the set it was branched from/,
      ],
      [
        "a checkpoint with no member for any slot",
        { checkpoint: { ...ck, status: { phase: "Ready", members: [] } } },
        "NothingToRestore",
        /holds no snapshot for any slot/,
      ],
      [
        "an incompatible member",
        { set: { ...cs, spec: { ...cs.spec, agent: { ...cs.spec.agent, image: "other" } } } },
        "Incompatible",
        /member main \(slot 0\), VM vk-ns-demo-0: image ubuntu \(the spec asks for other\)/,
      ],
    ];
    for (const [what, overrides, reason, message] of cases) {
      const refusal = refuseStart(start(overrides));
      assert.equal(refusal?.reason, reason, what);
      assert.match(refusal?.message ?? "", message, what);
    }
  });

  it("takes a checkpoint of the set this one was branched from", () => {
    const cs = setIn("Running", false);
    const branched = { ...cs, metadata: { ...cs.metadata, annotations: { [ANN_FROM_CHECKPOINT]: "seed" } } };
    const ck = readyCheckpoint(DIGESTS, "origin");
    assert.equal(refuseStart(start({ set: branched, checkpoint: ck, branchedFrom: "origin" })), undefined);
    assert.equal(refuseStart(start({ set: branched, checkpoint: ck }))?.reason, "CheckpointOfAnotherSet");
  });

  it("a hold of its own, or a stale one (its restore gone or finished), leaves the set free", () => {
    const r = restoreOf();
    assert.equal(heldByOther(held(setIn("Running", false), "r1"), r, new Set(["uid-r1"])), undefined);
    assert.equal(heldByOther(held(setIn("Running", false), "r0"), r, new Set()), undefined);
    const other = heldByOther(held(setIn("Running", false), "r0"), r, new Set(["uid-r0"]));
    assert.equal(other !== "unreadable" && other?.restore, "r0");
  });
});

describe("the waits", () => {
  it("copies only once the set is suspended and Suspended at its generation", () => {
    assert.match(notSuspendedForCopy(setIn("Running", false)) ?? "", /not suspended yet/);
    assert.match(
      notSuspendedForCopy(setIn("Running", true)) ?? "",
      /Suspended at generation 1 \(phase Running/,
    );
    const stale = setIn("Suspended", true);
    assert.match(
      notSuspendedForCopy({ ...stale, metadata: { ...stale.metadata, generation: 2 } }) ?? "",
      /at generation 2 \(phase Suspended, observed 1\)/,
    );
    assert.equal(notSuspendedForCopy(setIn("Suspended", true)), undefined);
  });

  it("is Restored once the set runs at its generation and no restored VM is still owed a restore", () => {
    const running = setIn("Running", false, 3);
    assert.match(
      notRestoredYet(setIn("Suspended", true, 3), [], [MAIN]) ?? "",
      /to be Running at generation 3/,
    );
    assert.match(notRestoredYet(running, [SUB, "other"], [MAIN, SUB]) ?? "", new RegExp(`${SUB} to run`));
    assert.equal(notRestoredYet(running, ["other"], [MAIN, SUB]), undefined);
  });
});

describe("a restore's end", () => {
  it("is final once Restored or Failed, and only then", () => {
    assert.equal(isFinal("Restored"), true);
    assert.equal(isFinal("Failed"), true);
    for (const phase of [undefined, "Pending", "Restoring"] as const)
      assert.equal(isFinal(phase), false, phase);
  });

  it("has its deadline at creation plus failureDeadline; a duration the CRD would not admit counts as the default hour", () => {
    const created = "2026-12-06T10:00:00Z";
    const at = (failureDeadline?: string) =>
      restoreDeadlineMs({
        ...restoreOf(),
        metadata: { ...restoreOf().metadata, creationTimestamp: created },
        spec: { ...restoreOf().spec, ...(failureDeadline === undefined ? {} : { failureDeadline }) },
      });
    const hour = Date.parse(created) + 3_600_000;
    assert.equal(at("10m"), Date.parse(created) + 600_000);
    assert.equal(at(), hour);
    for (const refused of ["0s", "-5m", "soon"]) assert.equal(at(refused), hour, refused);
    assert.equal(restoreDeadlineMs(restoreOf()), undefined, "no creation time, no deadline");
  });

  it("is not Restored while the set's Running status is of an older generation (the resume not yet seen)", () => {
    const current = setIn("Running", false, 3);
    const lagging = { ...current, metadata: { ...current.metadata, generation: 4 } };
    assert.match(notRestoredYet(lagging, [], [MAIN]) ?? "", /Running at generation 4/);
  });

  it("refuses a checkpoint with no status yet as not Ready", () => {
    const { status: _none, ...fresh } = readyCheckpoint(DIGESTS);
    assert.deepEqual(checkpointRefusal(fresh, "ck"), {
      reason: REASON_CHECKPOINT_NOT_READY,
      message: "CocoonCheckpoint ck is not Ready (phase none)",
    });
  });

  it("reads a set with no status yet as neither suspended for the copy nor restored", () => {
    const bare = { ...setIn("Running", true), status: undefined };
    assert.match(notSuspendedForCopy(bare) ?? "", /phase unknown, observed 0/);
    assert.match(notRestoredYet(bare, [], [MAIN]) ?? "", /phase unknown/);
  });

  it("Restored is True only in phase Restored; Progressing only while Restoring", () => {
    const conditionsIn = (phase: "Pending" | "Restoring" | "Restored" | "Failed") =>
      Object.fromEntries(
        restoreConditions([], phase, "Why", "words", 1, 0).map((c) => [c.type, [c.status, c.reason]]),
      );
    assert.deepEqual(conditionsIn("Restored"), {
      [CONDITION_RESTORED]: ["True", REASON_RESTORED],
      [CONDITION_PROGRESSING]: ["False", "Why"],
    });
    assert.deepEqual(conditionsIn("Restoring"), {
      [CONDITION_RESTORED]: ["False", "Why"],
      [CONDITION_PROGRESSING]: ["True", "Why"],
    });
    for (const phase of ["Pending", "Failed"] as const) {
      assert.deepEqual(conditionsIn(phase), {
        [CONDITION_RESTORED]: ["False", "Why"],
        [CONDITION_PROGRESSING]: ["False", "Why"],
      });
    }
  });
});
