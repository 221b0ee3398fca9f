// The Grafana dashboard against a real Prometheus: the operator (in-process, leading through a Lease)
// runs a CocoonSet through a hibernatePolicy=release suspend and its wake on the vk-cocoon simulator
// and the real registry while Prometheus scrapes it every second; then every query of every panel, with
// the dashboard's variables filled in as Grafana would, must parse and evaluate, and the panels this
// run exercises must return series. The grafana component renders the dashboard as the sidecar's
// ConfigMap.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { type PrometheusServer, SCRAPE_JOB, startPrometheus } from "../env/prometheus.ts";
import { OciClient } from "../env/simulator/index.ts";
import { testEnv, waitFor } from "../env/testenv.ts";
import { type DashboardPanel, dashboardTargets, grafanaExpr } from "../support/dashboard.ts";
import { renderWithComponents } from "../support/kustomize.ts";
import { patchSetSpec, setPods } from "../support/setapi.ts";
import {
  createSet,
  hasHibernateTag,
  type SetEnv,
  startSetEnv,
  waitPhase,
  waitRunning,
} from "../support/setwait.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const DASHBOARD_FILE = join(repoRoot, "config/components/grafana/cocoon-operator.json");
const dashboard: { panels: DashboardPanel[] } = JSON.parse(readFileSync(DASHBOARD_FILE, "utf8"));
const env = testEnv();

/**
 * The panel queries this run must see series for, by panel title and refId. The others (CocoonHibernations,
 * idle and expiry, rebuilds, checkpoints and branches, migrations) only have to parse and evaluate: the
 * run does not exercise them, and their counters carry object labels, so they have no series before
 * their first event.
 */
const EXERCISED: Record<string, string[]> = {
  "CocoonSets by phase": ["A"],
  Leader: ["A"],
  "Replicas up": ["A"],
  "Snapshot deletes": ["A"],
  "Node seats: released and woken": ["A", "B"],
  "Reconcile rate": ["A"],
  "Reconcile errors": ["A", "B"],
  "Reconcile latency": ["A", "B"],
  "Work queue depth": ["A"],
  "Work queue wait (p99)": ["A"],
  "Workers busy and retries": ["A", "B", "C"],
  "API requests by code": ["A"],
  Memory: ["A", "B"],
  CPU: ["A"],
};

describe("the Grafana dashboard on a real Prometheus", () => {
  let e2e: SetEnv;
  let prometheus: PrometheusServer;

  before(async () => {
    e2e = await startSetEnv(env, "dashboard", {
      metricsAddr: "127.0.0.1:0",
      beforeOperator: ({ ns }) => ({ leaderElectionNamespace: ns }),
    });
    const port = e2e.operator.operator.manager.ports().metrics;
    prometheus = await startPrometheus([`127.0.0.1:${port}`]);
  });

  after(async () => {
    await prometheus?.stop();
    await e2e?.stop();
  });

  it("every panel query parses and evaluates, and the panels a release suspend and wake exercise return series", {
    timeout: 150_000,
  }, async () => {
    const { ns } = e2e;
    const oci = new OciClient(env.registry);
    await createSet(env, ns, "dash", { nodePool: e2e.pool, hibernatePolicy: "release" });
    await waitRunning(env, ns, "dash", 1);
    await patchSetSpec(env, ns, "dash", { suspend: true });
    await waitPhase(env, ns, "dash", "Suspended");
    assert.deepEqual(await setPods(env, ns, "dash"), [], "the released main's pod is gone");
    await patchSetSpec(env, ns, "dash", { suspend: false });
    await waitRunning(env, ns, "dash", 1);
    const vm = `vk-${ns}-dash-0`;
    await waitFor(
      "the woken main's snapshot tag dropped",
      async () => !(await hasHibernateTag(oci, vm)) || undefined,
    );

    // A scrape from after the wake is in (the delete is counted), and every rate window of the panels
    // (15 s, as Grafana's $__rate_interval at a 1 s scrape would be at least) holds several samples.
    const holds = async (expr: string) => {
      const res = await prometheus.query(expr);
      return (res.status === "success" && res.data.result.length > 0) || undefined;
    };
    await waitFor("Prometheus to hold the wake's scrapes", async () => {
      return (
        (await holds(`cocoon_operator_snapshot_deletes_total{job="${SCRAPE_JOB}", result="deleted"} > 0`)) &&
        holds(`count_over_time(up{job="${SCRAPE_JOB}"}[15s]) >= 5`)
      );
    });

    const empty: string[] = [];
    for (const { panel, target } of dashboardTargets(dashboard)) {
      const expr = grafanaExpr(target.expr, { job: SCRAPE_JOB, rateInterval: "15s" });
      const res = await prometheus.query(expr);
      assert.equal(res.status, "success", `${panel.title} ${target.refId}: ${expr}: ${JSON.stringify(res)}`);
      if (res.status !== "success") continue;
      if (EXERCISED[panel.title]?.includes(target.refId) && res.data.result.length === 0) {
        empty.push(`${panel.title} ${target.refId}: ${expr}`);
      }
    }
    assert.deepEqual(empty, [], "exercised panel queries without series");
    for (const title of Object.keys(EXERCISED)) {
      assert.ok(
        dashboard.panels.some((p) => p.title === title),
        `the dashboard has the panel ${title}`,
      );
    }

    const phases = await prometheus.query(`sum by (phase) (cocoon_operator_cocoonsets{job="${SCRAPE_JOB}"})`);
    assert.equal(phases.status, "success");
    const running =
      phases.status === "success" ? phases.data.result.find((r) => r.metric.phase === "Running") : undefined;
    assert.ok(running, "a Running series");
  });

  it("the grafana component renders the dashboard as a ConfigMap labelled for the Grafana sidecar", () => {
    const objs = renderWithComponents("grafana");
    const cm = objs.find((o) => o.kind === "ConfigMap" && o.metadata.name === "cocoon-operator-dashboard");
    assert.ok(cm, "the dashboard ConfigMap is rendered");
    assert.equal(cm.metadata.namespace, "cocoon-system");
    assert.equal(cm.metadata.labels.grafana_dashboard, "1");
    assert.deepEqual(
      JSON.parse(cm.data["cocoon-operator.json"]),
      JSON.parse(readFileSync(DASHBOARD_FILE, "utf8")),
    );
  });
});
