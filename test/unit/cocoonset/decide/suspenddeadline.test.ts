import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet, CocoonSetPhase } from "../../../../src/apis/v1/types.ts";
import {
  checkSuspendDeadline,
  SUSPEND_TIMEOUT_MS,
  shouldClearSuspendingSince,
  suspendDeadlinePassed,
} from "../../../../src/cocoonset/decide/suspenddeadline.ts";
import { ANN_SUSPENDING_SINCE } from "../../../../src/contract/keys.ts";

const T0 = Date.parse("2026-05-14T01:00:00Z");

function set(phase: CocoonSetPhase | undefined, since?: string): CocoonSet {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: {
      name: "demo",
      namespace: "ns",
      annotations: since === undefined ? {} : { [ANN_SUSPENDING_SINCE]: since },
    },
    spec: { suspend: true, agent: { image: "ubuntu" } },
    status:
      phase === undefined
        ? undefined
        : { phase, readyAgents: 0, desiredAgents: 1, readyToolboxes: 0, desiredToolboxes: 0 },
  };
}

describe("suspendDeadlinePassed", () => {
  it("passes only strictly after three minutes", () => {
    assert.equal(SUSPEND_TIMEOUT_MS, 180_000);
    assert.equal(suspendDeadlinePassed(T0, T0 + 180_000), false);
    assert.equal(suspendDeadlinePassed(T0, T0 + 180_001), true);
  });
});

describe("checkSuspendDeadline", () => {
  const since = "2026-05-14T01:00:00Z";

  it("arms on entry from another phase, even with a stale annotation", () => {
    for (const phase of [undefined, "Running", "Failed", "Suspended"] as const) {
      assert.deepEqual(checkSuspendDeadline(set(phase, since), T0 + 600_000), {
        action: "arm",
        since: "2026-05-14T01:10:00Z",
      });
    }
  });

  it("re-arms while Suspending when the annotation is missing or unreadable", () => {
    assert.deepEqual(checkSuspendDeadline(set("Suspending"), T0), { action: "arm", since });
    assert.deepEqual(checkSuspendDeadline(set("Suspending", "garbage"), T0), { action: "arm", since });
  });

  it("waits within the deadline and expires after it", () => {
    assert.deepEqual(checkSuspendDeadline(set("Suspending", since), T0 + 179_000), { action: "wait" });
    assert.deepEqual(checkSuspendDeadline(set("Suspending", since), T0 + 181_000), { action: "expired" });
  });

  it("a set without any annotations arms the deadline and has nothing to clear", () => {
    const bare = set("Suspending");
    delete bare.metadata.annotations;
    assert.deepEqual(checkSuspendDeadline(bare, T0), { action: "arm", since });
    assert.equal(shouldClearSuspendingSince(bare), false);
  });

  it("clears the annotation on Suspended only when present", () => {
    assert.equal(shouldClearSuspendingSince(set("Suspending", since)), true);
    assert.equal(shouldClearSuspendingSince(set("Suspending")), false);
  });
});
