// The names a CocoonRestore writes are the ones docs/checkpoints.md gives users to match on: its
// refusal reasons, the reasons it fails or waits with, its conditions, and its events. Every reason
// also goes into a condition, whose reason the API server admits only in metav1.Condition's form.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import * as keys from "../../../src/restore/keys.ts";

describe("the CocoonRestore's names, as docs/checkpoints.md gives them to users", () => {
  // Written out as the documentation gives them: the mutation run's sandbox holds no docs/ to read.
  it("each refusal has the reason the refusals table names", () => {
    assert.deepEqual(
      [
        keys.REASON_SET_NOT_FOUND,
        keys.REASON_SET_DELETING,
        keys.REASON_RESTORE_IN_PROGRESS,
        keys.REASON_API_UNAVAILABLE,
        keys.REASON_CHECKPOINT_NOT_FOUND,
        keys.REASON_CHECKPOINT_DELETING,
        keys.REASON_CHECKPOINT_NOT_READY,
        keys.REASON_CHECKPOINT_OF_OTHER_SET,
        keys.REASON_NOTHING_TO_RESTORE,
        keys.REASON_INCOMPATIBLE,
      ],
      [
        "SetNotFound",
        "SetDeleting",
        "RestoreInProgress",
        "CheckpointsUnavailable",
        "CheckpointNotFound",
        "CheckpointDeleting",
        "CheckpointNotReady",
        "CheckpointOfAnotherSet",
        "NothingToRestore",
        "Incompatible",
      ],
    );
  });

  it("each event on a CocoonRestore has the reason the events table names", () => {
    assert.deepEqual(
      [
        keys.EVENT_REFUSED,
        keys.EVENT_STARTED,
        keys.EVENT_COPIED,
        keys.EVENT_COPY_FAILED,
        keys.EVENT_FAILED,
        keys.EVENT_WRITE_REFUSED,
        keys.EVENT_RESTORED,
      ],
      [
        "RestoreRefused",
        "RestoreStarted",
        "RestoreCopied",
        "RestoreCopyFailed",
        "RestoreFailed",
        "RestoreWriteRefused",
        "Restored",
      ],
    );
  });

  it("the reasons it fails with after it began, and its conditions, are the ones the text names", () => {
    assert.deepEqual(
      [
        keys.REASON_DEADLINE_EXCEEDED,
        keys.REASON_WRITE_REFUSED,
        keys.REASON_COPY_FAILED,
        keys.REASON_SET_DELETED,
        keys.REASON_HOLD_REMOVED,
        keys.CONDITION_RESTORED,
        keys.CONDITION_PROGRESSING,
      ],
      [
        "DeadlineExceeded",
        "WriteRefused",
        "CopyFailed",
        "SetDeletedDuringRestore",
        "HoldRemoved",
        "Restored",
        "Progressing",
      ],
    );
  });
});

describe("the CocoonRestore's reasons in its conditions", () => {
  /** The CRD's schema of a condition's reason (metav1.Condition's), as the API server enforces it. */
  function crdReasonSchema(): { pattern: RegExp; minLength: number; maxLength: number } {
    const crd = readFileSync(
      new URL("../../../config/crd/bases/cocoonset.cocoonstack.io_cocoonrestores.yaml", import.meta.url),
      "utf8",
    );
    const m =
      /\n\s+reason:\n\s+description:[\s\S]*?maxLength: (\d+)\n\s+minLength: (\d+)\n\s+pattern: (\S+)\n/.exec(
        crd,
      );
    assert.ok(m, "the CRD gives a condition's reason a pattern");
    return { pattern: new RegExp(m[3] ?? ""), minLength: Number(m[2]), maxLength: Number(m[1]) };
  }

  it("each is one the API server admits as a condition's reason", () => {
    const schema = crdReasonSchema();
    const reasons = Object.entries(keys).filter(([name]) => name.startsWith("REASON_"));
    assert.notEqual(reasons.length, 0, "the reasons are exported under REASON_");
    for (const [name, reason] of reasons) {
      assert.match(reason, schema.pattern, name);
      assert.ok(reason.length >= schema.minLength && reason.length <= schema.maxLength, name);
    }
  });
});
