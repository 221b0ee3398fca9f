// controller-runtime's per-controller series: every counter exists at 0 once the controller starts
// (initMetrics), and a reconciler bug (what Go would panic on) counts as a panic and as an error.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../src/clock.ts";
import { Controller } from "../../../src/controller/controller.ts";
import { metricsRegistry } from "../../../src/controller/metrics.ts";
import type { Request, Result } from "../../../src/controller/reconciler.ts";
import { FakeInformer, settle } from "./controller-fakeinformer.ts";

/** Every sample of the controller's series, as "name{labels} value" lines (labels sorted). */
async function seriesOf(controller: string): Promise<string[]> {
  const lines: string[] = [];
  for (const metric of await metricsRegistry.getMetricsAsJSON()) {
    for (const v of metric.values) {
      const labels = v.labels as Record<string, string | number>;
      if (labels.controller !== controller || "le" in labels) continue;
      if (!/_total$|^controller_runtime_(active_workers|max_concurrent_reconciles)$/.test(metric.name))
        continue;
      const rendered = Object.keys(labels)
        .sort()
        .map((k) => `${k}=${labels[k]}`)
        .join(",");
      lines.push(`${metric.name}{${rendered}} ${v.value}`);
    }
  }
  return lines.sort();
}

describe("controller metrics", () => {
  it("start creates every reconcile counter at 0, as controller-runtime's initMetrics", async () => {
    const controller = new Controller({
      name: "init-test",
      reconciler: { reconcile: async () => ({}) },
      maxConcurrentReconciles: 3,
      clock: new FakeClock(),
    });
    controller.start();
    assert.deepEqual(await seriesOf("init-test"), [
      "controller_runtime_active_workers{controller=init-test} 0",
      "controller_runtime_max_concurrent_reconciles{controller=init-test} 3",
      "controller_runtime_reconcile_errors_total{controller=init-test} 0",
      "controller_runtime_reconcile_panics_total{controller=init-test} 0",
      "controller_runtime_reconcile_timeouts_total{controller=init-test} 0",
      "controller_runtime_reconcile_total{controller=init-test,result=error} 0",
      "controller_runtime_reconcile_total{controller=init-test,result=requeue_after} 0",
      "controller_runtime_reconcile_total{controller=init-test,result=requeue} 0",
      "controller_runtime_reconcile_total{controller=init-test,result=success} 0",
      "controller_runtime_terminal_reconcile_errors_total{controller=init-test} 0",
      "workqueue_adds_total{controller=init-test,name=init-test} 0",
      "workqueue_retries_total{controller=init-test,name=init-test} 0",
    ]);
    await controller.stop(0);
  });

  it("a reconciler bug counts as a panic and an error; a failed call only as an error", async () => {
    const informer = new FakeInformer<{ metadata: { namespace: string; name: string } }>();
    const failures: Record<string, () => never> = {
      bug: () => {
        const missing = undefined as unknown as { spec: { replicas: number } };
        return missing.spec.replicas as never;
      },
      io: () => {
        throw new TypeError("fetch failed", { cause: new Error("ECONNREFUSED") });
      },
      api: () => {
        throw new Error("the server is currently unable to handle the request");
      },
    };
    const controller = new Controller({
      name: "panic-test",
      reconciler: {
        reconcile: async (req: Request): Promise<Result> => failures[req.name]?.() ?? {},
      },
      clock: new FakeClock(),
    }).for(informer);
    controller.start();
    for (const name of Object.keys(failures)) informer.add({ metadata: { namespace: "ns", name } });
    await settle();
    const series = await seriesOf("panic-test");
    assert.ok(
      series.includes("controller_runtime_reconcile_panics_total{controller=panic-test} 1"),
      series.join("\n"),
    );
    assert.ok(series.includes("controller_runtime_reconcile_errors_total{controller=panic-test} 3"));
    assert.ok(series.includes("controller_runtime_reconcile_total{controller=panic-test,result=error} 3"));
    controller.stopNow(new Error("done"));
  });
});
