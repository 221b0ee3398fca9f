// The Grafana dashboard of config/components/grafana as tests read it: its panels' queries, with the
// dashboard's variables filled in as Grafana fills them before sending a query to Prometheus.

export interface DashboardTarget {
  expr: string;
  refId: string;
  legendFormat?: string;
  datasource?: { type: string; uid: string };
}

export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  fieldConfig?: { defaults?: { unit?: string } };
  targets?: DashboardTarget[];
}

/** Every query target, with the panel it belongs to (rows hold none). */
export function dashboardTargets(dashboard: {
  panels: DashboardPanel[];
}): { panel: DashboardPanel; target: DashboardTarget }[] {
  return dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel, target })));
}

/** The query Grafana sends: `$job` (a regex matcher's value) and `$__rate_interval` substituted. */
export function grafanaExpr(expr: string, vars: { job: string; rateInterval: string }): string {
  return expr.replaceAll("$__rate_interval", vars.rateInterval).replaceAll("$job", vars.job);
}
