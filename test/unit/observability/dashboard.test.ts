// Lint of the Grafana dashboard (config/components/grafana/cocoon-operator.json): its structure is one
// Grafana imports (unique ids, panels on the 24-column grid without overlaps, the data source as a
// variable), every query reads only metrics the operator serves, through the dashboard's own
// variables, and the panels answer the questions docs/observability.md lists. Whether the queries
// evaluate is test/integration/dashboard.test.ts, on a real Prometheus.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import { metricsRegistry } from "../../../src/controller/metrics.ts";
import "../../../src/metrics/cocoon.ts";
import "../../../src/metrics/checkpoint.ts";
import "../../../src/metrics/pool.ts";
import { type DashboardPanel, dashboardTargets } from "../../support/dashboard.ts";

const repoRoot = resolve(import.meta.dirname, "../../..");
const dashboard = JSON.parse(
  readFileSync(join(repoRoot, "config/components/grafana/cocoon-operator.json"), "utf8"),
);
const panels: DashboardPanel[] = dashboard.panels;
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template
const DATASOURCE = { type: "prometheus", uid: "${datasource}" };

/** PromQL functions, keywords and label names that look like metric names to a scan for identifiers. */
const NOT_METRICS = new Set([
  "sum",
  "max",
  "min",
  "by",
  "rate",
  "increase",
  "histogram_quantile",
  "le",
  "job",
  "name",
  "controller",
  "result",
  "phase",
  "placement",
  "transition",
  "method",
  "code",
  "instance",
  "action",
  "namespace",
  "pool",
  "state",
]);

function metricNames(expr: string): string[] {
  const withoutStrings = expr
    .replace(/"[^"]*"/g, '""')
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/\[[^\]]*\]/g, "[]");
  return [...withoutStrings.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)]
    .map((m) => m[0])
    .filter((word) => !NOT_METRICS.has(word) && !/^\d/.test(word));
}

describe("the Grafana dashboard", () => {
  it("has an id, a title, a schema version and the data source and job variables", () => {
    assert.equal(dashboard.uid, "cocoon-operator");
    assert.equal(dashboard.title, "cocoon-operator");
    assert.ok(dashboard.schemaVersion >= 36, "a schema Grafana 9 and later read as is");
    const vars = dashboard.templating.list;
    assert.deepEqual(
      vars.map((v: { name: string; type: string }) => `${v.name}:${v.type}`),
      ["datasource:datasource", "job:query"],
    );
    assert.equal(vars[0].query, "prometheus");
    assert.deepEqual(vars[1].datasource, DATASOURCE);
  });

  it("panels have unique ids and sit on the 24-column grid without overlapping", () => {
    const ids = panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, "unique panel ids");
    for (const { title, gridPos: g } of panels) {
      assert.ok(g.w >= 1 && g.h >= 1 && g.x >= 0 && g.y >= 0 && g.x + g.w <= 24, `${title} on the grid`);
    }
    for (const [i, a] of panels.entries()) {
      for (const b of panels.slice(i + 1)) {
        const apart =
          a.gridPos.x + a.gridPos.w <= b.gridPos.x ||
          b.gridPos.x + b.gridPos.w <= a.gridPos.x ||
          a.gridPos.y + a.gridPos.h <= b.gridPos.y ||
          b.gridPos.y + b.gridPos.h <= a.gridPos.y;
        assert.ok(apart, `${a.title} and ${b.title} overlap`);
      }
    }
  });

  it("every panel but a row has a description, a unit, the data source variable and queries with unique refIds", () => {
    for (const panel of panels.filter((p) => p.type !== "row")) {
      assert.ok(panel.description, `${panel.title} description`);
      assert.ok(panel.fieldConfig?.defaults?.unit, `${panel.title} unit`);
      assert.deepEqual(panel.datasource, DATASOURCE, `${panel.title} data source`);
      const targets = panel.targets ?? [];
      assert.ok(targets.length > 0, `${panel.title} has queries`);
      assert.equal(new Set(targets.map((t) => t.refId)).size, targets.length, `${panel.title} refIds`);
      for (const target of targets) assert.deepEqual(target.datasource, DATASOURCE);
    }
  });

  it("every query selects by $job, uses no variable but $job and $__rate_interval, and reads served metrics", async () => {
    const served = new Set((await metricsRegistry.getMetricsAsJSON()).map((m) => m.name));
    served.add("up");
    for (const { panel, target } of dashboardTargets(dashboard)) {
      const where = `${panel.title} ${target.refId}`;
      const selectors = target.expr.match(/\{[^}]*\}/g) ?? [];
      assert.ok(selectors.length > 0, `${where} has a selector`);
      for (const selector of selectors) assert.match(selector, /job=~"\$job"/, `${where}: ${selector}`);
      assert.deepEqual(
        [...new Set(target.expr.match(/\$[a-zA-Z_]+/g))].filter(
          (v) => v !== "$job" && v !== "$__rate_interval",
        ),
        [],
        where,
      );
      for (const name of metricNames(target.expr)) {
        const family = name.replace(/_(bucket|count|sum)$/, "");
        assert.ok(
          served.has(name) || served.has(family),
          `${where}: ${name} is a metric the operator serves`,
        );
      }
    }
  });

  it("answers the operator's questions: each has a panel reading its metric", () => {
    const read = (metric: string) =>
      panels.filter((p) => (p.targets ?? []).some((t) => t.expr.includes(metric))).map((p) => p.title);
    for (const metric of [
      "cocoon_operator_cocoonsets",
      "cocoon_operator_hibernate_phase_duration_seconds_count",
      "cocoon_operator_wake_phase_duration_seconds_bucket",
      "cocoon_operator_snapshot_deletes_total",
      "cocoon_operator_checkpoints_total",
      "cocoon_operator_checkpoint_branch_failures_total",
      "cocoon_operator_pool_members",
      "cocoon_operator_claims_total",
      "cocoon_operator_claim_ready_seconds_bucket",
      "cocoon_operator_slot_release_wake_total",
      "controller_runtime_reconcile_total",
      "controller_runtime_reconcile_errors_total",
      "controller_runtime_reconcile_time_seconds_bucket",
      "workqueue_depth",
      "workqueue_queue_duration_seconds_bucket",
      "rest_client_requests_total",
      "process_resident_memory_bytes",
      "process_cpu_seconds_total",
      "leader_election_master_status",
    ]) {
      assert.ok(read(metric).length > 0, `a panel reads ${metric}`);
    }
  });
});
