// The names checkpoints add to the contract are the ones docs/checkpoints.md gives users: the
// annotations and the finalizer they set or see, the manifest stamps, and every event reason.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, it } from "node:test";
import * as keys from "../../../src/checkpoint/keys.ts";

const docs = readFileSync(resolve(import.meta.dirname, "../../../docs/checkpoints.md"), "utf8");

describe("checkpoint names", () => {
  it("the annotations, the finalizer and the manifest stamps are those the docs name", () => {
    assert.deepEqual(
      [
        keys.ANN_FROM_CHECKPOINT,
        keys.ANN_KEEP_CHECKPOINTS,
        keys.ANN_PINNED,
        keys.FINALIZER_COCOONCHECKPOINT,
        keys.MANIFEST_ANN_CHECKPOINT,
        keys.MANIFEST_ANN_BRANCH,
        keys.MANIFEST_ANN_WRITE,
        keys.checkpointTag("before-eval"),
      ],
      [
        "cocoonset.cocoonstack.io/from-checkpoint",
        "cocoonset.cocoonstack.io/keep-checkpoints",
        "cocoonset.cocoonstack.io/pinned",
        "cocooncheckpoint.cocoonset.cocoonstack.io/finalizer",
        "cocoonset.cocoonstack.io/checkpoint",
        "cocoonset.cocoonstack.io/branch",
        "cocoonset.cocoonstack.io/write",
        "ckpt-before-eval",
      ],
    );
  });

  it("every event reason is one the docs' event table lists, on the object it is recorded on", () => {
    const onSet = new Set([
      keys.REASON_BRANCH_WAITING,
      keys.REASON_BRANCH_FAILED,
      keys.REASON_BRANCH_INCOMPATIBLE,
      keys.REASON_BRANCHED,
      keys.REASON_BRANCH_NOT_APPLIED,
    ]);
    const reasons = Object.entries(keys).filter(([name]) => name.startsWith("REASON_"));
    assert.ok(reasons.length >= 15);
    for (const [name, reason] of reasons) {
      const object = onSet.has(reason as string) ? "CocoonSet" : "CocoonCheckpoint";
      assert.ok(docs.includes(`| ${object} | \`${reason}\` |`), `${name} = ${JSON.stringify(reason)}`);
    }
  });
});
