import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { forEachLimited } from "../../../src/pass/limit.ts";

describe("forEachLimited", () => {
  it("stops starting work after the first failure and rethrows it", async () => {
    const started: number[] = [];
    await assert.rejects(
      forEachLimited([1, 2, 3, 4, 5], 1, async (n) => {
        started.push(n);
        if (n === 2) throw new Error("boom");
      }),
      /boom/,
    );
    assert.deepEqual(started, [1, 2]);
  });
});
