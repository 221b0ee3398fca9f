import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { CocoonSet, CocoonSetPhase } from "../../../src/apis/v1/types.ts";
import {
  checkSuspendDeadline,
  formatRFC3339,
  formatRFC3339Nano,
  parseRFC3339,
  SUSPEND_TIMEOUT_MS,
  shouldClearSuspendingSince,
  suspendDeadlinePassed,
} from "../../../src/cocoonset/suspenddeadline.ts";
import { ANN_SUSPENDING_SINCE } from "../../../src/contract/keys.ts";

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

describe("RFC 3339", () => {
  it("formats UTC whole seconds the way Go's time.RFC3339 does", () => {
    assert.equal(formatRFC3339(T0 + 999), "2026-05-14T01:00:00Z");
  });

  it("formats RFC3339Nano with trailing fraction zeros dropped", () => {
    assert.equal(formatRFC3339Nano(T0), "2026-05-14T01:00:00Z");
    assert.equal(formatRFC3339Nano(T0 + 120), "2026-05-14T01:00:00.12Z");
  });

  it("parses Z, offsets and fractions", () => {
    assert.equal(parseRFC3339("2026-05-14T01:00:00Z"), T0);
    assert.equal(parseRFC3339("2026-05-14T03:00:00+02:00"), T0);
    assert.equal(parseRFC3339("2026-05-14T01:00:00.250123456Z"), T0 + 250);
  });

  it("rejects what Go's time.Parse rejects", () => {
    for (const text of [
      "",
      "yesterday",
      "2026-05-14 01:00:00Z",
      "2026-05-14T01:00:00",
      "2026-02-31T00:00:00Z",
    ]) {
      assert.equal(parseRFC3339(text), undefined, text);
    }
    assert.equal(parseRFC3339(undefined), undefined);
  });
});

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

  it("clears the annotation on Suspended only when present", () => {
    assert.equal(shouldClearSuspendingSince(set("Suspending", since)), true);
    assert.equal(shouldClearSuspendingSince(set("Suspending")), false);
  });
});
