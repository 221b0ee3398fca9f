// The hold rule: a set has at most one holder (its teardown, a CocoonRestore, an unfinished branch),
// and each feature that would take it is told why not, with the one reason every feature reports.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import {
  ANN_FROM_CHECKPOINT,
  ANN_RESTORE_HOLD,
  BRANCH_COPYING,
  CONDITION_BRANCHED,
  encodeRestoreHold,
  heldAgainst,
  REASON_SET_HELD,
  type Taker,
} from "../../src/holds.ts";
import { cocoonSet } from "../support/cocoonset.ts";

const TAKERS: Taker[] = ["restore", "bind", "branch", "pool", "teardown"];

function restoreHeld(uid = "r-uid"): CocoonSet {
  const cs = cocoonSet();
  cs.metadata.annotations = {
    [ANN_RESTORE_HOLD]: encodeRestoreHold({ restore: "undo", uid, checkpoint: "ck", suspend: false }),
  };
  return cs;
}

const holderFor = (cs: CocoonSet, uid?: string) =>
  Object.fromEntries(TAKERS.map((t) => [t, heldAgainst(cs, t, uid)?.holder ?? "free"]));

describe("heldAgainst", () => {
  it("a free set is free for every taker", () => {
    assert.deepEqual(holderFor(cocoonSet()), {
      restore: "free",
      bind: "free",
      branch: "free",
      pool: "free",
      teardown: "free",
    });
  });

  it("a restore's hold holds off every other taker, the teardown included, but not the restore itself", () => {
    assert.deepEqual(holderFor(restoreHeld(), "r-uid"), {
      restore: "free",
      bind: "restore",
      branch: "restore",
      pool: "restore",
      teardown: "restore",
    });
    assert.equal(heldAgainst(restoreHeld(), "restore", "other-uid")?.holder, "restore");
    const held = heldAgainst(restoreHeld(), "bind");
    assert.equal(held?.reason, REASON_SET_HELD);
    assert.match(held?.message ?? "", /held by CocoonRestore undo \(to CocoonCheckpoint ck\)/);
  });

  it("an unreadable hold holds off everyone, a restore too", () => {
    const cs = cocoonSet();
    cs.metadata.annotations = { [ANN_RESTORE_HOLD]: "{" };
    assert.equal(heldAgainst(cs, "restore", "any")?.holder, "restore");
    assert.equal(heldAgainst(cs, "teardown")?.holder, "restore");
  });

  it("a deletion under way holds off every taker but the teardown", () => {
    const cs = cocoonSet();
    cs.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
    assert.deepEqual(holderFor(cs), {
      restore: "teardown",
      bind: "teardown",
      branch: "teardown",
      pool: "teardown",
      teardown: "free",
    });
  });

  it("a branch not finished holds off a restore and a bind; the teardown takes over from it", () => {
    const cs = cocoonSet();
    cs.metadata.annotations = { [ANN_FROM_CHECKPOINT]: "golden" };
    assert.deepEqual(holderFor(cs), {
      restore: "branch",
      bind: "branch",
      branch: "free",
      pool: "free",
      teardown: "free",
    });
    const branched = (status: "True" | "False", reason: string) => {
      cs.status = {
        readyAgents: 0,
        desiredAgents: 1,
        readyToolboxes: 0,
        desiredToolboxes: 0,
        conditions: [
          {
            type: CONDITION_BRANCHED,
            status,
            reason,
            message: "",
            lastTransitionTime: "2026-01-01T00:00:00Z",
          },
        ],
      };
    };
    branched("False", BRANCH_COPYING);
    assert.equal(heldAgainst(cs, "restore")?.holder, "branch");
    branched("True", "FromCheckpoint");
    assert.equal(heldAgainst(cs, "restore"), undefined, "a finished branch holds nothing");
  });
});
