// A set or a pool that is gone keeps no metric series: every collector labelled by one forgets its
// series, whatever the other labels, and the set's reconciler does so when the set has left the cache.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CocoonSetReconciler } from "../../../src/cocoonset/reconciler.ts";
import { metricsRegistry } from "../../../src/controller/metrics.ts";
import { idleSuspendTotal } from "../../../src/metrics/cocoon.ts";
import { forgetPoolSeries, forgetSetSeries, POOL_SERIES, SET_SERIES } from "../../../src/metrics/forget.ts";
import { harness, NS, SET } from "../../support/cocoonset.ts";

interface Collector {
  name: string;
  labelNames: readonly string[];
  inc?(labels: Record<string, string>): void;
  observe?(labels: Record<string, string>, value: number): void;
  set?(labels: Record<string, string>, value: number): void;
}

function asCollector(metric: unknown): Collector {
  return metric as Collector;
}

function registeredLabelledBy(label: string): string[] {
  return metricsRegistry
    .getMetricsAsArray()
    .map(asCollector)
    .filter((metric) => metric.labelNames.includes(label))
    .map((metric) => metric.name)
    .sort();
}

/** One series of every collector in `series` for the object, each value of its other label too. */
function touch(series: typeof SET_SERIES, own: Record<string, string>): void {
  for (const { collector, extra } of series) {
    const c = asCollector(collector);
    for (const value of extra?.values ?? [undefined]) {
      const labels = extra && value !== undefined ? { ...own, [extra.label]: value } : own;
      if (c.inc) c.inc(labels);
      else if (c.observe) c.observe(labels, 1);
      else c.set?.(labels, 1);
    }
  }
}

async function seriesOf(label: string, value: string): Promise<string[]> {
  const metrics = await metricsRegistry.getMetricsAsJSON();
  return metrics.flatMap((metric) =>
    metric.values.filter((v) => v.labels[label] === value).map(() => metric.name),
  );
}

describe("the series of an object that is gone", () => {
  it("lists every registered collector labelled by a set, and every one labelled by a pool", () => {
    assert.deepEqual(
      SET_SERIES.map(({ collector }) => asCollector(collector).name).sort(),
      registeredLabelledBy("cocoonset"),
    );
    assert.deepEqual(
      POOL_SERIES.map(({ collector }) => asCollector(collector).name).sort(),
      registeredLabelledBy("pool"),
    );
  });

  it("forgets a set's series, whatever their other labels, and keeps another set's", async () => {
    touch(SET_SERIES, { namespace: "fg", cocoonset: "gone" });
    touch(SET_SERIES, { namespace: "fg", cocoonset: "kept" });
    assert.ok((await seriesOf("cocoonset", "gone")).length >= SET_SERIES.length);

    forgetSetSeries("fg", "gone");

    assert.deepEqual(await seriesOf("cocoonset", "gone"), []);
    assert.ok((await seriesOf("cocoonset", "kept")).length >= SET_SERIES.length);
    forgetSetSeries("fg", "kept");
  });

  it("forgets a pool's series, claim results and latencies included", async () => {
    touch(POOL_SERIES, { namespace: "fg", pool: "gone-pool" });
    assert.ok((await seriesOf("pool", "gone-pool")).length >= POOL_SERIES.length);

    forgetPoolSeries("fg", "gone-pool");

    assert.deepEqual(await seriesOf("pool", "gone-pool"), []);
  });

  it("the set's reconciler forgets them when the set has left the cache", async () => {
    idleSuspendTotal.inc({ namespace: NS, cocoonset: SET });
    const h = harness();

    await new CocoonSetReconciler(h.deps).reconcile(
      { namespace: NS, name: SET },
      new AbortController().signal,
    );

    assert.deepEqual(await seriesOf("cocoonset", SET), []);
  });
});
