// cocoon_operator_cocoonsets: the cached sets counted by phase at scrape time, every phase present
// (0 when empty), a set without a status counted as Pending.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { COCOONSET_PHASES } from "../../../src/apis/v1/types.ts";
import { metricsRegistry } from "../../../src/controller/metrics.ts";
import { observeSetPhases } from "../../../src/metrics/cocoon.ts";

async function scrape(): Promise<Record<string, number>> {
  const metric = (await metricsRegistry.getMetricsAsJSON()).find(
    (m) => m.name === "cocoon_operator_cocoonsets",
  );
  assert.ok(metric, "the family is registered");
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.phase), v.value]));
}

describe("cocoon_operator_cocoonsets", () => {
  it("counts the cached sets by phase at each scrape, with every phase listed", async () => {
    let phases = ["Running", "Running", "", "Failed"];
    observeSetPhases(() => phases);
    const counts = await scrape();
    assert.deepEqual(Object.keys(counts).sort(), [...COCOONSET_PHASES].sort());
    assert.equal(counts.Running, 2);
    assert.equal(counts.Pending, 1);
    assert.equal(counts.Failed, 1);
    assert.equal(counts.Suspended, 0);

    phases = ["Suspended"];
    const later = await scrape();
    assert.equal(later.Running, 0);
    assert.equal(later.Suspended, 1);
  });
});
